"""BLADE's value hash (blade-reference 2.4): the fast paths give exactly what the plain definition gives."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
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


# --- the fast paths never give a wrong hash ---------------------------------------------------------------------


def _fresh(tag: str, n: int) -> np.ndarray:
    """n new ``str`` objects (built at run time, so not interned or shared with anything else)."""
    return np.array([f"{tag}{i:05d}x" for i in range(n)], dtype=object)


def test_equal_bytes_of_another_dtype_are_another_column() -> None:
    ints = np.arange(-50, 50, dtype="int64")
    hasher = ColumnHasher()
    assert hasher.hash_frame(pd.DataFrame({"c": ints}))["c"] == blade_value_hash(pd.Series(ints))
    floats = pd.Series(ints.view("float64"))  # the same 800 bytes read as floats
    assert hasher.hash_frame(pd.DataFrame({"c": floats}))["c"] == blade_value_hash(floats)
    assert hasher.hits == 0


def test_text_column_with_the_same_objects_reuses_its_hash() -> None:
    df = pd.DataFrame({"t": _fresh("a", 300), "n": np.arange(300)})
    hasher = ColumnHasher()
    first = hasher.hash_frame(df)
    again = hasher.hash_frame(df.copy(deep=True))  # pandas copies the pointers, not the strings
    assert again == first == {c: blade_value_hash(df[c]) for c in df.columns}
    assert hasher.pointer_hits == 1


def test_text_column_changed_in_place_is_hashed_again() -> None:
    df = pd.DataFrame({"t": _fresh("a", 300)})
    hasher = ColumnHasher()
    before = hasher.hash_frame(df)["t"]
    values = df["t"].to_numpy()
    values[7] = "changed"  # the same array object, one pointer replaced
    assert df["t"].iloc[7] == "changed"
    after = hasher.hash_frame(df)["t"]
    assert after == blade_value_hash(df["t"]) != before
    assert hasher.pointer_hits == 0


def test_equal_text_in_other_objects_gets_the_same_hash() -> None:
    hasher = ColumnHasher()
    a, b = pd.Series(_fresh("a", 50)), pd.Series(_fresh("a", 50))
    assert a.to_numpy()[0] is not b.to_numpy()[0]
    assert hasher.hash(a) == hasher.hash(b) == blade_value_hash(a)
    assert hasher.pointer_hits == 0 and hasher.hits == 1  # found by content


def test_freed_strings_addresses_cannot_fake_a_hit() -> None:
    """A kept column's strings stay alive, so new strings cannot take their addresses. Without that, the
    allocator hands a freed column's (large) string's memory straight to the next string of the same size, and
    a column of other text would have the pointers of one hashed before."""
    from evaluation.groundtruth.hashing import _pointers

    def long_string(tag: str) -> pd.Series:
        return pd.Series(np.array([tag.ljust(2000, "x")], dtype=object))

    reused = 0
    for k in range(20):  # without a hasher that keeps them, freed strings' addresses come back
        old = long_string(f"a{k}")
        address = _pointers(old.to_numpy()).copy()
        ColumnHasher().hash(old)
        del old
        reused += np.array_equal(_pointers(long_string(f"b{k}").to_numpy()), address)
    if not reused:
        pytest.skip("this allocator does not hand freed memory straight back; nothing to guard against")
    hasher = ColumnHasher()
    for k in range(20):
        old = long_string(f"a{k}")
        assert hasher.hash(old) == blade_value_hash(old)
        del old
        new = long_string(f"b{k}")
        assert hasher.hash(new) == blade_value_hash(new), f"round {k}: the hash of a freed column's text"
    assert hasher.pointer_hits == 0


def test_forgotten_entries_only_cost_a_fingerprint() -> None:
    from evaluation.groundtruth.hashing import _SameObjects

    hasher = ColumnHasher()
    hasher._same_objects = _SameObjects(budget=14_000)  # room for two of these (pointers, text, str objects)
    columns = [pd.Series(_fresh(f"c{k}_", 100)) for k in range(4)]
    hashes = [hasher.hash(c) for c in columns]
    assert hashes == [blade_value_hash(c) for c in columns]
    assert [hasher.hash(c) for c in reversed(columns)] == hashes[::-1]
    assert hasher.pointer_hits == 2 and hasher.hits == 4  # the first two were forgotten: found by content


def test_what_a_kept_column_holds_alive_counts_its_strings() -> None:
    """The budget bounds the memory the kept columns hold: their strings, not only their 8-byte pointers."""
    from evaluation.groundtruth.hashing import _SameObjects

    hasher = ColumnHasher()
    hasher._same_objects = _SameObjects(budget=100_000)
    long_text = pd.Series(np.array([f"{k}".ljust(20_000, "y") for k in range(10)], dtype=object))  # 200 kB
    assert hasher.hash(long_text) == hasher.hash(long_text) == blade_value_hash(long_text)
    assert hasher.pointer_hits == 0 and hasher.hits == 1  # too large to keep: found by content
    short = pd.Series(_fresh("s", 10))
    assert hasher.hash(short) == hasher.hash(short)
    assert hasher.pointer_hits == 1
