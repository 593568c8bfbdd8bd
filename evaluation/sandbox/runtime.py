"""What a job function gets inside the sandbox: its payload, the data file, the output capture, the result channel.

A job function is registered by name (:mod:`evaluation.sandbox.registry`) and called in the job process as
``fn(ctx)`` with a :class:`JobContext`. It loads what it needs from :attr:`JobContext.data` first, then calls
:meth:`JobContext.untrusted` before running code it did not write: that closes the data file, captures
``print`` output (bounded) and installs the audit hook. It returns a JSON-able dict, the job's result.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import pickle
import resource
import sys
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from evaluation.sandbox.guard import Guard

__all__ = ["FAST_COPY_FORMAT", "FAST_COPY_SUFFIX", "BoundedOutput", "JobContext", "apply_limits", "fast_copy_path"]

FAST_COPY_SUFFIX = ".forkpaths-cache.pkl"
"""Appended to the CSV's file name to name its fast-loading copy."""
FAST_COPY_FORMAT = 1
MAX_TASKS = 32


def fast_copy_path(data_path: Path) -> Path:
    """Where the fast-loading copy of ``data_path`` lives (next to it)."""
    return data_path.with_name(data_path.name + FAST_COPY_SUFFIX)


class BoundedOutput(io.TextIOBase):
    """A text stream that keeps at most ``limit`` characters, written through to a file.

    Written through so that what a job printed survives the job being killed (the parent reads the file).
    """

    def __init__(self, stream: TextIO, limit: int) -> None:
        self._file = stream
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


def send(channel: TextIO, message: dict[str, Any]) -> None:
    # A leading newline too: whatever the code may have written to the descriptor stays on a line of its own.
    channel.write("\n" + json.dumps(message, allow_nan=False, default=str) + "\n")
    channel.flush()


def vm_size_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def apply_limits(limits: dict[str, Any], base_vm: int | None = None, *, own_user_namespace: bool = False) -> None:
    """Set the job's rlimits on this process (and anything it could start).

    ``memory_mb`` is headroom on top of what the pre-loaded interpreter already maps (about 0.5 GB of address
    space for pandas, numpy and statsmodels), so that a small limit such as 512 MB still lets ordinary code run.
    CPU time is a backstop behind the parent's wall clock: the interpreter's start-up CPU plus the timeout and a
    few seconds.
    """
    headroom = int(limits["memory_mb"]) * 1024 * 1024
    address_space = (vm_size_bytes() if base_vm is None else base_vm) + headroom
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = int(math.ceil(usage.ru_utime + usage.ru_stime + float(limits["timeout_s"]) + 5))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    file_bytes = int(limits["max_file_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if own_user_namespace:
        # Counted per user namespace (and not for root), the process limit is a second fork-bomb stop behind
        # the seccomp filter; threads count too, so leave room for a few. Outside a namespace of its own it
        # would count every process of the application's user, so it is left alone there.
        resource.setrlimit(resource.RLIMIT_NPROC, (MAX_TASKS, MAX_TASKS))



class JobContext:
    """One job, seen from the job function."""

    def __init__(
        self,
        *,
        payload: dict[str, Any],
        limits: dict[str, Any],
        data: BinaryIO | None,
        cache: BinaryIO | None = None,
        output_fd: int,
        channel: TextIO,
        work: Path,
        audit_hook: bool,
        isolated: bool = False,
    ) -> None:
        self.payload = payload
        self.isolated = isolated
        """The job has namespaces of its own (bubblewrap mode): ``/tmp`` and ``/dev/shm`` are its private tmpfs."""
        self.limits = limits
        self.data = data
        """The one data file of the job, opened read-only (closed by :meth:`untrusted`)."""
        self.cache = cache
        """The table's fast copy (see :func:`evaluation.sandbox.prepare_fast_copy`), when there is one."""
        self.work = work
        """The job's private writable scratch directory (its working directory)."""
        self.output_limit = int(limits["max_output_chars"])
        self._output_fd = output_fd
        self.output = BoundedOutput(os.fdopen(output_fd, "w", encoding="utf-8", errors="replace"), self.output_limit)
        self.guard = Guard(str(work))
        self._channel = channel
        self._audit_hook = audit_hook

    def send(self, message: dict[str, Any]) -> None:
        """Report progress to the parent (``{"event": "step", "index": i}`` names the step that runs now)."""
        send(self._channel, message)

    def load_table(self) -> Any:
        """The data file as a pandas frame: the fast copy when the parent sent it, else the CSV."""
        import pandas as pd

        if self.data is None:
            raise ValueError("this job has no data file")
        if self.cache is not None:
            stat = os.fstat(self.data.fileno())
            try:
                payload = pickle.load(self.cache)
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
        return pd.read_csv(self.data)

    def untrusted(self) -> None:
        """From here on this process runs code it did not write: close the data file, forbid new processes,
        capture output, audit.

        Only in a child that let go of the result channel (:meth:`split`, or :meth:`enter_child`): the process
        that reports never runs code it did not write (issue 26), so a job that tries is a bug, said here.
        """
        if self._channel is not None:
            raise RuntimeError("untrusted code may run only in the child of JobContext.split(), never in the job "
                               "process, which holds the result channel")
        self.close_data()
        if sys.platform == "linux":
            from evaluation.sandbox import namespaces

            namespaces.forbid_new_processes()
        sys.stdout = sys.stderr = self.output
        if self._audit_hook:
            self.guard.install()

    def close_data(self) -> None:
        for handle in (self.data, self.cache):
            if handle is not None:
                handle.close()
        self.data = self.cache = None

    def fresh_streams(self) -> None:
        """Empty the captured output and the job's stderr (a batch's next item starts with neither: what its
        death is said to be is read from its own stderr alone)."""
        self.output.flush()
        for fd in (self._output_fd, 2):
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)

    def enter_child(self) -> None:
        """In the child of :func:`evaluation.sandbox.handoff.split`: let go of the result channel and the data."""
        self.close_data()
        self.guard.forked()
        with contextlib.suppress(OSError, ValueError):
            os.close(self._channel.fileno())
        self._channel = None  # type: ignore[assignment]

    def split(self, body: Any, *, prepare: Any = None, last: bool = True) -> Any:
        """Fork a child that runs ``body(sender)``; iterate over the data messages it hands over.

        See :mod:`evaluation.sandbox.handoff`: this process (the measurer) never runs the code."""
        from evaluation.sandbox.handoff import split

        self.close_data()
        return split(self, body, prepare=prepare, last=last)
