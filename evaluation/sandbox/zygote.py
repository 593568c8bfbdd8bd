"""The child side of the sandbox: the zygote (a fork server) and the job processes it forks.

The parent (:mod:`evaluation.sandbox.server`) starts ``python -I -X faulthandler zygote.py --zygote <fd> --mode
<bwrap|process>``; in ``bwrap`` mode under bubblewrap (:mod:`evaluation.sandbox.isolation`). The zygote imports
pandas, numpy, statsmodels and every engine module once, never runs a job itself, and per request forks:

* ``bwrap`` mode: a *keeper* that enters new user, mount, PID, IPC and network namespaces and forks the
  namespace's PID 1 (an init that only waits), which forks the *worker*. This chain is made in advance, while
  the zygote is idle (:class:`_Spares`); the worker waits for its job, then mounts a private scratch ``/tmp``,
  hides ``/proc``, locks its mounts, drops every capability and runs the job. Killing the keeper kills PID 1
  (parent-death signal) and with it every process of the namespace, whatever the code started.
* ``process`` mode: the worker directly, in its own session (weak isolation, chosen explicitly).

The worker applies the rlimits, then calls the registered job function (:mod:`evaluation.sandbox.registry`) and
writes JSON lines to the result pipe: ``{"event": "step", ...}`` as it goes, then ``{"event": "result", ...}``.
A seccomp filter that forbids new processes is installed before any code the job did not write runs
(:meth:`JobContext.untrusted`); a job that reports on such code forks it into a child of its own first
(:mod:`evaluation.sandbox.handoff`), and then installs the filter on itself too. It leaves with ``os._exit``. The zygote is controlled
over a Unix ``SOCK_SEQPACKET`` socket, one JSON object per datagram, file descriptors attached:
``{"op": "spawn", "data": bool, "work": str|null}`` with the job file, result pipe, stderr, output (and data)
descriptors, answered ``{"pid": ...}``; ``{"op": "kill", "pid": ...}``; ``{"op": "dismiss", "pid": ...}`` (kill, reap in the
background); ``{"op": "reap", "pid": ..., "wait": s}``, answered ``{"status": <exit code or null>}``. End of file on the socket ends the zygote.
"""

from __future__ import annotations

import json
import os
import resource
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast

if __name__ == "__main__":  # started as a script: make the project's packages importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from evaluation.sandbox import namespaces, registry
from evaluation.sandbox.guard import TRUSTED_THREADS
from evaluation.sandbox.runtime import JobContext, apply_limits, send, vm_size_bytes

SIGNAL_EXIT_BASE = 128


def _preload() -> None:
    import numpy as np
    import pandas as pd
    import statsmodels.api  # noqa: F401
    import statsmodels.formula.api  # noqa: F401

    import evaluation.tasks  # noqa: F401 - registering the kinds declares their engine modules
    from evaluation import inference  # noqa: F401
    from evaluation.sandbox import batch, frames, handoff  # noqa: F401 - both sides of every split job use them
    from evaluation.sandbox.code_jobs import preview_rows

    registry.import_engine_modules()
    # Touch the lazily imported parts a typical job uses, so no job pays for them.
    frame = pd.DataFrame({"a": np.arange(3.0), "b": ["x", "y", "z"]})
    frame["c"] = frame["a"] * 2
    frame[frame["a"] > 0].copy(deep=True)
    preview_rows(frame)
    from evaluation.groundtruth.convert_job import warm_up

    warm_up()  # the scoring converter's paths, run once here rather than in every job and analysis
    import gc

    gc.collect()
    gc.freeze()


_HUGE_PAGE = 2 << 20
_HUGE_CHUNK = 8 * _HUGE_PAGE  # collapsed at a time, between two looks for a request
_MADV_COLLAPSE = 25  # Linux 6.1+


class _HugePages:
    """Back the template's heap with transparent huge pages where the kernel can (``MADV_COLLAPSE``), in time
    the zygote is idle.

    Every job, and every item of a batch job, is a fork of this large process (pandas, numpy, statsmodels):
    forking copies one page-table entry per 4 kB page the process holds and exiting drops them again, a cost
    paid by the chain of processes of each job and by each item's child. A 2 MB page needs one entry for what
    took 512: the imported modules' objects, which a job mostly reads, then cost less to fork and to drop. What
    is written after a fork is still copied 4 kB at a time, so nothing a job or an item sees changes. Only the
    pages held now are collapsed (the regions are not marked for huge pages: later allocations stay as they
    were); a kernel without it refuses the advice, and nothing changes. Collapsing copies tens of megabytes:
    it is done a few megabytes at a time while no request waits, so it never delays a job.
    """

    def __init__(self) -> None:
        self._chunks: list[tuple[int, int]] | None = None
        self._madvise: Any = None
        self.done = sys.platform != "linux"

    def _plan(self) -> list[tuple[int, int]]:
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._madvise = libc.madvise
            self._madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
                regions = [line.split() for line in maps]
        except (OSError, AttributeError):
            return []
        chunks = []
        for fields in regions:
            perms, path = fields[1], fields[5] if len(fields) > 5 else ""
            if not perms.startswith("rw") or perms[3] != "p" or (path and path != "[heap]"):
                continue  # only the private anonymous memory (the heap and the allocators' arenas)
            low, high = (int(x, 16) for x in fields[0].split("-"))
            start = (low + _HUGE_PAGE - 1) // _HUGE_PAGE * _HUGE_PAGE
            end = high // _HUGE_PAGE * _HUGE_PAGE
            chunks += [(a, min(a + _HUGE_CHUNK, end)) for a in range(start, end, _HUGE_CHUNK)]
        return chunks

    def work(self, control: socket.socket) -> bool:
        """Collapse until done or a request is waiting on ``control``; returns whether this call finished."""
        import select

        if self.done:
            return False
        if self._chunks is None:
            self._chunks = self._plan()
        while self._chunks:
            if select.select([control], [], [], 0)[0]:
                return False  # a request: served first, the rest at the next idle moment
            start, end = self._chunks.pop()
            self._madvise(start, end - start, _MADV_COLLAPSE)  # refused (EINVAL) where it cannot: left as is
        self.done = True
        return True


def _send_control(control: socket.socket, message: dict[str, Any]) -> None:
    control.send(json.dumps(message).encode())


def _watch_parent(root: Path, parent: int) -> None:
    """Process mode: leave (removing the job's directory) as soon as the zygote is gone."""
    TRUSTED_THREADS.add(threading.get_ident())
    try:
        while os.getppid() == parent:
            time.sleep(0.5)
        shutil.rmtree(root, ignore_errors=True)
    finally:
        os._exit(3)


def _worker(spec: dict[str, Any], fds: dict[str, int | None], work: Path, *, isolated: bool,
            base_vm: int | None) -> None:
    """Run the job in this process and leave; never returns."""
    import numpy as np

    os.dup2(fds["stderr"], 2)  # type: ignore[arg-type]
    channel = cast(TextIO, os.fdopen(_fd(fds, "result"), "w", encoding="utf-8"))
    os.environ.update({"HOME": str(work), "TMPDIR": str(work), "MPLCONFIGDIR": str(work)})
    tempfile.tempdir = None
    np.random.seed()  # a fresh process would not share the template's random state
    try:
        # new processes are forbidden (seccomp) by JobContext.untrusted() before any code it did not write runs,
        # and by the measuring side of a split job once it has forked the code's process
        apply_limits(spec["limits"], base_vm, own_user_namespace=isolated)
        if not isolated:
            threading.Thread(target=_watch_parent, args=(work.parent, os.getppid()), daemon=True).start()
        function = registry.lookup(spec["name"])
        if function is None:
            raise LookupError(f"no sandbox job is registered as {spec['name']!r}")
        data = cast(BinaryIO, os.fdopen(_fd(fds, "data"), "rb")) if fds.get("data") is not None else None
        cache = cast(BinaryIO, os.fdopen(_fd(fds, "cache"), "rb")) if fds.get("cache") is not None else None
        ctx = JobContext(payload=spec["payload"], limits=spec["limits"], data=data, cache=cache,
                         output_fd=fds["output"],  # type: ignore[arg-type]
                         channel=channel, work=work, audit_hook=bool(spec.get("audit_hook", True)),
                         isolated=isolated)
        result = function(ctx)
    except MemoryError:
        result = {"ok": False, "error_kind": "memory", "phase": "sandbox"}
    except BaseException as exc:  # noqa: BLE001 - the parent turns this into SandboxError
        result = {"ok": False, "error_kind": "internal", "exc_message": f"{type(exc).__name__}: {exc}"}
    TRUSTED_THREADS.add(threading.get_ident())  # the job's code is over; what follows is the sandbox's
    try:
        try:
            send(channel, {"event": "result", **result})
        except (TypeError, ValueError) as exc:
            send(channel, {"event": "result", "ok": False, "error_kind": "internal", "exc_message": str(exc)})
    except OSError:
        pass
    os._exit(0)


def _exit_like(status: int) -> None:
    """Leave with the same exit code or signal as a child that ended with ``status``."""
    if os.WIFSIGNALED(status):
        os._exit(SIGNAL_EXIT_BASE + os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status))


FD_NAMES = ("job", "result", "stderr", "output", "data", "cache")


def _named_fds(fds: list[int]) -> dict[str, int | None]:
    named: dict[str, int | None] = dict.fromkeys(FD_NAMES)
    named.update(zip(FD_NAMES, fds, strict=False))
    return named


def _read_spec(named: dict[str, int | None]) -> dict[str, Any]:
    with os.fdopen(named.pop("job"), "rb") as handle:  # type: ignore[arg-type]
        return json.loads(handle.read().decode("utf-8"))


def _fd(fds: dict[str, int | None], name: str) -> int:
    fd = fds.get(name)
    if fd is None:
        raise LookupError(f"the sandbox was given no {name} descriptor")
    return fd


def _report_failure(named: dict[str, int | None], exc: BaseException) -> None:
    channel = cast(TextIO, os.fdopen(_fd(named, "result"), "w", encoding="utf-8"))
    send(channel, {"event": "result", "ok": False, "error_kind": "internal",
                   "exc_message": f"the sandbox could not isolate the job: {exc}"})


def _spare_worker(channel: socket.socket) -> None:
    """PID 2 of a job's namespaces, made in advance: wait for the job, seal the filesystem, run it."""
    namespaces.die_with_parent()
    message, fds, _flags, _addr = socket.recv_fds(channel, 65536, 8)
    channel.close()
    if not message:
        os._exit(0)  # the zygote is gone or retired this spare
    named = _named_fds(fds)
    try:
        spec = _read_spec(named)
        base_vm = vm_size_bytes()  # /proc is about to be hidden
        namespaces.seal_filesystem(int(spec["limits"].get("max_file_mb", 512)))
        work = Path("/tmp") / f"forkpaths-job-{secrets.token_hex(6)}" / "work"
        work.mkdir(parents=True, mode=0o700)
        os.chdir(work)
    except BaseException as exc:  # noqa: BLE001 - reported through the result pipe
        _report_failure(named, exc)
        os._exit(72)
    _worker(spec, named, work, isolated=True, base_vm=base_vm)


def _namespace_init(channel: socket.socket) -> None:
    """PID 1 of a job's namespaces: fork the worker (which waits for the job), wait for it, leave like it.

    The job does not run as PID 1: the kernel drops signals a namespace's init sends itself, so a job that
    crashes by ``os.kill(os.getpid(), SIGSEGV)`` would carry on.
    """
    namespaces.die_with_parent()
    worker = os.fork()
    if worker == 0:
        try:
            _spare_worker(channel)
        finally:
            os._exit(70)
    channel.close()
    while True:
        try:
            _, status = os.waitpid(worker, 0)
            break
        except ChildProcessError:
            os._exit(71)
    _exit_like(status)


def _spare_keeper(channel: socket.socket) -> None:
    """Enter new namespaces and fork their PID 1, which waits for a job; end the way it ended."""
    namespaces.enter_job_namespaces()
    init = os.fork()
    if init == 0:
        try:
            _namespace_init(channel)
        finally:
            os._exit(73)
    channel.close()
    _, status = os.waitpid(init, 0)
    code = os.waitstatus_to_exitcode(status)
    if code > SIGNAL_EXIT_BASE:
        number = code - SIGNAL_EXIT_BASE
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if number not in (signal.SIGKILL, signal.SIGSTOP):  # these two take no handler (EINVAL) and need none
            signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(code if code >= 0 else SIGNAL_EXIT_BASE - code)


class _Spares:
    """Bubblewrap mode: the next job's keeper, namespaces, init and worker are made while the zygote is idle.

    Forking the large template three times and creating five namespaces takes tens of milliseconds (far more
    on a busy machine); doing it ahead of the request takes it out of every check's wait. A spare that was
    never used is as fresh as a new one: it has run nothing but its own set-up, and its worker seals the
    filesystem only once its job has arrived.
    """

    def __init__(self, control: socket.socket) -> None:
        self._control = control
        self.spare: tuple[int, socket.socket] | None = None

    def make(self) -> tuple[int, socket.socket]:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                self._control.close()
                ours.close()
                _spare_keeper(theirs)
            finally:
                os._exit(74)
        theirs.close()
        return pid, ours

    def refill(self) -> None:
        if self.spare is None:
            self.spare = self.make()

    def hand_over(self, fds: list[int], pending: set[int]) -> int:
        """Give the job to the spare (or to a fresh one if the spare died); returns the keeper's pid."""
        for _attempt in range(2):
            pid, sock = self.spare if self.spare is not None else self.make()
            self.spare = None
            try:
                socket.send_fds(sock, [b"job"], fds)
                return pid
            except OSError:
                pending.add(pid)  # it died: collect it, try a fresh one
            finally:
                sock.close()
        raise OSError("could not set up the namespaces of a job")


def _job_process(request: dict[str, Any], fds: list[int]) -> None:
    """Process mode, in the forked child: become the worker, in a session of its own."""
    named = _named_fds(fds)
    spec = _read_spec(named)
    os.setsid()  # its own process group, which the zygote kills as a whole
    work = Path(request["work"])
    os.chdir(work)
    _worker(spec, named, work, isolated=False, base_vm=None)


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


def _kill(pid: int, isolated: bool, jobs: set[int]) -> None:
    if pid not in jobs:
        return  # never signal anything but a job of this zygote
    try:
        if isolated:
            os.kill(pid, signal.SIGKILL)  # the namespace's PID 1 follows (parent-death signal), then all of it
        else:
            os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def zygote_main(control_fd: int, isolated: bool) -> None:
    """The template process: import once, then fork one fresh job per request."""
    control = socket.socket(fileno=control_fd)
    home = os.getcwd()
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
        if (name == "evaluation" or name.startswith("evaluation."))
        and (path := getattr(module, "__file__", None))
    )
    spares = _Spares(control)
    if isolated:
        spares.refill()
    _send_control(control, {"event": "ready", "pid": os.getpid(), "sources": own_sources})
    pending: set[int] = set()
    jobs: set[int] = set()
    huge = _HugePages()
    control.settimeout(0.5)  # wake up now and then to collect dismissed jobs (and, once, to collapse pages)
    while True:
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 65536, 8)
        except TimeoutError:
            _reap_pending(pending)
            if huge.work(control) and spares.spare is not None:
                # the spare was forked before: retired (it ends when its socket closes), made again
                retired, sock = spares.spare
                spares.spare = None
                sock.close()
                pending.add(retired)
                spares.refill()
            continue
        except OSError:
            break
        if not message:
            break
        try:
            request = json.loads(message)
        except ValueError:
            request = {}
        op = request.get("op")
        if op == "spawn" and 4 <= len(fds) <= 6:
            pid: int | None = None
            if isolated:
                try:
                    pid = spares.hand_over(fds, pending)
                except OSError as exc:
                    _send_control(control, {"error": str(exc)})
            else:
                pid = os.fork()
                if pid == 0:
                    try:
                        control.close()
                        _job_process(request, fds)
                    finally:
                        os._exit(70)
            for fd in fds:
                os.close(fd)
            if pid is not None:
                jobs.add(pid)
                _send_control(control, {"pid": pid})
            if isolated:
                spares.refill()  # the next job's namespaces, made while nobody waits
            continue
        for fd in fds:
            os.close(fd)
        if op == "kill":
            _kill(int(request.get("pid", 0)), isolated, jobs)
            _send_control(control, {"ok": True})
        elif op == "dismiss":
            pid = int(request.get("pid", 0))
            _kill(pid, isolated, jobs)
            if pid in jobs:
                jobs.discard(pid)
                pending.add(pid)  # reaped by _reap_pending once it is gone
            _send_control(control, {"ok": True})
        elif op == "reap":
            pid = int(request.get("pid", 0))
            wait = min(5.0, max(0.0, float(request.get("wait", 5.0))))
            status = _reap(pid, set(), wait) if pid in jobs else None
            if status is not None or wait >= 5.0:
                jobs.discard(pid)
                if status is None:
                    pending.add(pid)  # reaped later, so it does not stay a zombie
            _send_control(control, {"status": status})
        else:
            _send_control(control, {"error": "bad request"})
        _reap_pending(pending)
    if not isolated:
        shutil.rmtree(home, ignore_errors=True)
    os._exit(0)


def main(argv: list[str]) -> None:
    """``zygote.py --zygote <control fd> --mode <bwrap|process>``."""
    if len(argv) != 5 or argv[1] != "--zygote" or argv[3] != "--mode" or argv[4] not in ("bwrap", "process"):
        raise SystemExit("usage: zygote.py --zygote <control fd> --mode <bwrap|process>")
    zygote_main(int(argv[2]), isolated=argv[4] == "bwrap")


if __name__ == "__main__":
    main(sys.argv)
