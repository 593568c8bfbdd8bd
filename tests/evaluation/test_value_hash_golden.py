"""BLADE value hashes stay exactly what they were: golden values computed by the hashing code of main before
it was vectorised (commit 2308422), for frames covering every dtype and for the shared BLADE datasets.

The golden file holds, per frame, ``blade_value_hash`` of every column and ``ColumnHasher.hash_frame`` of the
frame, then of a row subset of it (the subset path of the hasher) and of a copy with one column changed, and
the columns the hasher flagged as depending on pandas' date inference.
Regenerate only when the definition of the hash itself changes (it must not: BLADE's published hashes are
fixed): ``python tests/evaluation/test_value_hash_golden.py --write``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from evaluation.groundtruth.hashing import ColumnHasher, blade_value_hash

GOLDEN = Path(__file__).parent / "golden" / "value_hashes.json"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "blade" / "datasets"
BLADE_NAMES = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fertility", "fish", "hurricane",
               "panda_nuts", "reading", "toy"]


def _floats(rng: np.random.Generator, n: int) -> np.ndarray:
    """Floats that exercise every branch of the rounding and formatting: ordinary values at several scales,
    exact 5-decimal ties (where numpy's round differs from Python's), tiny values printed in scientific
    notation, huge ones, the limits of float64, signed zeros and non-finite values."""
    parts = [
        rng.normal(0, 1, n), rng.normal(0, 1e4, n), rng.normal(0, 1e-3, n), rng.uniform(-1e-4, 1e-4, n),
        rng.normal(0, 1e9, n), rng.normal(0, 1e12, n), rng.normal(0, 1e17, n), rng.normal(0, 1e-7, n),
        np.round(rng.normal(0, 100, n), 5), np.round(rng.normal(0, 100, n), 2),
        (rng.integers(-10**6, 10**6, n) + 0.5) / 1e5 + 0.000005,  # near ties at the 5th decimal
        rng.integers(-10**9, 10**9, n).astype("float64"),
        2.0 ** rng.integers(-30, 60, n),
    ]
    special = np.array([15.567015, 2.675, 0.000015, 1e-5, 5e-5, 9.99999e-5, 1e-4, 0.00015, 123456.123455,
                        -0.0, 0.0, 1e16, 1e15, 9.999999999999998e15, 4.5e10 + 0.000005, 2.0**35, 2.0**35 + 0.5,
                        3.4359738368e10, -3.4359738368e10, 2.0**52, 2.0**53 + 2, 1e22, -1e22, 1.7976931348623157e308,
                        5e-324, 2.2250738585072014e-308, np.nan, np.inf, -np.inf, -1e-7, -0.000004, 0.000005,
                        -0.000005, 0.000015, 1.5, -1.5, 0.1, 0.2, 0.3, 1 / 3, 2 / 3, 100.0, -100.0])
    return np.concatenate([*parts, special])


def frames() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(20261124)
    out: dict[str, pd.DataFrame] = {}
    f = _floats(rng, 400)
    n = len(f)
    out["floats"] = pd.DataFrame({
        "f64": f, "f64_shuffled": rng.permutation(f), "f32": f.astype("float32"),
        "f64_nan_heavy": np.where(rng.random(n) < 0.5, np.nan, f),
        "nullable_Float64": pd.array(np.where(rng.random(n) < 0.2, np.nan, np.round(f, 3)), dtype="Float64"),
    })
    ints = rng.integers(-10**6, 10**6, 300)
    extremes = np.array([0, 1, -1, 9, 10, 99, 100, -100, 2**31 - 1, -2**31, 2**53 + 1, 2**63 - 1, -2**63],
                        dtype="int64")
    i64 = np.concatenate([ints, extremes, rng.integers(-2**63, 2**63 - 1, 100, dtype="int64")])
    m = len(i64)
    out["ints"] = pd.DataFrame({
        "i64": i64, "i32": (i64 % 2**31).astype("int32"), "i16": (i64 % 30000).astype("int16"),
        "i8": (i64 % 100).astype("int8"), "u8": (np.abs(i64) % 256).astype("uint8"),
        "u64": np.concatenate([np.abs(i64[:-3]).astype("uint64"),
                               np.array([2**64 - 1, 2**63, 0], dtype="uint64")]),
        "small": rng.integers(0, 10, m), "nullable_Int64": pd.array(
            [None if k % 7 == 0 else int(v) for k, v in enumerate(i64 % 1000)], dtype="Int64"),
        "bool": rng.random(m) < 0.3, "nullable_boolean": pd.array(
            [None if k % 5 == 0 else bool(k % 3) for k in range(m)], dtype="boolean"),
    })
    k = 200
    words = np.array(["alpha", "Beta", "", "ünïcödé", "日本語", "emoji 🎉", "with:colon", "tab\there",
                      "new\nline", "  spaced ", "nan", "None", "1", "1.0", "0", "True", "a\x1fb"], dtype=object)
    text = words[rng.integers(0, len(words), k)]
    with_missing = text.copy()
    with_missing[rng.random(k) < 0.2] = None
    with_nan = text.copy()
    with_nan[rng.random(k) < 0.2] = np.nan
    out["strings"] = pd.DataFrame({"text": text, "with_none": with_missing, "with_nan": with_nan,
                                   "empty": [""] * k, "all_none": [None] * k,
                                   "string_dtype": pd.array(with_missing, dtype="string")})
    mixed = [1, "1", 2.5, None, True, np.nan, "x", dt.date(2020, 1, 2), 3, -0.0, (1, 2), b"bytes"]
    out["mixed"] = pd.DataFrame({
        "mixed": (mixed * 20)[:k], "ints_as_objects": pd.Series(list(range(k)), dtype=object),
        "floats_as_objects": pd.Series([0.1 * j for j in range(k)], dtype=object),
        "bools_and_none": pd.Series([True, False, None, True] * (k // 4), dtype=object),
    })
    base = pd.Timestamp("2001-02-03 04:05:06")
    stamps = base + pd.to_timedelta(rng.integers(0, 10**9, k), unit="s")
    day_first = [f"{d:02d}.{mo:02d}.19{y:02d}" for d, mo, y in zip(rng.integers(1, 29, k), rng.integers(1, 13, k),
                                                                    rng.integers(50, 99, k), strict=True)]
    out["dates"] = pd.DataFrame({
        "datetime64": stamps, "with_nat": stamps.where(rng.random(k) > 0.2),
        "tz_aware": stamps.tz_localize("Europe/Paris", ambiguous="NaT", nonexistent="NaT"),
        "iso_strings": stamps.strftime("%Y-%m-%d"), "iso_with_time": stamps.strftime("%Y-%m-%d %H:%M"),
        "day_first_strings": day_first, "date_objects": [s.date() for s in stamps],
        "dates_and_empty": [s if j % 9 else None for j, s in enumerate(stamps.strftime("%Y/%m/%d"))],
        "timedelta": pd.to_timedelta(rng.integers(0, 10**6, k), unit="s"),
        "year_ints": rng.integers(1990, 2020, k),
    })
    cats = rng.choice(["low", "mid", "high", "ünï"], k)
    out["categoricals"] = pd.DataFrame({
        "cat_text": pd.Categorical(cats), "cat_ordered": pd.Categorical(cats, ["low", "mid", "high", "ünï"], ordered=True),
        "cat_ints": pd.Categorical(rng.integers(0, 5, k)), "cat_floats": pd.Categorical(rng.choice([0.5, 1.25, np.nan], k)),
        "cat_with_missing": pd.Categorical(np.where(rng.random(k) < 0.2, None, cats)),
        "cat_dates": pd.Categorical(stamps.normalize()[rng.integers(0, 5, k)]),
    })
    out["empty"] = pd.DataFrame({"f": pd.Series([], dtype="float64"), "i": pd.Series([], dtype="int64"),
                                 "o": pd.Series([], dtype=object), "b": pd.Series([], dtype=bool)})
    out["one_row"] = pd.DataFrame({"f": [-0.0], "i": [0], "o": [""], "b": [False], "n": [np.nan]})
    for name in BLADE_NAMES:
        data = SHARED / name / "data.csv"
        if data.is_file():
            out[f"blade_{name}"] = pd.read_csv(data)
    return out


def _or_error(fn: Any, *args: Any) -> Any:
    """The hash, or the name of the exception the hashing raised (today's code refuses a few dtypes, e.g. a
    nullable boolean column with missing values: that must stay as it is too, not turn into a new hash)."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - recorded and compared
        return f"error: {type(exc).__name__}"


def hashes_of(frame: pd.DataFrame, seed: int = 0) -> dict[str, Any]:
    """Every hash the golden file records for one frame."""
    plain = {str(c): _or_error(blade_value_hash, frame.iloc[:, i]) for i, c in enumerate(frame.columns)}
    hashable = frame[[c for c in frame.columns if not str(plain[str(c)]).startswith("error")]]
    hasher = ColumnHasher()
    whole = hasher.hash_frame(hashable)
    rng = np.random.default_rng(seed)
    keep = rng.random(len(hashable)) < 0.6
    subset = hasher.hash_frame(hashable[keep])  # the subset path: strings reused by row
    changed = hashable.copy()
    if len(hashable.columns):
        first = hashable.columns[0]
        changed[first] = changed[first].iloc[::-1].to_numpy()
    reversed_first = hasher.hash_frame(changed)
    dates = {c: sorted(h) for c, h in sorted(hasher.date_inferred.items())}
    return {"plain": plain, "hash_frame": whole, "subset": subset, "reversed_first": reversed_first,
            "date_inferred": dates}


def compute() -> dict[str, Any]:
    return {name: hashes_of(frame) for name, frame in frames().items()}


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def current() -> dict[str, pd.DataFrame]:
    return frames()


SYNTHETIC = ["floats", "ints", "strings", "mixed", "dates", "categoricals", "empty", "one_row"]


@pytest.mark.parametrize("name", SYNTHETIC + [f"blade_{n}" for n in BLADE_NAMES])
def test_value_hashes_equal_the_golden_ones(name: str, golden: dict[str, Any],
                                            current: dict[str, pd.DataFrame]) -> None:
    if name not in current:
        from tests.conftest import unavailable

        unavailable("shared", f"{name}: the shared BLADE dataset is not on this machine")
    assert name in golden, f"{name} has no golden hashes: regenerate with the hashing code of main"
    got = hashes_of(current[name])
    assert got["date_inferred"] == golden[name]["date_inferred"], f"{name}: columns flagged as date-inferred"
    for part in ("plain", "hash_frame", "subset", "reversed_first"):
        diff = {c: (h, got[part].get(c)) for c, h in golden[name][part].items() if got[part].get(c) != h}
        assert not diff, f"{name} {part}: columns whose hash changed (golden, now): {diff}"
        assert got[part].keys() == golden[name][part].keys()


def test_golden_file_covers_the_shared_datasets(golden: dict[str, Any]) -> None:
    assert {f"blade_{n}" for n in BLADE_NAMES} <= golden.keys()
    assert sum(len(golden[f"blade_{n}"]["plain"]) for n in BLADE_NAMES) > 50


if __name__ == "__main__":
    if "--write" in sys.argv:
        GOLDEN.write_text(json.dumps(compute(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {GOLDEN}")
