"""The process boundary inside a job: untrusted code in a child, the measurement in the job process.

A job that runs code it did not write and then reports on what that code computed (the converter of the
scoring path, the stage-1 sanity checks) must not let the code reach the report. :func:`split` forks the job
process: the *child* runs the code (stdout captured, audit hook, seccomp; it holds neither the result channel
nor the data file) and hands over only data, as length-framed messages on a pipe of its own; the *measurer*
(the job process, which never runs the code) reads them, checks every byte (:mod:`evaluation.sandbox.frames`)
and computes what it reports itself. The child cannot ptrace the measurer (it has no capabilities and the
measurer is not dumpable), has no path to it (``/proc`` is empty) and no descriptor of the result channel.

Whatever the child sends is treated as the code's output, never as the sandbox's word: a message that is not
well-formed, or a child that leaves without its end message (``os._exit``) is reported as
:class:`Interference`, which the job turns into "the code interfered with the measurement". A child killed by a
signal (memory, CPU time, a crash) takes the measurer with it by the same signal, so the parent's usual death
sentences apply.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import struct
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluation.sandbox.runtime import JobContext

__all__ = ["INTERFERED", "Interference", "Sender", "split"]

INTERFERED = "The code interfered with the measurement ({what}), so nothing it reported was recorded."
MAX_HEADER_BYTES = 64 * 1024 * 1024
MAX_BLOBS = 100_000
_PREFIX = struct.Struct(">II")
_LENGTH = struct.Struct(">Q")
_MEMORY_MESSAGE = _PREFIX.pack(len(b'{"type": "memory"}'), 0) + b'{"type": "memory"}'


class Interference(Exception):
    """The child handed over something that is not what the protocol allows."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what

    @property
    def sentence(self) -> str:
        return INTERFERED.format(what=self.what)


class Sender:
    """The child's end: ``send(header, blobs)`` per message, ``end()`` once."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def send(self, header: dict[str, Any], blobs: list[bytes] | None = None) -> None:
        blobs = blobs or []
        text = json.dumps(header, allow_nan=False).encode("utf-8")
        self._write(_PREFIX.pack(len(text), len(blobs)) + text)
        for blob in blobs:
            self._write(_LENGTH.pack(len(blob)))
            self._write(blob)

    def end(self) -> None:
        self.send({"type": "end"})


class _Reader:
    def __init__(self, fd: int, max_bytes: int) -> None:
        self._fd = fd
        self._max = max_bytes

    def _exact(self, n: int) -> bytes | None:
        parts: list[bytes] = []
        left = n
        while left:
            chunk = os.read(self._fd, min(left, 1 << 20))
            if not chunk:
                if left == n:
                    return None
                raise Interference("its data stopped in the middle of a message")
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def read(self) -> tuple[dict[str, Any], list[bytes]] | None:
        prefix = self._exact(_PREFIX.size)
        if prefix is None:
            return None
        size, count = _PREFIX.unpack(prefix)
        if size > MAX_HEADER_BYTES or count > MAX_BLOBS:
            raise Interference("it announced a message larger than the protocol allows")
        text = self._exact(size)
        try:
            header = json.loads(text or b"")
        except (ValueError, RecursionError) as exc:
            raise Interference("it wrote something that is not a message of the protocol") from exc
        if not isinstance(header, dict):
            raise Interference("it wrote something that is not a message of the protocol")
        blobs: list[bytes] = []
        total = size
        for _ in range(count):
            length = self._exact(_LENGTH.size)
            if length is None:
                raise Interference("its data stopped in the middle of a message")
            (n,) = _LENGTH.unpack(length)
            total += n
            if total > self._max:
                raise Interference("it handed over more data than the memory limit allows")
            blobs.append(self._exact(n) or b"")
        return header, blobs


def _leave_like(status: int) -> None:
    """The measurer ends the way its child did (killed by a signal): the parent's death sentences apply.

    SIGKILL and SIGSTOP cannot be given a handler (``signal.signal`` raises ``OSError: [Errno 22]`` for them),
    and need none: they end this process as they ended the child. faulthandler is switched off first, so that a
    crash of the child is not followed by a dump of this process's frames and loaded modules.
    """
    import faulthandler

    number = os.WTERMSIG(status)
    faulthandler.disable()
    if number not in (signal.SIGKILL, signal.SIGSTOP):
        with contextlib.suppress(OSError, ValueError):  # a number Python does not know: the exit status says it
            signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)
    os._exit(128 + number)


def split(ctx: JobContext, body: Callable[[Sender], None], *, prepare: Callable[[], None] | None = None,
          last: bool = True) -> Iterator[tuple[dict[str, Any], list[bytes]]]:
    """Fork now: run ``body(sender)`` (the untrusted part) in a child; iterate over the messages it sends.

    Step messages (``{"type": "step", "index": i}``) are passed on to the parent as progress and not yielded.
    The iterator ends after the child's end message, the child's end of file and its exit.

    ``prepare`` runs in the child before anything untrusted (a batch's child sets its own limits there).
    ``last``: this is the measurer's last fork, so it forbids itself new processes once the child is started; a
    batch (:mod:`evaluation.sandbox.batch`) forks one child per item and passes ``False`` until its last item.

    Raises (while iterating):
        Interference: a malformed message, or the child leaving without its end message. After the end message
        the child is killed: nothing it writes later is read.
    """
    from evaluation.sandbox import namespaces

    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:  # the child: the code's process
        try:
            os.close(read_fd)
            if sys.platform == "linux":
                namespaces.die_with_parent()  # never outlives the measurer (process mode has no PID namespace)
            ctx.enter_child()
            if prepare is not None:
                prepare()
            sender = Sender(write_fd)
            ctx.untrusted()
            body(sender)
            sender.end()
        except MemoryError:  # outside the code (say, encoding a frame of tens of millions of rows)
            try:
                os.write(write_fd, _MEMORY_MESSAGE)  # made in advance: no memory is left to make it now
            except BaseException:  # noqa: BLE001
                os._exit(75)
            os._exit(0)
        except BaseException:  # noqa: BLE001 - whatever happened, the measurer sees no end message
            os._exit(75)
        os._exit(0)
    os.close(write_fd)
    if sys.platform == "linux":
        namespaces.not_dumpable()  # the child (same user) cannot ptrace this process or read its memory
        if last:
            namespaces.forbid_new_processes()  # the measurer needed its (last) fork; it starts nothing else
    return _messages(ctx, pid, read_fd)


def _messages(ctx: JobContext, pid: int, read_fd: int) -> Iterator[tuple[dict[str, Any], list[bytes]]]:
    reader = _Reader(read_fd, max(64, int(ctx.limits.get("memory_mb", 1024))) * 1024 * 1024)
    ended = finished = False
    try:
        while True:
            message = reader.read()
            if message is None:
                break
            header, blobs = message
            kind = header.get("type")
            if kind == "end":
                # Everything is in. Whatever the child does from here on cannot reach the measurement, so it is
                # not waited for (its exit, which frees its memory before it closes the pipe, takes a while).
                ended = True
                break
            if kind == "memory":  # the job's memory failure, as if this process had run out (it fails the job)
                raise MemoryError("the code's process ran out of memory")
            if kind == "step":
                index = header.get("index")
                if not isinstance(index, int) or isinstance(index, bool):
                    raise Interference("it sent a step that is not a number")
                ctx.send({"event": "step", "index": index})
                continue
            yield header, blobs
        finished = True
    finally:
        os.close(read_fd)
        if not finished or ended:  # interference, the measurer stopped reading, or all is in: the child goes
            try:
                os.kill(pid, signal.SIGKILL)
                if not ended:
                    os.waitpid(pid, 0)
            except OSError:
                pass
    if ended:
        return
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        _leave_like(status)
    raise Interference(
        f"its process ended (exit status {os.waitstatus_to_exitcode(status)}) before it handed over its result,"
        " as os._exit() does"
    )
