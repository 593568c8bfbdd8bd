"""The agent's one tool: run a piece of Python on the task's data table, in the sandbox, like a notebook cell.

Registered as ``agent.run_python``. The data file is read into ``df`` (with ``pd`` and ``np`` bound) before the
untrusted code runs. A task of several files (DiscoveryBench) hands over one zip of them instead, with
``payload["table"]`` naming the table to load as ``df``: the zip is unpacked into the job's working folder first,
so the code reads every file by its name (``pd.read_csv("capital.csv")``, ``pd.read_stata("x.dta")``); the code then runs as statements, and a last bare expression is shown (as a notebook
shows it). What it printed comes back as ``stdout`` (bounded by the job's limits); an exception comes back as the
traceback of the agent's own lines, and what the code tried against the sandbox (network, processes, writes
outside its scratch folder) as a sentence. Every cell is a fresh process: nothing carries over between two
calls, which the agent is told (a shared kernel is BLADE's harness's defect, not a feature).
"""

from __future__ import annotations

import ast
import traceback
import zipfile
from pathlib import Path
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


def _safe_member(name: str) -> bool:
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


def _unpack_and_load(ctx: JobContext, table: dict[str, Any] | None, pd: Any) -> Any:
    """Unpack the task's files into the working folder; the named table read as a frame (None when none)."""
    if ctx.data is None:
        return None
    with zipfile.ZipFile(ctx.data) as bundle:
        for member in bundle.infolist():
            if member.is_dir() or not _safe_member(member.filename):
                continue
            target = ctx.work / member.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            with bundle.open(member) as src, open(target, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
    if not table or not _safe_member(str(table.get("name", ""))):
        return None
    path = ctx.work / str(table["name"])
    fmt = table.get("format")
    if fmt == "stata":
        return pd.read_stata(path)
    return pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", low_memory=False)


@sandbox_job("agent.run_python")
def run_python(ctx: JobContext) -> dict[str, Any]:
    import pandas as pd

    code = str(ctx.payload.get("code", ""))
    table = ctx.payload.get("table")
    note = ""
    if "table" in ctx.payload:  # several files: a zip, unpacked into the working folder
        try:
            frame = _unpack_and_load(ctx, table if isinstance(table, dict) else None, pd)
        except Exception as exc:  # noqa: BLE001 - a table pandas cannot read: said, and the files are still there
            frame = None
            note = f"(df is None: {table.get('name') if isinstance(table, dict) else 'the table'} could not be " \
                   f"read: {type(exc).__name__}: {str(exc)[:300]})"
    else:
        frame = ctx.load_table() if ctx.data is not None else None
    limit = ctx.output_limit
    try:
        tree = _show_last_expression(ast.parse(code, filename=FILENAME))
        compiled = compile(tree, FILENAME, "exec")
    except SyntaxError as exc:
        return {"ok": False, "error_kind": "syntax",
                "error": truncate("".join(traceback.format_exception_only(type(exc), exc)), limit)}

    from evaluation.sandbox.handoff import Interference

    try:
        for header, _blobs in ctx.split(lambda sender: _run_cell(ctx, compiled, frame, note, sender)):
            if header.get("type") == "ran":
                return {"ok": True}
            if header.get("type") == "failed" and header.get("error_kind") in _FAILURE_KINDS \
                    and isinstance(header.get("error"), str):
                out: dict[str, Any] = {"ok": False, "error_kind": header["error_kind"],
                                       "error": truncate(header["error"], limit)}
                if isinstance(header.get("refusal"), str):
                    out["refusal"] = header["refusal"][:500]
                return out
            raise Interference("it sent a message the sandbox does not know")
    except Interference as exc:
        return {"ok": False, "error_kind": "interfered", "error": exc.sentence}
    return {"ok": False, "error_kind": "interfered", "error": Interference("it handed over nothing").sentence}


_FAILURE_KINDS = ("exception", "network", "filesystem", "forbidden")


def _run_cell(ctx: JobContext, compiled: Any, frame: Any, note: str, sender: Any) -> None:
    """The child (:mod:`evaluation.sandbox.handoff`): run the cell; hand over how it ended, as data only. What
    it printed goes to the captured output; the job process, which holds the result channel, reports."""
    import numpy as np
    import pandas as pd

    limit = ctx.output_limit

    def show(value: Any) -> None:
        if value is not None:
            print(repr(value))

    namespace: dict[str, Any] = {"__name__": "__main__", "pd": pd, "np": np, "df": frame, SHOW: show}
    if note:
        print(note)
    try:
        exec(compiled, namespace)  # noqa: S102 - the agent's code, inside the sandbox's boundaries
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too: reported, not obeyed
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == FILENAME]
        lines = ["Traceback (most recent call last):\n", *traceback.StackSummary.from_list(frames).format()]
        text = "".join(lines) + "".join(traceback.format_exception_only(type(exc), exc))
        refused = _refusal(exc, ctx.guard.violations)
        out: dict[str, Any] = {"type": "failed", "error_kind": refused.kind if refused else "exception",
                               "error": truncate(text, limit)}
        if refused is not None:
            out["refusal"] = f"the sandbox refused it: {refused.action} {refused.target}"[:500]
        ctx.output.flush()
        sender.send(out)
        return
    ctx.output.flush()
    sender.send({"type": "ran"})
