"""Programmatic checks' speed (issue 20; prints figures, asserts nothing).

- overhead per check, warm: the checks of one output folder run in ONE sandbox job, each in its own process
  forked from the job's measurer; the marginal cost of one more check is (time for 21 checks - time for 1) / 20,
  with checks that read the folder's table (pandas is preloaded in the sandbox). Goal: <= 0.2 s.
- scoring 100 output folders x 10 checks with 2 workers (two sandbox jobs at a time), as a programmatic run does.

Run: .venv/bin/python benchmarks/programmatic_checks.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.programmatic.runner import CheckLimits, run_checks, run_many  # noqa: E402
from evaluation.sandbox import prewarm  # noqa: E402
from exports.programmatic_part import ProgrammaticCheck, ProgrammaticTaskRelease  # noqa: E402

CODE = ("import pandas as pd\n\ndef check(ground_truth):\n"
        "    df = pd.read_csv('clean.csv')\n    return bool(df['b'].notna().all()) and len(df) == {n}\n")
TABLE = ("a,b\n" + "".join(f"{i},{i * 2}\n" for i in range(1000))).encode()


def task(n: int) -> ProgrammaticTaskRelease:
    checks = [ProgrammaticCheck(id=f"c{i}", task_type="data cleaning & preprocessing", function=f"F{i % 3}",
                                metric=f"m{i}", code=CODE.replace("{n}", str(1000 if i % 4 else 999)))
              for i in range(n)]
    return ProgrammaticTaskRelease(key=f"t{n}", prompt="p", checks=checks)


def timed(t: ProgrammaticTaskRelease) -> float:
    started = time.perf_counter()
    outcome = run_checks(t, {"clean.csv": TABLE}, limits=CheckLimits(check_timeout_s=10))
    assert all(c.status in ("true", "false") for c in outcome.checks), outcome.checks
    return time.perf_counter() - started


def main() -> None:
    prewarm(wait=True)
    one, many = task(1), task(21)
    timed(one)  # warm the template
    singles = [timed(one) for _ in range(5)]
    batches = [timed(many) for _ in range(3)]
    per_check = (statistics.median(batches) - statistics.median(singles)) / 20
    print(f"one check, one folder (sandbox job included): median {statistics.median(singles):.3f} s")
    print(f"21 checks, one folder, one job:               median {statistics.median(batches):.3f} s")
    print(f"overhead per additional check (warm):         {per_check:.3f} s   (goal <= 0.2 s)")

    ten = task(10)
    jobs = [(ten, {"clean.csv": TABLE}, f"run {i}") for i in range(100)]
    started = time.perf_counter()
    outcomes = run_many(jobs, limits=CheckLimits(check_timeout_s=10, workers=2))
    took = time.perf_counter() - started
    checks = sum(len(o.checks) for o in outcomes)
    assert checks == 1000
    print(f"100 folders x 10 checks, 2 workers:           {took:.1f} s  ({took / 100:.3f} s per folder, "
          f"{took / checks * 1000:.0f} ms per check)")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
