"""Linux namespaces for one sandbox job, through libc (Python 3.11 has no ``os.unshare``).

Used inside the zygote, which itself runs under bubblewrap (:mod:`evaluation.sandbox.isolation`). A job process
calls :func:`enter_job_namespaces` right after the zygote forks it; that gives it its own user, mount, PID, IPC
and network namespaces. It then forks the process that runs the job, which is PID 1 of the new PID namespace
(when it exits, the kernel kills everything the job started, ``setsid`` or not) and calls
:func:`seal_filesystem` to give itself a private scratch ``/tmp`` and ``/dev/shm``, an empty ``/proc`` (the
zygote's process list is hidden) and then to lock those mounts and drop every capability, so the code cannot
unmount them to look underneath.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = [
    "NamespaceError",
    "die_with_parent",
    "enter_job_namespaces",
    "forbid_new_processes",
    "seal_filesystem",
]

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REC = 0x4000
MS_PRIVATE = 0x40000

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
LAST_CAP = 63

_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc: ctypes.CDLL | None = None


class NamespaceError(OSError):
    """A namespace or mount step failed: the job must not run."""


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise NamespaceError(errno, f"{what}: {os.strerror(errno)}")


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


def enter_job_namespaces() -> None:
    """Move this (single-threaded) process into new user, mount, PID, IPC and network namespaces.

    The user keeps its identity (its uid maps to itself), so files it makes are its own; it gains capabilities
    only inside the new namespaces, which :func:`seal_filesystem` drops again. Children forked after this call
    are in the new PID namespace; the first one is its PID 1.
    """
    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET
    _check(_lib().unshare(flags), "unshare(user, mount, pid, ipc, net)")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def die_with_parent() -> None:
    """Be killed (SIGKILL) when the parent process exits."""
    _check(_lib().prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def _mount_tmpfs(target: str, options: str, flags: int = 0) -> None:
    _check(
        _lib().mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | flags, options.encode()),
        f"mount tmpfs on {target}",
    )


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities() -> None:
    lib = _lib()
    for cap in range(LAST_CAP + 1):
        if lib.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: no such cap
            _check(-1, f"prctl(PR_CAPBSET_DROP, {cap})")
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(lib.capset(ctypes.byref(header), data), "capset")
    _check(lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _check(lib.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def seal_filesystem(scratch_mb: int) -> None:
    """Private scratch and shared-memory dirs, an empty ``/proc``, mounts locked, no capabilities left.

    Called by PID 1 of the job's namespaces. ``/tmp`` becomes a fresh ``tmpfs`` of at most ``scratch_mb``
    (the job's only writable place, invisible to every other job), ``/dev/shm`` another, and ``/proc`` an empty
    read-only ``tmpfs``: the zygote's procfs (other jobs' processes) is hidden. A second user and mount
    namespace then locks these mounts (a mount made in a more privileged namespace cannot be removed from a
    less privileged one), and every capability is dropped, so nothing can be unmounted or remounted.
    """
    lib = _lib()
    _check(lib.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    _mount_tmpfs("/tmp", f"size={max(1, scratch_mb)}m,mode=0700")
    _mount_tmpfs("/dev/shm", "size=64m,mode=0700")
    _mount_tmpfs("/proc", "size=4k,mode=0555", MS_RDONLY | MS_NOEXEC)
    # No id maps are written in this last namespace (its /proc/self is hidden): the job's ids show as the
    # overflow id, its files still belong to its real id.
    _check(lib.unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare(user, mount) to lock the mounts")
    _drop_capabilities()


# seccomp: a job may start threads but no processes. (The kernel's per-user process limit does not hold for
# root, and a fork bomb would otherwise multiply the job's memory limit.)
_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_SYSCALLS = {
    "x86_64": {"fork": 57, "vfork": 58, "clone": 56, "clone3": 435},
    "aarch64": {"clone": 220, "clone3": 435},
}
_CLONE_THREAD = 0x00010000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_EPERM, _ENOSYS = 1, 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _seccomp_program(machine: str) -> list[tuple[int, int, int, int]]:
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    numbers = _SYSCALLS[machine]
    deny, nosys = _RET_ERRNO | _EPERM, _RET_ERRNO | _ENOSYS
    prog: list[tuple[int, int, int, int]] = [(ld, 0, 0, 4), (jeq, 1, 0, _AUDIT_ARCH[machine]), (ret, 0, 0, deny)]
    prog.append((ld, 0, 0, 0))
    if machine == "x86_64":
        prog += [(jge, 0, 1, 0x40000000), (ret, 0, 0, deny)]  # the x32 ABI's numbers
    for name in ("fork", "vfork"):
        if name in numbers:
            prog += [(jeq, 0, 1, numbers[name]), (ret, 0, 0, deny)]
    prog += [(jeq, 0, 1, numbers["clone3"]), (ret, 0, 0, nosys)]  # libc falls back to clone()
    prog += [(jeq, 0, 3, numbers["clone"]), (ld, 0, 0, 16), (jset, 1, 0, _CLONE_THREAD), (ret, 0, 0, deny)]
    prog.append((ret, 0, 0, _RET_ALLOW))
    return prog


def not_dumpable() -> None:
    """Processes of the same user without ``CAP_SYS_PTRACE`` may no longer ptrace this one or read its memory."""
    _check(_lib().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def forbid_new_processes() -> bool:
    """Install a seccomp filter that refuses fork/vfork/clone of a process (threads stay allowed).

    Returns False (and installs nothing) on an architecture it does not know.
    """
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        return False
    prog = _seccomp_program(machine)
    filters = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), ctypes.cast(filters, ctypes.POINTER(_SockFilter)))
    lib = _lib()
    _check(lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    _check(lib.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp")
    return True
