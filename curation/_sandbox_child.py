"""The child side of the sandbox (see :mod:`curation.sandbox`): a zygote and the job processes it forks.

The parent starts ``python -I -X faulthandler <this file> --zygote <fd>`` with a minimal environment, stdin and
stdout on ``/dev/null`` and its own session. The zygote imports pandas, numpy, statsmodels and
:mod:`curation.inference` once and then, per job, forks a child that

1. starts its own process group, moves to the job's fresh working directory and takes the job's result pipe and
   stderr file (sent by the parent over the control socket);
2. applies the job's resource limits, loads the data table, installs the audit hook that refuses network,
   process and out-of-directory write operations, and runs the steps;
3. writes JSON lines (``{"event": "step", ...}`` before each step, then ``{"event": "result", ...}``) to the
   result pipe and leaves with ``os._exit`` (no user atexit handlers, no waiting for threads the code started).

The zygote never runs user code, so each job starts from the same clean state. Only JSON goes back to the
parent. This module imports nothing heavy at import time so the parent can import its small helpers.
"""

from __future__ import annotations

import ast
import builtins
import difflib
import io
import json
import linecache
import math
import os
import pickle
import resource
import shutil
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

__all__ = [
    "FAST_COPY_FORMAT",
    "FAST_COPY_SUFFIX",
    "GUARD_MARKER",
    "fast_copy_path",
    "rewrite_groupby_targets",
]

FAST_COPY_SUFFIX = ".forkpaths-cache.pkl"
"""Appended to the CSV's file name to name its fast-loading copy."""
FAST_COPY_FORMAT = 1
GUARD_MARKER = "[forkpaths-sandbox]"
"""Starts the message of every PermissionError the audit hook raises."""

PREFERRED_RESULT_NAMES = ("model", "results", "result", "res", "fit", "fitted", "m")
LAST_VALUE_NAME = "_forkpaths_last_value"
PREVIEW_ROWS = 5
MAX_CELL_CHARS = 200
MAX_MESSAGE_CHARS = 1000
BALLAST_BYTES = 16 * 1024 * 1024
MEMORY_ERROR_MARKERS = ("MemoryError", "Cannot allocate memory", "bad_alloc", "out of memory")


def fast_copy_path(data_path: Path) -> Path:
    """Where the fast-loading copy of ``data_path`` lives (next to it)."""
    return data_path.with_name(data_path.name + FAST_COPY_SUFFIX)


def rewrite_groupby_targets(tree: ast.Module) -> ast.Module:
    """BLADE's ``process_groupby_code``: ``dfX = <...>.groupby(...)`` becomes ``dfX_grp = ...``.

    Only a direct ``.groupby(...)`` call is rewritten (not ``df.groupby(...).sum()``), and only plain names
    that start with ``df`` and do not already end with ``_grp``. The tree is changed in place and compiled as
    it is, so line numbers stay those of the analyst's code.
    """
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "groupby"
        ):
            for target in node.targets:
                if (
                    isinstance(target, ast.Name)
                    and target.id.startswith("df")
                    and not target.id.endswith("_grp")
                ):
                    target.id += "_grp"
    return tree


# --------------------------------------------------------------------------------------------------------------
# Audit hook: what the user's code may not do.
# --------------------------------------------------------------------------------------------------------------

TRUSTED_THREADS: set[int] = set()
"""Threads of the sandbox itself (the parent watchdog) that the audit hook lets through."""

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class Refusal(PermissionError):
    """Raised by the audit hook; ``kind`` is network, filesystem or forbidden."""

    def __init__(self, kind: str, action: str, target: str) -> None:
        super().__init__(f"{GUARD_MARKER} {kind}: the sandbox does not allow this ({action} {target})")
        self.kind = kind
        self.action = action
        self.target = target


def _address(value: Any) -> str:
    if isinstance(value, tuple) and len(value) >= 2:
        return f"{value[0]}:{value[1]}"
    return str(value)


class Guard:
    """An audit hook that refuses network access, new processes and writes outside ``work``.

    Python's audit hooks are a tripwire, not a security boundary: they stop mistakes and casual misuse (a
    ``to_csv('/data/x.csv')``, a ``requests.get``, an ``os.system``), while the operating-system limits set by
    :func:`apply_limits` and the parent's process-group kill are what bound a runaway job.
    """

    def __init__(self, work: str) -> None:
        self.work = os.path.realpath(work)
        self.violations: list[Refusal] = []
        self.active = False
        self._busy = threading.local()
        self._own_pid = os.getpid()
        self._handlers: dict[str, Callable[[tuple[Any, ...]], Refusal | None]] = {
            "open": self._on_open,
            "os.remove": lambda a: self._path_arg(a, 0, 1, "delete"),
            "os.rmdir": lambda a: self._path_arg(a, 0, 1, "remove the directory"),
            "shutil.rmtree": lambda a: self._path_arg(
                a, 0, 1 if len(a) > 1 else None, "remove the directory"
            ),
            "os.mkdir": lambda a: self._path_arg(a, 0, 2, "create the directory"),
            "os.chmod": lambda a: self._path_arg(a, 0, 2, "change the permissions of"),
            "os.chown": lambda a: self._path_arg(a, 0, 3, "change the owner of"),
            "os.chflags": lambda a: self._path_arg(a, 0, None, "change the flags of"),
            "os.lchflags": lambda a: self._path_arg(a, 0, None, "change the flags of"),
            "os.utime": lambda a: self._path_arg(a, 0, 3, "change the timestamps of"),
            "os.truncate": lambda a: self._path_arg(a, 0, None, "truncate"),
            "os.setxattr": lambda a: self._path_arg(a, 0, None, "change the attributes of"),
            "os.removexattr": lambda a: self._path_arg(a, 0, None, "change the attributes of"),
            "os.chdir": lambda a: self._path_arg(a, 0, None, "change into"),
            "os.rename": self._on_rename,
            "os.symlink": lambda a: self._path_arg(a, 1, 2, "create a link at"),
            "os.link": lambda a: Refusal("filesystem", "create a hard link to", str(a[0])),
            "shutil.copyfile": lambda a: self._path_arg(a, 1, None, "write to"),
            "shutil.copymode": lambda a: self._path_arg(a, 1, None, "change the permissions of"),
            "shutil.copystat": lambda a: self._path_arg(a, 1, None, "change the permissions of"),
            "socket.connect": lambda a: Refusal("network", "connect", _address(a[1])),
            "socket.bind": lambda a: Refusal("network", "bind", _address(a[1])),
            "socket.sendto": lambda a: Refusal("network", "send", _address(a[1])),
            "socket.sendmsg": lambda a: Refusal("network", "send", _address(a[1])),
            "socket.getaddrinfo": lambda a: Refusal("network", "look up", _address(a[:2])),
            "socket.gethostbyname": lambda a: Refusal("network", "look up", str(a[0])),
            "socket.gethostbyaddr": lambda a: Refusal("network", "look up", str(a[0])),
            "socket.getnameinfo": lambda a: Refusal("network", "look up", _address(a[0])),
            "socket.sethostname": lambda a: Refusal("network", "rename the host", str(a[0])),
            "urllib.Request": lambda a: Refusal("network", "open", str(a[0])),
            "subprocess.Popen": lambda a: Refusal("forbidden", "run another program", _command(a[1])),
            "os.system": lambda a: Refusal("forbidden", "run another program", _command(a[0])),
            "os.exec": lambda a: Refusal("forbidden", "run another program", _command(a[0])),
            "os.posix_spawn": lambda a: Refusal("forbidden", "run another program", _command(a[0])),
            "os.spawn": lambda a: Refusal("forbidden", "run another program", _command(a[1])),
            "os.startfile": lambda a: Refusal("forbidden", "run another program", _command(a[0])),
            "os.fork": lambda a: Refusal("forbidden", "start another process", "os.fork"),
            "os.forkpty": lambda a: Refusal("forbidden", "start another process", "os.forkpty"),
            "os.kill": self._on_kill,
            "os.killpg": lambda a: Refusal("forbidden", "send a signal to", f"process group {a[0]}"),
            "ctypes.dlopen": lambda a: Refusal(
                "forbidden", "load the native library", "the program itself" if a[0] is None else str(a[0])
            ),
            "ctypes.dlsym": lambda a: Refusal("forbidden", "look up the native function", _address(a)),
            "ctypes.dlsym/handle": lambda a: Refusal("forbidden", "look up the native function", _address(a)),
            "ctypes.call_function": lambda a: Refusal("forbidden", "call a native function", "via ctypes"),
        }

    # The hook itself: cheap for the events it ignores, never re-entered by its own file-system look-ups.
    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active or threading.get_ident() in TRUSTED_THREADS:
            return
        handler = self._handlers.get(event)
        if handler is None or getattr(self._busy, "on", False):
            return
        self._busy.on = True
        try:
            refusal = handler(args)
        finally:
            self._busy.on = False
        if refusal is not None:
            self.violations.append(refusal)
            raise refusal

    def install(self) -> None:
        """Install the hook (it cannot be removed) and switch it on."""
        sys.addaudithook(self)
        self.active = True
        # subprocess keeps a reference to the raw fork/exec primitive, which raises no audit event itself.
        posix_sub = sys.modules.get("_posixsubprocess")
        if posix_sub is not None:

            def _refused_fork_exec(*args: Any, **kwargs: Any) -> Any:
                refusal = Refusal("forbidden", "run another program", "_posixsubprocess.fork_exec")
                self.violations.append(refusal)
                raise refusal

            posix_sub.fork_exec = _refused_fork_exec  # type: ignore[attr-defined]

    def _resolve(self, path: Any, dir_fd: Any = None) -> str:
        if isinstance(path, int):
            return os.path.realpath(f"/proc/self/fd/{path}")
        name = os.fsdecode(os.fspath(path))
        if isinstance(dir_fd, int) and dir_fd >= 0 and not os.path.isabs(name):
            base = os.path.realpath(f"/proc/self/fd/{dir_fd}")
        else:
            base = os.getcwd()
        return os.path.realpath(os.path.join(base, name))

    def _inside(self, real: str) -> bool:
        return real == self.work or real.startswith(self.work + os.sep)

    def _check(self, path: Any, dir_fd: Any, action: str) -> Refusal | None:
        try:
            real = self._resolve(path, dir_fd)
        except (TypeError, ValueError, OSError):
            return Refusal("filesystem", action, repr(path))
        if self._inside(real) or real == os.devnull:
            return None
        return Refusal("filesystem", action, real)

    def _path_arg(
        self, args: tuple[Any, ...], path_index: int, dir_fd_index: int | None, action: str
    ) -> Refusal | None:
        dir_fd = args[dir_fd_index] if dir_fd_index is not None and dir_fd_index < len(args) else None
        return self._check(args[path_index], dir_fd, action)

    def _on_open(self, args: tuple[Any, ...]) -> Refusal | None:
        path, mode, flags = (list(args) + [None, None, None])[:3]
        writes = (isinstance(flags, int) and flags & _WRITE_FLAGS) or (
            isinstance(mode, str) and any(c in mode for c in "wax+")
        )
        if isinstance(path, int):
            # Re-opening an inherited descriptor for writing could reach the protocol channel.
            return self._check(path, None, "write to") if writes and path > 2 else None
        if writes:
            return self._check(path, None, "write to")
        if mode is None:
            # os.open() of a directory outside would give a dir_fd that later writes could be relative to.
            try:
                real = self._resolve(path)
            except (TypeError, ValueError, OSError):
                return None
            if os.path.isdir(real) and not self._inside(real):
                return Refusal("filesystem", "open the directory", real)
        return None

    def _on_rename(self, args: tuple[Any, ...]) -> Refusal | None:
        src_fd = args[2] if len(args) > 2 else None
        dst_fd = args[3] if len(args) > 3 else None
        return self._check(args[0], src_fd, "move") or self._check(args[1], dst_fd, "move a file to")

    def _on_kill(self, args: tuple[Any, ...]) -> Refusal | None:
        if args and args[0] in (0, self._own_pid):
            return None
        return Refusal("forbidden", "send a signal to", f"process {args[0] if args else '?'}")


def _command(value: Any) -> str:
    if isinstance(value, list | tuple):
        value = " ".join(os.fsdecode(v) if isinstance(v, str | bytes) else str(v) for v in value)
    elif isinstance(value, bytes):
        value = os.fsdecode(value)
    return _truncate(str(value), 200)


# --------------------------------------------------------------------------------------------------------------
# Small helpers.
# --------------------------------------------------------------------------------------------------------------


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


class BoundedOutput(io.TextIOBase):
    """A text stream that keeps at most ``limit`` characters, written through to a file.

    Written through so that what a job printed survives the job being killed (the parent reads the file).
    """

    def __init__(self, path: Path, limit: int) -> None:
        self._file = open(path, "w", encoding="utf-8", errors="replace")  # noqa: SIM115 - lives for the job
        self._left = limit
        self._truncated = False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self._left > 0:
            chunk = text[: self._left]
            self._file.write(chunk)
            self._left -= len(chunk)
            if len(chunk) < len(text):
                self._truncate_note()
            self._file.flush()
        elif text:
            self._truncate_note()
        return len(text)

    def _truncate_note(self) -> None:
        if not self._truncated:
            self._truncated = True
            self._file.write("\n[output truncated]\n")
            self._file.flush()

    def flush(self) -> None:
        self._file.flush()


def _send(channel: TextIO, message: dict[str, Any]) -> None:
    channel.write(json.dumps(message, allow_nan=False, default=str) + "\n")
    channel.flush()


def _vm_size_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def apply_limits(limits: dict[str, Any]) -> None:
    """Set the job's rlimits on this process (and anything it could start).

    ``memory_mb`` is headroom on top of what the pre-loaded interpreter already maps (about 0.5 GB of address
    space for pandas, numpy and statsmodels), so that a small limit such as 512 MB still lets ordinary code run.
    CPU time is a backstop behind the parent's wall clock: the interpreter's start-up CPU plus the timeout and a
    few seconds.
    """
    headroom = int(limits["memory_mb"]) * 1024 * 1024
    address_space = _vm_size_bytes() + headroom
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(math.ceil(usage.ru_utime + usage.ru_stime + float(limits["timeout_s"]) + 5))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    file_bytes = int(limits["max_file_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def load_table(data_path: Path) -> Any:
    """Read the data table: the fast copy when it matches the CSV, else the CSV with pandas defaults."""
    import pandas as pd

    cache = fast_copy_path(data_path)
    try:
        stat = data_path.stat()
        with open(cache, "rb") as handle:
            payload = pickle.load(handle)
        if (
            isinstance(payload, dict)
            and payload.get("format") == FAST_COPY_FORMAT
            and payload.get("csv_size") == stat.st_size
            and payload.get("csv_mtime_ns") == stat.st_mtime_ns
            and isinstance(payload.get("frame"), pd.DataFrame)
        ):
            return payload["frame"]
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
        pass
    return pd.read_csv(data_path)


def json_safe(value: Any) -> Any:
    """A preview cell as JSON: numbers, strings, booleans or null; anything else as short text."""
    import numpy as np
    import pandas as pd

    if value is None:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return _truncate(value, MAX_CELL_CHARS)
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return _truncate(str(value), MAX_CELL_CHARS)


def preview_rows(obj: Any, rows: int = PREVIEW_ROWS) -> list[dict[str, Any]]:
    """The first rows of a frame (or series) as JSON-safe records; ``[]`` for anything else."""
    import pandas as pd

    if isinstance(obj, pd.Series):
        obj = obj.to_frame()
    if not isinstance(obj, pd.DataFrame):
        return []
    names: list[str] = []
    for column in obj.columns:
        name = str(column)
        while name in names:
            name += "_"
        names.append(name)
    return [
        {name: json_safe(cell) for name, cell in zip(names, record, strict=True)}
        for record in obj.head(rows).itertuples(index=False, name=None)
    ]


def describe_result(
    code: str,
    before: Any,
    after: Any,
    *,
    infer: Callable[[str, Any, Any], Any] | None = None,
    describe: Callable[[Any, Any], Any] | None = None,
) -> dict[str, Any]:
    """Run the verb/mapping inference; a failure there leaves the change info out instead of failing."""
    from curation import inference

    infer = infer or inference.infer_transform
    describe = describe or inference.describe_change
    out: dict[str, Any] = {
        "change": None,
        "suggested_verb": None,
        "suggested_mapping": [],
        "inference_error": None,
    }
    try:
        inferred = infer(code, before, after)
        out["change"] = inferred.change.model_dump(mode="json")
        out["suggested_verb"] = inferred.verb
        out["suggested_mapping"] = [pair.model_dump(mode="json") for pair in inferred.mapping]
        return out
    except Exception as exc:  # the analyst's check must not fail because the suggestion did
        out["inference_error"] = _truncate(f"infer_transform: {type(exc).__name__}: {exc}", MAX_MESSAGE_CHARS)
    try:
        out["change"] = describe(before, after).model_dump(mode="json")
    except Exception as exc:
        out["inference_error"] += _truncate(
            f"; describe_change: {type(exc).__name__}: {exc}", MAX_MESSAGE_CHARS
        )
    return out


def _assigned_names(tree: ast.Module) -> list[str]:
    """Names the code assigns (anywhere outside function bodies), in source order."""
    found: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.append((node.lineno, node.col_offset, node.id))
    found.sort()
    return [name for _, _, name in found]


def _capture_last_expression(tree: ast.Module) -> ast.Module:
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = tree.body[-1]
        assign = ast.Assign(targets=[ast.Name(id=LAST_VALUE_NAME, ctx=ast.Store())], value=last.value)
        tree.body[-1] = ast.copy_location(assign, last)
        ast.fix_missing_locations(tree)
    return tree


def _has_summary(obj: Any) -> bool:
    try:
        return callable(getattr(obj, "summary", None)) and not isinstance(obj, type)
    except Exception:
        return False


def _is_unfitted_model(obj: Any) -> bool:
    model_cls = getattr(sys.modules.get("statsmodels.base.model"), "Model", None)
    return model_cls is not None and isinstance(obj, model_cls)


def _type_name(obj: Any) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}" if cls.__module__ != "builtins" else cls.__qualname__


def find_model_result(namespace: dict[str, Any], assigned: Sequence[str]) -> tuple[str, Any] | None:
    """Pick the fitted result: preferred names with ``.summary()``, the last assignment with one, else the
    last expression's value, else a preferred name's value. Returns ``(how it was found, object)``."""
    for name in PREFERRED_RESULT_NAMES:
        if name in namespace and _has_summary(namespace[name]):
            return name, namespace[name]
    for name in reversed(assigned):
        if name in namespace and _has_summary(namespace[name]):
            return name, namespace[name]
    if namespace.get(LAST_VALUE_NAME) is not None:
        return "the last expression", namespace[LAST_VALUE_NAME]
    for name in PREFERRED_RESULT_NAMES:
        if namespace.get(name) is not None and not _is_unfitted_model(namespace[name]):
            return name, namespace[name]
    return None


def _unfitted_model_in(namespace: dict[str, Any], assigned: Sequence[str]) -> str | None:
    for name in [LAST_VALUE_NAME, *reversed(assigned)]:
        if _is_unfitted_model(namespace.get(name)):
            return type(namespace[name]).__name__
    return None


# --------------------------------------------------------------------------------------------------------------
# Running a job.
# --------------------------------------------------------------------------------------------------------------


class _StepFailure(Exception):
    def __init__(self, info: dict[str, Any]) -> None:
        super().__init__(info.get("error_kind"))
        self.info = info


def _user_traceback(
    exc: BaseException, filenames: set[str], limit: int
) -> tuple[str, int | None, str | None]:
    """Format only the frames of the user's code; return (text, deepest user line, its filename)."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if frame.filename in filenames]
    lines = ["Traceback (most recent call last):\n", *traceback.StackSummary.from_list(frames).format()]
    lines += traceback.format_exception_only(type(exc), exc)
    text = _truncate(
        "".join(lines) if frames else "".join(traceback.format_exception_only(type(exc), exc)), limit
    )
    if not frames:
        return text, None, None
    return text, frames[-1].lineno, frames[-1].filename


def _column_hint(exc: BaseException, frame: Any) -> str | None:
    import pandas as pd

    if not isinstance(exc, KeyError) or len(exc.args) != 1 or not isinstance(frame, pd.DataFrame):
        return None
    key = exc.args[0]
    if not isinstance(key, str) or key in frame.columns:
        return None
    columns = [str(c) for c in frame.columns]
    close = difflib.get_close_matches(key, columns, n=1)
    return f"no such column; did you mean '{close[0]}'?" if close else "no such column"


def _refusal_in(exc: BaseException, guard: Guard) -> Refusal | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, Refusal):
            return current
        reason = getattr(current, "reason", None)  # urllib.error.URLError wraps the socket error
        if isinstance(reason, Refusal):
            return reason
        current = current.__cause__ or current.__context__
    return guard.violations[-1] if guard.violations else None


def _memory_error_in(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        current = current.__cause__ or current.__context__
    return False


def _failure_info(
    exc: BaseException,
    step: int,
    filenames: dict[str, int],
    guard: Guard,
    namespace: dict[str, Any],
    limit: int,
) -> dict[str, Any]:
    text, line, filename = _user_traceback(exc, set(filenames), limit)
    if filename is not None and filenames[filename] != step:
        # The deepest user frame is in an earlier step's function; report the line in the failing step.
        own = [f for f in traceback.extract_tb(exc.__traceback__) if filenames.get(f.filename) == step]
        line = own[-1].lineno if own else None
    info: dict[str, Any] = {
        "ok": False,
        "failed_step": step,
        "line": line,
        "traceback": text,
        "exc_type": type(exc).__name__,
        "exc_message": _truncate(str(exc), MAX_MESSAGE_CHARS),
    }
    refusal = _refusal_in(exc, guard)
    if _memory_error_in(exc):
        info["error_kind"] = "memory"
    elif refusal is not None:
        info["error_kind"] = refusal.kind
        info["refusal"] = {"kind": refusal.kind, "action": refusal.action, "target": refusal.target}
    else:
        info["error_kind"] = "exception"
        info["hint"] = _column_hint(exc, namespace.get("df"))
        if (
            isinstance(exc, AttributeError)
            and getattr(exc, "name", None) == "summary"
            and _is_unfitted_model(getattr(exc, "obj", None))
        ):
            info["unfitted_model"] = type(exc.obj).__name__  # type: ignore[attr-defined]
        if isinstance(exc, ModuleNotFoundError):
            info["hint"] = "this module is not installed in the sandbox"
    return info


def _compile_steps(
    codes: Sequence[str], labels: Sequence[str], capture_last: bool, limit: int
) -> tuple[list[Any], list[ast.Module], dict[str, Any] | None]:
    compiled: list[Any] = []
    trees: list[ast.Module] = []
    for index, (code, label) in enumerate(zip(codes, labels, strict=True)):
        filename = f"<{label}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        try:
            tree = rewrite_groupby_targets(ast.parse(code, filename=filename))
            if capture_last and index == len(codes) - 1:
                tree = _capture_last_expression(tree)
            compiled.append(compile(tree, filename, "exec"))
            trees.append(tree)
        except (SyntaxError, ValueError) as exc:
            line = exc.lineno if isinstance(exc, SyntaxError) else None
            message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            return (
                compiled,
                trees,
                {
                    "ok": False,
                    "error_kind": "syntax",
                    "failed_step": index,
                    "line": line,
                    "exc_type": type(exc).__name__,
                    "exc_message": _truncate(message, MAX_MESSAGE_CHARS),
                    "traceback": _truncate("".join(traceback.format_exception_only(type(exc), exc)), limit),
                },
            )
    return compiled, trees, None


def run_job(job: dict[str, Any], root: Path, work: Path, channel: TextIO) -> dict[str, Any]:
    """Run one job and return the result message (without the ``event`` key)."""
    import numpy as np
    import pandas as pd

    limits = job["limits"]
    apply_limits(limits)
    out_limit = int(limits["max_output_chars"])
    output = BoundedOutput(root / "output.txt", out_limit)
    result: dict[str, Any] = {"ok": True, "code_seconds": 0.0, "data_seconds": 0.0}

    started = time.perf_counter()
    try:
        frame = load_table(Path(job["data_path"]))
    except MemoryError:
        return {**result, "ok": False, "error_kind": "memory", "phase": "load"}
    except Exception as exc:
        return {**result, "ok": False, "error_kind": "load", "exc_message": f"{type(exc).__name__}: {exc}"}
    result["data_seconds"] = time.perf_counter() - started

    codes: list[str] = job["codes"]
    labels: list[str] = job["labels"]
    kind: str = job["kind"]
    last = len(codes) - 1
    compiled, trees, syntax_failure = _compile_steps(codes, labels, kind == "model", out_limit)
    if syntax_failure is not None:
        return {**result, **syntax_failure}
    filenames = {f"<{label}>": index for index, label in enumerate(labels)}

    namespace: dict[str, Any] = {
        "__name__": "__main__",
        "__builtins__": builtins,
        "pd": pd,
        "np": np,
        "df": frame,
    }
    del frame
    guard = Guard(str(work))
    sys.stdout = sys.stderr = output
    ballast: bytearray | None = bytearray(BALLAST_BYTES)  # room to report a MemoryError
    guard.install()

    before: Any = None
    try:
        for index, code_obj in enumerate(compiled):
            _send(channel, {"event": "step", "index": index})
            if kind == "transform" and index == last:
                current = namespace.get("df")
                before = current.copy(deep=True) if isinstance(current, pd.DataFrame) else current
            step_started = time.perf_counter()
            try:
                exec(code_obj, namespace)
            except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are results too
                ballast = None
                raise _StepFailure(
                    _failure_info(exc, index, filenames, guard, namespace, out_limit)
                ) from None
            finally:
                result["code_seconds"] += time.perf_counter() - step_started
        ballast = None
        if kind == "transform":
            after = namespace.get("df")
            result.update(describe_result(codes[last], before, after))
            result["preview"] = preview_rows(after)
            result["result_type"] = _type_name(after)
            if isinstance(after, pd.Series):
                after = after.to_frame()
            if isinstance(after, pd.DataFrame):
                result["result_rows"] = int(after.shape[0])
                result["result_columns"] = [str(c) for c in after.columns]
        else:
            result.update(
                _model_result(namespace, _assigned_names(trees[last]), guard, out_limit, last, filenames)
            )
    except _StepFailure as failure:
        result.update(failure.info)
    except MemoryError:
        result.update({"ok": False, "error_kind": "memory", "failed_step": None, "phase": "after"})
    finally:
        del ballast
        output.flush()
    result["violations"] = [
        {"kind": v.kind, "action": v.action, "target": v.target} for v in guard.violations
    ]
    return result


def _model_result(
    namespace: dict[str, Any],
    assigned: list[str],
    guard: Guard,
    limit: int,
    last: int,
    filenames: dict[str, int],
) -> dict[str, Any]:
    found = find_model_result(namespace, assigned)
    if found is None:
        unfitted = _unfitted_model_in(namespace, assigned)
        return {"ok": False, "error_kind": "no_result", "failed_step": last, "unfitted_model": unfitted}
    how, obj = found
    text: str
    try:
        text = str(obj.summary()) if _has_summary(obj) else repr(obj)
    except BaseException as exc:  # noqa: BLE001 - a failing summary() is the user's result
        info = _failure_info(exc, last, filenames, guard, namespace, limit)
        info["phase"] = "summary"
        return info
    return {"summary": _truncate(text, limit), "result_type": _type_name(obj), "result_name": how}


def _watch_parent(root: Path, parent: int) -> None:
    """Leave (removing the job's directory) as soon as the zygote is gone: this process was re-parented."""
    TRUSTED_THREADS.add(threading.get_ident())  # the clean-up below is outside the working directory
    try:
        while os.getppid() == parent:
            time.sleep(0.5)
        shutil.rmtree(root, ignore_errors=True)
    finally:
        os._exit(3)


def _preload() -> None:
    import numpy as np
    import pandas as pd
    import statsmodels.api  # noqa: F401
    import statsmodels.formula.api  # noqa: F401

    from curation import inference  # noqa: F401

    # Touch the lazily imported parts a typical job uses, so no job pays for them.
    frame = pd.DataFrame({"a": np.arange(3.0), "b": ["x", "y", "z"]})
    frame["c"] = frame["a"] * 2
    frame[frame["a"] > 0].copy(deep=True)
    preview_rows(frame)


def _send_control(control: socket.socket, message: dict[str, Any]) -> None:
    control.send(json.dumps(message).encode())


def _job_child(request: dict[str, Any], result_fd: int, stderr_fd: int, zygote_pid: int) -> None:
    """Run in the forked child: become a fresh job process, run the job, report, leave."""
    import numpy as np

    os.setsid()  # its own process group, which the parent kills as a whole
    os.dup2(stderr_fd, 2)
    os.close(stderr_fd)
    channel = os.fdopen(result_fd, "w", encoding="utf-8")
    root, work = Path(request["root"]), Path(request["work"])
    os.chdir(work)
    os.environ.update({"HOME": str(work), "TMPDIR": str(work), "MPLCONFIGDIR": str(work)})
    tempfile.tempdir = None
    np.random.seed()  # a fresh process would not share the template's random state
    threading.Thread(target=_watch_parent, args=(root, zygote_pid), name="parent-watch", daemon=True).start()
    try:
        job = json.loads((root / "job.json").read_text(encoding="utf-8"))
        result = run_job(job, root, work, channel)
    except MemoryError:
        result = {"ok": False, "error_kind": "memory", "phase": "sandbox"}
    except BaseException as exc:  # noqa: BLE001 - the parent turns this into SandboxError
        result = {"ok": False, "error_kind": "internal", "exc_message": f"{type(exc).__name__}: {exc}"}
    TRUSTED_THREADS.add(threading.get_ident())  # the user's code is over; what follows is the sandbox's
    try:
        try:
            _send(channel, {"event": "result", **result})
        except (TypeError, ValueError) as exc:
            _send(
                channel, {"event": "result", "ok": False, "error_kind": "internal", "exc_message": str(exc)}
            )
    except OSError:  # the parent is gone, so nobody else will remove the job's directory
        shutil.rmtree(root, ignore_errors=True)
    os._exit(0)


def _reap(pid: int, pending: set[int], wait_s: float = 5.0) -> int | None:
    """Collect a finished (normally just killed) job's exit status without blocking the zygote for long."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            pending.add(pid)  # reaped later, so it does not stay a zombie
            return None
        time.sleep(0.005)


def _reap_pending(pending: set[int]) -> None:
    for pid in list(pending):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            pending.discard(pid)


def zygote_main(control_fd: int) -> None:
    """The template process: import once, then fork one fresh child per job.

    It never runs user code itself, so every child starts from the same clean state. Requests arrive as
    datagrams on a Unix ``SOCK_SEQPACKET`` socket (one JSON object each, file descriptors attached):
    ``{"op": "spawn", "root": ..., "work": ...}`` with the result pipe and the stderr file, answered with
    ``{"pid": ...}``; ``{"op": "reap", "pid": ...}``, answered with ``{"status": <exit code or null>}``. End of
    file on the socket (the parent exited or closed it) ends the zygote.
    """
    control = socket.socket(fileno=control_fd)
    home = os.getcwd()  # the parent made this directory for the zygote; it goes when the zygote goes
    sys.dont_write_bytecode = True
    try:
        _preload()
    except BaseException as exc:  # noqa: BLE001 - report anything, then leave
        _send_control(control, {"event": "startup_error", "message": f"{type(exc).__name__}: {exc}"})
        os._exit(2)
    # The project modules it imported, with their modification times, so the parent can tell when a developer
    # has edited them and this zygote is out of date.
    own_sources = sorted(
        [path, os.stat(path).st_mtime_ns]
        for name, module in list(sys.modules.items())
        if (name == "curation" or name.startswith("curation."))
        and (path := getattr(module, "__file__", None))
    )
    _send_control(control, {"event": "ready", "pid": os.getpid(), "sources": own_sources})
    pending: set[int] = set()
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 65536, 4)
        except OSError:
            break
        if not message:
            break
        try:
            request = json.loads(message)
        except ValueError:
            for fd in fds:
                os.close(fd)
            _send_control(control, {"error": "bad request"})
            continue
        if request.get("op") == "spawn" and len(fds) == 2:
            zygote_pid = os.getpid()
            pid = os.fork()
            if pid == 0:
                try:
                    control.close()
                    _job_child(request, fds[0], fds[1], zygote_pid)
                finally:
                    os._exit(70)
            for fd in fds:
                os.close(fd)
            _send_control(control, {"pid": pid})
        elif request.get("op") == "reap":
            _send_control(control, {"status": _reap(int(request["pid"]), pending)})
        else:
            for fd in fds:
                os.close(fd)
            _send_control(control, {"error": "bad request"})
        _reap_pending(pending)
    shutil.rmtree(home, ignore_errors=True)
    os._exit(0)


def main(argv: list[str]) -> None:
    """Entry point of the zygote: ``python -I -X faulthandler _sandbox_child.py --zygote <control fd>``."""
    project_root = str(Path(__file__).resolve().parent.parent)
    if project_root not in sys.path:
        sys.path.insert(0, project_root)
    if len(argv) != 3 or argv[1] != "--zygote":
        raise SystemExit("usage: _sandbox_child.py --zygote <control fd>")
    zygote_main(int(argv[2]))


if __name__ == "__main__":
    main(sys.argv)
