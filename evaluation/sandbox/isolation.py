"""How strongly the sandbox isolates code on this machine, and the bubblewrap command of the zygote.

Two modes (chosen by the application from its settings, see :func:`configure`):

* ``bwrap`` (the default): the zygote runs under bubblewrap (Debian's ``bubblewrap``, the sandbox Flatpak is
  built on) in its own user, PID, network, IPC, UTS and mount namespaces; its filesystem holds only the
  read-only Python runtime, the site-packages and the engine's own packages; no network, an empty
  environment, and it dies with its parent. Each job then enters namespaces of its own
  (:mod:`evaluation.sandbox.namespaces`).
* ``process``: where bubblewrap or user namespaces are missing (macOS, a locked-down container) the zygote is a
  plain child process: fresh environment, rlimits, a process-group kill and the audit hook. That is weak
  isolation; it runs only when the administrator chose it explicitly.

In ``bwrap`` mode on a machine that cannot do it, every job is refused with :class:`IsolationUnavailable`,
whose message says what to install or set.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evaluation.errors import SandboxError

__all__ = [
    "IsolationStatus",
    "IsolationUnavailable",
    "SandboxMode",
    "configure",
    "current_mode",
    "hidden_paths",
    "isolation_status",
]

log = logging.getLogger(__name__)

SandboxMode = Literal["bwrap", "process"]
ENGINE_PACKAGES = ("evaluation", "exports")
"""The project packages the zygote imports; only these folders of the project are visible to it."""
INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) and allow user namespaces, "
    "or set FORKPATHS_SANDBOX=process to run analysts' code with weak, process-level isolation"
)


class IsolationUnavailable(SandboxError):
    """The operating-system sandbox cannot run here and weak isolation was not chosen."""


@dataclass
class _Config:
    mode: SandboxMode = "bwrap"
    hidden: tuple[Path, ...] = ()
    audit_hook: bool = True


_CONFIG = _Config()


def configure(*, mode: SandboxMode = "bwrap", hidden_paths: Sequence[Path] = ()) -> None:
    """Choose the sandbox mode (from the application's settings) before the first job.

    Args:
        mode: ``bwrap`` (operating-system isolation; jobs are refused where it cannot run) or ``process``
            (weak isolation, chosen explicitly).
        hidden_paths: folders that must never be visible inside the sandbox (the data directory); a folder of
            the Python runtime that contains one of them is not mounted.
    """
    if mode not in ("bwrap", "process"):
        raise ValueError(f"unknown sandbox mode {mode!r}: use 'bwrap' or 'process'")
    _CONFIG.mode = mode
    _CONFIG.hidden = tuple(Path(p).resolve() for p in hidden_paths)


def current_mode() -> SandboxMode:
    return _CONFIG.mode


def hidden_paths() -> tuple[Path, ...]:
    """The folders :func:`configure` keeps out of the sandbox (a template process started before they changed
    mounted what was visible then: it is not used afterwards)."""
    return _CONFIG.hidden


def audit_hook_enabled() -> bool:
    return _CONFIG.audit_hook


def set_audit_hook(enabled: bool) -> None:
    """Test-only: switch the audit hook off so that tests exercise the operating-system boundary alone."""
    _CONFIG.audit_hook = enabled


@dataclass(frozen=True)
class IsolationStatus:
    """What the machine offers, for the admin page and the log."""

    strong_available: bool
    mode: SandboxMode
    detail: str

    @property
    def runs_code(self) -> bool:
        """Whether jobs run at all (strong isolation, or weak isolation chosen explicitly)."""
        return self.strong_available or self.mode == "process"

    @property
    def weak(self) -> bool:
        """Jobs run (or would run) without the operating-system boundary: it is missing, or not chosen."""
        return not self.strong_available or self.mode == "process"

    def sentence(self) -> str:
        if self.strong_available and self.mode == "bwrap":
            return f"Code isolation is strong: every job runs under bubblewrap in its own namespaces ({self.detail})."
        if self.strong_available:
            return (
                "Code isolation is weak by choice: FORKPATHS_SANDBOX=process, although bubblewrap works here; "
                "remove the setting to isolate analysts' code with bubblewrap."
            )
        if self.mode == "process":
            return (
                f"Code isolation is weak: {self.detail}. Analysts' code runs as a plain child process "
                "(FORKPATHS_SANDBOX=process): rlimits and an audit hook, no operating-system boundary."
            )
        return f"Code isolation is unavailable: {self.detail}; code checks are refused until you {INSTALL_HINT}."


BWRAP_SEARCH_PATH = "/usr/bin:/usr/local/bin:/bin"
"""Where bubblewrap is looked for (before ``PATH``)."""


def bwrap_path() -> str | None:
    return shutil.which("bwrap", path=BWRAP_SEARCH_PATH + ":" + os.environ.get("PATH", ""))


def forget_probe() -> None:
    """Probe again at the next question (after bubblewrap was installed)."""
    _probe.cache_clear()


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    """Run bubblewrap once with a nested user namespace, as the zygote and its jobs will need."""
    if sys.platform != "linux":
        return False, f"bubblewrap needs Linux (this is {sys.platform})"
    path = bwrap_path()
    if path is None:
        return False, "bubblewrap (bwrap) is not installed"
    under_tmp = [p for p in (_project_root(), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve())
                 if p.is_relative_to("/tmp")]
    if under_tmp:  # each job mounts its own empty /tmp: code and libraries there would vanish mid-import
        return False, (f"forkpaths runs from {under_tmp[0]}, under /tmp, which every sandboxed job replaces with "
                       "its own empty scratch space (install forkpaths and its virtual environment elsewhere)")
    script = (
        "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
        "sys.exit(0 if libc.unshare(0x10000000 | 0x00020000 | 0x20000000) == 0 else 3)"
    )
    try:
        done = subprocess.run(
            [*bwrap_command(), "-c", script],
            capture_output=True, text=True, timeout=30, cwd="/",
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"bubblewrap could not start ({exc})"
    if done.returncode == 3:
        return False, "user namespaces inside bubblewrap are not allowed on this machine"
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return False, f"bubblewrap failed here ({reason})"
    return True, path


def isolation_status() -> IsolationStatus:
    """Whether the operating-system sandbox works here (probed once per process) and the chosen mode."""
    ok, detail = _probe()
    return IsolationStatus(strong_available=ok, mode=_CONFIG.mode, detail=detail)


def require_isolation() -> bool:
    """True to isolate with bubblewrap, False for weak isolation; raises when neither is allowed."""
    status = isolation_status()
    if _CONFIG.mode == "process":
        return False
    if not status.strong_available:
        raise IsolationUnavailable(
            f"The code was not run: {status.detail}, so it cannot be isolated from the server. "
            f"An administrator must {INSTALL_HINT}."
        )
    return True


def child_env(home: str) -> dict[str, str]:
    """The whole environment of the zygote and its jobs: nothing inherited, so no credentials leak in."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": home,
        "TMPDIR": home,
        "MPLCONFIGDIR": home,
        "MPLBACKEND": "Agg",
        # One BLAS thread and no allocator background thread: the zygote must be single-threaded to fork
        # safely, and one thread keeps CPU use predictable and the address space small under RLIMIT_AS.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "ARROW_DEFAULT_MEMORY_POOL": "system",
        "JE_ARROW_MALLOC_CONF": "background_thread:false",
    }


def _project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _visible_paths() -> list[Path]:
    """Read-only folders of the zygote's world: the runtime, its site-packages and the engine packages.

    Not ``sys.path`` as a whole: it holds the current directory or the script's folder, which may be a home
    directory with a ``.env`` of credentials. Nothing that contains a hidden path (the data directory) or the
    project folder (which may hold the data directory) is mounted; the engine packages are mounted one by one.
    """
    root = _project_root()
    candidates: list[Path] = [Path("/usr")]
    paths_of = sysconfig.get_paths()
    candidates += [Path(paths_of[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths_of]
    candidates += [Path(sys.prefix), Path(sys.base_prefix)]
    paths: list[Path] = []
    for candidate in candidates:
        real = candidate.resolve()
        if not real.is_dir() or real == Path("/"):
            continue
        if real == root or root.is_relative_to(real):
            continue  # the project folder may hold the data directory: only its packages are shown
        if any(hidden.is_relative_to(real) for hidden in _CONFIG.hidden):
            log.warning("sandbox: %s holds the data directory, so it is not mounted in the sandbox", real)
            continue
        paths.append(real)
    paths += [root / name for name in ENGINE_PACKAGES if (root / name).is_dir()]
    # Keep only the outermost of nested folders.
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in unique:
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def bwrap_command() -> list[str]:
    """``bwrap ... python -I -X faulthandler`` (the caller appends the script and its arguments)."""
    path = bwrap_path() or "bwrap"
    home = "/tmp"
    argv = [path, "--unshare-all", "--die-with-parent", "--new-session", "--clearenv"]
    for key, value in child_env(home).items():
        argv += ["--setenv", key, value]
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / top
        if host.is_symlink():
            argv += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir() and not host.is_relative_to("/usr"):
            argv += ["--ro-bind", str(host), str(host)]
    for visible in _visible_paths():
        argv += ["--ro-bind", str(visible), str(visible)]
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    argv += ["--ro-bind-try", "/etc/localtime", "/etc/localtime"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/"]
    argv += ["--chdir", home, sys.executable, "-I", "-X", "faulthandler"]
    return argv
