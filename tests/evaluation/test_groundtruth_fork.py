"""The ground-truth job copies a namespace for each branch of the prefix tree: its fast copy of numpy arrays
gives exactly what ``copy.deepcopy`` gives."""

from __future__ import annotations

import contextlib
import copy

import numpy as np
import pandas as pd
import pytest

from evaluation.groundtruth import jobs
from evaluation.groundtruth.jobs import _deepcopy_array, _fast_array_deepcopy, _fork, execute_paths


class Text(str):
    """A ``str`` subclass: ``copy.deepcopy`` makes a new object of it (it is not one of deepcopy's atoms)."""


def _numpy_deepcopy(array: np.ndarray) -> np.ndarray:
    return array.__deepcopy__({})


@pytest.mark.parametrize("values", [
    np.array(["a", "b", None, 1.5, 2, True, b"x", 3j], dtype=object),
    np.array([["a", "b"], ["c", None]], dtype=object, order="F"),
    np.arange(12.0).reshape(3, 4)[:, ::2],
    np.array([], dtype=object),
])
def test_atomic_elements_are_shared_as_deepcopy_shares_them(values: np.ndarray) -> None:
    ours, numpys = _deepcopy_array(values, {}), _numpy_deepcopy(values)
    assert ours is not values and not np.shares_memory(ours, values) if values.size else True
    assert ours.dtype == numpys.dtype and ours.shape == numpys.shape and ours.strides == numpys.strides
    assert [type(x) for x in ours.ravel()] == [type(x) for x in numpys.ravel()]
    if values.dtype == object:
        assert all(a is b for a, b in zip(ours.ravel(), values.ravel(), strict=True))
    np.testing.assert_array_equal(ours, numpys)


def test_mutable_and_subclassed_elements_are_deep_copied() -> None:
    shared = [1, 2]
    values = np.empty(3, dtype=object)
    values[0], values[1], values[2] = shared, shared, Text("t")
    with _fast_array_deepcopy():
        out = copy.deepcopy(values)
    assert out[0] == shared and out[0] is not shared
    assert out[0] is out[1]  # the memo: what was shared stays shared, as in numpy's own deep copy
    assert type(out[2]) is Text and out[2] is not values[2]
    out[0].append(3)
    assert shared == [1, 2]


def test_the_dispatch_is_only_changed_within_the_fork() -> None:
    dispatch = copy._deepcopy_dispatch  # type: ignore[attr-defined]
    assert np.ndarray not in dispatch
    ns = {"df": pd.DataFrame({"t": ["a", "b"]}), "bad": _Unpicklable()}
    out = _fork(ns)
    assert out["bad"] is ns["bad"]  # refused copying: shared, as before
    assert np.ndarray not in dispatch
    with contextlib.suppress(RuntimeError), _fast_array_deepcopy():
        raise RuntimeError
    assert np.ndarray not in dispatch


class _Unpicklable:
    def __deepcopy__(self, memo: dict) -> None:
        raise TypeError("no")


def test_a_forked_group_by_is_independent_and_equal() -> None:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"k": np.array([f"p{j}" for j in range(50)], dtype=object)[rng.integers(0, 50, 2000)],
                       "v": rng.normal(size=2000)})
    ns = {"df": df, "df_grp": df.groupby("k")}
    out = _fork(ns)
    pd.testing.assert_frame_equal(out["df_grp"].agg(s=("v", "sum")), ns["df_grp"].agg(s=("v", "sum")))
    out["df"].loc[0, "k"] = "changed"
    assert ns["df"].loc[0, "k"] != "changed"


def test_execute_paths_gives_what_plain_deepcopy_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(1)
    table = pd.DataFrame({"k": np.array(["a", "b", "c", None], dtype=object)[rng.integers(0, 4, 500)],
                          "x": rng.normal(size=500), "i": rng.integers(0, 9, 500)})
    codes = {
        "flt": "df = df[df['i'] > 2]",
        "grp": "df = df.groupby('k')",
        "sum": "df = df_grp.agg(x_sum=('x', 'sum')).reset_index()",
        "mean": "df = df_grp.agg(x_mean=('x', 'mean')).reset_index()",
        "der": "df['y'] = df['x'] * 2",
        "der2": "df['k2'] = df['k'].fillna('') + '!'",
    }
    payload = {"codes": {n: {"raw": c, "processed": c.replace("df = df.groupby", "df_grp = df.groupby")}
                         for n, c in codes.items()},
               "paths": [["flt", "grp", "sum"], ["flt", "grp", "mean"], ["flt", "der"], ["flt", "der2"],
                         ["der", "der2"]]}
    fast = execute_paths(payload, table)
    monkeypatch.setattr(jobs, "_fast_array_deepcopy", contextlib.nullcontext)
    plain = execute_paths(payload, table)
    for result in (fast, plain):
        result["stats"].pop("seconds")
    assert fast == plain
    assert [n["kind"] for n in fast["nodes"]].count("frame") >= 5
