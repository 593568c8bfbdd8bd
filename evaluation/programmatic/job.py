"""The sandbox job that runs a task's checks on one output folder: ``programmatic.run_checks``.

One job per output folder (all its checks in one sandbox job, so the sandbox's start-up is paid once). Inside:

* the job process (the *measurer*, which never runs a check) writes the agent's outputs to ``outputs/`` and
  the ground-truth artifacts to ``gt/``, read-only (files 0444, folders 0555), and keeps their bytes;
* each check runs in a child process of its own, forked from the measurer: its working directory is
  ``outputs/``, the audit hook allows writes only to a ``scratch/`` folder, unpickling may only name what
  pickles of plain data name (:func:`evaluation.programmatic.plain.plain_pickle_globals`: frames, series,
  ndarrays, numbers; the agent's pickles were replaced by clean ones before, see below), new processes are
  forbidden (seccomp), and the measurer kills it at its own time limit. A check that
  monkeypatches anything changes only its own process: the next check starts from the measurer again;
* after each check the measurer compares both folders byte for byte with what it wrote; a check that changed,
  added or removed a file gets the status ``tampered`` (an error, never correct) and the folders are restored
  before the next check runs.

Only a small JSON message comes back from a check's process; the measurer checks its shape and turns anything
else into ``interfered``.

``programmatic.plain_outputs`` is the other job here: it loads the pickles of one folder (an agent's outputs, or
ground-truth artifacts), each in a child of its own, and hands over plain data (:mod:`.plain`). It is given those
files and nothing else. This module imports nothing heavy at import time.
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

__all__ = ["CONVERT_JOB", "JOB_NAME", "SOLUTION_JOB"]

JOB_NAME = "programmatic.run_checks"
CONVERT_JOB = "programmatic.plain_outputs"
MAX_MESSAGE_BYTES = 256 * 1024
MAX_TEXT = 2000


def _short(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 20] + " … [truncated]"


def _materialise(root: Path, files: dict[str, str], *, seal: bool = True,
                 reserved: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Write {relative path: base64} under ``root`` (read-only unless ``seal`` is False) and return
    {absolute path: bytes}. A path whose first part is ``reserved`` is refused."""
    written: dict[str, bytes] = {}
    root.mkdir(parents=True, exist_ok=True)
    for rel, encoded in files.items():
        parts = [p for p in rel.split("/") if p not in ("", ".")]
        if not parts or any(p == ".." for p in parts) or parts[0] in reserved:
            raise ValueError(f"refused the path {rel!r}")
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = base64.b64decode(encoded)
        target.write_bytes(data)
        written[str(target)] = data
    if seal:
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
                rel = os.path.relpath(path, root)
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
            found.append(f"removed {os.path.relpath(path, roots[0])}")
    return found


def _restore(roots: list[Path], expected: dict[str, bytes], keep: tuple[Path, ...] = ()) -> None:
    import shutil

    for root in roots:
        _unseal(root)
        shutil.rmtree(root)
    for path, data in expected.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(data)
    for folder in keep:
        folder.mkdir(parents=True, exist_ok=True)
    for root in roots:
        root.mkdir(parents=True, exist_ok=True)
        _seal(root)


def _pickle_guard(allowed: frozenset[tuple[str, str]]) -> Any:
    """An audit hook that lets a check's process unpickle only the globals that pickles of plain data name."""
    from evaluation.sandbox.guard import Refusal

    def guard(event: str, args: tuple[Any, ...]) -> None:
        if event != "pickle.find_class":
            return
        module, name = str(args[0]), str(args[1])
        if (module, name) not in allowed:
            raise Refusal("forbidden", "unpickle", f"{module}.{name} (a check may unpickle plain data only: "
                                                   "frames, series, ndarrays, numbers and text)")

    return guard


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


def _check_line(exc: BaseException) -> int | None:
    """The line of the check's own code (or its rule) where ``exc`` was raised, the innermost one."""
    import traceback

    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename in ("<check>", "<rule>")]
    return lines[-1] if lines and isinstance(lines[-1], int) else None


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
    if check.get("mode") == "datascibench":
        try:
            _upstream(check, gt_path, send)
        except BaseException as exc:  # noqa: BLE001 - a failure of the wrapper itself, still an error outcome
            send({"status": "raised", "error": _short(f"{type_(exc).__name__}: {exc}", 500)})
        return
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
            send({"status": "memory" if isinstance(exc, MemoryError) else kind, "line": _check_line(exc),
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


UPSTREAM_GLOBALS = ("os", "sys", "yaml")
"""What the globals of upstream's ``create_function_from_string`` (deeppavlov/DataSciBench ``src/utils.py``) hold
that a check's function could use without importing it: the modules ``src/utils.py`` imports."""


def _upstream(check: dict[str, Any], gt_path: str, send: Any) -> None:
    """A check scored as upstream scores it (deeppavlov/DataSciBench ``experiments/evaluate.py``,
    ``src/schemas/dag.py``, ``src/utils.py``), in the check's own process:

    * the code runs with separate globals and locals (``exec(code, globals(), local_vars)``, utils.py:21), and
      the function is the first callable it binds at the top level (utils.py:25-27; none: calling None raises);
    * the rule is ``eval(rule)`` applied to the result (generic_evaluator.py); an int result other than 0 or 1
      fails upstream's assertion (dag.py:94-95);
    * a float scores 2 from 3 on, else 1 (evaluate.py:193-207); anything else goes through ``bool()``
      (evaluate.py:208-221); an exception scores 0 (evaluate.py:223-230).

    Where upstream's script stops altogether (the code or the rule raising while the checks are built, outside
    its error handling; a NaN or infinite float, whose ``int()`` breaks its bookkeeping), the check is an error:
    the one intended difference."""
    import builtins
    import math
    import traceback

    bool_, float_, int_, isinstance_, type_, repr_ = bool, float, int, isinstance, type, repr

    def crash(exc: BaseException, where: str) -> None:
        send({"status": "raised", "upstream": "crash",
              "error": _short(f"{type_(exc).__name__}: {exc} ({where}; upstream's evaluate.py stops there, "
                              "outside its error handling)", 500), "traceback": _short(traceback.format_exc())})

    glob: dict[str, Any] = {"__builtins__": builtins, "__name__": "src.utils"}
    for name in UPSTREAM_GLOBALS:
        with contextlib.suppress(ImportError):
            glob[name] = __import__(name)
    local_vars: dict[str, Any] = {}
    try:
        exec(compile(check["code"], "<check>", "exec"), glob, local_vars)  # noqa: S102 - the sandboxed check
    except BaseException as exc:  # noqa: BLE001
        crash(exc, "running the check's code to define its function")
        return
    function = next((v for v in local_vars.values() if callable(v)), None)
    rule_text = check.get("rule")
    try:
        rule = eval(compile(rule_text, "<rule>", "eval"), {"__name__": "__rule__"}) if rule_text \
            else (lambda x: x)  # noqa: S307
    except BaseException as exc:  # noqa: BLE001
        crash(exc, "evaluating the rule")
        return
    try:
        value = function(gt_path)  # type: ignore[misc]
        value = rule(value)
        if isinstance_(value, int_) and value not in [0, 1]:
            raise AssertionError(f"the result {value!r} is an int other than 0 or 1 (upstream asserts 0 or 1)")
        vtype = f"{type_(value).__module__}.{type_(value).__qualname__}"
        if isinstance_(value, float_):
            if math.isnan(value) or math.isinf(value):
                send({"status": "raised", "upstream": "crash", "type": vtype, "repr": _short(repr_(value), 300),
                      "error": f"the check returned {value!r}: upstream scores it and then fails on int({value!r}), "
                               "which stops its evaluate.py"})
                return
            passed = value >= 3
            basis = "a float of 3 or more passes" if passed else "a float below 3 fails"
        else:
            passed = bool_(value)
            basis = f"bool() of the result is {passed}"
    except BaseException as exc:  # noqa: BLE001 - upstream's except: score 0
        send({"status": "memory" if isinstance_(exc, MemoryError) else "raised", "line": _check_line(exc),
              "error": _short(f"{type_(exc).__name__}: {exc}", 500), "traceback": _short(traceback.format_exc())})
        return
    send({"status": "value", "value": True if passed else False, "type": vtype,  # noqa: SIM210
          "repr": _short(repr_(value), 300), "basis": basis})


_STATUSES = {"value", "syntax", "no_function", "raised", "refused", "rule_error", "not_boolean", "memory"}


def _run_one(ctx: JobContext, check: dict[str, Any], outputs: Path, gt: Path, scratch: Path,
             writable: Path | None = None, pickles: frozenset[tuple[str, str]] | None = None) -> dict[str, Any]:
    from evaluation.sandbox import namespaces
    from evaluation.sandbox.guard import Guard

    timeout = float(check.get("timeout_s") or 10.0)
    # as upstream's evaluate.py: normpath(join(<task>/gt/, ground_truth)), or <task>/gt/ (with its slash)
    ground_truth = str(check.get("ground_truth") or "").strip("/")
    gt_path = os.path.normpath(os.path.join(str(gt), ground_truth)) if ground_truth else str(gt) + os.sep
    if check.get("mode") != "datascibench" and ground_truth.startswith("gt/") and not os.path.exists(gt_path) \
            and os.path.exists(os.path.join(str(gt), ground_truth[3:])):
        # a check stored before paths were cleaned ("gt/summary.csv" for gt/summary.csv): what it meant
        gt_path = os.path.normpath(os.path.join(str(gt), ground_truth[3:]))
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
            if pickles is not None:
                sys.addaudithook(_pickle_guard(pickles))
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
    keep = ("status", "value", "type", "repr", "error", "traceback", "stdout", "raw_type", "raw_repr", "basis",
            "upstream", "line")
    out = {k: message[k] for k in keep if k in message}
    for k in ("error", "traceback", "stdout", "repr", "raw_repr", "type", "raw_type", "basis", "upstream"):
        if k in out:
            out[k] = _short(str(out[k]))
    if not (isinstance(out.get("line"), int) and not isinstance(out.get("line"), bool)):
        out.pop("line", None)
    out["seconds"] = seconds
    return out


@sandbox_job(JOB_NAME)
def run_checks(ctx: JobContext) -> dict[str, Any]:
    """Run every check of the payload on the payload's output folder; one result per check, in order."""
    from evaluation.programmatic.plain import plain_pickle_globals

    payload = ctx.payload
    ctx.close_data()
    allowed = plain_pickle_globals()  # before any check runs: read from numpy and pandas as imported here
    # upstream's layout: data/<task>/ holds the inputs and gt/, and a check runs in the run's folder inside it,
    # so ../<input> and ../gt/<artifact> are where upstream's checks find them
    task, scratch = ctx.work / "task", ctx.work / "scratch"
    outputs, gt = task / "outputs", task / "gt"
    scratch.mkdir(parents=True, exist_ok=True)
    expected = _materialise(outputs, payload.get("outputs") or {}, seal=False)
    expected |= _materialise(gt, payload.get("gt") or {}, seal=False)
    expected |= _materialise(task, payload.get("inputs") or {}, seal=False, reserved=("outputs", "gt"))
    _seal(task)
    results: list[dict[str, Any]] = []
    for index, check in enumerate(payload.get("checks") or []):
        ctx.send({"event": "step", "index": index})
        result = _run_one(ctx, check, outputs, gt, scratch, pickles=allowed)
        changed = _changes([task], expected)
        if changed:
            result = {"status": "tampered", "seconds": result.get("seconds", 0.0),
                      "error": "the check changed the folders it may only read (" + "; ".join(changed[:5])
                               + ("; …" if len(changed) > 5 else "") + "), so its result is not counted",
                      "stdout": result.get("stdout", "")}
            _restore([task], expected, keep=(outputs, gt))
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
        parts = [p for p in str(rel).split("/") if p not in ("", ".")]
        if not parts or ".." in parts:
            raise ValueError(f"refused the input path {rel!r}")
        target = folder.joinpath(*parts)  # at its path in the task's folder (dl_0's data/*.xlsx)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = base64.b64decode(encoded)
        target.write_bytes(data)
        inputs[str(target)] = data
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


def _convert_one(path: str, data: bytes) -> Any:
    """The body of one converter child: load the pickle, hand over its plain data (or why it has none)."""
    from evaluation.programmatic.plain import NotPlain, encode, load_pickle

    def body(sender: Any) -> None:
        try:
            value = load_pickle(data)
        except BaseException as exc:  # noqa: BLE001 - whatever loading raised is the file's outcome
            sender.send({"type": "file", "path": path, "error": _short(f"{type(exc).__name__}: {exc}", 300)})
            return
        blobs: list[bytes] = []
        try:
            tree = encode(value, blobs)
        except NotPlain as exc:
            sender.send({"type": "file", "path": path, "refused": {"type": exc.type_name[:200],
                                                                    "where": exc.where[:200]}})
            return
        sender.send({"type": "file", "path": path, "tree": tree}, blobs)

    return body


@sandbox_job(CONVERT_JOB)
def plain_outputs(ctx: JobContext) -> dict[str, Any]:
    """Load each pickle of the payload in a child of its own and hand back its plain data (base64 blobs): the
    files to convert are all this job is given."""
    from evaluation.sandbox.handoff import Interference

    files = {str(p): base64.b64decode(b) for p, b in (ctx.payload.get("files") or {}).items()}
    ctx.close_data()
    out: dict[str, Any] = {}
    names = list(files)
    for index, path in enumerate(names):
        ctx.send({"event": "step", "index": index})
        try:
            for header, blobs in ctx.split(_convert_one(path, files[path]), last=index == len(names) - 1):
                if header.get("type") != "file" or header.get("path") != path:
                    raise Interference("it handed over a message that is not the file's")
                kept = {k: header[k] for k in ("tree", "refused", "error") if k in header}
                out[path] = {**kept, "blobs": [base64.b64encode(b).decode("ascii") for b in blobs]}
        except Interference as exc:
            out[path] = {"error": exc.sentence}
        except MemoryError:
            out[path] = {"error": "loading it ran out of memory"}
        if path not in out:
            out[path] = {"error": "loading it handed over nothing"}
    return {"ok": True, "files": out}
