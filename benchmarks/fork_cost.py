"""What one fork costs the sandbox, for each way of making the process an analysis's code runs in.

Every analysis's code runs in a process forked from a warm one (the template's job, the batch's measurer): the
kernel copies the parent's page tables, and each page either process writes afterwards is copied (copy on
write), then dropped when the child ends. This prints, per choice, the CPU milliseconds of one fork whose
child runs a typical transform (``dropna`` then a derived column on a 100-row table) and ends, split into the
parent's and the child's, with the child's minor page faults:

* ``template``: a process with what the sandbox's template imports (pandas, numpy, statsmodels, the engine);
* ``+ gc.freeze``: the same with its objects frozen out of the garbage collector (the template does this);
  shown with a child that calls ``gc.collect()`` (analysts' code does), where freezing matters;
* ``+ huge pages``: its heap collapsed into 2 MB pages (``MADV_COLLAPSE``, what the template does when idle);
* ``small parent``: pandas and numpy only (no statsmodels, no engine): what a leaner template would save;
* ``repeat from the memo``: no fork (a repeated code answered from the measurer's memo).

Each choice runs in a fresh interpreter; figures are the median of ``--forks`` forks. Prints figures only;
nothing is asserted.

Run: ``.venv/bin/python benchmarks/fork_cost.py [--forks 40]``
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proc_cpu import load, machine_speed  # noqa: E402 - benchmarks/ is this script's folder


def _measure(choice: str, forks: int, out: multiprocessing.Queue) -> None:
    import gc

    import numpy as np
    import pandas as pd

    if choice != "small parent":
        import statsmodels.api  # noqa: F401
        import statsmodels.formula.api  # noqa: F401

        from evaluation.sandbox import registry

        registry.import_engine_modules()
    table = pd.DataFrame({"a": np.arange(100.0), "b": [None if i % 7 == 0 else f"x{i}" for i in range(100)]})
    collect = choice.endswith("gc.collect()")
    if "gc.freeze" in choice:
        gc.collect()
        gc.freeze()
    if choice == "+ huge pages":
        import socket

        from evaluation.sandbox.zygote import _HugePages

        ours, _theirs = socket.socketpair()
        _HugePages().work(ours)

    def child() -> None:
        df = table.dropna()
        df = df.assign(c=df["a"] * 2)
        if collect:
            gc.collect()

    samples: list[tuple[float, float, float]] = []
    for _ in range(forks):
        own0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        pid = os.fork()
        if pid == 0:
            child()
            os._exit(0)
        os.waitpid(pid, 0)
        own1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append((own1.ru_utime - own0.ru_utime + own1.ru_stime - own0.ru_stime,
                        kids1.ru_utime - kids0.ru_utime + kids1.ru_stime - kids0.ru_stime,
                        float(kids1.ru_minflt - kids0.ru_minflt)))
    with open("/proc/self/status", encoding="ascii") as status:
        rss = {line.split(":")[0]: line.split()[1] for line in status if line.startswith("Rss")}
    out.put((choice, *(statistics.median(s[i] for s in samples) for i in range(3)), int(rss.get("RssAnon", 0))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--forks", type=int, default=40, help="forks per choice (the median is printed)")
    args = parser.parse_args()
    print(f"{load()}; {machine_speed()}")
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    choices = ["template", "template, child calls gc.collect()", "+ gc.freeze, child calls gc.collect()",
               "+ gc.freeze", "+ huge pages", "small parent"]
    for choice in choices:
        proc = context.Process(target=_measure, args=(choice, args.forks, out))
        proc.start()
        name, parent, child, faults, anon = out.get()
        proc.join()
        print(f"{name:<40} {1000 * (parent + child):6.1f} ms CPU per fork ({1000 * parent:4.1f} parent, "
              f"{1000 * child:5.1f} child; {faults:5.0f} child page faults; parent's anonymous memory "
              f"{anon / 1024:.0f} MB)")
    print(f"{'repeat from the memo':<40} {0.0:6.1f} ms CPU per fork (no process: scoring_batch.py measures it)")


if __name__ == "__main__":
    main()
