"""describe_change compares the columns of one dtype together (one 2-D array per side): every column's verdict
must be the one the column-by-column comparison (:func:`evaluation.inference._same_values`) gives."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from evaluation.inference import _differing, _same_values, describe_change


def _column(rng: random.Random, kind: str, n: int) -> pd.Series:
    if kind == "float":
        values = [rng.choice([rng.random(), float("nan"), 0.0, -0.0, 1.5, float("inf")]) for _ in range(n)]
        return pd.Series(values, dtype="float64")
    if kind == "int":
        return pd.Series([rng.randint(-3, 3) for _ in range(n)], dtype="int64")
    if kind == "bool":
        return pd.Series([rng.random() < 0.5 for _ in range(n)], dtype=bool)
    if kind == "str":
        return pd.Series([rng.choice(["a", "b", None, float("nan"), ""]) for _ in range(n)], dtype=object)
    if kind == "mixed":
        return pd.Series([rng.choice([1, "1", 1.0, None, (1, 2), float("nan")]) for _ in range(n)], dtype=object)
    if kind == "category":
        return pd.Series([rng.choice(["x", "y"]) for _ in range(n)], dtype="category")
    if kind == "Int64":
        return pd.Series([rng.choice([1, 2, None]) for _ in range(n)], dtype="Int64")
    if kind == "date":
        return pd.Series(pd.to_datetime([rng.choice(["2020-01-01", "2021-05-05", None]) for _ in range(n)]))
    raise AssertionError(kind)


KINDS = ["float", "int", "bool", "str", "mixed", "category", "Int64", "date"]


def _mutate(rng: random.Random, series: pd.Series) -> pd.Series:
    choice = rng.random()
    if choice < 0.4 or len(series) == 0:
        return series.copy()
    if choice < 0.55:  # a dtype change
        return series.astype(object) if series.dtype != object else series.astype(str)
    out = series.copy()
    position = rng.randrange(len(out))
    out.iloc[position] = series.iloc[(position + 1) % len(series)]  # same dtype, maybe another value
    return out


@pytest.mark.parametrize("seed", range(40))
def test_block_verdicts_equal_the_column_by_column_ones(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([0, 1, 5, 30])
    names = [f"c{i}" for i in range(rng.randint(1, 12))]
    if rng.random() < 0.3:
        names[-1] = names[0]  # a repeated column name
    before = pd.concat([_column(rng, rng.choice(KINDS), n).rename(c) for c in names], axis=1)
    after = pd.concat([_mutate(rng, before.iloc[:, i]) for i in range(len(names))], axis=1)
    positions = list(range(len(names)))
    order = positions[:]
    rng.shuffle(order)
    expected = [not _same_values(before.iloc[:, i], after.iloc[:, j]) for i, j in zip(positions, order, strict=True)]
    assert _differing(before, after, positions, order) == expected


def test_describe_change_still_names_what_changed() -> None:
    before = pd.DataFrame({"a": [1.0, np.nan, 3.0], "b": ["x", None, "z"], "c": [1, 2, 3], "d": [True, False, True]})
    after = before.copy()
    after["a"] = [1.0, np.nan, 4.0]
    after["b"] = ["x", np.nan, "z"]  # None and NaN are both missing: unchanged
    after["c"] = after["c"].astype("float64")  # a dtype change is a change
    change = describe_change(before, after)
    assert change.changed == ["a", "c"] and change.comparison == "aligned"
    filtered = before[before["c"] > 1]
    assert describe_change(before, filtered).changed == []
