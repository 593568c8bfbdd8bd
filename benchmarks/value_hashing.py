"""Value hashing of a 146,000 x 27 frame (the shape of BLADE's soccer table; the ground-truth benchmark's
``synthetic_soccer``): 10 float, 10 int and 7 text columns, read back from CSV as the job reads its table.

Prints the CPU seconds (best of ``--repeat``) of:

* ``blade_value_hash`` of every column (no cache: what each column costs the first time);
* ``ColumnHasher().hash_frame`` on the whole frame (cold cache, as the first step of a job);
* ``hash_frame`` of a row subset after the whole frame (a filter: numeric strings reused by row);
* ``hash_frame`` of the same frame again (every column found by its fingerprint).

With ``--before REV`` (default: the commit before the vectorisation), the same two cold figures for that
revision's ``evaluation/groundtruth/hashing.py``, read from git and run on this machine, and a check that both give
the same hashes: the speed-up on this machine, whatever its speed.

Goal (issue 16): the cold hashing at least 3x faster than before the vectorisation. Figures only.

Run: ``.venv/bin/python benchmarks/value_hashing.py [--repeat N] [--before REV | --no-before]``
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from evaluation.groundtruth import hashing  # noqa: E402
from evaluation.groundtruth.hashing import ColumnHasher, blade_value_hash  # noqa: E402

ROOT_DIR = Path(__file__).resolve().parents[1]
# the vectorisation's commit (issue 16), b599043 when this was written: found by its subject, which a rebase keeps
VECTORISED_SUBJECT = "^Value hashing vectorised: numeric columns as byte matrices"


def _before_vectorisation() -> str:
    """The revision before the vectorisation, found by its commit's subject (a hash would not survive a rebase)."""
    found = subprocess.run(["git", "log", "--reverse", "--format=%H", "--grep", VECTORISED_SUBJECT], cwd=ROOT_DIR,
                           capture_output=True, text=True).stdout.split("\n")[0].strip()
    return f"{found}^" if found else "(no commit matches " + VECTORISED_SUBJECT + ")"


def _module_at(rev: str):  # type: ignore[no-untyped-def]
    """``evaluation/groundtruth/hashing.py`` as it was at ``rev``, imported under another name."""
    source = subprocess.run(["git", "show", f"{rev}:evaluation/groundtruth/hashing.py"], cwd=ROOT_DIR,
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="hashing-")) / "hashing_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("hashing_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def soccer_like(rows: int = 146_000) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    cols: dict[str, object] = {f"f{i}": rng.normal(0, 1, rows) for i in range(10)}
    cols |= {f"i{i}": rng.integers(0, 1000, rows) for i in range(10)}
    players = np.array([f"player_{j}" for j in range(2000)])
    cols |= {"t0": players[rng.integers(0, 2000, rows)]}
    cols |= {f"t{i}": np.array([f"cat{i}_{j}" for j in range(8)])[rng.integers(0, 8, rows)] for i in range(1, 7)}
    buf = io.StringIO()
    pd.DataFrame(cols).to_csv(buf, index=False)
    buf.seek(0)
    return pd.read_csv(buf)


def _best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", default=None,
                        help="the revision to compare with (git; default: the one before the vectorisation)")
    parser.add_argument("--no-before", action="store_true", help="skip the comparison (no git checkout)")
    args = parser.parse_args()
    df = soccer_like()
    sub = df[df["i0"] > 20]
    print(f"frame {df.shape[0]:,} x {df.shape[1]} ({', '.join(f'{n} {k}' for k, n in df.dtypes.astype(str).value_counts().items())})")

    def warm() -> None:
        h = ColumnHasher()
        h.hash_frame(df)
        h.hash_frame(df)

    def subset() -> None:
        h = ColumnHasher()
        h.hash_frame(df)
        t0 = time.process_time()
        h.hash_frame(sub)
        times.append(time.process_time() - t0)

    plain = _best(lambda: [blade_value_hash(df[c]) for c in df.columns], args.repeat)
    cold = _best(lambda: ColumnHasher().hash_frame(df), args.repeat)
    times: list[float] = []
    for _ in range(args.repeat):
        subset()
    hasher = ColumnHasher()
    hasher.hash_frame(df)
    again = _best(lambda: hasher.hash_frame(df), args.repeat)
    print(f"{'blade_value_hash, every column':<44}{plain:>8.3f} s CPU")
    print(f"{'ColumnHasher.hash_frame, cold':<44}{cold:>8.3f} s CPU")
    print(f"{'hash_frame of a row subset after it':<44}{min(times):>8.3f} s CPU")
    print(f"{'hash_frame of the same frame again':<44}{again:>8.3f} s CPU")
    if args.no_before:
        return
    if args.before is None:
        args.before = _before_vectorisation()
    try:
        old = _module_at(args.before)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"\nno comparison: cannot read {args.before} from git ({exc}); --no-before skips it")
        return
    old_plain = _best(lambda: [old.blade_value_hash(df[c]) for c in df.columns], args.repeat)
    old_cold = _best(lambda: old.ColumnHasher().hash_frame(df), args.repeat)
    same = all(old.blade_value_hash(df[c]) == hashing.blade_value_hash(df[c]) for c in df.columns)
    print(f"\nat {args.before}, on this machine:")
    print(f"{'blade_value_hash, every column':<44}{old_plain:>8.3f} s CPU  -> {old_plain / plain:.1f}x faster now")
    print(f"{'ColumnHasher.hash_frame, cold':<44}{old_cold:>8.3f} s CPU  -> {old_cold / cold:.1f}x faster now")
    print(f"every column's hash the same at both: {same}")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
