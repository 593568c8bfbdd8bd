"""How much time the sandbox adds to a one-line derive on a 150,000 x 30 table.

Builds a synthetic CSV in a temporary directory (25 numeric and 5 string columns), prepares its fast copy and
prints: the cold first check (the sandbox's template process starts and imports pandas and statsmodels), then
the median and 90th percentile of warm checks of ``df['z'] = df['c0'] * 2``: total wall time seen by the caller,
the code's own time, the time the job spent loading the table, and overhead = total - code; then 20 checks
started at the same moment from 20 threads (as 20 analysts would): how many completed without error and their
wall time. Prints the isolation in use and figures only; nothing is asserted.

Run: ``.venv/bin/python benchmarks/sandbox_overhead.py [--rows 150000] [--runs 10] [--concurrent 20]``
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evaluation.sandbox import (
    TransformCheck,
    check_transform,
    isolation_status,
    prepare_fast_copy,
    prewarm,
)

CODE = "df['z'] = df['c0'] * 2"


def build_table(path: Path, rows: int) -> None:
    rng = np.random.default_rng(0)
    columns: dict[str, object] = {}
    for i in range(25):
        columns[f"c{i}"] = rng.normal(size=rows) if i % 3 else rng.integers(0, 1000, size=rows)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    for i in range(5):
        columns[f"s{i}"] = words[rng.integers(0, len(words), size=rows)]
    pd.DataFrame(columns).to_csv(path, index=False)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def describe(label: str, checks: list[TransformCheck]) -> None:
    totals = [c.total_seconds for c in checks]
    codes = [c.code_seconds for c in checks]
    loads = [c.data_seconds for c in checks]
    overheads = [c.total_seconds - c.code_seconds for c in checks]
    print(f"{label} ({len(checks)} checks)")
    for name, values in (("total", totals), ("code", codes), ("data load", loads), ("overhead", overheads)):
        print(f"  {name:<10} median {statistics.median(values):.3f} s   p90 {quantile(values, 0.9):.3f} s")


def concurrent(data: Path, count: int) -> None:
    """``count`` checks started together from as many threads; each derives a different column."""
    results: dict[int, TransformCheck | BaseException] = {}
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = check_transform(data_path=data, parent_codes=[], code=f"df['z'] = df['c0'] * {i}")
        except BaseException as exc:  # noqa: BLE001 - counted as an error
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    ok = [r for i, r in results.items() if isinstance(r, TransformCheck) and r.ok and r.preview
          and r.preview[0]["z"] == r.preview[0]["c0"] * i]
    errors = [r if isinstance(r, BaseException) else r.error for r in results.values() if r not in ok]
    print(f"{count} concurrent checks: {len(ok)} of {count} completed without error, all done in {wall:.2f} s")
    describe("  concurrent", [r for r in ok if isinstance(r, TransformCheck)])
    for error in errors[:3]:
        print(f"  error: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=150_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=20)
    args = parser.parse_args()
    print(isolation_status().sentence())

    with tempfile.TemporaryDirectory(prefix="forkpaths-bench-") as tmp:
        data = Path(tmp) / "data.csv"
        started = time.perf_counter()
        build_table(data, args.rows)
        print(
            f"table: {args.rows} x 30, {data.stat().st_size / 1e6:.1f} MB CSV, built in "
            f"{time.perf_counter() - started:.2f} s"
        )
        started = time.perf_counter()
        cache = prepare_fast_copy(data)
        print(
            f"fast copy: {cache.stat().st_size / 1e6:.1f} MB, written in {time.perf_counter() - started:.2f} s"
        )

        cold = check_transform(data_path=data, parent_codes=[], code=CODE)
        assert cold.ok, cold.error
        print(
            f"cold first check: total {cold.total_seconds:.3f} s (code {cold.code_seconds:.3f} s, "
            f"data load {cold.data_seconds:.3f} s)"
        )

        prewarm(wait=True)
        warm = [check_transform(data_path=data, parent_codes=[], code=CODE) for _ in range(args.runs)]
        describe("warm, back to back", warm)
        concurrent(data, args.concurrent)

        cache.unlink()
        from_csv = [check_transform(data_path=data, parent_codes=[], code=CODE) for _ in range(3)]
        describe("warm, without the fast copy (CSV parsed per job)", from_csv)


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
