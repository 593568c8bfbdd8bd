"""Run an analyst's pandas code on the dataset in an isolated child process and report what happened.

Each check is one job in its own fresh process (:mod:`curation._sandbox_child`), with a minimal environment
(nothing inherited from the app, so no credentials), a fresh temporary working directory that is removed
afterwards, and its own process group:

* **limits**: the job sets ``RLIMIT_AS`` (memory), ``RLIMIT_CPU`` (backstop), ``RLIMIT_FSIZE`` and
  ``RLIMIT_CORE`` on itself when it starts; the parent enforces the wall clock and kills the whole process group
  when it runs out;
* **no network, no new processes, no writes outside the working directory**: an audit hook installed after
  the libraries are imported and the data is loaded refuses them with a ``PermissionError`` whose message starts
  with :data:`~curation._sandbox_child.GUARD_MARKER`; reads stay allowed so late imports work;
* **only JSON comes back**, as lines on a pipe; what the code prints is captured separately, bounded.

Audit hooks are a tripwire against mistakes and casual misuse, not a boundary against a determined attacker
(the Python documentation says as much); the operating-system limits and the process-group kill bound what a
runaway job can cost. Run the app in a container if hostile users are expected.

Starting an interpreter that imports pandas and statsmodels takes one to two seconds, so the sandbox keeps a
*zygote*: a template process that has done those imports, never runs user code and forks one fresh child per
job (a fork server, like multiprocessing's ``forkserver``). Each job is its own process that starts from the
same clean state and ends with the job, so nothing leaks from one job to the next; forking costs milliseconds,
so back-to-back and concurrent checks do not wait for imports. The zygote exits when its control socket
closes (the parent exited), and each job exits when its zygote is gone. Call :func:`prewarm` at application
start so the first check does not pay for the imports either.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import pickle
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from curation import _sandbox_child as child
from curation.errors import SandboxError
from curation.inference import FrameChange
from curation.specs import ColumnMapping

__all__ = [
    "DEFAULT_LIMITS",
    "ErrorKind",
    "ModelCheck",
    "SandboxLimits",
    "TransformCheck",
    "check_model",
    "check_transform",
    "fast_copy_path",
    "prepare_fast_copy",
    "prewarm",
    "rewrite_groupby_code",
    "shutdown",
]

logger = logging.getLogger(__name__)

ErrorKind = Literal[
    "syntax", "exception", "timeout", "memory", "network", "filesystem", "forbidden", "no_result", "crashed"
]
"""Why a check failed.

``forbidden``: the code tried to start a process, signal another process or load a native library.
``no_result``: a model check ran but left nothing that looks like a fitted result.
"""

STARTUP_TIMEOUT_S = 120.0
"""How long the zygote may take to import its libraries before the sandbox counts as broken."""
MAX_PROTOCOL_BYTES = 64 * 1024 * 1024
MAX_CONCURRENT_JOBS = max(2, os.cpu_count() or 2)
"""Jobs beyond this many wait for a free slot, so a crowd of users cannot fork a crowd of 2 GB processes."""
EXIT_GRACE_S = 2.0


class SandboxLimits(BaseModel):
    """Resource limits of one sandbox job."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(
        default=30.0, gt=0, description="wall clock for the whole job, data loading included"
    )
    memory_mb: int = Field(
        default=2048,
        gt=0,
        description="address space (RLIMIT_AS) the job may add on top of the pre-loaded interpreter "
        "(pandas, numpy and statsmodels already map about 0.5 GB)",
    )
    max_output_chars: int = Field(
        default=20_000,
        gt=0,
        description="captured stdout/stderr, tracebacks and summaries are truncated to this",
    )
    max_file_mb: int = Field(default=512, gt=0, description="largest file the job may write (RLIMIT_FSIZE)")


DEFAULT_LIMITS = SandboxLimits()


class _CheckBase(BaseModel):
    ok: bool
    code: str = Field(default="", description="the code this result is about (a check vouches for nothing else)")
    error: str | None = Field(default=None, description="a sentence for the analyst: what failed and where")
    error_kind: ErrorKind | None = None
    failed_step: int | None = Field(
        default=None, description="0-based index in the chain (earlier steps first)"
    )
    traceback: str | None = Field(default=None, description="frames of the user's code only")
    stdout: str = ""
    code_seconds: float = Field(default=0.0, description="time spent in the user's statements")
    data_seconds: float = Field(default=0.0, description="time the child spent loading the data table")
    total_seconds: float = Field(default=0.0, description="wall time of the whole check seen by the caller")


class TransformCheck(_CheckBase):
    """What running a transform's code (after its parents) did."""

    change: FrameChange | None = None
    suggested_verb: str | None = None
    suggested_mapping: list[ColumnMapping] = Field(default_factory=list)
    preview: list[dict[str, Any]] = Field(default_factory=list, description="first 5 rows, JSON-safe")
    result_rows: int | None = Field(default=None, description="rows of the frame left in df")
    result_columns: list[str] = Field(default_factory=list, description="columns of the frame left in df")
    result_type: str | None = Field(default=None, description="type of the object left in df")


class ModelCheck(_CheckBase):
    """What running a model's code (after the transforms) produced."""

    summary: str | None = Field(default=None, description="text of .summary() of the result, or its repr")
    result_type: str | None = None


# --------------------------------------------------------------------------------------------------------------
# The data table's fast copy.
# --------------------------------------------------------------------------------------------------------------


def fast_copy_path(data_path: Path) -> Path:
    """Where :func:`prepare_fast_copy` puts the fast-loading copy of ``data_path``."""
    return child.fast_copy_path(Path(data_path))


def prepare_fast_copy(data_path: Path) -> Path:
    """Write a pickled copy of the CSV next to it so sandbox jobs load it in milliseconds.

    The copy records the CSV's size and modification time; a job uses it only while they still match, and
    otherwise reads the CSV with pandas defaults (as BLADE does), so a stale copy is never used.

    Args:
        data_path: the dataset's ``data.csv``.

    Returns:
        The path of the copy.

    Raises:
        SandboxError: the CSV cannot be read or the copy cannot be written.
    """
    import pandas as pd

    data_path = Path(data_path)
    target = fast_copy_path(data_path)
    try:
        stat = data_path.stat()
        frame = pd.read_csv(data_path)
        payload = {
            "format": child.FAST_COPY_FORMAT,
            "csv_size": stat.st_size,
            "csv_mtime_ns": stat.st_mtime_ns,
            "frame": frame,
        }
        fd, tmp_name = tempfile.mkstemp(prefix=target.name, dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(payload, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp_name, target)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise SandboxError(f"Could not prepare a fast copy of {data_path}: {exc}") from exc
    return target


def rewrite_groupby_code(code: str) -> str:
    """BLADE's group-by rewrite as source text: ``dfX = <...>.groupby(...)`` becomes ``dfX_grp = ...``.

    The sandbox applies the same rewrite to the syntax tree (keeping line numbers); this text form is for
    showing or exporting code as BLADE would run it.
    """
    import ast

    return ast.unparse(child.rewrite_groupby_targets(ast.parse(code)))


# --------------------------------------------------------------------------------------------------------------
# The zygote (a fork server) and the jobs it forks.
# --------------------------------------------------------------------------------------------------------------


class _ZygoteGone(Exception):
    """The zygote exited or stopped answering."""


@dataclass(eq=False)
class _Outcome:
    events: list[dict[str, Any]]
    timed_out: bool
    returncode: int | None
    stderr: str

    @property
    def result(self) -> dict[str, Any] | None:
        return next((e for e in reversed(self.events) if e.get("event") == "result"), None)

    @property
    def last_step(self) -> int | None:
        steps = [
            e["index"] for e in self.events if e.get("event") == "step" and isinstance(e.get("index"), int)
        ]
        return steps[-1] if steps else None


def _child_env(home: Path) -> dict[str, str]:
    """The whole environment of the zygote and its jobs: nothing inherited, so no credentials leak in."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(home),
        "MPLCONFIGDIR": str(home),
        "MPLBACKEND": "Agg",
        # One BLAS thread and no allocator background thread: the zygote must be single-threaded to fork
        # safely, and one thread keeps CPU use predictable and the address space small under RLIMIT_AS.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        "JE_ARROW_MALLOC_CONF": "background_thread:false",
    }


def _sources_stamp(paths: Sequence[str]) -> tuple[int, ...]:
    """Modification times of the project modules the zygote imported; a change means it must be replaced."""
    stamp = []
    for path in paths:
        try:
            stamp.append(os.stat(path).st_mtime_ns)
        except OSError:
            stamp.append(0)
    return tuple(stamp)


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - limit))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


class _Zygote:
    """One template process: imported once, forks a fresh child per job. Requests are serialised."""

    def __init__(self, proc: subprocess.Popen[bytes], control: socket.socket, root: Path) -> None:
        self.proc = proc
        self.root = root
        self.sources: list[str] = []
        self.stamp: tuple[int, ...] = ()
        self.users = 0
        self._control = control
        self._lock = threading.Lock()
        self._ready = False

    @classmethod
    def start(cls) -> _Zygote:
        root = Path(tempfile.mkdtemp(prefix="forkpaths-zygote-"))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            with open(root / "stderr.txt", "wb") as stderr:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-I",
                        "-X",
                        "faulthandler",
                        str(Path(child.__file__).resolve()),
                        "--zygote",
                        str(theirs.fileno()),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    cwd=root,
                    env=_child_env(root),
                    start_new_session=True,
                    pass_fds=(theirs.fileno(),),
                )
        except BaseException:
            ours.close()
            shutil.rmtree(root, ignore_errors=True)
            raise
        finally:
            theirs.close()
        return cls(proc, ours, root)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _receive(self, timeout: float) -> dict[str, Any]:
        self._control.settimeout(timeout)
        try:
            data = self._control.recv(65536)
        except OSError as exc:  # includes the timeout
            raise _ZygoteGone(f"no answer ({exc or type(exc).__name__})") from exc
        if not data:
            raise _ZygoteGone(_tail(self.root / "stderr.txt").strip() or "it exited")
        message = json.loads(data)
        if not isinstance(message, dict):
            raise _ZygoteGone(f"unexpected answer {message!r}")
        return message

    def wait_ready(self, timeout: float) -> None:
        with self._lock:
            if self._ready:
                return
            message = self._receive(timeout)
            if message.get("event") == "startup_error":
                raise SandboxError(f"The sandbox could not start: {message.get('message')}")
            if message.get("event") != "ready":
                raise _ZygoteGone(f"unexpected first message {message!r}")
            sources = [
                entry for entry in message.get("sources") or [] if isinstance(entry, list) and len(entry) == 2
            ]
            self.sources = [str(path) for path, _ in sources]
            self.stamp = tuple(int(mtime) for _, mtime in sources)
            self._ready = True

    @property
    def stale(self) -> bool:
        """The project code it imported has changed on disk since (a developer edited it)."""
        return self._ready and _sources_stamp(self.sources) != self.stamp

    def spawn(self, root: Path, work: Path, result_fd: int, stderr_fd: int) -> int:
        request = json.dumps({"op": "spawn", "root": str(root), "work": str(work)}).encode()
        with self._lock:
            try:
                socket.send_fds(self._control, [request], [result_fd, stderr_fd])
            except OSError as exc:
                raise _ZygoteGone(str(exc)) from exc
            reply = self._receive(30.0)
        pid = reply.get("pid")
        if not isinstance(pid, int):
            raise _ZygoteGone(f"could not start a job: {reply!r}")
        return pid

    def reap(self, pid: int) -> int | None:
        """The exit code of a job that has ended (negative: killed by that signal); None if unknown."""
        with self._lock:
            try:
                self._control.send(json.dumps({"op": "reap", "pid": pid}).encode())
                status = self._receive(30.0).get("status")
            except (OSError, _ZygoteGone):
                return None
        return status if isinstance(status, int) else None

    def close(self) -> None:
        try:
            self._control.close()  # the zygote leaves on end of file; its idle jobs follow via their watchdog
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail like this
                logger.warning("sandbox zygote %s did not exit after SIGKILL", self.proc.pid)
            shutil.rmtree(self.root, ignore_errors=True)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


class _Sandbox:
    """Owns the zygote and the running jobs. Thread-safe: Streamlit runs checks from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zygote: _Zygote | None = None
        self._retired: list[_Zygote] = []
        self._jobs: set[int] = set()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_JOBS)

    def _acquire(self) -> _Zygote:
        with self._lock:
            zygote = self._zygote
            if zygote is not None and (not zygote.alive or zygote.stale):
                self._retire_locked(zygote)
                zygote = None
            if zygote is None:
                try:
                    zygote = self._zygote = _Zygote.start()
                except OSError as exc:
                    raise SandboxError(f"The sandbox could not start a Python process: {exc}") from exc
            zygote.users += 1
        return zygote

    def _release(self, zygote: _Zygote, *, broken: bool = False) -> None:
        with self._lock:
            zygote.users -= 1
            if broken and zygote is self._zygote:
                self._retire_locked(zygote)
            for old in [z for z in self._retired if z.users <= 0]:
                self._retired.remove(old)
                old.close()

    def _retire_locked(self, zygote: _Zygote) -> None:
        # Jobs still running on it keep it alive until they are done.
        if zygote is self._zygote:
            self._zygote = None
        if zygote.users <= 0:
            zygote.close()
        elif zygote not in self._retired:
            self._retired.append(zygote)

    def prewarm(self, wait: bool, timeout: float) -> None:
        zygote = self._acquire()
        try:
            if wait:
                zygote.wait_ready(timeout)
        except _ZygoteGone as exc:
            self._release(zygote, broken=True)
            raise SandboxError(f"The sandbox could not start: {exc}") from exc
        self._release(zygote)

    def run(self, root: Path, work: Path, timeout: float) -> _Outcome:
        """Fork a job for ``root/job.json`` and collect what it reports (waiting for a free slot first)."""
        with self._slots:
            return self._run(root, work, timeout)

    def _run(self, root: Path, work: Path, timeout: float) -> _Outcome:
        # Retry once on a broken zygote.
        failure: _ZygoteGone | None = None
        for _attempt in range(2):
            zygote = self._acquire()
            try:
                zygote.wait_ready(STARTUP_TIMEOUT_S)
                pid, read_fd = self._spawn(zygote, root, work)
            except _ZygoteGone as exc:
                self._release(zygote, broken=True)
                failure = exc
                logger.warning("sandbox zygote was not usable (%s); starting another", exc)
                continue
            except BaseException:
                self._release(zygote, broken=True)
                raise
            try:
                return self._collect(zygote, pid, read_fd, root, timeout)
            finally:
                os.close(read_fd)
                with self._lock:
                    self._jobs.discard(pid)
                self._release(zygote)
        raise SandboxError(f"The sandbox could not start a Python process: {failure}") from failure

    def _spawn(self, zygote: _Zygote, root: Path, work: Path) -> tuple[int, int]:
        """Ask the zygote for a job process; returns its pid and the read end of its result pipe."""
        read_fd, write_fd = os.pipe()
        try:
            stderr_fd = os.open(
                root / "stderr.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600
            )
            try:
                pid = zygote.spawn(root, work, write_fd, stderr_fd)
            finally:
                os.close(stderr_fd)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)  # the job holds the only writer now: its exit is our end of file
        with self._lock:
            self._jobs.add(pid)
        return pid, read_fd

    def _collect(self, zygote: _Zygote, pid: int, fd: int, root: Path, timeout: float) -> _Outcome:
        """Read the job's events until it exits or the wall clock runs out, then make sure it is gone."""
        deadline = time.monotonic() + timeout
        buffer = bytearray()
        events: list[dict[str, Any]] = []
        received = 0
        timed_out = False
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                if any(e.get("event") == "result" for e in events):
                    # The result is in and the job is leaving; give it a moment, no more.
                    deadline = min(deadline, time.monotonic() + EXIT_GRACE_S)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = not any(e.get("event") == "result" for e in events)
                    break
                if not selector.select(remaining):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                received += len(chunk)
                if received > MAX_PROTOCOL_BYTES:
                    logger.warning("sandbox job %s flooded its result pipe; killing it", pid)
                    break
                buffer.extend(chunk)
                *lines, rest = buffer.split(b"\n")
                buffer = bytearray(rest)
                for line in lines:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue  # not ours: ignore rather than trust
                    if isinstance(event, dict):
                        events.append(event)
        # Killed before it is reaped, so its process id cannot have been reused. A job orphaned by a dead
        # zygote is not ours to kill any more: its watchdog ends it.
        if zygote.alive:
            _kill_group(pid)
        returncode = zygote.reap(pid)
        return _Outcome(
            events=events, timed_out=timed_out, returncode=returncode, stderr=_tail(root / "stderr.txt")
        )

    def shutdown(self, *, jobs: bool) -> None:
        """Stop the zygote; with ``jobs`` also kill running jobs (at exit), else let them finish first."""
        with self._lock:
            if not jobs:
                if self._zygote is not None:
                    self._retire_locked(self._zygote)
                return
            for pid in self._jobs:
                _kill_group(pid)
            zygotes = [z for z in (self._zygote, *self._retired) if z is not None]
            self._zygote = None
            self._retired = []
        for zygote in zygotes:
            zygote.close()

    def forget_after_fork(self) -> None:
        # A forked copy of this process must not kill or reuse the parent's zygote and jobs.
        self._lock = threading.Lock()
        self._zygote = None
        self._retired = []
        self._jobs = set()
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_JOBS)


_SANDBOX = _Sandbox()
atexit.register(_SANDBOX.shutdown, jobs=True)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_SANDBOX.forget_after_fork)


def prewarm(*, wait: bool = False, timeout: float = STARTUP_TIMEOUT_S) -> None:
    """Start the sandbox's template process now rather than at the first check (call at application start).

    Args:
        wait: block until it has imported its libraries and can fork jobs.
        timeout: how long to wait when ``wait`` is true.

    Raises:
        SandboxError: the process could not start.
    """
    _SANDBOX.prewarm(wait, timeout)


def shutdown() -> None:
    """Stop the template process; running checks still finish, and the next check starts a new one."""
    _SANDBOX.shutdown(jobs=False)


# --------------------------------------------------------------------------------------------------------------
# Turning what the child said into a check.
# --------------------------------------------------------------------------------------------------------------


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _signal_name(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    description = signal.strsignal(number)
    return f"{name} ({description.lower()})" if description else name


def _sentence(text: str) -> str:
    text = text.rstrip()
    return text if text.endswith((".", "?", "!")) else text + "."


@dataclass(frozen=True)
class _Steps:
    """Human labels of the steps of one check."""

    labels: tuple[str, ...]
    own: str

    @classmethod
    def for_transform(cls, parent_count: int, names: Sequence[str] | None) -> _Steps:
        total = parent_count + 1
        labels = tuple(_earlier_label("parent transform", i, total, names) for i in range(parent_count))
        return cls(labels=(*labels, "this transform's code"), own="this transform's code")

    @classmethod
    def for_model(cls, transform_count: int, names: Sequence[str] | None) -> _Steps:
        total = transform_count + 1
        labels = tuple(_earlier_label("transform", i, total, names) for i in range(transform_count))
        return cls(labels=(*labels, "the model code"), own="the model code")

    def label(self, step: int | None) -> str | None:
        return self.labels[step] if step is not None and 0 <= step < len(self.labels) else None

    def where(self, step: int | None, line: int | None) -> str | None:
        """``line 2 of this transform's code`` / ``line 2 of parent transform 'x' (step 1 of 3)``."""
        label = self.label(step)
        if label is None:
            return None
        return f"line {line} of {label}" if line else label


def _earlier_label(kind: str, index: int, total: int, names: Sequence[str] | None) -> str:
    if names is not None and index < len(names) and names[index]:
        return f"{kind} '{names[index]}' (step {index + 1} of {total})"
    return f"{kind} {index + 1} (step {index + 1} of {total})"


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _describe_failure(result: dict[str, Any], steps: _Steps, limits: SandboxLimits) -> str:
    kind = result.get("error_kind")
    step = result.get("failed_step")
    line = result.get("line")
    label = steps.label(step)
    where = steps.where(step, line)
    at = f" ({where})" if where else ""
    if kind == "syntax":
        message = result.get("exc_message") or "invalid syntax"
        if step == len(steps.labels) - 1 or label is None:
            return _sentence(f"Line {line} of {label or 'the code'} has a syntax error: {message}")
        return _sentence(f"{_capitalise(label)} has a syntax error at line {line}: {message}")
    if kind == "memory":
        if result.get("phase") == "load":
            return (
                f"Loading the data table needed more than the {limits.memory_mb} MB memory limit; "
                "raise the sandbox's memory limit."
            )
        return f"The code tried to use more than {limits.memory_mb} MB of memory and was stopped{at}."
    if kind in ("network", "filesystem", "forbidden"):
        refusal = result.get("refusal") or {}
        action, target = refusal.get("action", "do something"), refusal.get("target", "?")
        if kind == "network":
            return f"The code tried to open a network connection (to {target}); the sandbox allows no network access{at}."
        if kind == "filesystem":
            return f"The code tried to {action} {target}, outside its working directory{at}."
        return (
            f"The code tried to {action} ({target}); the sandbox does not allow starting programs, signalling other "
            f"processes or loading native libraries{at}."
        )
    if kind == "no_result":
        if result.get("unfitted_model"):
            return _unfitted_sentence(result["unfitted_model"])
        return (
            "The model code ran but left no result: assign the fitted result to a variable, "
            "e.g. results = smf.ols('y ~ x', data=df).fit()."
        )
    # A plain exception (including SystemExit or KeyboardInterrupt raised by the code).
    if result.get("unfitted_model"):
        return _unfitted_sentence(result["unfitted_model"], where)
    exc_type = result.get("exc_type") or "an error"
    message = (result.get("exc_message") or "").strip()
    hint = result.get("hint")
    raised = f"{exc_type}: {message}" if message else exc_type
    if hint:
        raised += f" ({hint})"
    if result.get("phase") == "summary":
        return _sentence(f"Calling .summary() on the model result raised {raised}")
    if label is None:
        return _sentence(f"The code raised {raised}")
    if step == len(steps.labels) - 1:
        return _sentence(
            f"Line {line} of {label} raised {raised}" if line else f"{_capitalise(label)} raised {raised}"
        )
    return _sentence(f"{_capitalise(label)} raised {raised}" + (f" at line {line}" if line else ""))


def _unfitted_sentence(model_name: str, where: str | None = None) -> str:
    at = f" ({where})" if where else ""
    return (
        f"The code made a model ({model_name}) but did not fit it{at}: call .fit() and keep the fitted result, "
        "e.g. results = smf.ols('y ~ x', data=df).fit(); results.summary()."
    )


def _describe_death(outcome: _Outcome, steps: _Steps, limits: SandboxLimits) -> tuple[str, str]:
    """(error_kind, sentence) for a child that left without a result."""
    label = steps.label(outcome.last_step)
    during = f" (it was running {label})" if label else ""
    if outcome.timed_out and label is None:
        return "timeout", (
            f"Loading the data table took longer than the {_seconds(limits.timeout_s)} limit, so the code "
            "did not run; raise the sandbox's time limit or prepare the table's fast copy."
        )
    if outcome.timed_out:
        return (
            "timeout",
            f"The code ran longer than the {_seconds(limits.timeout_s)} limit and was stopped{during}.",
        )
    code = outcome.returncode
    if code is not None and code < 0 and -code == signal.SIGXCPU:
        return "timeout", (
            f"The code used more CPU time than the {_seconds(limits.timeout_s)} limit allows and was stopped{during}."
        )
    if any(marker in outcome.stderr for marker in child.MEMORY_ERROR_MARKERS):
        return (
            "memory",
            f"The code tried to use more than {limits.memory_mb} MB of memory and was stopped{during}.",
        )
    if code is not None and code < 0:
        return "crashed", f"The sandbox process crashed with {_signal_name(-code)}{during}."
    return "crashed", (
        f"The sandbox process exited with status {code} before reporting a result{during}; "
        "the code may have called os._exit()."
    )


def _crash_report(outcome: _Outcome, limit: int) -> str | None:
    """faulthandler's dump of a crashed job, keeping only the frames of the user's code."""
    lines = [
        line
        for line in outcome.stderr.strip().splitlines()
        if not line.lstrip().startswith("File ") or 'File "<' in line
    ]
    text = "\n".join(lines).strip()
    return text[-limit:] if text else None


# --------------------------------------------------------------------------------------------------------------
# The public checks.
# --------------------------------------------------------------------------------------------------------------


def _run(
    kind: str, data_path: Path, codes: Sequence[str], steps: _Steps, limits: SandboxLimits
) -> tuple[_Outcome, str]:
    data_path = Path(data_path).resolve()
    if not data_path.is_file():
        raise SandboxError(f"The data table {data_path} does not exist, so the code cannot be checked.")
    job = {
        "kind": kind,
        "data_path": str(data_path),
        "codes": [str(code) for code in codes],
        "labels": list(steps.labels),
        "limits": limits.model_dump(),
    }
    root = Path(tempfile.mkdtemp(prefix="forkpaths-sandbox-"))
    try:
        work = root / "work"
        work.mkdir(mode=0o700)
        (root / "job.json").write_text(json.dumps(job), encoding="utf-8")
        outcome = _SANDBOX.run(root, work, limits.timeout_s)
        output = _read_output(root / "output.txt", limits.max_output_chars)
    except OSError as exc:
        raise SandboxError(f"The sandbox could not prepare a job: {exc}") from exc
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result = outcome.result
    if result is not None and result.get("error_kind") in ("load", "internal"):
        message = result.get("exc_message") or "unknown error"
        if result.get("error_kind") == "load":
            raise SandboxError(f"The sandbox could not load the data table {data_path}: {message}")
        raise SandboxError(f"The sandbox failed while running the check: {message}")
    return outcome, output


def _read_output(path: Path, limit: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(limit + 100)
    except OSError:
        return ""


def _common_fields(outcome: _Outcome, output: str, steps: _Steps, limits: SandboxLimits) -> dict[str, Any]:
    result = outcome.result
    if result is None:
        kind, sentence = _describe_death(outcome, steps, limits)
        return {
            "ok": False,
            "error": sentence,
            "error_kind": kind,
            "failed_step": outcome.last_step,
            "traceback": _crash_report(outcome, limits.max_output_chars) if kind == "crashed" else None,
            "stdout": output,
        }
    ok = bool(result.get("ok"))
    fields: dict[str, Any] = {
        "ok": ok,
        "error": None if ok else _describe_failure(result, steps, limits),
        "error_kind": None if ok else result.get("error_kind"),
        "failed_step": None if ok else result.get("failed_step"),
        "traceback": None if ok else result.get("traceback"),
        "stdout": output,
        "code_seconds": float(result.get("code_seconds") or 0.0),
        "data_seconds": float(result.get("data_seconds") or 0.0),
    }
    refused = result.get("violations") or []
    if ok and refused:
        # The code caught the refusal and went on; still tell the analyst.
        notes = "".join(f"[sandbox] refused: {v.get('action')} {v.get('target')}\n" for v in refused)
        fields["stdout"] = notes + output
    if result.get("inference_error"):
        logger.warning("transform inference failed in the sandbox: %s", result["inference_error"])
    return fields


def check_transform(
    *,
    data_path: Path,
    parent_codes: Sequence[str],
    code: str,
    limits: SandboxLimits = DEFAULT_LIMITS,
    parent_names: Sequence[str] | None = None,
) -> TransformCheck:
    """Run a transform's parents and then its code on the data in the sandbox.

    The data is read into ``df``; each code runs as statements with ``pd``, ``np`` and ``df`` bound, after
    BLADE's group-by rewrite (:func:`rewrite_groupby_code`). The frame before this transform's code is compared
    with what the code left in ``df`` to describe the change and suggest a verb and mapping.

    Args:
        data_path: the dataset's CSV (its fast copy is used when current, see :func:`prepare_fast_copy`).
        parent_codes: the codes of the transforms that run before, in order.
        code: the transform's own code.
        limits: time, memory and output limits of the job.
        parent_names: optional spec names of the parents, used in error messages.

    Returns:
        The check; a failure of the user's code is a check with ``ok=False``, never an exception.

    Raises:
        SandboxError: the sandbox itself could not run (no Python process, unreadable data table).
    """
    started = time.perf_counter()
    steps = _Steps.for_transform(len(parent_codes), parent_names)
    outcome, output = _run("transform", data_path, [*parent_codes, code], steps, limits)
    fields = _common_fields(outcome, output, steps, limits)
    result = outcome.result or {}
    if fields["ok"]:
        change = result.get("change")
        fields.update(
            change=FrameChange.model_validate(change) if change else None,
            suggested_verb=result.get("suggested_verb"),
            suggested_mapping=[
                ColumnMapping.model_validate(m) for m in result.get("suggested_mapping") or []
            ],
            preview=result.get("preview") or [],
            result_rows=result.get("result_rows"),
            result_columns=result.get("result_columns") or [],
            result_type=result.get("result_type"),
        )
    return TransformCheck(**fields, total_seconds=time.perf_counter() - started)


def check_model(
    *,
    data_path: Path,
    transform_codes: Sequence[str],
    code: str,
    limits: SandboxLimits = DEFAULT_LIMITS,
    transform_names: Sequence[str] | None = None,
) -> ModelCheck:
    """Run the transforms and then a model's code in the sandbox and return the fitted result's summary.

    The result is the first of ``model``, ``results``, ``result``, ``res``, ``fit``, ``fitted``, ``m`` that has a
    ``.summary()``; else the last assigned variable with one; else the value of the code's last expression.
    An unfitted model (``smf.ols(...)`` without ``.fit()``) is reported as such.

    Args:
        data_path: the dataset's CSV.
        transform_codes: the codes of the transforms of the analysis path, in order.
        code: the model's code.
        limits: time, memory and output limits of the job.
        transform_names: optional spec names of the transforms, used in error messages.

    Returns:
        The check; a failure of the user's code is a check with ``ok=False``, never an exception.

    Raises:
        SandboxError: the sandbox itself could not run.
    """
    started = time.perf_counter()
    steps = _Steps.for_model(len(transform_codes), transform_names)
    outcome, output = _run("model", data_path, [*transform_codes, code], steps, limits)
    fields = _common_fields(outcome, output, steps, limits)
    result = outcome.result or {}
    if fields["ok"]:
        fields.update(summary=result.get("summary"), result_type=result.get("result_type"))
    return ModelCheck(**fields, total_seconds=time.perf_counter() - started)
