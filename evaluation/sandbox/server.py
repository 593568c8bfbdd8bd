"""The parent side: the zygote (a fork server), the running jobs, and :func:`run_job` / :func:`start_job`.

Thread-safe: Streamlit runs checks from several threads. Each job is forked by the zygote from the same clean,
pre-imported state, so a job costs milliseconds instead of the one to two seconds of importing pandas. The
job's description, its output file and its stderr are anonymous temporary files handed over as descriptors, and
the data file is opened read-only here and handed over the same way: the job never learns a path of this
machine, and nothing is left on disk if the application dies.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

from evaluation.errors import SandboxError
from evaluation.sandbox import isolation
from evaluation.sandbox.limits import DEFAULT_LIMITS, SandboxLimits
from evaluation.sandbox.outcome import Outcome
from evaluation.sandbox.runtime import fast_copy_path

__all__ = ["JobHandle", "Outcome", "prewarm", "run_job", "shutdown", "start_job"]

logger = logging.getLogger("evaluation.sandbox")

STARTUP_TIMEOUT_S = 120.0
"""How long the zygote may take to import its libraries before the sandbox counts as broken."""
MAX_PROTOCOL_BYTES = 64 * 1024 * 1024
MAX_CONCURRENT_JOBS = max(4, 2 * (os.cpu_count() or 2))
"""Jobs beyond this many wait for a free slot, so a crowd of users cannot fork a crowd of 2 GB processes."""
EXIT_GRACE_S = 2.0
ZYGOTE_SCRIPT = Path(__file__).resolve().with_name("zygote.py")

T = TypeVar("T")
U = TypeVar("U")


class _ZygoteGone(Exception):
    """The zygote exited or stopped answering."""


def _sources_stamp(paths: Sequence[str]) -> tuple[int, ...]:
    stamp = []
    for path in paths:
        try:
            stamp.append(os.stat(path).st_mtime_ns)
        except OSError:
            stamp.append(0)
    return tuple(stamp)


def _read_fd(fd: int, limit: int) -> str:
    """The first ``limit`` bytes written to an anonymous file (the writer shares its offset, so pread)."""
    try:
        return os.pread(fd, limit, 0).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _tail_fd(fd: int, limit: int = 4000) -> str:
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, limit, max(0, size - limit)).decode("utf-8", errors="replace")
    except OSError:
        return ""


class _Launcher:
    """Starts zygotes from one thread that lives as long as the application.

    bubblewrap's ``--die-with-parent`` uses the parent-death signal, which fires when the *thread* that started
    the process ends; checks run in short-lived threads, so the zygote is started from this one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[tuple[tuple[Any, ...], dict[str, Any], list[Any], threading.Event]] = []
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._requests:
                    self._wake.wait()
                args, kwargs, box, done = self._requests.pop(0)
            try:
                box.append(subprocess.Popen(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box.append(exc)
            done.set()

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        box: list[Any] = []
        done = threading.Event()
        with self._wake:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="sandbox-launcher", daemon=True)
                self._thread.start()
            self._requests.append((args, kwargs, box, done))
            self._wake.notify()
        done.wait()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]  # type: ignore[no-any-return]

    def forget_after_fork(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._requests = []
        self._thread = None


_LAUNCHER = _Launcher()


class _Zygote:
    """One template process: imported once, forks a fresh job per request. Requests are serialised."""

    def __init__(self, proc: subprocess.Popen[bytes], control: socket.socket, stderr: BinaryIO,
                 home: Path | None, isolated: bool) -> None:
        self.proc = proc
        self.isolated = isolated
        self.hidden = isolation.hidden_paths()  # what bwrap_command() left unmounted when it started
        self.home = home
        self.sources: list[str] = []
        self.stamp: tuple[int, ...] = ()
        self.users = 0
        self._stderr = stderr
        self._control = control
        self._lock = threading.Lock()
        self._ready = False

    @classmethod
    def start(cls, isolated: bool) -> _Zygote:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the zygote
        home: Path | None = None
        try:
            tail = [str(ZYGOTE_SCRIPT), "--zygote", str(theirs.fileno()), "--mode",
                    "bwrap" if isolated else "process"]
            if isolated:
                argv, cwd, env = [*isolation.bwrap_command(), *tail], "/", isolation.child_env("/tmp")
            else:
                home = Path(tempfile.mkdtemp(prefix="forkpaths-zygote-"))
                argv = [sys.executable, "-I", "-X", "faulthandler", *tail]
                cwd, env = str(home), isolation.child_env(str(home))
            proc = _LAUNCHER.popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr, cwd=cwd, env=env,
                start_new_session=True, pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            stderr.close()
            if home is not None:
                shutil.rmtree(home, ignore_errors=True)
            raise
        finally:
            theirs.close()
        return cls(proc, ours, stderr, home, isolated)

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
            raise _ZygoteGone(_tail_fd(self._stderr.fileno()).strip() or "it exited")
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
            sources = [e for e in message.get("sources") or [] if isinstance(e, list) and len(e) == 2]
            self.sources = [str(path) for path, _ in sources]
            self.stamp = tuple(int(mtime) for _, mtime in sources)
            self._ready = True

    @property
    def stale(self) -> bool:
        """The project code it imported has changed on disk since (a developer edited it)."""
        return self._ready and _sources_stamp(self.sources) != self.stamp

    def _ask(self, request: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
        with self._lock:
            try:
                socket.send_fds(self._control, [json.dumps(request).encode()], list(fds))
            except OSError as exc:
                raise _ZygoteGone(str(exc)) from exc
            return self._receive(30.0)

    def spawn(self, fds: Sequence[int], work: Path | None) -> int:
        reply = self._ask({"op": "spawn", "work": str(work) if work else None}, fds)
        pid = reply.get("pid")
        if not isinstance(pid, int):
            raise _ZygoteGone(f"could not start a job: {reply!r}")
        return pid

    def kill(self, pid: int) -> None:
        with contextlib.suppress(_ZygoteGone, OSError):
            self._ask({"op": "kill", "pid": pid})

    def dismiss(self, pid: int) -> None:
        """Kill the job (if it is still there) and let the zygote reap it in the background."""
        with contextlib.suppress(_ZygoteGone, OSError):
            self._ask({"op": "dismiss", "pid": pid})

    def reap(self, pid: int, wait: float = 5.0) -> int | None:
        """The exit code of a job that has ended (negative: killed by that signal); None if unknown."""
        try:
            status = self._ask({"op": "reap", "pid": pid, "wait": wait}).get("status")
        except (OSError, _ZygoteGone):
            return None
        return status if isinstance(status, int) else None

    def close(self) -> None:
        try:
            self._control.close()  # the zygote leaves on end of file
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # bubblewrap takes its whole sandbox with it
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail like this
                logger.warning("sandbox zygote %s did not exit after SIGKILL", self.proc.pid)
            self._stderr.close()
            if self.home is not None:
                shutil.rmtree(self.home, ignore_errors=True)


@dataclass
class _Request:
    spec: dict[str, Any]
    data_path: Path | None
    timeout: float
    output_limit: int
    fast_copy: Path | None = None
    """The table's fast copy when the caller made one elsewhere (default: next to the data file)."""
    cancel_r: int = -1
    cancel_w: int = -1
    cancelled: threading.Event = field(default_factory=threading.Event)
    on_event: Callable[[dict[str, Any]], float | None] | None = None
    """Called with each event as it arrives (in the collecting thread); a number it returns is the job's new
    deadline (:func:`time.monotonic`), which also restarts the flood count: how a batch gives each of its items
    a time limit of its own (:mod:`evaluation.sandbox.batch`)."""


def _open_data(data_path: Path | None, fast_copy: Path | None = None) -> list[int]:
    """Read-only descriptors of the job's data file and, when there is one, of the table's fast copy (the job
    takes the copy only while it matches the data file's size and modification time)."""
    if data_path is None:
        return []
    fds = [os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)]
    with contextlib.suppress(OSError):
        fds.append(os.open(fast_copy or fast_copy_path(data_path), os.O_RDONLY | os.O_CLOEXEC))
    return fds


class _Sandbox:
    """Owns the zygote and the running jobs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._zygote: _Zygote | None = None
        self._retired: list[_Zygote] = []
        self._jobs: dict[int, _Zygote] = {}
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_JOBS)

    def _acquire(self) -> _Zygote:
        isolated = isolation.require_isolation()
        with self._lock:
            zygote = self._zygote
            if zygote is not None and (not zygote.alive or zygote.stale or zygote.isolated != isolated
                                       or zygote.hidden != isolation.hidden_paths()):
                self._retire_locked(zygote)
                zygote = None
            if zygote is None:
                try:
                    zygote = self._zygote = _Zygote.start(isolated)
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

    def run(self, request: _Request) -> Outcome:
        with self._slots:
            if request.cancelled.is_set():
                return Outcome(events=[], timed_out=False, returncode=None, stderr="", cancelled=True)
            return self._run(request)

    def _run(self, request: _Request) -> Outcome:
        failure: _ZygoteGone | None = None
        for _attempt in range(2):  # retry once on a broken zygote
            zygote = self._acquire()
            work_root = None if zygote.isolated else Path(tempfile.mkdtemp(prefix="forkpaths-sandbox-"))
            try:
                with contextlib.ExitStack() as files:
                    job = files.enter_context(tempfile.TemporaryFile())
                    job.write(json.dumps(request.spec).encode("utf-8"))
                    job.flush()
                    job.seek(0)
                    stderr = files.enter_context(tempfile.TemporaryFile())
                    output = files.enter_context(tempfile.TemporaryFile())
                    try:
                        zygote.wait_ready(STARTUP_TIMEOUT_S)
                        pid, read_fd = self._spawn(zygote, request, job, stderr, output, work_root)
                    except _ZygoteGone as exc:
                        self._release(zygote, broken=True)
                        failure = exc
                        logger.warning("sandbox zygote was not usable (%s); starting another", exc)
                        continue
                    except BaseException:
                        self._release(zygote, broken=True)
                        raise
                    try:
                        outcome = self._collect(zygote, pid, read_fd, request)
                    finally:
                        os.close(read_fd)
                        with self._lock:
                            self._jobs.pop(pid, None)
                        self._release(zygote)
                    outcome.stderr = _tail_fd(stderr.fileno())
                    outcome.output = _read_fd(output.fileno(), request.output_limit + 100)
                    return outcome
            finally:
                if work_root is not None:
                    shutil.rmtree(work_root, ignore_errors=True)
        raise SandboxError(f"The sandbox could not start a Python process: {failure}") from failure

    def _spawn(self, zygote: _Zygote, request: _Request, job: BinaryIO, stderr: BinaryIO, output: BinaryIO,
               work_root: Path | None) -> tuple[int, int]:
        read_fd, write_fd = os.pipe()
        data_fds: list[int] = []
        try:
            data_fds = _open_data(request.data_path, request.fast_copy)
            work = None
            if work_root is not None:
                work = work_root / "work"
                work.mkdir(mode=0o700)
            pid = zygote.spawn([job.fileno(), write_fd, stderr.fileno(), output.fileno(), *data_fds], work)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)  # the job holds the only writer now: its exit is our end of file
            for fd in data_fds:
                os.close(fd)
        with self._lock:
            self._jobs[pid] = zygote
        return pid, read_fd

    def _collect(self, zygote: _Zygote, pid: int, fd: int, request: _Request) -> Outcome:
        """Read the job's events until it exits, the wall clock runs out or it is cancelled; then end it."""
        started = time.monotonic()
        deadline = started + request.timeout
        buffer = bytearray()
        events: list[dict[str, Any]] = []
        received = 0
        timed_out = cancelled = False
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            if request.cancel_r >= 0:
                selector.register(request.cancel_r, selectors.EVENT_READ)
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = not any(e.get("event") == "result" for e in events)
                    break
                ready = selector.select(remaining)
                if request.cancelled.is_set():
                    cancelled = True
                    break
                if not ready:
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
                        if request.on_event is not None:
                            new_deadline = request.on_event(event)
                            if new_deadline is not None:
                                deadline, received = new_deadline, 0
                if any(e.get("event") == "result" for e in events):
                    break  # all that matters is in (the output file is flushed before the result is sent)
        returncode = None
        if any(e.get("event") == "result" for e in events):
            # The job is leaving: end its namespace now and let the zygote collect it later, so tearing down
            # its memory is not part of anybody's wait.
            zygote.dismiss(pid)
            return Outcome(events=events, timed_out=False, returncode=None, stderr="", cancelled=cancelled,
                           seconds=time.monotonic() - started)
        if not (timed_out or cancelled):
            # It closed its result pipe: normally it is leaving. Let it end by itself (a crash keeps its signal),
            # asking without blocking the zygote, which serves every other job meanwhile.
            leave_by = time.monotonic() + EXIT_GRACE_S
            while returncode is None and zygote.alive and time.monotonic() < leave_by:
                returncode = zygote.reap(pid, wait=0.0)
                if returncode is None:
                    time.sleep(0.01)
        if returncode is None:
            if zygote.alive:
                zygote.kill(pid)  # the whole job: its namespace, or its process group
            returncode = zygote.reap(pid)
        return Outcome(events=events, timed_out=timed_out, returncode=returncode, stderr="",
                       cancelled=cancelled, seconds=time.monotonic() - started)

    def shutdown(self, *, jobs: bool) -> None:
        with self._lock:
            if not jobs:
                if self._zygote is not None:
                    self._retire_locked(self._zygote)
                return
            zygotes = [z for z in (self._zygote, *self._retired) if z is not None]
            self._zygote = None
            self._retired = []
            self._jobs = {}
        for zygote in zygotes:
            zygote.close()

    def forget_after_fork(self) -> None:
        # A forked copy of this process must not kill or reuse the parent's zygote and jobs.
        self._lock = threading.Lock()
        self._zygote = None
        self._retired = []
        self._jobs = {}
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_JOBS)


_SANDBOX = _Sandbox()
atexit.register(_SANDBOX.shutdown, jobs=True)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_SANDBOX.forget_after_fork)
    os.register_at_fork(after_in_child=_LAUNCHER.forget_after_fork)


class JobHandle(Generic[T]):
    """A job running in the background: poll :meth:`done`, read :attr:`elapsed`, :meth:`cancel` it.

    Cancelling kills the job's whole namespace (or process group); :meth:`result` then returns what the
    finisher makes of a cancelled outcome.
    """

    def __init__(self, request: _Request, finish: Callable[[Outcome], T]) -> None:
        self._request = request
        self._finish = finish
        self._started = time.monotonic()
        self._ended: float | None = None
        self._value: T | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        request.cancel_r, request.cancel_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="sandbox-job", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._finish(_SANDBOX.run(self._request))
        except BaseException as exc:  # noqa: BLE001 - re-raised by result()
            self._error = exc
        finally:
            self._ended = time.monotonic()
            for fd in (self._request.cancel_r, self._request.cancel_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._done.set()

    @property
    def elapsed(self) -> float:
        return (self._ended or time.monotonic()) - self._started

    def done(self) -> bool:
        return self._done.is_set()

    def cancel(self) -> None:
        """Stop the job now (no effect once it is done)."""
        if self._done.is_set():
            return
        self._request.cancelled.set()
        with contextlib.suppress(OSError):
            os.write(self._request.cancel_w, b"x")

    def result(self, timeout: float | None = None) -> T:
        """Wait for the job; raises :class:`SandboxError` when the sandbox itself failed."""
        if not self._done.wait(timeout):
            raise TimeoutError("the sandbox job is still running")
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def then(self, fn: Callable[[T], U]) -> MappedJobHandle[U]:
        """The same job, its result passed through ``fn`` (e.g. to stamp it with what the caller knows)."""
        return MappedJobHandle(self, fn)


class MappedJobHandle(Generic[U]):
    """A :class:`JobHandle` seen through a function of its result; polling and cancelling reach the job."""

    def __init__(self, inner: JobHandle[Any], fn: Callable[[Any], U]) -> None:
        self._inner = inner
        self._fn = fn
        self._lock = threading.Lock()
        self._mapped: tuple[U] | None = None

    @property
    def elapsed(self) -> float:
        return self._inner.elapsed

    def done(self) -> bool:
        return self._inner.done()

    def cancel(self) -> None:
        self._inner.cancel()

    def result(self, timeout: float | None = None) -> U:
        value = self._inner.result(timeout)
        with self._lock:
            if self._mapped is None:
                self._mapped = (self._fn(value),)
            return self._mapped[0]


def _make_request(name: str, payload: dict[str, Any], data_path: Path | None, limits: SandboxLimits,
                  fast_copy: Path | None = None) -> _Request:
    if data_path is not None:
        data_path = Path(data_path).resolve()
        if not data_path.is_file():
            raise SandboxError(f"The data file {data_path} does not exist, so the job cannot run.")
    spec = {
        "name": name,
        "payload": payload,
        "limits": limits.model_dump(),
        "audit_hook": isolation.audit_hook_enabled(),
    }
    try:
        json.dumps(spec)
    except (TypeError, ValueError) as exc:
        raise SandboxError(f"The payload of sandbox job {name!r} is not JSON: {exc}") from exc
    return _Request(spec=spec, data_path=data_path, timeout=limits.timeout_s, output_limit=limits.max_output_chars,
                    fast_copy=fast_copy if data_path is not None else None)


def start_job(name: str, payload: dict[str, Any], *, data_path: Path | None, limits: SandboxLimits,
              finish: Callable[[Outcome], T],
              on_event: Callable[[dict[str, Any]], float | None] | None = None,
              timeout_s: float | None = None, fast_copy: Path | None = None) -> JobHandle[T]:
    """Start a registered job in the background; ``finish`` turns its :class:`Outcome` into the result.

    ``on_event`` sees each event as it arrives and may move the job's deadline (see :class:`_Request`);
    ``timeout_s`` is the wall clock until then (default ``limits.timeout_s``, which also sets the CPU limit);
    ``fast_copy``: the table's fast copy (:func:`evaluation.sandbox.prepare_fast_copy`) when it is not next to
    the data file."""
    isolation.require_isolation()  # refuse at once, in the caller's thread, where isolation is unavailable
    request = _make_request(name, payload, data_path, limits, fast_copy)
    request.on_event = on_event
    if timeout_s is not None:
        request.timeout = timeout_s
    return JobHandle(request, finish)


def generic_result(outcome: Outcome, limits: SandboxLimits, labels: Sequence[str] = ()) -> dict[str, Any]:
    """The job's own result (``ok`` and its fields), with ``stdout`` and ``seconds``; a sentence if it died.

    ``labels`` name the steps a job announces with ``{"event": "step", "index": i}``, for the sentence.
    """
    from evaluation.sandbox.describe import Steps, describe_death

    result = outcome.result
    if result is None:
        kind, sentence = describe_death(outcome, Steps(labels=tuple(labels), own="the job"), limits)
        out: dict[str, Any] = {"ok": False, "error_kind": kind, "error": sentence}
    else:
        out = {key: value for key, value in result.items() if key != "event"}
        if out.get("error_kind") == "internal":
            raise SandboxError(f"The sandbox failed while running the job: {out.get('exc_message')}")
    out["stdout"] = outcome.output[: limits.max_output_chars + 100]
    out["seconds"] = outcome.seconds
    return out


def run_job(name: str, payload: dict[str, Any], *, data_path: Path | None,
            limits: SandboxLimits = DEFAULT_LIMITS, fast_copy: Path | None = None) -> dict[str, Any]:
    """Run the registered sandbox job ``name`` on one data file and return its JSON result.

    Args:
        name: a job registered with ``@sandbox_job`` in an engine module (see :mod:`evaluation.sandbox`).
        payload: JSON-able input of the job (:attr:`JobContext.payload` inside).
        data_path: the one file the job may read (handed over read-only), or None.
        limits: time, memory, output and file-size limits.
        fast_copy: the table's fast copy when it is not next to the data file (see :func:`start_job`).

    Returns:
        The job function's dict plus ``stdout`` (what it printed, bounded) and ``seconds``; when the job died
        (timeout, memory, crash) ``{"ok": False, "error_kind": ..., "error": <sentence>}``.

    Raises:
        SandboxError: the sandbox itself could not run the job (or isolation is unavailable).
    """
    labels = payload.get("labels") if isinstance(payload, dict) else None
    labels = [str(label) for label in labels] if isinstance(labels, list) else []
    return start_job(name, payload, data_path=data_path, limits=limits, fast_copy=fast_copy,
                     finish=lambda outcome: generic_result(outcome, limits, labels)).result()


def prewarm(*, wait: bool = False, timeout: float = STARTUP_TIMEOUT_S) -> None:
    """Start the sandbox's template process now rather than at the first job (call at application start).

    Does nothing when isolation is unavailable and weak isolation was not chosen (jobs are refused then).

    Raises:
        SandboxError: the process could not start.
    """
    try:
        isolation.require_isolation()
    except isolation.IsolationUnavailable:
        return
    _SANDBOX.prewarm(wait, timeout)


def shutdown() -> None:
    """Stop the template process; running jobs still finish, and the next job starts a new one."""
    _SANDBOX.shutdown(jobs=False)
