"""Run one analysis script in the sandbox on a set of named data files: the original code and the inspector's
code run through here, the same way, on the same files.

The sandbox hands a job one read-only file; the files are packed into one zip and the job unpacks them into its
private scratch directory (its working directory) before any untrusted code runs (:mod:`evaluation.sandbox.bundle`,
shared with the model check of a hypothesis' supporting code), so a script reads them by name (``pd.read_csv("data.csv")``). What the script printed is its output; an exception,
a refused action (network, other programs, writes outside the scratch directory), the time or memory limit
each give a sentence. This module imports nothing heavy at import time (the zygote imports it before forking).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.sandbox.bundle import pack_files, unpack_files
from evaluation.sandbox.registry import sandbox_job
from evaluation.sandbox.runtime import JobContext

__all__ = ["JOB_NAME", "MAX_CODE_CHARS", "run_script"]

JOB_NAME = "repro.run_script"
MAX_CODE_CHARS = 100_000


@sandbox_job(JOB_NAME)
def run_script_job(ctx: JobContext) -> dict[str, Any]:
    """Payload: ``code``. Data: a zip of the files, unpacked into the working directory first.

    The code runs in a child (:mod:`evaluation.sandbox.handoff`) that holds neither the result channel nor the
    data file; it hands over only how the code ended, which this process checks field by field. Code that
    writes on other descriptors or leaves without handing over (``os._exit``) is "the code interfered with the
    measurement", never "the code ran".
    """
    import linecache

    from evaluation.sandbox.code_jobs import checked_failure, checked_violations
    from evaluation.sandbox.handoff import Interference

    code = str(ctx.payload.get("code", ""))
    names = unpack_files(ctx.data, ctx.work) if ctx.data is not None else []
    filename = "<analysis>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    try:
        compiled = compile(code, filename, "exec")
    except (SyntaxError, ValueError) as exc:
        line = exc.lineno if isinstance(exc, SyntaxError) else None
        message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return {"ok": False, "error_kind": "syntax", "exc_type": type(exc).__name__, "exc_message": message,
                "line": line}
    started = time.perf_counter()
    try:
        for header, _blobs in ctx.split(lambda sender: _run_code(ctx, compiled, filename, sender)):
            seconds = time.perf_counter() - started
            if header.get("type") == "ran":
                return {"ok": True, "code_seconds": seconds, "violations": checked_violations(
                    header.get("violations"))}
            if header.get("type") == "failed":
                info = checked_failure(header.get("info"), 1)
                info.pop("failed_step", None)
                info["code_seconds"] = seconds
                missing = header.get("missing_file")
                if isinstance(missing, str):
                    info["missing_file"] = missing[:500]
                    info["files"] = names
                return info
            raise Interference("it sent a message the sandbox does not know")
    except Interference as exc:
        return {"ok": False, "error_kind": "interfered", "error": exc.sentence,
                "code_seconds": time.perf_counter() - started}
    return {"ok": False, "error_kind": "interfered", "error": Interference("it handed over nothing").sentence}


def _run_code(ctx: JobContext, compiled: Any, filename: str, sender: Any) -> None:
    """The child: run the script; hand over how it ended (data only; the job process decides what it means)."""
    import builtins
    import traceback

    from evaluation.sandbox.code_jobs import failure_info

    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(compiled, namespace)  # noqa: S102 - the untrusted part, in the handoff's child
    except BaseException as exc:  # noqa: BLE001 - the code's failure is the result
        info = failure_info(exc, 0, {filename: 0}, ctx.guard, namespace, ctx.output_limit)
        if not info.get("traceback"):
            info["traceback"] = "".join(traceback.format_exception_only(type(exc), exc))[-2000:]
        missing = {"missing_file": str(exc.filename or "")} if isinstance(exc, FileNotFoundError) else {}
        ctx.output.flush()
        sender.send({"type": "failed", "info": info, **missing})
        return
    ctx.output.flush()
    sender.send({"type": "ran", "violations": [{"kind": v.kind, "action": v.action, "target": v.target}
                                               for v in ctx.guard.violations]})


def _sentence(result: dict[str, Any], who: str, timeout_s: float) -> str:
    """What went wrong, for a person."""
    kind = result.get("error_kind")
    if kind == "syntax":
        return f"{who} does not parse: {result.get('exc_message')} (line {result.get('line')})."
    if "missing_file" in result:
        have = ", ".join(result.get("files") or []) or "no files"
        return (f"{who} needs the file '{result['missing_file']}', which is not there (the data has: {have}).")
    refusal = result.get("refusal")
    if isinstance(refusal, dict):
        return (f"{who} tried to {refusal.get('action')} {refusal.get('target')}; the sandbox does not allow it, "
                "so it was stopped.")
    if kind == "timeout":
        return f"{who} ran past the {timeout_s:g} s limit (a loop?), so it was stopped."
    if kind == "memory":
        return f"{who}: {result['error']}" if result.get("error") else f"{who} ran out of memory."
    if result.get("error"):  # the job died: the sandbox's own sentence
        return f"{who}: {result['error']}"
    line = f" at line {result['line']}" if result.get("line") else ""
    return f"{who} raised {result.get('exc_type', 'an error')}{line}: {result.get('exc_message', '')}".rstrip(": ") + "."


def run_script(code: str, files: Sequence[tuple[str, Path]], *, limits: Any, who: str) -> dict[str, Any]:
    """Run ``code`` in the sandbox with ``files`` ((name, path) pairs) in its working directory.

    Returns ``{"ok", "stdout", "error_kind", "error", "seconds"}``; ``error`` is a sentence naming ``who``
    ("The original code", "The inspector's code"). A file that is not there is reported, not raised.

    Raises:
        SandboxError: the sandbox itself could not run (isolation unavailable).
    """
    from evaluation.sandbox import run_job

    if len(code) > MAX_CODE_CHARS:
        return {"ok": False, "error_kind": "syntax", "stdout": "", "seconds": 0.0,
                "error": f"{who} is {len(code):,} characters long; code longer than {MAX_CODE_CHARS:,} is not run."}
    fd, bundle = tempfile.mkstemp(prefix="forkpaths-repro-", suffix=".zip")
    os.close(fd)
    try:
        pack_files(files, Path(bundle))
        result = run_job(JOB_NAME, {"code": code}, data_path=Path(bundle), limits=limits)
    finally:
        Path(bundle).unlink(missing_ok=True)
    out = {"ok": bool(result.get("ok")), "stdout": str(result.get("stdout", "")),
           "error_kind": result.get("error_kind"), "seconds": float(result.get("seconds", 0.0)), "error": "",
           "code_seconds": float(result.get("code_seconds") or 0.0)}
    if not out["ok"]:
        out["error"] = _sentence(result, who, float(limits.timeout_s))
    return out
