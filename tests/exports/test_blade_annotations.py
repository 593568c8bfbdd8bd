"""BLADE's annotations.csv: lossless round trips of the nine shipped files, the documented counts, and
errors that name the file, the row, the spec_id, the column and the field."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exports.blade_annotations import (
    ANNOTATION_COLUMNS,
    KIND_COLUMNS,
    ROOT_SPEC_ID,
    BladeAnnotations,
    BladeKind,
    BladeRow,
    ConceptualVarSpec,
    CsvStyle,
    TransformSpec,
    parse_annotations,
    read_annotations,
    validate_against_data,
    write_annotations,
)
from exports.errors import BladeFormatError, FormatError

DATASETS = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fish", "hurricane", "panda_nuts", "reading"]


def _annotations_path(shared_blade: Path, name: str) -> Path:
    return shared_blade / "datasets" / name / "annotations.csv"


# ------------------------------------------------------------------------------------------ round trips


@pytest.mark.parametrize("name", DATASETS)
def test_shipped_file_is_written_back_byte_for_byte(shared_blade: Path, name: str) -> None:
    path = _annotations_path(shared_blade, name)
    original = path.read_bytes()
    annotations = read_annotations(path)
    assert write_annotations(annotations, keep_extra_columns=True) == original
    if name != "crofoot":
        assert write_annotations(annotations) == original


def test_crofoot_default_write_drops_the_empty_unnamed_columns_and_nothing_else(shared_blade: Path) -> None:
    # crofoot's header ends with three stray, always empty columns "Unnamed: 8..10" (a pandas round trip of
    # a sheet with stray columns). The default write has BLADE's eight columns, so its bytes differ from the
    # file by exactly those ",,," cells and header names; parsed, every row, id and dict is the same.
    path = _annotations_path(shared_blade, "crofoot")
    original = read_annotations(path)
    assert original.extra_columns == ("Unnamed: 8", "Unnamed: 9", "Unnamed: 10")
    written = write_annotations(original)
    assert written != path.read_bytes()
    header = next(csv.reader(io.StringIO(written.decode("utf-8"), newline="")))
    assert tuple(header) == ANNOTATION_COLUMNS
    again = parse_annotations(written, label="crofoot-8-columns.csv")
    assert again.extra_columns == ()
    assert [(r.spec_id, r.kind) for r in again.rows] == [(r.spec_id, r.kind) for r in original.rows]
    assert [_ordered(r.data) for r in again.rows] == [_ordered(r.data) for r in original.rows]
    # the only textual difference is the three empty trailing cells per record
    stripped = (
        path.read_bytes().replace(b",Unnamed: 8,Unnamed: 9,Unnamed: 10", b"").replace(b",,,\r\n", b"\r\n")
    )
    assert stripped.removesuffix(b",,,") == written


def test_file_layout_details_are_remembered(shared_blade: Path) -> None:
    affairs = read_annotations(_annotations_path(shared_blade, "affairs"))
    fish = read_annotations(_annotations_path(shared_blade, "fish"))
    # records end in CRLF with no final line break everywhere; only affairs has CRLF inside the graph cell
    assert affairs.style == CsvStyle(line_terminator="\r\n", cell_newline="\r\n", final_newline=False)
    assert fish.style == CsvStyle()


def test_cells_use_ascii_escapes_and_blades_separators(shared_blade: Path) -> None:
    raw = _annotations_path(shared_blade, "fish").read_text(encoding="utf-8")
    assert "\\ud83d\\udfe8 " in raw and "🟨" not in raw  # the yellow-square prefix, escaped
    annotations = read_annotations(_annotations_path(shared_blade, "fish"))
    variable = next(iter(annotations.variables.values()))
    assert any(column.startswith("🟨 ") for column in variable.final_columns_orig)


@pytest.mark.parametrize("name", DATASETS)
def test_rows_keep_every_key_in_file_order(shared_blade: Path, name: str) -> None:
    path = _annotations_path(shared_blade, name)
    records = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
    annotations = read_annotations(path)
    assert len(records) == len(annotations.rows)
    for record, row in zip(records, annotations.rows, strict=True):
        assert record["spec_id"] == row.spec_id
        assert list(json.loads(record[row.column])) == list(row.data)  # legacy keys included, same order


# ------------------------------------------------------------------------------------ documented counts

# blade-reference §6: cv (IV, DV, Control, Moderator), non-ROOT transforms, verbs, multi-branch transforms,
# model rows, distinct model families after strip+lower, annotate_cvar rows, annotate_transform rows.
COUNTS: dict[str, dict[str, Any]] = {
    "affairs": dict(cv=(1, 1, 5, 2), t=9, verbs={"derive": 9}, multi=0, m=11, mu=5, ann_cvar=4, ann_t=77),
    "amtl": dict(
        cv=(1, 1, 5, 0),
        t=13,
        verbs={"derive": 10, "filter": 2, "groupby": 1},
        multi=3,
        m=4,
        mu=2,
        ann_cvar=0,
        ann_t=47,
    ),
    "boxes": dict(
        cv=(1, 1, 2, 1), t=7, verbs={"derive": 6, "other": 1}, multi=0, m=5, mu=4, ann_cvar=8, ann_t=74
    ),
    "caschools": dict(cv=(1, 1, 5, 0), t=5, verbs={"derive": 5}, multi=0, m=6, mu=1, ann_cvar=16, ann_t=85),
    "crofoot": dict(cv=(3, 1, 4, 0), t=14, verbs={"derive": 14}, multi=0, m=11, mu=2, ann_cvar=4, ann_t=22),
    "fish": dict(
        cv=(4, 1, 1, 0), t=12, verbs={"derive": 10, "filter": 2}, multi=0, m=10, mu=5, ann_cvar=4, ann_t=31
    ),
    "hurricane": dict(
        cv=(1, 1, 2, 0), t=6, verbs={"derive": 4, "filter": 2}, multi=5, m=18, mu=3, ann_cvar=9, ann_t=35
    ),
    "panda_nuts": dict(
        cv=(3, 2, 3, 2), t=11, verbs={"derive": 10, "filter": 1}, multi=0, m=73, mu=5, ann_cvar=6, ann_t=70
    ),
    "reading": dict(
        cv=(1, 2, 15, 0),
        t=23,
        verbs={"derive": 17, "impute": 3, "filter": 3},
        multi=0,
        m=12,
        mu=3,
        ann_cvar=15,
        ann_t=31,
    ),
}


@pytest.mark.parametrize("name", DATASETS)
def test_counts_match_blade_reference_section_6(shared_blade: Path, name: str) -> None:
    expected = COUNTS[name]
    annotations = read_annotations(_annotations_path(shared_blade, name))
    roles = Counter(v.role for v in annotations.variables.values())
    assert (roles["IV"], roles["DV"], roles["Control"], roles["Moderator"]) == expected["cv"]
    transforms = annotations.transforms
    assert transforms[ROOT_SPEC_ID].is_root and annotations.row(ROOT_SPEC_ID).data == {"spec_name": "ROOT"}
    non_root = [t for t in transforms.values() if not t.is_root]
    assert len(non_root) == expected["t"]
    assert Counter(verb for t in non_root for verb in t.trans_verb) == expected["verbs"]
    assert len(annotations.multi_branch_transforms) == expected["multi"]
    assert len(annotations.models) == expected["m"]
    assert len({m.specification.strip().lower() for m in annotations.models.values()}) == expected["mu"]
    assert len(annotations.annotate_cvars) == expected["ann_cvar"]
    assert len(annotations.annotate_transforms) == expected["ann_t"]
    assert len(annotations.rows_of("dependency_graph")) == 1
    assert annotations.rows_of("tisane") == []
    # each row's counts add up: nothing was dropped or double-counted
    assert (
        len(annotations.rows)
        == 1
        + 1
        + sum(expected["cv"])
        + expected["t"]
        + expected["m"]
        + expected["ann_cvar"]
        + expected["ann_t"]
    )


def test_totals_over_the_nine_datasets(shared_blade: Path) -> None:
    kinds: Counter[str] = Counter()
    for name in DATASETS:
        kinds.update(row.kind for row in read_annotations(_annotations_path(shared_blade, name)).rows)
    # §1.4 totals over 12 files minus mortgage, soccer, teachingratings (§6 rows)
    assert kinds == {
        "annotate_transform": 541 - 57 - 0 - 12,
        "model": 206 - 6 - 41 - 9,
        "transform": (176 - 23 - 39 - 14) + 9,
        "conceptual": 120 - 12 - 16 - 18,
        "annotate_cvar": 82 - 1 - 0 - 15,
        "dependency_graph": 9,
    }


def test_hurricane_branches_are_alternatives_after_remove_katrina_or_root(shared_blade: Path) -> None:
    transforms = read_annotations(_annotations_path(shared_blade, "hurricane")).transforms
    by_name = {t.spec_name: t for t in transforms.values()}
    branches = [
        [transforms[dep].spec_name for dep in branch.dependencies]
        for branch in by_name["masfem_mean"].branches
    ]
    assert branches == [["remove_Katrina"], ["ROOT"]]
    assert all(branch.condition == "" for t in transforms.values() for branch in t.branches)


def test_dangling_legacy_ids_of_annotate_rows_are_accepted(shared_blade: Path) -> None:
    annotations = read_annotations(_annotations_path(shared_blade, "affairs"))
    ids = {row.spec_id for row in annotations.rows}
    reviews = annotations.annotate_transforms.values()
    assert reviews and all(r.associated_cvar_spec_id not in ids for r in reviews)  # 0/541 resolve (1.5.6)
    embedded = next(iter(reviews)).associated_cvar()
    assert isinstance(embedded, ConceptualVarSpec) and embedded.concept


# ------------------------------------------------------------------------------------------ typed views


def _transform(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "specification": "Make y",
        "spec_name": "make_y",
        "trans_verb": ["derive"],
        "code": "df['y'] = df['x'] * 2",
        "rationale": "",
        "conditions": "",
        "input_cols_to_output_col_mapping": [[["x"], "y"]],
        "branches": [{"dependencies": [ROOT_SPEC_ID], "condition": ""}],
    }
    base.update(fields)
    return base


def _annotations(*rows: tuple[str, BladeKind, dict[str, Any]]) -> BladeAnnotations:
    root = BladeRow(spec_id=ROOT_SPEC_ID, kind="transform", data={"spec_name": "ROOT"})
    return BladeAnnotations(rows=[root, *(BladeRow(spec_id=s, kind=k, data=d) for s, k, d in rows)])


def test_legacy_list_of_lists_branches_are_upgraded_in_the_view_only() -> None:
    legacy = _transform(branches=[[ROOT_SPEC_ID], [ROOT_SPEC_ID, "a"]], spec_name="b")
    annotations = _annotations(("a", "transform", _transform()), ("b", "transform", legacy))
    view = annotations.transforms["b"]
    assert [(b.dependencies, b.condition) for b in view.branches] == [
        ([ROOT_SPEC_ID], ""),
        ([ROOT_SPEC_ID, "a"], ""),
    ]
    assert annotations.row("b").data["branches"] == [[ROOT_SPEC_ID], [ROOT_SPEC_ID, "a"]]
    again = parse_annotations(write_annotations(annotations))
    assert again.row("b").data["branches"] == [[ROOT_SPEC_ID], [ROOT_SPEC_ID, "a"]]


def test_transform_view_derives_inputs_and_outputs() -> None:
    mapping = [[["a", "b"], "c"], [["c"], ""], [[], "d"]]
    view = TransformSpec.from_row(
        BladeRow(
            spec_id="x",
            kind="transform",
            data=_transform(
                **{"input_cols_to_output_col_mapping": mapping, "annotator": None, "time_stamp": "t"}
            ),
        )
    )
    assert view.input_cols == ["a", "b", "c"]
    assert view.output_cols == ["c", "d"]
    assert view.model_extra == {}  # annotator and time_stamp are known legacy fields
    assert view.name == "make_y"


def test_whitespace_only_cells_count_as_empty() -> None:
    header = ",".join(ANNOTATION_COLUMNS)
    text = f'{header}\r\nROOT_SPEC_ID, ,  ,"{{""spec_name"": ""ROOT""}}", ,\t,,'
    annotations = parse_annotations(text.encode())
    assert [(r.spec_id, r.kind, r.data) for r in annotations.rows] == [
        (ROOT_SPEC_ID, "transform", {"spec_name": "ROOT"})
    ]


def test_blank_lines_are_skipped_and_a_bom_is_remembered() -> None:
    header = ",".join(ANNOTATION_COLUMNS)
    content = f'\ufeff{header}\n\nROOT_SPEC_ID,,,"{{""spec_name"": ""ROOT""}}",,,,\n'.encode()
    annotations = parse_annotations(content)
    assert annotations.style == CsvStyle(line_terminator="\n", final_newline=True, bom=True)
    assert len(annotations.rows) == 1
    assert write_annotations(annotations) == content.replace(b"\n\n", b"\n")


# ------------------------------------------------------------------------------------------- rejections


def _records(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _write_records(path: Path, records: list[list[str]]) -> None:
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\r\n").writerows(records)
    path.write_text(out.getvalue(), encoding="utf-8", newline="")


def _corrupt(shared_blade: Path, tmp_path: Path, name: str = "hurricane") -> tuple[Path, list[list[str]]]:
    """A writable copy of a shipped annotations.csv and its records (records[0] is the header)."""
    path = tmp_path / name / "annotations.csv"
    path.parent.mkdir(parents=True)
    path.write_bytes(_annotations_path(shared_blade, name).read_bytes())
    return path, _records(path)


def _col(records: list[list[str]], column: str) -> int:
    return records[0].index(column)


def _first_row(records: list[list[str]], column: str, skip: int = 0) -> int:
    """Index (= 1-based data row) of the first record filling ``column`` (after ``skip`` such records)."""
    hits = [i for i, r in enumerate(records) if i and r[_col(records, column)].strip()]
    return hits[skip]


def _error(path: Path) -> str:
    with pytest.raises(BladeFormatError) as info:
        read_annotations(path)
    assert isinstance(info.value, FormatError)
    return str(info.value)


def _assert_names(
    message: str, path: Path, row: int, spec_id: str, column: str, field: str | None = None
) -> None:
    assert str(path) in message, message
    assert re.search(rf"data row {row}\b", message), message
    assert spec_id in message, message
    assert f"column {column}" in message, message
    if field is not None:
        assert f"field {field}" in message, message


def test_bad_json_in_a_cell(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    row = _first_row(records, "transform_spec_json", skip=1)
    column = _col(records, "transform_spec_json")
    records[row][column] = records[row][column].replace('"code": ', '"code" ', 1)
    _write_records(path, records)
    message = _error(path)
    _assert_names(message, path, row, records[row][0], "transform_spec_json")
    assert "not valid JSON" in message and "Expecting ':' delimiter at line 1, column" in message


def test_a_dependency_that_names_nothing(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    row = _first_row(records, "transform_spec_json", skip=1)
    column = _col(records, "transform_spec_json")
    data = json.loads(records[row][column])
    data["branches"][0]["dependencies"][0] = "0123456789abcdef0123456789abcdef"
    records[row][column] = json.dumps(data)
    _write_records(path, records)
    message = _error(path)
    _assert_names(message, path, row, records[row][0], "transform_spec_json", "branches[0].dependencies[0]")
    assert "'0123456789abcdef0123456789abcdef' names no transform" in message


def test_a_cycle_in_the_branches_names_the_specs_on_it(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    column = _col(records, "transform_spec_json")
    specs = {r[0]: (i, json.loads(r[column])) for i, r in enumerate(records) if i and r[column].strip()}
    # remove_Katrina comes after remove_NA_in_elapsedyrs; make the latter come after the former too
    by_name = {data.get("spec_name"): (sid, i, data) for sid, (i, data) in specs.items()}
    katrina_id, _, _ = by_name["remove_Katrina"]
    na_id, na_row, na_data = by_name["remove_NA_in_elapsedyrs"]
    na_data["branches"] = [{"dependencies": [katrina_id], "condition": ""}]
    records[na_row][column] = json.dumps(na_data)
    _write_records(path, records)
    message = _error(path)
    assert "cycle" in message
    assert "remove_Katrina" in message and "remove_NA_in_elapsedyrs" in message
    first = min(specs[katrina_id][0], na_row)
    _assert_names(message, path, first, records[first][0], "transform_spec_json", "branches")


def test_a_self_dependency_is_a_cycle() -> None:
    annotations = _annotations(
        ("a", "transform", _transform(branches=[{"dependencies": ["a"], "condition": ""}]))
    )
    with pytest.raises(BladeFormatError, match=r"cycle.*make_y → make_y"):
        write_annotations(annotations)


def test_a_row_with_two_json_columns(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    row = _first_row(records, "conceptual_spec_json")
    records[row][_col(records, "model_spec_json")] = records[row][_col(records, "conceptual_spec_json")]
    _write_records(path, records)
    message = _error(path)
    _assert_names(message, path, row, records[row][0], "model_spec_json")
    assert "fills 2 JSON columns (conceptual_spec_json, model_spec_json)" in message


def test_a_row_with_no_json_column(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    row = _first_row(records, "model_spec_json")
    records[row][_col(records, "model_spec_json")] = "  "
    _write_records(path, records)
    message = _error(path)
    assert f"data row {row} " in message and records[row][0] in message and "fills none" in message


def test_a_duplicate_spec_id(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    first = _first_row(records, "model_spec_json")
    second = _first_row(records, "model_spec_json", skip=3)
    records[second][0] = records[first][0]
    _write_records(path, records)
    message = _error(path)
    _assert_names(message, path, second, records[first][0], "spec_id")
    assert f"already used by data row {first}" in message


def test_a_transform_without_code(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    row = _first_row(records, "transform_spec_json", skip=2)
    column = _col(records, "transform_spec_json")
    data = json.loads(records[row][column])
    del data["code"]
    records[row][column] = json.dumps(data)
    _write_records(path, records)
    message = _error(path)
    _assert_names(message, path, row, records[row][0], "transform_spec_json", "code")


def test_a_field_of_the_wrong_type(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    row = _first_row(records, "annotate_transform_spec_json")
    column = _col(records, "annotate_transform_spec_json")
    data = json.loads(records[row][column])
    data["is_suited_to_cv"] = "yes"
    records[row][column] = json.dumps(data)
    _write_records(path, records)
    message = _error(path)
    _assert_names(message, path, row, records[row][0], "annotate_transform_spec_json", "is_suited_to_cv")
    assert "must be one of 'Yes', 'No' or 'Unsure', not \"yes\"" in message


def test_a_derived_column_no_transform_produces(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    column = _col(records, "conceptual_spec_json")
    row = next(
        i for i, r in enumerate(records) if i and r[column] and json.loads(r[column])["final_columns_derived"]
    )
    data = json.loads(records[row][column])
    data["final_columns_derived"][0] = "🟩 nowhere"
    records[row][column] = json.dumps(data)
    _write_records(path, records)
    message = _error(path)
    _assert_names(message, path, row, records[row][0], "conceptual_spec_json", "final_columns_derived[0]")
    assert "'🟩 nowhere' is not produced by any transform" in message


def test_non_object_json_and_repeated_keys(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    column = _col(records, "model_spec_json")
    first = _first_row(records, "model_spec_json")
    second = _first_row(records, "model_spec_json", skip=1)
    records[first][column] = "[1, 2]"
    records[second][column] = records[second][column].replace('{"time_stamp"', '{"code": "", "time_stamp"', 1)
    records[second][column] = records[second][column].replace('"code": ""', '"code": "x"', 1)
    _write_records(path, records)
    with pytest.raises(BladeFormatError) as info:
        read_annotations(path)
    assert len(info.value.problems) == 2
    one, two = info.value.problems
    assert (one.row, one.column, one.spec_id) == (first, "model_spec_json", records[first][0])
    assert "must hold a JSON object" in one.message
    assert (two.row, two.field) == (second, "code") and "key 'code' twice" in two.message


def test_content_in_an_extra_column_is_refused(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path, "crofoot")
    records[5][_col(records, "Unnamed: 9")] = "note"
    _write_records(path, records)
    message = _error(path)
    _assert_names(message, path, 5, records[5][0], "Unnamed: 9")


def test_a_missing_blade_column_is_named(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    records[0][_col(records, "tisane_spec_json")] = "tisane"
    _write_records(path, records)
    message = _error(path)
    assert str(path) in message and "lacks BLADE's column(s) tisane_spec_json" in message


def test_every_problem_is_reported_at_once(shared_blade: Path, tmp_path: Path) -> None:
    path, records = _corrupt(shared_blade, tmp_path)
    column = _col(records, "transform_spec_json")
    for skip in (1, 2, 3):
        row = _first_row(records, "transform_spec_json", skip=skip)
        records[row][column] = records[row][column][:-1]
    _write_records(path, records)
    with pytest.raises(BladeFormatError) as info:
        read_annotations(path)
    assert len(info.value.problems) == 3
    assert str(info.value).startswith(f"3 problems in {path}:")


def test_columns_missing_from_the_data(shared_blade: Path) -> None:
    annotations = read_annotations(
        _annotations_path(shared_blade, "hurricane"), label="hurricane/annotations.csv"
    )
    variable_row = next(
        (i, r)
        for i, r in enumerate(annotations.rows, 1)
        if r.kind == "conceptual" and r.data["final_columns_orig"]
    )
    index, row = variable_row
    missing = row.data["final_columns_orig"][0].removeprefix("🟨 ")
    data_columns = [c for c in _data_columns(shared_blade, "hurricane") if c != missing]
    with pytest.raises(BladeFormatError) as info:
        validate_against_data(annotations, data_columns, label="hurricane/data.csv")
    message = str(info.value)
    _assert_names(
        message,
        Path("hurricane/annotations.csv"),
        index,
        row.spec_id,
        "conceptual_spec_json",
        "final_columns_orig[0]",
    )
    assert f"'🟨 {missing}' is not a column of hurricane/data.csv" in message
    # the model rows that use it are reported as well, each at its own row
    assert {p.column for p in info.value.problems} == {"conceptual_spec_json", "model_spec_json"}
    validate_against_data(annotations, _data_columns(shared_blade, "hurricane"))  # the real header is fine


def _data_columns(shared_blade: Path, name: str) -> list[str]:
    with open(shared_blade / "datasets" / name / "data.csv", encoding="utf-8", newline="") as handle:
        return next(csv.reader(handle))


def test_write_refuses_invalid_rows_and_unserialisable_data() -> None:
    bad = _annotations(("a", "transform", _transform(code="")))
    with pytest.raises(
        BladeFormatError, match=r"data row 2 \(spec_id 'a'\), column transform_spec_json, field code"
    ):
        write_annotations(bad)
    assert write_annotations(bad, validate=False)  # explicit opt-out still writes
    odd = _annotations(("m", "tisane", {"when": {1, 2}}))
    with pytest.raises(
        BladeFormatError, match=r"spec_id 'm'.*column tisane_spec_json.*cannot be written as JSON"
    ):
        write_annotations(odd)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(
        BladeFormatError, match=re.escape(f"{tmp_path / 'nope.csv'}: the file does not exist")
    ):
        read_annotations(tmp_path / "nope.csv")


# ------------------------------------------------------------------------------------------- properties


def _ordered(value: Any) -> Any:
    """A comparable form that also sees key order and the int/float/bool distinction."""
    if isinstance(value, dict):
        return [("dict",)] + [(key, _ordered(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_ordered(item) for item in value]
    return (type(value).__name__, repr(value))


_TEXT = st.text(max_size=12) | st.sampled_from(
    ["🟨 age", "🟩 age_sq", "👇 code", "a,b", 'q"uote', "l\r\nb", ""]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_BASES: dict[BladeKind, dict[str, Any]] = {
    "dependency_graph": {"directed": True, "multigraph": False, "graph": {}, "nodes": [], "links": []},
    "conceptual": {"variable_type": "Control", "concept": "Age 🟨", "final_columns_orig": ["🟨 age"]},
    "transform": _transform(),
    "model": {"specification": "OLS", "code": "smf.ols('y ~ x', df).fit()", "associated_columns_orig": []},
    "tisane": {},
    "annotate_cvar": {"variable_type": "IV", "concept": "Grit", "can_derive_from_data": "No"},
    "annotate_transform": {
        "code": "df['z'] = 1",
        "associated_cvar_spec_id": "dangling",
        "is_suited_to_cv": "Yes",
    },
}
_TYPED_FIELDS = {name for view in (TransformSpec, ConceptualVarSpec) for name in view.model_fields} | {
    "code",
    "is_suited_to_cv",
    "is_steps_reasonable",
    "can_derive_from_data",
    "is_reasonable",
    "columns",
    "associated_cvar_spec",
    "associated_tspec_ids",
    "state_col_val_hash",
    "associated_cv_spec_id",
    "output_col",
    "annotator_is_rationale_reasonable",
    "annotator_explanation",
    "annotator_labeled",
    "dependencies",
    "associated_columns_orig",
    "associated_columns_derived",
    "associated_columns_derived_spec_ids",
    "associated_columns_leaf_spec_ids",
    "associated_specified_spec_ids",
    "specification",
    "spec_name",
}


@st.composite
def _row_data(draw: st.DrawFn, kind: BladeKind) -> dict[str, Any]:
    extras = draw(st.dictionaries(_TEXT.filter(lambda k: k not in _TYPED_FIELDS), _JSON, max_size=4))
    items = list({**_BASES[kind], **extras}.items())
    return dict(draw(st.permutations(items)))


@st.composite
def _annotations_strategy(draw: st.DrawFn) -> BladeAnnotations:
    kinds = draw(st.lists(st.sampled_from(sorted(KIND_COLUMNS)), max_size=8))
    graph_seen = False
    chosen: list[BladeKind] = []
    for kind in kinds:
        if kind == "dependency_graph":
            if graph_seen:
                continue
            graph_seen = True
        chosen.append(kind)  # type: ignore[arg-type]
    ids = draw(
        st.lists(
            st.text(
                st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), min_size=1, max_size=10
            ).filter(lambda s: s.strip() and s != ROOT_SPEC_ID),
            min_size=len(chosen),
            max_size=len(chosen),
            unique=True,
        )
    )
    rows = [
        BladeRow(spec_id=sid, kind=kind, data=draw(_row_data(kind)))
        for sid, kind in zip(ids, chosen, strict=True)
    ]
    style = CsvStyle(
        line_terminator=draw(st.sampled_from(["\r\n", "\n"])),
        cell_newline=draw(st.sampled_from(["\r\n", "\n"])),
        final_newline=draw(st.booleans()),
        bom=draw(st.booleans()),
    )
    return BladeAnnotations(rows=rows, style=style)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_annotations_strategy())
def test_write_then_read_is_identity(annotations: BladeAnnotations) -> None:
    written = write_annotations(annotations)
    again = parse_annotations(written, label="generated.csv")
    assert [(r.spec_id, r.kind, _ordered(r.data)) for r in again.rows] == [
        (r.spec_id, r.kind, _ordered(r.data)) for r in annotations.rows
    ]
    assert write_annotations(again) == written  # what was read is enough to reproduce the bytes
