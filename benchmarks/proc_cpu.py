"""CPU seconds of process trees, read from ``/proc`` (Linux): what a benchmark's figures cost, whatever the load.

Wall seconds stretch with the machine's load (other work on the same cores); CPU seconds do not. A process tree's
CPU is the user + system time of each living process in it plus what it collected from its children that ended
(``cutime``/``cstime``): the sandbox's template process and the jobs it forked and reaped count, though they are not
children this process waits for (bubblewrap's namespaces).
"""

from __future__ import annotations

import os

__all__ = ["load", "tree_cpu"]


def _table() -> tuple[dict[int, list[int]], dict[int, float]]:
    tick = os.sysconf("SC_CLK_TCK")
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
        cpu[int(name)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
    return children, cpu


def tree_cpu(*roots: int) -> float:
    """CPU seconds of the processes ``roots`` and all their living descendants (with what they reaped)."""
    children, cpu = _table()
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
