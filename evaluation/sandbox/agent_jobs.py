"""The agent's one tool: run a piece of Python on the task's data table, in the sandbox, like a notebook cell.

Registered as ``agent.run_python``. The data file is read into ``df`` (with ``pd`` and ``np`` bound) before the
untrusted code runs; the code then runs as statements, and a last bare expression is shown (as a notebook
shows it). What it printed comes back as ``stdout`` (bounded by the job's limits); an exception comes back as the
traceback of the agent's own lines, and what the code tried against the sandbox (network, processes, writes
outside its scratch folder) as a sentence. Every cell is a fresh process: nothing carries over between two
calls, which the agent is told (a shared kernel is BLADE's harness's defect, not a feature).
"""

from __future__ import annotations

import ast
import traceback
from typing import Any

from evaluation.sandbox.guard import Refusal, truncate
from evaluation.sandbox.registry import sandbox_job
from evaluation.sandbox.runtime import JobContext

__all__ = ["run_python"]

FILENAME = "<cell>"
SHOW = "_forkpaths_show"


def _show_last_expression(tree: ast.Module) -> ast.Module:
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        call = ast.Call(func=ast.Name(id=SHOW, ctx=ast.Load()), args=[last.value], keywords=[])
        tree.body[-1] = ast.copy_location(ast.Expr(value=call), last)
        ast.fix_missing_locations(tree)
    return tree


def _refusal(exc: BaseException, violations: list[Refusal]) -> Refusal | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, Refusal):
            return current
        current = current.__cause__ or current.__context__
    return violations[-1] if violations else None


@sandbox_job("agent.run_python")
def run_python(ctx: JobContext) -> dict[str, Any]:
    import numpy as np
    import pandas as pd

    code = str(ctx.payload.get("code", ""))
    frame = ctx.load_table() if ctx.data is not None else None
    limit = ctx.output_limit
    try:
        tree = _show_last_expression(ast.parse(code, filename=FILENAME))
        compiled = compile(tree, FILENAME, "exec")
    except SyntaxError as exc:
        return {"ok": False, "error_kind": "syntax",
                "error": truncate("".join(traceback.format_exception_only(type(exc), exc)), limit)}

    def show(value: Any) -> None:
        if value is not None:
            print(repr(value))

    namespace: dict[str, Any] = {"__name__": "__main__", "pd": pd, "np": np, "df": frame, SHOW: show}
    ctx.untrusted()
    try:
        exec(compiled, namespace)  # noqa: S102 - the agent's code, inside the sandbox's boundaries
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too: reported, not obeyed
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
        lines = ["Traceback (most recent call last):\n", *traceback.StackSummary.from_list(frames).format()]
        text = "".join(lines) + "".join(traceback.format_exception_only(type(exc), exc))
        refused = _refusal(exc, ctx.guard.violations)
        out: dict[str, Any] = {"ok": False, "error_kind": refused.kind if refused else "exception",
                               "error": truncate(text, limit)}
        if refused is not None:
            out["refusal"] = f"the sandbox refused it: {refused.action} {refused.target}"[:500]
        return out
    return {"ok": True}
