"""CPU seconds of process trees, read from ``/proc`` (Linux): what a benchmark's figures cost, whatever the load.

Wall seconds stretch with the machine's load (other work on the same cores); CPU seconds do not. A process tree's
CPU is the user + system time of each living process in it plus what it collected from its children that ended
(``cutime``/``cstime``): the sandbox's template process and the jobs it forked and reaped count, though they are not
children this process waits for (bubblewrap's namespaces).
"""

from __future__ import annotations

import os

__all__ = ["load", "machine_speed", "sandbox_cpu", "tree_cpu"]


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
