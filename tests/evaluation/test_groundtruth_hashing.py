"""BLADE's value hash (blade-reference 2.4): the fast paths give exactly what the plain definition gives."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.groundtruth.hashing import ColumnHasher, blade_value_hash


def plain_definition(series: pd.Series) -> str:
    """The definition, element by element, as BLADE's hasher computes it with ``apply``."""
    s = series.fillna(0)
    if s.dtype.kind == "f":
        s = s.apply(lambda x: round(x, 5))
    text = ":".join(s.astype(str).tolist())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


floats = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=200, deadline=None)
@given(st.lists(floats, min_size=1, max_size=50))
def test_float_hash_equals_python_round_then_str(values: list[float]) -> None:
    s = pd.Series(values, dtype="float64")
    assert blade_value_hash(s) == plain_definition(s)


def test_ties_where_numpy_round_differs_are_rounded_like_python() -> None:
    s = pd.Series([15.567015, 2.675, 0.000015, 1e-5, 123456.123455, -0.0, 1e16, 4.5e10 + 0.000005])
    assert np.round(15.567015, 5) != round(15.567015, 5)  # the trap this guards against
    assert blade_value_hash(s) == plain_definition(s)


def test_ints_bools_nan_and_strings() -> None:
    assert blade_value_hash(pd.Series([1, -2, 30])) == hashlib.sha256(b"1:-2:30").hexdigest()
    assert blade_value_hash(pd.Series([True, False])) == hashlib.sha256(b"True:False").hexdigest()
    assert blade_value_hash(pd.Series([np.nan, 1.5])) == hashlib.sha256(b"0.0:1.5").hexdigest()
    assert blade_value_hash(pd.Series(["a", None, "b"])) == hashlib.sha256(b"a::b").hexdigest()
    # object columns that parse as dates are formatted as dates
    dates = pd.Series(["2020-01-02", "2021-03-04"])
    assert blade_value_hash(dates) == hashlib.sha256(b"2020-01-02 00:00:00:2021-03-04 00:00:00").hexdigest()


def test_column_hasher_reuse_is_exact() -> None:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"f": rng.normal(0, 1, 500), "i": rng.integers(0, 9, 500),
                       "t": [f"x{j % 7}" for j in range(500)], "sep": ["a\x1fb", "c"] * 250})
    hasher = ColumnHasher()
    full = hasher.hash_frame(df)
    assert full == {c: blade_value_hash(df[c]) for c in df.columns}
    sub = df[df["i"] > 3]
    again = hasher.hash_frame(sub)
    assert again == {c: blade_value_hash(sub[c]) for c in df.columns}
    assert hasher.subset_hits == 2  # f and i reused their strings by row
    changed = sub.assign(f=sub["f"] + 1e-9)
    assert hasher.hash(changed["f"], "f") == blade_value_hash(changed["f"])
