"""BLADE's info.json: lossless read/write of the shipped files, and errors that point at the problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exports.blade_info import (
    BladeInfo,
    DataDesc,
    FieldProperties,
    FieldSpec,
    dump_info_json,
    parse_info_json,
    read_info_json,
)
from exports.errors import FormatError as DatasetImportError

MINIMAL: dict[str, Any] = {
    "research_questions": ["Does x raise y?"],
    "data_desc": {
        "dataset_description": "Made up.",
        "fields": [
            {
                "column": "x",
                "properties": {
                    "dtype": "number",
                    "std": 1.5,
                    "min": 1,
                    "max": 4,
                    "samples": [1, 4, 2],
                    "num_unique_values": 4,
                    "semantic_type": "",
                    "description": "the x",
                },
            }
        ],
        "num_rows": 4,
        "field_names": ["x"],
    },
    "data_path": "/somewhere/data.csv",
}


def _text(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=True)


def _info_files(shared_blade: Path) -> list[Path]:
    files = sorted((shared_blade / "datasets").glob("*/info.json"))
    assert len(files) == 11, files  # ten datasets with data + toy; a missing one means a broken checkout
    return files


def _error(content: str | bytes) -> str:
    with pytest.raises(DatasetImportError) as info:
        parse_info_json(content, label="upload/info.json")
    message = str(info.value)
    assert "upload/info.json" in message
    return message


# --------------------------------------------------------------------------------------- round trips


def test_every_shipped_info_json_is_written_back_byte_for_byte(shared_blade: Path) -> None:
    for path in _info_files(shared_blade):
        original = path.read_text(encoding="utf-8")
        info = read_info_json(path)
        assert dump_info_json(info) == original, path.parent.name


def test_shipped_files_parse_into_the_documented_shape(shared_blade: Path) -> None:
    for path in _info_files(shared_blade):
        info = read_info_json(path)
        assert len(info.research_questions) == 1
        assert info.research_question == info.research_questions[0]
        assert info.data_desc.field_names == [f.column for f in info.data_desc.fields]
        dtypes = {f.properties.dtype for f in info.data_desc.fields}
        assert dtypes <= {"number", "category", "date", "string"}
        for field in info.data_desc.fields:
            props = field.properties
            assert props.semantic_type == ""
            assert (props.std is not None) == (props.dtype == "number")
            assert field.description == props.description


def test_non_ascii_text_is_escaped_like_the_originals(shared_blade: Path) -> None:
    original = (shared_blade / "datasets" / "affairs" / "info.json").read_text(encoding="utf-8")
    assert "\\u2013" in original and "\u2013" not in original
    info = read_info_json(shared_blade / "datasets" / "affairs" / "info.json")
    texts = [info.data_desc.dataset_description or "", *(f.description for f in info.data_desc.fields)]
    assert any("\u2013" in text for text in texts)
    written = dump_info_json(info)
    assert written.isascii() and not written.endswith("\n")


def test_unknown_keys_are_kept_at_every_level_in_their_place() -> None:
    data = json.loads(json.dumps(MINIMAL))
    data = {"format": "v0", **data, "notes": {"a": [1, None]}}
    data["data_desc"] = {"source_url": "http://x", **data["data_desc"], "license": "ODC-By"}
    field = data["data_desc"]["fields"][0]
    data["data_desc"]["fields"][0] = {"role": "iv", **field, "unit": "m"}
    data["data_desc"]["fields"][0]["properties"] = {"quantiles": [1, 2], **field["properties"], "scale": None}
    text = _text(data)
    info = parse_info_json(text)
    assert dump_info_json(info) == text
    assert info.model_extra == {"format": "v0", "notes": {"a": [1, None]}}
    assert info.data_desc.model_extra == {"source_url": "http://x", "license": "ODC-By"}
    assert info.data_desc.fields[0].model_extra == {"role": "iv", "unit": "m"}
    assert info.data_desc.fields[0].properties.model_extra == {"quantiles": [1, 2], "scale": None}


def test_missing_optional_keys_stay_missing_and_explicit_nulls_stay_null() -> None:
    data = {
        "research_questions": ["q"],
        "data_desc": {"fields": [{"column": "a", "properties": {"min": None}}]},
        "data_path": None,
    }
    info = parse_info_json(_text(data))
    assert info.data_desc.dataset_description is None and info.data_desc.num_rows is None
    assert dump_info_json(info) == _text(data)


def test_number_types_are_kept_exactly() -> None:
    data = json.loads(json.dumps(MINIMAL))
    data["data_desc"]["fields"][0]["properties"].update(min=1.0, max=4, std=0, samples=[1.0, "a", True])
    info = parse_info_json(_text(data))
    props = info.data_desc.fields[0].properties
    assert (type(props.min), type(props.max), type(props.std)) == (float, int, int)
    assert dump_info_json(info) == _text(data)


def test_nan_and_infinity_survive_a_round_trip() -> None:
    data = json.loads(json.dumps(MINIMAL))
    data["data_desc"]["fields"][0]["properties"].update(std=float("nan"), max=float("inf"))
    text = _text(data)
    assert '"std": NaN' in text and '"max": Infinity' in text
    assert dump_info_json(parse_info_json(text)) == text


def test_models_built_in_code_are_written_in_blade_key_order() -> None:
    info = BladeInfo(
        research_questions=["q"],
        data_desc=DataDesc(
            dataset_description="d",
            fields=[
                FieldSpec(
                    column="a",
                    properties=FieldProperties(
                        dtype="number",
                        std=1.0,
                        min=0,
                        max=2,
                        samples=[0],
                        num_unique_values=2,
                        semantic_type="",
                        description="",
                    ),
                )
            ],
            num_rows=3,
            field_names=["a"],
        ),
        data_path="data.csv",
    )
    written = json.loads(dump_info_json(info))
    assert list(written) == ["research_questions", "data_desc", "data_path"]
    assert list(written["data_desc"]) == ["dataset_description", "fields", "num_rows", "field_names"]
    assert list(written["data_desc"]["fields"][0]["properties"]) == [
        "dtype",
        "std",
        "min",
        "max",
        "samples",
        "num_unique_values",
        "semantic_type",
        "description",
    ]
    # A field that was never set is left out rather than written as null.
    category = FieldSpec(column="c", properties=FieldProperties(dtype="category", samples=["x"]))
    assert category.model_dump(mode="json") == {
        "column": "c",
        "properties": {"dtype": "category", "samples": ["x"]},
    }


_json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
_json_value = st.recursive(
    _json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
_extra_keys = st.dictionaries(
    st.text(min_size=1, max_size=6).map(lambda k: "x_" + k), _json_value, max_size=3
)


@settings(max_examples=60, deadline=None)
@given(top=_extra_keys, desc=_extra_keys, field=_extra_keys, props=_extra_keys, first=st.booleans())
def test_any_extra_keys_round_trip(
    top: dict[str, Any], desc: dict[str, Any], field: dict[str, Any], props: dict[str, Any], first: bool
) -> None:
    def merge(extra: dict[str, Any], known: dict[str, Any]) -> dict[str, Any]:
        return {**extra, **known} if first else {**known, **extra}

    base = json.loads(json.dumps(MINIMAL))
    fld = base["data_desc"]["fields"][0]
    fld["properties"] = merge(props, fld["properties"])
    base["data_desc"]["fields"][0] = merge(field, fld)
    base["data_desc"] = merge(desc, base["data_desc"])
    data = merge(top, base)
    text = _text(data)
    assert dump_info_json(parse_info_json(text)) == text


# ------------------------------------------------------------------------------------------- errors


def test_bad_json_names_line_and_column() -> None:
    message = _error('{\n  "research_questions": ["q"]\n  "data_desc": {}\n}')
    assert "not valid JSON" in message and "line 3, column 3" in message


def test_missing_research_questions_is_named() -> None:
    data = json.loads(json.dumps(MINIMAL))
    del data["research_questions"]
    assert "research_questions is missing" in _error(_text(data))


def test_empty_research_questions_is_named() -> None:
    data = json.loads(json.dumps(MINIMAL))
    data["research_questions"] = []
    assert "research_questions must not be empty" in _error(_text(data))


def test_wrong_types_name_the_json_path_and_the_column() -> None:
    data = json.loads(json.dumps(MINIMAL))
    data["data_desc"]["fields"][0]["properties"]["num_unique_values"] = "4"
    data["data_desc"]["num_rows"] = 4.0
    data["research_questions"] = "Does x raise y?"
    message = _error(_text(data))
    assert (
        "data_desc.fields[0].properties.num_unique_values (column 'x') must be a whole number, not \"4\""
        in message
    )
    assert "data_desc.num_rows must be a whole number, not 4.0" in message
    assert "research_questions must be a list" in message


def test_union_typed_values_give_one_problem_not_one_per_member() -> None:
    data = json.loads(json.dumps(MINIMAL))
    data["data_desc"]["fields"][0]["properties"]["min"] = {"a": 1}
    message = _error(_text(data))
    assert message.count("properties.min") == 1
    assert (
        "properties.min (column 'x') must be true or false or a whole number or a number or a string"
        in message
    )


def test_a_field_without_column_is_named() -> None:
    data = json.loads(json.dumps(MINIMAL))
    del data["data_desc"]["fields"][0]["column"]
    assert "data_desc.fields[0].column is missing" in _error(_text(data))


def test_missing_fields_is_named() -> None:
    data = json.loads(json.dumps(MINIMAL))
    del data["data_desc"]["fields"]
    assert "data_desc.fields is missing" in _error(_text(data))


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[1, 2]", "must hold a JSON object"),
        ("", "is empty"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_not_an_info_json_at_all(content: str | bytes, expected: str) -> None:
    assert expected in _error(content)


def test_many_problems_are_summarised() -> None:
    data = json.loads(json.dumps(MINIMAL))
    data["data_desc"]["fields"] = [{"column": i} for i in range(8)]
    message = _error(_text(data))
    assert "data_desc.fields[0].column must be a string, not 0" in message
    assert "(and 3 more problems)" in message


def test_read_info_json_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetImportError, match="does not exist"):
        read_info_json(tmp_path / "info.json")
    path = tmp_path / "info.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(DatasetImportError) as info:
        read_info_json(path)
    assert str(path) in str(info.value) and "line 1, column 2" in str(info.value)


def test_a_byte_order_mark_is_tolerated() -> None:
    info = parse_info_json(b"\xef\xbb\xbf" + _text(MINIMAL).encode())
    assert dump_info_json(info) == _text(MINIMAL)
