"""The deterministic facet of a synthetic query: does the answer's code predict what the generating expression
gives? (No LLM.)

A synthetic DiscoveryBench query that carries ``true_hypothesis_expr`` (a pandas expression over ``df``) and
``target_col`` has a known answer: the expression's values. An answer with code is run in the sandbox on the
query's data (``df``); the code sets ``hypothesis_values`` to what its hypothesis predicts for the target column.
The facet is the share of rows where the two agree within a relative tolerance of 1e-6.

The answer's code must never share a process with the expression or its values, so there are two jobs, each
running what it did not write in a child of its own (:mod:`evaluation.sandbox.handoff`) that hands over only
the values (float64, the plain encoding):

* :data:`EXPRESSION_JOB` runs the answer's code; its payload holds the code only;
* :data:`GOLD_JOB` evaluates the release's expression, after the first job has handed over and ended, in a
  job of its own (namespaces of its own), with the builtins the benchmark's expressions use
  (:data:`EXPRESSION_BUILTINS`).

The comparison, and so the verdict, is made here, in the caller (the measuring side), never in a sandbox job.
"""

from __future__ import annotations

import base64
import builtins
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.hms.records import ExpressionCheck
from evaluation.sandbox.registry import sandbox_job

if TYPE_CHECKING:
    from collections.abc import Callable

    from evaluation.sandbox import SandboxLimits
    from evaluation.sandbox.runtime import JobContext
    from evaluation.tasks.base import ScoringContext
    from exports.hypotheses_part import HypothesisTaskRelease
    from exports.schema import DatasetRelease

__all__ = ["EXPRESSION_BUILTINS", "EXPRESSION_JOB", "GOLD_JOB", "PASS_AGREEMENT", "check_expression",
           "compare_values", "expression_facet"]

EXPRESSION_JOB = "hms.expression_check"
GOLD_JOB = "hms.expression_gold"
PASS_AGREEMENT = 0.99  # share of rows that must agree for the facet to pass
_RTOL, _ATOL = 1e-6, 1e-9
EXPRESSION_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in ("int", "float", "str", "bool", "abs", "round", "len", "min", "max", "sum", "True", "False", "None")
}
"""What the release's expression may call besides ``df``, ``np`` and ``pd``: the builtins DiscoveryBench's
synthetic expressions use (``.astype(int)``...). A restriction for clarity, not the boundary: the job is."""


def _values_job(ctx: JobContext, compute: Callable[[Any], Any]) -> dict[str, Any]:
    """Load the table, run ``compute(frame)`` in a child, hand back only its values (checked here)."""
    import numpy as np

    from evaluation.sandbox.handoff import Interference

    frame = ctx.load_table()
    rows = len(frame)

    def body(sender: Any) -> None:
        try:
            message, values = compute(frame)
            if message is not None:
                sender.send({"type": "error", "message": str(message)[:500]})
                return
            arr = np.asarray(values, dtype=float).ravel()
        except Exception as exc:  # noqa: BLE001 - whatever the code raised is its result
            sender.send({"type": "error", "message": f"{type(exc).__name__}: {str(exc)[:300]}"})
            return
        sender.send({"type": "values"}, [arr.astype("<f8").tobytes()])

    try:
        for header, blobs in ctx.split(body):
            kind = header.get("type")
            if kind == "error" and isinstance(header.get("message"), str):
                return {"ok": True, "status": "error", "rows": rows, "message": header["message"][:500]}
            if kind == "values" and len(blobs) == 1 and len(blobs[0]) % 8 == 0:
                return {"ok": True, "status": "values", "rows": rows,
                        "values": base64.b64encode(blobs[0]).decode("ascii")}
            raise Interference("it handed over something other than its values")
    except Interference as exc:
        return {"ok": True, "status": "error", "rows": rows, "message": exc.sentence}
    return {"ok": True, "status": "error", "rows": rows, "message": "The code handed over no values."}


@sandbox_job(EXPRESSION_JOB)
def expression_job(ctx: JobContext) -> dict[str, Any]:
    """Payload ``{"code"}``: the answer's ``hypothesis_values``, from a child that never sees the expression."""
    import numpy as np
    import pandas as pd

    code = str(ctx.payload["code"])

    def run(frame: Any) -> tuple[str | None, Any]:
        ns: dict[str, Any] = {"df": frame.copy(), "pd": pd, "np": np}
        try:
            exec(compile(code, "<answer code>", "exec"), ns)  # noqa: S102 - the untrusted part, in the child
        except Exception as exc:  # noqa: BLE001
            return f"The code failed: {type(exc).__name__}: {str(exc)[:300]}", None
        values = ns.get("hypothesis_values")
        if values is None:
            return "The code did not set hypothesis_values.", None
        try:
            return None, np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            return f"hypothesis_values is not numbers: {type(exc).__name__}: {str(exc)[:300]}", None

    return _values_job(ctx, run)


@sandbox_job(GOLD_JOB)
def gold_job(ctx: JobContext) -> dict[str, Any]:
    """Payload ``{"expr"}``: the release's expression's values, from a child, with :data:`EXPRESSION_BUILTINS`."""
    import numpy as np
    import pandas as pd

    expr = str(ctx.payload["expr"])

    def evaluate(frame: Any) -> tuple[str | None, Any]:
        try:
            value = eval(compile(expr, "<true_hypothesis_expr>", "eval"),  # noqa: S307 - in the sandbox's child
                         {"__builtins__": dict(EXPRESSION_BUILTINS)}, {"df": frame.copy(), "np": np, "pd": pd})
            return None, np.asarray(value, dtype=float)
        except Exception as exc:  # noqa: BLE001 - reported as the facet's error
            return f"The release's expression could not be evaluated: {type(exc).__name__}: {str(exc)[:300]}", None

    return _values_job(ctx, evaluate)


def _decode(out: dict[str, Any]) -> Any:
    import numpy as np

    return np.frombuffer(base64.b64decode(str(out.get("values", ""))), dtype="<f8")


def compare_values(pred: Any, gold: Any) -> ExpressionCheck:
    """The verdict: the share of rows where the answer's values agree with the expression's (a scalar
    expression stands for every row)."""
    import numpy as np

    pred, gold = np.asarray(pred, dtype=float), np.asarray(gold, dtype=float)
    if gold.size == 1 and pred.size > 1:
        gold = np.full(pred.size, gold[0])
    if pred.size != gold.size:
        return ExpressionCheck(status="failed", rows=int(gold.size), agreement=0.0,
                               message=f"hypothesis_values has {pred.size} values; the data has {gold.size} rows.")
    same = np.isclose(pred, gold, rtol=_RTOL, atol=_ATOL) | (np.isnan(pred) & np.isnan(gold))
    share = float(same.mean()) if same.size else 0.0
    return ExpressionCheck(status="passed" if share >= PASS_AGREEMENT else "failed", rows=int(gold.size),
                           agreement=share,
                           message=f"{int(same.sum())} of {gold.size} rows agree with the generating expression.")


def _job_values(name: str, payload: dict[str, Any], data_path: Path,
                limits: SandboxLimits) -> tuple[Any, ExpressionCheck | None]:
    """(values, None), or (None, the facet's error)."""
    from evaluation.errors import SandboxError
    from evaluation.sandbox import run_job

    try:
        out = run_job(name, payload, data_path=data_path, limits=limits)
    except SandboxError as exc:
        return None, ExpressionCheck(status="error", message=f"The sandbox could not run the code: {exc}")
    if not out.get("ok"):
        return None, ExpressionCheck(status="error", message=str(out.get("error") or "the job died"))
    if out.get("status") != "values":
        return None, ExpressionCheck(status="error", rows=int(out.get("rows") or 0),
                                     message=str(out.get("message", "")))
    values = _decode(out)
    rows = int(out.get("rows") or 0)
    if values.size == rows or name == GOLD_JOB and values.size == 1:
        return values, None
    if name == GOLD_JOB:
        return None, ExpressionCheck(status="error", rows=rows, message=(
            f"The release's expression gives {values.size} values; the data has {rows} rows."))
    return None, ExpressionCheck(status="failed", rows=rows, agreement=0.0,
                                 message=f"hypothesis_values has {values.size} values; the data has {rows} rows.")


def expression_facet(expr: str, code: str, *, data_path: Path, limits: SandboxLimits) -> ExpressionCheck:
    """Run the answer's code, then (only if it handed over values) the expression, each in a job of its own;
    compare here."""
    pred, error = _job_values(EXPRESSION_JOB, {"code": code}, data_path, limits)
    if error is not None:
        return error
    gold, error = _job_values(GOLD_JOB, {"expr": expr}, data_path, limits)
    if error is not None:
        return error
    return compare_values(pred, gold)


def check_expression(ctx: ScoringContext, ds: DatasetRelease, task: HypothesisTaskRelease,
                     code: str) -> ExpressionCheck:
    """Run the facet for one answer (within the run's per-analysis limits); a sandbox failure is its error."""
    from evaluation.sandbox import SandboxLimits
    from exports.native import release_data_path

    limits = SandboxLimits(timeout_s=ctx.limits.analysis_timeout_s, memory_mb=ctx.limits.memory_mb)
    return expression_facet(str(task.true_hypothesis_expr), code,
                            data_path=release_data_path(ctx.release_folder, ds), limits=limits)
