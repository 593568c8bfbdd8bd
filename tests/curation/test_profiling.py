"""Column profiles: reproduce the statistics in BLADE's info.json files from their data.csv."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from curation.profiling import profile_column, profile_columns

SHARED_DATASETS = [
    "affairs",
    "amtl",
    "boxes",
    "caschools",
    "crofoot",
    "fertility",
    "fish",
    "hurricane",
    "panda_nuts",
    "reading",
    "toy",
]

COMPARED = ("dtype", "num_unique_values", "min", "max", "std", "samples")

# Where BLADE's info.json disagrees with a correct computation: (dataset, column, key) -> (BLADE's value, ours).
# Both sides are asserted, so the test fails if either the file or our computation changes.
KNOWN_DIFFERENCES: dict[tuple[str, str, str], tuple[Any, Any]] = {
    # toy's Has_Children holds True/False with 5 empty cells. pd.read_csv then gives an object column, and
    # BLADE's summariser only calls bool-dtype columns "boolean", so the missing cells turned it into a
    # "category". A boolean column with gaps is still boolean.
    ("toy", "Has_Children", "dtype"): ("category", "boolean"),
    # toy's Last_Purchase_Date (text like 2024-01-01) has 5 empty cells. BLADE's summariser compared the raw
    # text, failed on str-vs-NaN, and fell back to min/max of the parsed timestamps, so it wrote
    # "2024-01-01 00:00:00", which is not how the CSV writes dates. We compare as dates and report the
    # cell's own text (the documented format, as in fertility's "03/12/12").
    ("toy", "Last_Purchase_Date", "min"): ("2024-01-01 00:00:00", "2024-01-01"),
    ("toy", "Last_Purchase_Date", "max"): ("2024-05-29 00:00:00", "2024-05-29"),
}


def _same(key: str, original: Any, ours: Any) -> bool:
    if key == "std" and original is not None and ours is not None:
        return math.isclose(original, ours, rel_tol=1e-9, abs_tol=0.0)
    if key == "samples" and original is not None and ours is not None:
        return original == ours and [type(v) for v in original] == [type(v) for v in ours]
    return original == ours and type(original) is type(ours)


def test_the_list_of_shared_datasets_is_complete(shared_blade: Path) -> None:
    present = sorted(p.parent.name for p in (shared_blade / "datasets").glob("*/info.json"))
    assert present == SHARED_DATASETS


@pytest.mark.parametrize("dataset", SHARED_DATASETS)
def test_profile_reproduces_blade_info_json(shared_blade: Path, dataset: str) -> None:
    folder = shared_blade / "datasets" / dataset
    info = json.loads((folder / "info.json").read_text(encoding="utf-8"))
    frame = pd.read_csv(folder / "data.csv")
    ours = profile_columns(frame)
    assert [f.column for f in ours] == [f["column"] for f in info["data_desc"]["fields"]]
    mismatches = []
    for original_field, our_field in zip(info["data_desc"]["fields"], ours, strict=True):
        column = original_field["column"]
        props = our_field.properties.model_dump(mode="json")
        for key in COMPARED:
            original, computed = original_field["properties"].get(key), props.get(key)
            known = KNOWN_DIFFERENCES.get((dataset, column, key))
            if known is not None:
                assert (original, computed) == known, (column, key)
            elif not _same(key, original, computed):
                mismatches.append((column, key, original, computed))
        assert props["semantic_type"] == ""
        # Keys present in the file are exactly the keys we write (std only for numbers, min/max for dates).
        assert set(props) - {"description"} == set(original_field["properties"]) - {"description"}, column
    assert mismatches == []


def test_known_differences_all_exist(shared_blade: Path) -> None:
    for dataset, column, key in KNOWN_DIFFERENCES:
        info = json.loads((shared_blade / "datasets" / dataset / "info.json").read_text(encoding="utf-8"))
        assert column in [f["column"] for f in info["data_desc"]["fields"]], (dataset, column, key)


# ------------------------------------------------------------------------------------------- rules


def _props(values: list[Any], **kwargs: Any) -> dict[str, Any]:
    return profile_column(pd.Series(values, name="c"), **kwargs).properties.model_dump(mode="json")


def test_integer_columns_keep_integer_min_and_max_and_sample_std() -> None:
    props = _props([3, 1, 2, 2])
    assert props["dtype"] == "number"
    assert (props["min"], props["max"]) == (1, 3) and type(props["min"]) is int
    assert props["std"] == pytest.approx(np.std([3, 1, 2, 2], ddof=1), rel=1e-12)
    assert props["num_unique_values"] == 3


def test_float_columns_and_integers_with_gaps_give_floats() -> None:
    frame = pd.read_csv(io.StringIO("a,b\n1,x\n,y\n3,z\n"))
    assert str(frame["a"].dtype) == "float64"  # pandas reads an integer column with a gap as float
    props = profile_column(frame["a"]).properties
    assert (props.min, props.max) == (1.0, 3.0) and type(props.min) is float and type(props.max) is float
    assert sorted(props.samples or []) == [1.0, 3.0] and all(type(v) is float for v in props.samples or [])


def test_std_of_a_single_value_and_an_empty_column_is_null() -> None:
    assert _props([5])["std"] is None
    empty = _props([np.nan, np.nan])
    assert (empty["std"], empty["min"], empty["max"], empty["samples"]) == (None, None, None, [])
    assert "std" in empty  # written as null, not dropped: the key says "number"


def test_category_versus_string_threshold_is_half_the_rows() -> None:
    assert _props(["a", "a", "b", "c"])["dtype"] == "string"  # 3 distinct / 4 rows = 0.75
    assert _props(["a", "a", "a", "b"])["dtype"] == "string"  # 2 / 4 = 0.5: not below the threshold
    assert _props(["a", "a", "a", "a", "b"])["dtype"] == "category"  # 2 / 5 = 0.4


def test_category_versus_string_counts_missing_cells_in_the_rows() -> None:
    # 2 distinct values over 4 rows (two of them empty): 0.5, not below it.
    assert _props(["a", "b", None, None])["dtype"] == "string"
    assert _props(["a", "b", "b", None, None])["dtype"] == "category"


def test_dates_are_compared_as_dates_and_reported_as_written() -> None:
    values = ["12/30/11", "01/05/12", None, "03/01/11"]
    props = _props(values)
    assert props["dtype"] == "date"
    # As text, "01/05/12" < "03/01/11" < "12/30/11"; as dates, 03/01/11 is earliest and 01/05/12 latest.
    assert (props["min"], props["max"]) == ("03/01/11", "01/05/12")
    assert set(props["samples"]) <= {"12/30/11", "01/05/12", "03/01/11"}


def test_datetime_columns_are_dates_with_timestamp_text() -> None:
    props = _props(list(pd.to_datetime(["2024-01-02", "2024-01-01"])))
    assert props["dtype"] == "date"
    assert (props["min"], props["max"]) == ("2024-01-01 00:00:00", "2024-01-02 00:00:00")
    assert all(isinstance(s, str) for s in props["samples"])


def test_booleans_with_and_without_gaps_are_boolean() -> None:
    assert _props([True, False, True])["dtype"] == "boolean"
    with_gap = _props([True, None, False])
    assert with_gap["dtype"] == "boolean" and sorted(with_gap["samples"]) == [False, True]
    assert "std" not in with_gap and "min" not in with_gap


def test_text_that_is_not_dates_is_not_a_date() -> None:
    assert _props(["2-1", "1-2", "x"])["dtype"] != "date"
    assert _props(["male", "female", "male", "male", "male"])["dtype"] == "category"


def test_samples_are_distinct_non_missing_values_drawn_with_a_fixed_seed() -> None:
    values = ["a", "b", None, "a", "c", "d", "d"]
    first = _props(values)["samples"]
    assert first == _props(values)["samples"]
    assert len(first) == 3 and len(set(first)) == 3 and set(first) <= {"a", "b", "c", "d"}
    # The draw is pandas' seeded sample of the distinct values in order of first appearance.
    assert first == pd.Series(["a", "b", "c", "d"]).sample(3, random_state=42).tolist()
    assert (
        _props(values, n_samples=10)["samples"]
        == pd.Series(["a", "b", "c", "d"]).sample(4, random_state=42).tolist()
    )
    assert _props(values, n_samples=0)["samples"] == []


def test_numpy_scalars_become_plain_json_values() -> None:
    props = _props([np.int64(1), np.int64(2)])
    assert all(type(s) is int for s in props["samples"])
    json.dumps(props)


def test_descriptions_are_attached_by_column_name() -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    fields = profile_columns(frame, descriptions={"b": "the b"})
    assert [(f.column, f.description) for f in fields] == [("a", ""), ("b", "the b")]


def test_properties_are_in_blade_key_order() -> None:
    number = profile_column(pd.Series([1, 2], name="n")).properties.model_dump(mode="json")
    assert list(number) == [
        "dtype",
        "std",
        "min",
        "max",
        "samples",
        "num_unique_values",
        "semantic_type",
        "description",
    ]
    date = profile_column(pd.Series(["2020-01-01"], name="d")).properties.model_dump(mode="json")
    assert list(date) == [
        "dtype",
        "min",
        "max",
        "samples",
        "num_unique_values",
        "semantic_type",
        "description",
    ]
