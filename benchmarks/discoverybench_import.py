"""Import the shared DiscoveryBench data into a fresh database: seconds (prints figures, asserts nothing).

Each run migrates a fresh SQLite database (a new file), then times
``import_discoverybench`` over the whole tree in one transaction (read and check, copy every file to the store,
register datasets and hypothesis tasks, commit), and a second, idempotent import of the same tree (every
folder fingerprinted and skipped). Best and median over several runs.
Run: .venv/bin/python benchmarks/discoverybench_import.py [PATH]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "discoverybench"
RUNS = 3


def main() -> None:
    from curation.db import make_engine, migrate, session_scope
    from curation.services.discoverybench_import import import_discoverybench

    source = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    if not source.is_dir():
        print(f"no DiscoveryBench data at {source}")
        return
    first, second = [], []
    report = None
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as scratch:
            engine = make_engine(f"sqlite:///{Path(scratch) / 'bench.db'}")
            migrate(engine)
            store = Path(scratch) / "store"
            for times in (first, second):
                start = time.perf_counter()
                with session_scope(engine) as session:
                    got = import_discoverybench(session=session, actor=None, path=source, store=store,
                                                max_bytes=500 * 2**20)
                times.append(time.perf_counter() - start)
                report = report or got
            engine.dispose()
    assert report is not None
    print(f"DiscoveryBench import of {source}: {report.folders} folders, {report.tasks} tasks "
          f"({report.needs_curation} need curation), SQLite, {RUNS} runs")
    print(f"  first import:             best {min(first):.2f} s, median {statistics.median(first):.2f} s")
    print(f"  second import (skipped):  best {min(second):.2f} s, median {statistics.median(second):.2f} s")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
