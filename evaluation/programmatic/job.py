"""The sandbox job that runs a task's checks on one output folder: ``programmatic.run_checks``.

One job per output folder (all its checks in one sandbox job, so the sandbox's start-up is paid once). Inside:

* the job process (the *measurer*, which never runs a check) writes the agent's outputs to ``outputs/`` and
  the ground-truth artifacts to ``gt/``, read-only (files 0444, folders 0555), and keeps their bytes;
* each check runs in a child process of its own, forked from the measurer: its working directory is
  ``outputs/``, the audit hook allows writes only to a ``scratch/`` folder, unpickling may only name classes of
  numpy, pandas, scikit-learn, scipy and a few harmless builtins (an agent's pickle cannot run code), new
  processes are forbidden (seccomp), and the measurer kills it at its own time limit. A check that
  monkeypatches anything changes only its own process: the next check starts from the measurer again;
* after each check the measurer compares both folders byte for byte with what it wrote; a check that changed,
  added or removed a file gets the status ``tampered`` (an error, never correct) and the folders are restored
  before the next check runs.

Only a small JSON message comes back from a check's process; the measurer checks its shape and turns anything
else into ``interfered``. This module imports nothing heavy at import time.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import signal
import stat
import sys
import time
from pathlib import Path
from typing import Any

from evaluation.sandbox.registry import sandbox_job
from evaluation.sandbox.runtime import JobContext

__all__ = ["JOB_NAME", "SAFE_PICKLE_BUILTINS", "SAFE_PICKLE_MODULES"]

JOB_NAME = "programmatic.run_checks"
MAX_MESSAGE_BYTES = 256 * 1024
MAX_TEXT = 2000
SAFE_PICKLE_MODULES = ("numpy", "pandas", "sklearn", "scipy", "collections", "datetime", "copyreg", "_codecs",
                       "decimal", "fractions", "joblib")
SAFE_PICKLE_BUILTINS = frozenset({"list", "dict", "set", "frozenset", "tuple", "int", "float", "complex", "str",
                                  "bytes", "bytearray", "bool", "slice", "range", "object", "NoneType"})


def _short(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 20] + " … [truncated]"


def _materialise(root: Path, files: dict[str, str]) -> dict[str, bytes]:
    """Write {relative path: base64} under ``root`` (read-only) and return {absolute path: bytes}."""
    written: dict[str, bytes] = {}
    root.mkdir(parents=True, exist_ok=True)
    for rel, encoded in files.items():
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if not parts or any(p == ".." for p in parts):
            raise ValueError(f"refused the path {rel!r}")
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = base64.b64decode(encoded)
        target.write_bytes(data)
        written[str(target)] = data
    _seal(root)
    return written


def _seal(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root, topdown=False):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o444)
        os.chmod(dirpath, 0o555)


def _unseal(root: Path) -> None:
    for dirpath, _dirs, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, 0o644)


def _changes(roots: list[Path], expected: dict[str, bytes]) -> list[str]:
    """What differs from ``expected`` under ``roots`` (changed, added or removed files), as short phrases."""
    seen: set[str] = set()
    found: list[str] = []
    for root in roots:
        for dirpath, _dirs, filenames in os.walk(root):
            for name in filenames:
                path = os.path.join(dirpath, name)
                seen.add(path)
                rel = os.path.relpath(path, root.parent)
                if path not in expected:
                    found.append(f"added {rel}")
                    continue
                try:
                    st = os.lstat(path)
                    same = stat.S_ISREG(st.st_mode) and st.st_size == len(expected[path]) and \
                        Path(path).read_bytes() == expected[path]
                except OSError:
                    same = False
                if not same:
                    found.append(f"changed {rel}")
    for path in expected:
        if path not in seen:
            found.append(f"removed {os.path.relpath(path, roots[0].parent)}")
    return found


def _restore(roots: list[Path], expected: dict[str, bytes]) -> None:
    import shutil

    for root in roots:
        _unseal(root)
        shutil.rmtree(root)
    for path, data in expected.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
    for root in roots:
        root.mkdir(parents=True, exist_ok=True)
        _seal(root)


def _pickle_guard(event: str, args: tuple[Any, ...]) -> None:
    if event != "pickle.find_class":
        return
    module, name = str(args[0]), str(args[1])
    root = module.split(".", 1)[0]
    if root in SAFE_PICKLE_MODULES or (module == "builtins" and name in SAFE_PICKLE_BUILTINS):
        return
    from evaluation.sandbox.guard import Refusal

    raise Refusal("forbidden", "unpickle", f"{module}.{name} (only numpy, pandas, scikit-learn and scipy objects)")


def _check_function(code: str) -> tuple[Any, str]:
    """Compile ``code`` and find its check function: the last top-level ``def`` not starting with '_' (or the
    last one). Returns (function node name, compiled code)."""
    import ast

    tree = ast.parse(code, filename="<check>")
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    public = [n for n in names if not n.startswith("_")]
    if not names:
        raise LookupError("the check code defines no function; it must define one function of the ground truth, "
                          "e.g. def check(ground_truth): ...")
    return compile(tree, "<check>", "exec"), (public or names)[-1]


def _child(check: dict[str, Any], gt_path: str, write_fd: int) -> None:
    """The check's own process: run the function (and the rule) and hand back one JSON message."""
    import io
    import traceback

    # Bound before any code of the check runs: whatever it monkeypatches later, these stay the originals.
    dumps, write, exit_, type_ = json.dumps, os.write, os._exit, type
    started = time.perf_counter()
    buffer = io.StringIO()

    def send(message: dict[str, Any]) -> None:
        message["stdout"] = _short(buffer.getvalue())
        message["seconds"] = time.perf_counter() - started
        data = dumps(message, default=str).encode("utf-8")[:MAX_MESSAGE_BYTES]
        view = memoryview(data)
        while view:
            n = write(write_fd, view)
            view = view[n:]
        exit_(0)

    sys.stdout = sys.stderr = buffer
    try:
        try:
            compiled, fname = _check_function(check["code"])
        except SyntaxError as exc:
            send({"status": "syntax", "error": f"line {exc.lineno}: {exc.msg}"})
            return
        except LookupError as exc:
            send({"status": "no_function", "error": str(exc)})
            return
        namespace: dict[str, Any] = {"__name__": "__check__"}
        try:
            exec(compiled, namespace)  # noqa: S102 - the check's code, in its own sandboxed process
            value = namespace[fname](gt_path)
        except BaseException as exc:  # noqa: BLE001 - whatever the check raised is its outcome
            kind = "refused" if type_(exc).__name__ == "Refusal" else "raised"
            # the check's own frames only: the sandbox's files are nothing its author can act on (issue 26)
            own = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<check>"]
            tb = "".join(["Traceback (most recent call last):\n", *traceback.StackSummary.from_list(own).format(),
                          *traceback.format_exception_only(type_(exc), exc)])
            send({"status": "memory" if isinstance(exc, MemoryError) else kind,
                  "error": _short(f"{type_(exc).__name__}: {exc}", 500), "traceback": _short(tb)})
            return
        raw_type = f"{type_(value).__module__}.{type_(value).__qualname__}"
        rule = check.get("rule")
        if rule:
            try:
                ruled = eval(compile(rule, "<rule>", "eval"), {"__name__": "__rule__"})(value)  # noqa: S307
            except BaseException as exc:  # noqa: BLE001
                send({"status": "rule_error", "error": _short(f"{type_(exc).__name__}: {exc}", 500),
                      "raw_type": raw_type, "raw_repr": _short(repr(value), 300)})
                return
            value = ruled
        vtype = f"{type_(value).__module__}.{type_(value).__qualname__}"
        if vtype in ("builtins.bool", "numpy.bool", "numpy.bool_"):
            # not bool(value): the check may have replaced builtins.bool
            send({"status": "value", "value": True if value else False, "type": vtype})  # noqa: SIM210
            return
        send({"status": "not_boolean", "type": vtype, "repr": _short(repr(value), 300)})
    except BaseException as exc:  # noqa: BLE001 - a failure of the wrapper itself, still an error outcome
        send({"status": "raised", "error": _short(f"{type_(exc).__name__}: {exc}", 500)})


_STATUSES = {"value", "syntax", "no_function", "raised", "refused", "rule_error", "not_boolean", "memory"}


def _run_one(ctx: JobContext, check: dict[str, Any], outputs: Path, gt: Path, scratch: Path,
             writable: Path | None = None) -> dict[str, Any]:
    from evaluation.sandbox import namespaces
    from evaluation.sandbox.guard import Guard

    timeout = float(check.get("timeout_s") or 10.0)
    ground_truth = str(check.get("ground_truth") or "").strip("/")
    gt_path = str(gt / ground_truth) if ground_truth else str(gt)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            if sys.platform == "linux":
                namespaces.die_with_parent()
            ctx.enter_child()
            os.chdir(outputs)
            os.environ.update({"TMPDIR": str(scratch), "HOME": str(scratch), "MPLCONFIGDIR": str(scratch)})
            import tempfile

            tempfile.tempdir = str(scratch)
            ctx.guard = Guard(str(writable or scratch))
            ctx.untrusted()
            sys.addaudithook(_pickle_guard)
            _child(check, gt_path, write_fd)
        except BaseException:  # noqa: BLE001
            os._exit(75)
        os._exit(0)
    os.close(write_fd)
    chunks: list[bytes] = []
    size = 0
    deadline = started + timeout
    timed_out = False
    try:
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_MESSAGE_BYTES + 1:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    if timed_out:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    seconds = time.perf_counter() - started
    if timed_out:
        return {"status": "timeout", "seconds": seconds,
                "error": f"the check ran longer than its limit of {timeout:g} s (a loop?) and was stopped"}
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        status_name = "timeout" if sig == signal.SIGXCPU else "crashed"
        return {"status": status_name, "seconds": seconds,
                "error": f"the check's process was killed by signal {signal.Signals(sig).name}"}
    try:
        message = json.loads(b"".join(chunks).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        message = None
    if (not isinstance(message, dict) or message.get("status") not in _STATUSES
            or (message.get("status") == "value" and not isinstance(message.get("value"), bool))):
        return {"status": "interfered", "seconds": seconds,
                "error": "the check's process handed back no well-formed result (it wrote to the result pipe "
                         "itself, or left early with os._exit)"}
    keep = ("status", "value", "type", "repr", "error", "traceback", "stdout", "raw_type", "raw_repr")
    out = {k: message[k] for k in keep if k in message}
    for k in ("error", "traceback", "stdout", "repr", "raw_repr", "type", "raw_type"):
        if k in out:
            out[k] = _short(str(out[k]))
    out["seconds"] = seconds
    return out


@sandbox_job(JOB_NAME)
def run_checks(ctx: JobContext) -> dict[str, Any]:
    """Run every check of the payload on the payload's output folder; one result per check, in order."""
    payload = ctx.payload
    ctx.close_data()
    outputs, gt, scratch = ctx.work / "outputs", ctx.work / "gt", ctx.work / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    expected = _materialise(outputs, payload.get("outputs") or {})
    expected |= _materialise(gt, payload.get("gt") or {})
    results: list[dict[str, Any]] = []
    for index, check in enumerate(payload.get("checks") or []):
        ctx.send({"event": "step", "index": index})
        result = _run_one(ctx, check, outputs, gt, scratch)
        changed = _changes([outputs, gt], expected)
        if changed:
            result = {"status": "tampered", "seconds": result.get("seconds", 0.0),
                      "error": "the check changed the folders it may only read (" + "; ".join(changed[:5])
                               + ("; …" if len(changed) > 5 else "") + "), so its result is not counted",
                      "stdout": result.get("stdout", "")}
            _restore([outputs, gt], expected)
        results.append(result)
    return {"ok": True, "checks": results}


SOLUTION_JOB = "programmatic.run_solution"
MAX_SOLUTION_OUTPUT_BYTES = 50 * 1024 * 1024


@sandbox_job(SOLUTION_JOB)
def run_solution(ctx: JobContext) -> dict[str, Any]:
    """Run a candidate solution's code in a folder holding the task's input files; hand back the files it wrote
    (new or changed, bounded). The code runs in a child process; the measurer reads the folder afterwards."""
    payload = ctx.payload
    ctx.close_data()
    folder = ctx.work / "task"
    folder.mkdir(parents=True, exist_ok=True)
    inputs: dict[str, bytes] = {}
    for rel, encoded in (payload.get("inputs") or {}).items():
        name = os.path.basename(str(rel))
        data = base64.b64decode(encoded)
        (folder / name).write_bytes(data)
        inputs[str(folder / name)] = data
    check = {"code": "def _forkpaths_solution(_gt):\n    import runpy\n    runpy.run_path('solution.py', "
                     "run_name='__main__')\n    return True\n", "timeout_s": payload.get("timeout_s", 60)}
    (ctx.work / "solution.py").write_text(str(payload.get("code") or ""), encoding="utf-8")
    # the child runs in the task folder with the solution beside it; writes are allowed there (its outputs)
    os.replace(ctx.work / "solution.py", folder / "solution.py")
    inputs[str(folder / "solution.py")] = (folder / "solution.py").read_bytes()
    scratch = ctx.work / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)
    result = _run_one(ctx, check, folder, folder, scratch, writable=ctx.work)
    files: dict[str, str] = {}
    total = 0
    for dirpath, _dirs, filenames in os.walk(folder):
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            data = Path(path).read_bytes()
            if inputs.get(path) == data:
                continue
            total += len(data)
            if total > MAX_SOLUTION_OUTPUT_BYTES:
                return {"ok": True, "run": result, "files": {}, "too_large": True}
            files[os.path.relpath(path, folder)] = base64.b64encode(data).decode("ascii")
    return {"ok": True, "run": result, "files": files}
