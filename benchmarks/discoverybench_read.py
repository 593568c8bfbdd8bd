"""Read the shared DiscoveryBench data and write it back: seconds (prints figures, asserts nothing).

Stages: read the whole tree (metadata parsed and validated, data-file headers read with pandas, Stata files
through pandas.read_stata, answer keys matched to queries), write it in DiscoveryBench's layout, and compare
every written file with the original byte for byte. Each stage is timed over several runs (best and median).
Run: .venv/bin/python benchmarks/discoverybench_read.py [PATH]
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
RUNS = 5


def main() -> None:
    from exports.discoverybench import read_discoverybench, write_discoverybench

    source = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    if not source.is_dir():
        print(f"no DiscoveryBench data at {source}")
        return
    reads, writes, compares = [], [], []
    identical = differing = 0
    tree = None
    for _ in range(RUNS):
        start = time.perf_counter()
        tree = read_discoverybench(source)
        reads.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as scratch:
            start = time.perf_counter()
            out = write_discoverybench(tree, Path(scratch) / "out")
            writes.append(time.perf_counter() - start)
            start = time.perf_counter()
            identical = differing = 0
            for path in sorted(p for p in source.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
                copy = out / path.relative_to(source)
                if copy.is_file() and copy.read_bytes() == path.read_bytes():
                    identical += 1
                else:
                    differing += 1
            compares.append(time.perf_counter() - start)
    assert tree is not None
    metadata_files = sum(len(f.metadata) for f in tree.folders)
    size = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    print(f"DiscoveryBench at {source}: {len(tree.folders)} folders, {metadata_files} metadata files, "
          f"{len(tree.tasks)} tasks ({sum(t.gold is None for t in tree.tasks)} without gold), {size / 1e6:.1f} MB")
    for label, times in (("read", reads), ("write", writes), ("compare", compares)):
        print(f"  {label:8s} best {min(times):.3f} s, median {statistics.median(times):.3f} s over {RUNS} runs")
    print(f"  round trip: {identical} files byte-identical, {differing} differing or missing")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
