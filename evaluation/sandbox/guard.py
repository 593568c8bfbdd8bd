"""The audit hook of a sandbox job: it *explains* what code tried, it does not contain it.

Containment comes from the operating system (:mod:`evaluation.sandbox.namespaces`, bubblewrap, rlimits,
seccomp). This hook sees the same attempts one layer earlier, in the interpreter, and turns them into a
:class:`Refusal` whose fields the parent turns into a sentence for the analyst ("the code tried to open a
network connection (to 127.0.0.1:5432)"). Tests switch it off to check that the boundary holds without it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["GUARD_MARKER", "TRUSTED_THREADS", "Guard", "Refusal", "truncate"]

GUARD_MARKER = "[forkpaths-sandbox]"
"""Starts the message of every PermissionError the audit hook raises."""


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

    def forked(self) -> None:
        """In a forked child (the code's process of a split job): "itself" is now this process."""
        self._own_pid = os.getpid()

    def _on_kill(self, args: tuple[Any, ...]) -> Refusal | None:
        if args and args[0] in (0, self._own_pid):
            return None
        return Refusal("forbidden", "send a signal to", f"process {args[0] if args else '?'}")


def _command(value: Any) -> str:
    if isinstance(value, list | tuple):
        value = " ".join(os.fsdecode(v) if isinstance(v, str | bytes) else str(v) for v in value)
    elif isinstance(value, bytes):
        value = os.fsdecode(value)
    return truncate(str(value), 200)



def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"
