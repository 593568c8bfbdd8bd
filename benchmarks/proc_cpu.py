"""CPU seconds of process trees, read from ``/proc`` (Linux): what a benchmark's figures cost, whatever the load.

Wall seconds stretch with the machine's load (other work on the same cores); CPU seconds do not. A process tree's
CPU is the user + system time of each living process in it plus what it collected from its children that ended
(``cutime``/``cstime``): the sandbox's template process and the jobs it forked and reaped count, though they are not
children this process waits for (bubblewrap's namespaces).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CommandCost", "OwnCgroup", "command_cost", "count_this_run", "load", "machine_speed", "sandbox_cpu",
           "tree_cpu"]


def _table(reaped: bool = True) -> tuple[dict[int, list[int]], dict[int, float]]:
    tick = os.sysconf("SC_CLK_TCK")
    last = 15 if reaped else 13
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as handle:
                raw = handle.read()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(name))
        cpu[int(name)] = sum(int(x) for x in fields[11:last]) / tick  # utime stime (cutime cstime)
    return children, cpu


def tree_cpu(*roots: int, reaped: bool = True) -> float:
    """CPU seconds of the processes ``roots`` and all their living descendants (with what they reaped, unless
    ``reaped`` is False: the processes' own CPU only, for callers that count the reaped ones otherwise)."""
    children, cpu = _table(reaped)
    total, todo, seen = 0.0, list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += cpu.get(pid, 0.0)
        todo += children.get(pid, [])
    return total


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {os.cpu_count()} cores"


def machine_speed() -> str:
    """This machine's speed now, as the CPU seconds of a fixed pure-Python loop (10 million additions, best of 3).

    A shared virtual machine's speed varies from hour to hour (the same loop took 2.1 s and 3.0 s for 20 million
    on one idle machine an hour apart), so figures taken at different times compare only next to this line."""
    import time

    best = float("inf")
    for _ in range(3):
        t0, total = time.process_time(), 0
        for i in range(10_000_000):
            total += i
        best = min(best, time.process_time() - t0)
    return f"machine speed: a 10M-addition Python loop takes {best:.2f} s CPU"


def sandbox_cpu(root: int) -> float:
    """CPU seconds of the sandbox's long-lived processes below ``root``: its bubblewrap processes and its template
    process (``zygote.py``, whose parent is not one), their own time only. Not the spare job processes the
    template forks in advance (they come and go, taking their time with them), nor the jobs: a job that ended
    by itself is reaped into the template's count, one that was killed is not, so callers read the jobs' CPU
    from what each job reports."""
    children, cpu = _table(reaped=False)
    parent = {kid: pid for pid, kids in children.items() for kid in kids}

    def cmdline(pid: int) -> str:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                return handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            return ""

    def bwrap(line: str) -> bool:
        return line.split(" ")[0].endswith("/bwrap")

    total, todo = 0.0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        line = cmdline(pid)
        up = parent.get(pid, 0)
        template = "zygote.py --zygote" in line and (up == root or bwrap(cmdline(up)))
        if bwrap(line) or template:
            total += cpu.get(pid, 0.0)
    return total


CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1; on a v2-only machine the unified hierarchy's cpu.stat


@dataclass(frozen=True)
class CommandCost:
    """What one command cost the user: wall seconds, and the CPU seconds of every process it started."""

    wall: float
    cpu: float
    how: str  # "cgroup" (every process, killed or not) or "process tree" (living ones and those reaped)
    returncode: int
    stdout: str
    stderr: str

    def line(self, label: str) -> str:
        return f"{label}: {self.wall:.2f} s wall, {self.cpu:.2f} s CPU ({self.how})"


def _own_cgroup(root: Path, controller: str) -> Path:
    """The cgroup this process is in, in the hierarchy mounted at ``root`` (``controller`` "" for cgroup v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return root
    for line in lines:
        _, names, path = line.split(":", 2)
        if (controller in names.split(",")) if controller else names == "":
            return root / path.lstrip("/")
    return root


def _cgroup_dir() -> tuple[Path, str] | None:
    """A fresh cgroup to run a command in, and its CPU counter file; None where cgroups cannot be made here.

    Made inside this process's own cgroup, whose counter includes it: a benchmark counting its own run
    (:func:`count_this_run`) counts the commands it measures too."""
    name = f"forkpaths-bench-{uuid.uuid4().hex[:10]}"
    for mount, controller, counter in ((CPUACCT, "cpuacct", "cpuacct.usage"),
                                       (Path("/sys/fs/cgroup"), "", "cpu.stat")):
        root = _own_cgroup(mount, controller)
        if not (root / "cgroup.procs").exists():
            continue
        try:
            (root / name).mkdir()
        except OSError:
            continue
        if (root / name / counter).exists():
            return root / name, counter
        (root / name).rmdir()
    return None


def _cgroup_cpu(folder: Path, counter: str) -> float:
    text = (folder / counter).read_text()
    if counter == "cpuacct.usage":
        return int(text) / 1e9
    usage = dict(line.split() for line in text.splitlines())
    return int(usage["usage_usec"]) / 1e6


class OwnCgroup:
    """This process in a cgroup of its own, from now on: :meth:`cpu` is the CPU seconds of this process and of
    every process it starts afterwards (the sandbox's template process, the jobs it forks, their children),
    whether they ended by themselves, were killed or were reaped outside this process's tree. Where cgroups
    cannot be made here (not root), the process tree's CPU instead (:func:`tree_cpu`, which misses the killed
    ones); :attr:`how` says which. Create it before anything starts the sandbox."""

    def __init__(self) -> None:
        self._group = _cgroup_dir()
        if self._group is not None:
            folder, _ = self._group
            (folder / "cgroup.procs").write_text(str(os.getpid()))
            atexit.register(self._remove)
        self.how = "cgroup" if self._group is not None else "process tree"

    def cpu(self) -> float:
        if self._group is None:
            return tree_cpu(os.getpid())
        return _cgroup_cpu(*self._group)

    def _remove(self) -> None:
        assert self._group is not None
        folder, _ = self._group
        with contextlib.suppress(OSError):
            (folder.parent / "cgroup.procs").write_text(str(os.getpid()))
        deadline = time.monotonic() + 5  # the sandbox's processes, killed at exit, take a moment to go
        while time.monotonic() < deadline:
            try:
                folder.rmdir()
                return
            except OSError:
                time.sleep(0.05)


def command_cost(cmd: list[str], *, env: dict[str, str] | None = None, cwd: str | Path | None = None,
                 timeout: float | None = None) -> CommandCost:
    """Run ``cmd`` as a user runs it and measure it: in a cgroup of its own where this machine allows (root), so
    the CPU of every process it starts counts, sandbox processes killed or reaped outside its tree included;
    elsewhere the process tree's CPU (:func:`tree_cpu`), which misses the killed ones, and says so."""
    group = _cgroup_dir()
    started = time.perf_counter()
    if group is None:
        before = os.times()
        done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
        after = os.times()
        return CommandCost(time.perf_counter() - started,
                           (after.children_user - before.children_user) + (after.children_system - before.children_system),
                           "process tree", done.returncode, done.stdout, done.stderr)
    folder, counter = group
    procs = str(folder / "cgroup.procs")

    def enter() -> None:  # in the child, before exec: it and everything it starts belong to the group
        with open(procs, "w") as handle:
            handle.write(str(os.getpid()))

    try:
        done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                              preexec_fn=enter)
        wall = time.perf_counter() - started
        deadline = time.monotonic() + 10  # processes it left behind (a daemon) are waited for, then counted as is
        while (folder / "cgroup.procs").read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        return CommandCost(wall, _cgroup_cpu(folder, counter), "cgroup", done.returncode, done.stdout, done.stderr)
    finally:
        leftovers = (folder / "cgroup.procs").read_text().split()
        parent = folder.parent / "cgroup.procs"
        for pid in leftovers:
            with contextlib.suppress(OSError):
                parent.write_text(pid)
        with contextlib.suppress(OSError):
            folder.rmdir()


def count_this_run() -> None:
    """Count what this benchmark costs, from here to its exit, and print it at exit beside the load and the
    machine's speed: wall seconds, and the CPU seconds of this process and of every process it started.

    Where this machine allows (root), the process moves into a cgroup of its own, so every process it starts
    counts, sandbox processes killed or reaped outside its tree included (the CPU spent before the move, the
    interpreter's start, is added). Elsewhere: this process and the children it waited for, which misses the
    killed ones, and says so."""
    import atexit

    started, before = time.perf_counter(), os.times()
    group = _cgroup_dir()
    if group is not None:
        folder, counter = group
        try:
            (folder / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            folder.rmdir()
            group = None

    def report() -> None:
        wall = time.perf_counter() - started
        if group is None:
            now = os.times()
            cpu = sum(now[:4]) - sum(before[:4])
            how = "this process and the children it waited for"
        else:
            cpu = _cgroup_cpu(folder, counter) + before.user + before.system
            how = "cgroup: every process it started"
            with contextlib.suppress(OSError):  # back where it came from, then the group goes
                (folder.parent / "cgroup.procs").write_text(str(os.getpid()))
            with contextlib.suppress(OSError):
                folder.rmdir()  # still busy when a process it started lives on: left, and harmless
        print(f"\nthis run: {wall:.1f} s wall, {cpu:.1f} s CPU ({how}); {load()}; {machine_speed()}", flush=True)

    atexit.register(report)
