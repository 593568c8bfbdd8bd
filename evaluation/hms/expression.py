"""The deterministic facet of a synthetic query: does the answer's code predict what the generating expression
gives? (No LLM.)

A synthetic DiscoveryBench query that carries ``true_hypothesis_expr`` (a pandas expression over ``df``) and
``target_col`` has a known answer: the expression's values. An answer with code is run in the sandbox on the
query's data (``df``); the code sets ``hypothesis_values`` to what its hypothesis predicts for the target column.
The job evaluates the expression on its own (before any untrusted code runs), runs the code in a child process
that can hand over only the values (:mod:`evaluation.sandbox.handoff`), and compares: the facet is the share of
rows where the two agree within a relative tolerance of 1e-6. The code never sees or writes the measurement.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaluation.hms.records import ExpressionCheck
from evaluation.sandbox.registry import sandbox_job

if TYPE_CHECKING:
    from evaluation.sandbox.runtime import JobContext
    from evaluation.tasks.base import ScoringContext
    from exports.schema import DatasetRelease, HypothesisTaskRelease

__all__ = ["EXPRESSION_JOB", "PASS_AGREEMENT", "check_expression", "expression_job"]

EXPRESSION_JOB = "hms.expression_check"
PASS_AGREEMENT = 0.99  # share of rows that must agree for the facet to pass
_RTOL, _ATOL = 1e-6, 1e-9


@sandbox_job(EXPRESSION_JOB)
def expression_job(ctx: JobContext) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    frame = ctx.load_table()
    expr, code = str(ctx.payload["expr"]), str(ctx.payload["code"])
    try:  # the release's own expression, evaluated before any untrusted code runs
        gold_obj = eval(compile(expr, "<true_hypothesis_expr>", "eval"),  # noqa: S307 - curated data, in the sandbox
                        {"__builtins__": {}}, {"df": frame.copy(), "np": np, "pd": pd})
        gold = np.asarray(gold_obj, dtype=float).ravel()
    except Exception as exc:  # noqa: BLE001 - reported as the facet's error
        return {"ok": True, "status": "error", "rows": 0,
                "message": f"The release's expression could not be evaluated: {type(exc).__name__}: {exc}"}
    if gold.size == 1 and len(frame) > 1:
        gold = np.full(len(frame), gold[0])

    def body(sender: Any) -> None:
        ns: dict[str, Any] = {"df": frame.copy(), "pd": pd, "np": np}
        try:
            exec(compile(code, "<answer code>", "exec"), ns)  # noqa: S102 - the untrusted part, in the child
            values = ns.get("hypothesis_values")
            if values is None:
                sender.send({"type": "error", "message": "The code did not set hypothesis_values."})
                return
            arr = np.asarray(values, dtype=float).ravel()
        except Exception as exc:  # noqa: BLE001
            sender.send({"type": "error", "message": f"The code failed: {type(exc).__name__}: {str(exc)[:300]}"})
            return
        sender.send({"type": "values", "n": int(arr.size)}, [arr.astype("<f8").tobytes()])

    from evaluation.sandbox.handoff import Interference

    try:
        for header, blobs in ctx.split(body):
            if header.get("type") == "error":
                return {"ok": True, "status": "error", "rows": 0, "message": str(header.get("message", ""))[:500]}
            if header.get("type") == "values" and len(blobs) == 1 and len(blobs[0]) % 8 == 0:
                pred = np.frombuffer(blobs[0], dtype="<f8")
                if pred.size != gold.size:
                    return {"ok": True, "status": "failed", "rows": int(gold.size), "agreement": 0.0,
                            "message": f"hypothesis_values has {pred.size} values; the data has {gold.size} rows."}
                same = np.isclose(pred, gold, rtol=_RTOL, atol=_ATOL) | (np.isnan(pred) & np.isnan(gold))
                share = float(same.mean()) if same.size else 0.0
                return {"ok": True, "status": "passed" if share >= PASS_AGREEMENT else "failed",
                        "rows": int(gold.size), "agreement": share,
                        "message": f"{int(same.sum())} of {gold.size} rows agree with the generating expression."}
    except Interference as exc:
        return {"ok": True, "status": "error", "rows": 0, "message": exc.sentence}
    return {"ok": True, "status": "error", "rows": 0, "message": "The code handed over no values."}


def check_expression(ctx: ScoringContext, ds: DatasetRelease, task: HypothesisTaskRelease,
                     code: str) -> ExpressionCheck:
    """Run the facet for one answer (within the run's per-analysis limits); a sandbox failure is its error."""
    from evaluation.errors import SandboxError
    from evaluation.sandbox import SandboxLimits, run_job
    from exports.native import release_data_path

    limits = SandboxLimits(timeout_s=ctx.limits.analysis_timeout_s, memory_mb=ctx.limits.memory_mb)
    try:
        out = run_job(EXPRESSION_JOB, {"expr": task.true_hypothesis_expr, "code": code},
                      data_path=release_data_path(ctx.release_folder, ds), limits=limits)
    except SandboxError as exc:
        return ExpressionCheck(status="error", message=f"The sandbox could not run the code: {exc}")
    if not out.get("ok"):
        return ExpressionCheck(status="error", message=str(out.get("error") or "the job died"))
    return ExpressionCheck(status=out.get("status", "error"), agreement=out.get("agreement"),
                           rows=int(out.get("rows") or 0), message=str(out.get("message", "")))
