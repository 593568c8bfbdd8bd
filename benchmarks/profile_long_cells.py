"""Registration time of a CSV with one long digits-only cell (issue 7: a 0.8 MB cell took 41 s, 50 MB never
finished, because date guessing was quadratic in a cell's length). Prints figures, asserts nothing.

Each run parses and profiles the file exactly as the "Add a CSV" tab and ``forkpaths add-dataset`` do
(``read_csv_with_form``: ``pd.read_csv`` defaults, then the BLADE data dictionary). Goal: time grows with the
file's size, not with its square (50 MB in a few seconds).
Run: .venv/bin/python benchmarks/profile_long_cells.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from curation.dataset_files import read_csv_with_form  # noqa: E402

SIZES_MB = (0.8, 8, 50)


def main() -> None:
    print(f"{'cell':>8}  {'file':>8}  {'seconds':>8}  dtype of the long column")
    for size in SIZES_MB:
        cell = "7" * int(size * 2**20)
        rows = "".join(f"{i},{i * 3},2020-01-{i:02d}\n" for i in range(2, 29))
        csv_bytes = f"id,code,when\n1,{cell},2020-01-01\n{rows}".encode()
        start = time.perf_counter()
        bundle = read_csv_with_form(csv_bytes, filename="long.csv", name="long", research_question="Why?",
                                    description="", column_descriptions={}, max_bytes=2**30)
        seconds = time.perf_counter() - start
        dtype = bundle.fields[1].properties.dtype
        print(f"{size:>6} MB  {len(csv_bytes) / 2**20:>5.1f} MB  {seconds:>8.2f}  {dtype}")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
