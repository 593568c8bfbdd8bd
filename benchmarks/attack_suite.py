"""The attack suite of issue 26, counted: per engine (registered sandbox job), contained/total with the audit hook
on and off, how each contained attack ended, and what the suite costs in CPU seconds.

Runs ``tests/evaluation/test_boundary_suite.py`` (the attacks only, or also the driver controls with
``--controls``) in this process with pytest and reads each case's recorded outcome: ``interfered`` (the code
interfered with the measurement), ``limit`` (time, memory, a refused action, a crash said in a sentence),
``honest`` (the code's own failure), or ``not contained``. CPU seconds are this process's and the sandbox's
(the template process and the jobs it reaped, :mod:`proc_cpu`). Prints figures only; nothing is asserted.

Run: ``PYTHONPATH=$PWD .venv/bin/python benchmarks/attack_suite.py [-k EXPR] [--controls]``
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proc_cpu import load, tree_cpu  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "evaluation" / "test_boundary_suite.py"


class _Tally:
    """A pytest plugin: each attack case's engine, hook and recorded outcome."""

    def __init__(self) -> None:
        self.cases: list[tuple[str, str, str, str]] = []  # engine, hook, attack, outcome
        self.other: Counter[str] = Counter()

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
            return
        if "test_attack_is_contained[" not in report.nodeid:
            self.other[report.outcome] += 1
            return
        hook, engine, attack = report.nodeid.split("[", 1)[1].rstrip("]").split("-", 2)
        outcome = dict(report.user_properties).get("outcome") if report.passed else None
        if report.skipped:
            outcome = "skipped"
        self.cases.append((engine, hook, attack, str(outcome or "not contained")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="pytest -k expression (default: every attack)")
    parser.add_argument("--controls", action="store_true", help="also run the drivers' controls")
    args = parser.parse_args()
    expression = args.k or ("" if args.controls else "test_attack_is_contained")
    tally = _Tally()
    cpu0, wall0 = tree_cpu(os.getpid()), time.perf_counter()
    code = pytest.main([str(SUITE), "-q", "-n", "0", "-p", "no:cacheprovider", "--no-header", "-rN",
                        *(["-k", expression] if expression else [])], plugins=[tally])
    cpu, wall = tree_cpu(os.getpid()) - cpu0, time.perf_counter() - wall0

    table: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for engine, hook, _attack, outcome in tally.cases:
        table[engine][hook][outcome] += 1
    print("\nengine                               hook on   hook off   (interfered / limit / honest)")
    print("-" * 96)
    totals: dict[str, Counter[str]] = defaultdict(Counter)
    for engine in sorted(table):
        cells = []
        for hook in ("hook_on", "hook_off"):
            counts = table[engine][hook]
            total = sum(v for k, v in counts.items() if k != "skipped")
            contained = sum(counts[k] for k in ("interfered", "limit", "honest"))
            totals[hook].update(counts)
            cells.append((f"{contained}/{total}", f"{counts['interfered']}/{counts['limit']}/{counts['honest']}"))
        print(f"{engine:<36} {cells[0][0]:>8} {cells[1][0]:>10}   on {cells[0][1]:<9} off {cells[1][1]}")
    print("-" * 96)
    for hook in ("hook_on", "hook_off"):
        counts = totals[hook]
        total = sum(v for k, v in counts.items() if k != "skipped")
        contained = sum(counts[k] for k in ("interfered", "limit", "honest"))
        print(f"all engines, {hook.replace('_', ' ')}: {contained}/{total} contained"
              + (f" ({counts['skipped']} skipped)" if counts["skipped"] else ""))
    failed = [(e, h, a) for e, h, a, o in tally.cases if o == "not contained"]
    for engine, hook, attack in failed:
        print(f"NOT CONTAINED: {engine} / {attack} ({hook})")
    if tally.other:
        print(f"other tests: {dict(tally.other)}")
    print(f"\n{len(tally.cases)} attack cases in {wall:.1f} s wall ({load()}), {cpu:.1f} s CPU "
          "(this process, the sandbox's template process and its jobs); pytest exit code "
          f"{int(code)}")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
