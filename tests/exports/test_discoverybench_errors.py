"""Bad DiscoveryBench input: a typed error whose sentence names the file and the field (or row)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exports.discoverybench import parse_answer_key, parse_metadata, read_discoverybench, read_task_folder
from exports.errors import DiscoveryBenchFormatError, FormatError
from tests.exports.discoverybench_helpers import dump_upstream, make_folder, real_metadata, synth_metadata

LABEL = "real/test/survey/metadata_0.json"


def _metadata_error(content: bytes) -> DiscoveryBenchFormatError:
    with pytest.raises(DiscoveryBenchFormatError) as caught:
        parse_metadata(content, k=0, label=LABEL)
    assert isinstance(caught.value, FormatError)
    return caught.value


def _with(change: Any, base: dict[str, Any] | None = None) -> bytes:
    data = base if base is not None else real_metadata()
    change(data)
    return dump_upstream(data)


@pytest.mark.parametrize(
    ("content", "field", "words"),
    [
        (b'{"id": 0,\n "datasets": [}', None, "is not valid JSON: Expecting value at line 2, column 15"),
        (b"[1, 2]", None, "must hold a JSON object with datasets and queries, but it holds a list"),
        (b"", None, "is empty"),
        (b'{"id": 0, "id": 1}', "id", "repeats the key 'id'"),
        (b"\x81{}", None, "neither UTF-8 nor cp1252 text (undecodable byte 0x81 at offset 0)"),
        (b"[" * 150 + b"]" * 150, None, "more than 100 levels deep"),
        (_with(lambda d: d.pop("datasets")), "datasets", "datasets is missing"),
        (_with(lambda d: d.update(datasets=[])), "datasets", "datasets must not be empty"),
        (_with(lambda d: d["queries"][0][0].update(qid="3")), "queries[0][0].qid",
         'queries[0][0].qid must be a whole number, not "3"'),
        (_with(lambda d: d["datasets"][0]["columns"]["raw"][1].pop("name")),
         "datasets[0].columns.raw[1].name", "datasets[0].columns.raw[1].name is missing"),
        (_with(lambda d: d["datasets"][0].update(columns=7)), "datasets[0].columns",
         'must be an object with a "raw" list of columns, or a list of columns, not 7'),
        (_with(lambda d: d.update(queries={"qid": 0})), "queries",
         "queries must be a list of queries, or a list of lists of queries"),
        (_with(lambda d: d["datasets"][0]["columns"][0].update(name=3), synth_metadata()),
         "datasets[0].columns[0].name", "datasets[0].columns[0].name must be a string, not 3"),
        (_with(lambda d: d.update(queries=[{"qid": 1, "question": "a"}, {"qid": 1, "question": "b"}]),
               synth_metadata()), "queries[1].qid", "queries[1].qid repeats qid 1 of queries[0]"),
        (_with(lambda d: d.update(queries=[])), "queries", "queries is empty"),
    ],
)
def test_malformed_metadata_names_file_and_field(content: bytes, field: str | None, words: str) -> None:
    error = _metadata_error(content)
    assert str(error).startswith(LABEL)
    assert words in str(error)
    assert error.first.file == LABEL and error.first.field == field


def test_a_number_too_long_to_read_is_refused() -> None:
    error = _metadata_error(b'{"id": ' + b"9" * 5000 + b"}")
    assert str(error).startswith(LABEL) and "digits" in str(error)


def test_a_query_with_no_question() -> None:
    missing = _metadata_error(_with(lambda d: d["queries"][0][0].pop("question")))
    assert str(missing) == f"{LABEL}: queries[0][0].question is missing: every query needs its question text."
    assert missing.first.field == "queries[0][0].question"
    blank = _metadata_error(_with(lambda d: d["queries"][0].append({"qid": 1, "question": "  "})))
    assert str(blank) == f"{LABEL}: queries[0][1].question (qid 1) is empty; every query needs its question text."


def test_a_data_file_the_metadata_names_but_the_folder_lacks(tmp_path: Path) -> None:
    data = real_metadata()
    data["datasets"].append({"name": "missing.csv", "description": "x", "columns": {"raw": []}})
    folder = make_folder(tmp_path / "real" / "test", "survey", {0: data})
    with pytest.raises(DiscoveryBenchFormatError) as caught:
        read_task_folder(folder)
    problem = caught.value.first
    assert problem.file == f"{folder}/metadata_0.json" and problem.field == "datasets[1].name"
    assert str(caught.value) == (
        f"{folder}/metadata_0.json: datasets[1].name names the data file 'missing.csv', which is not in {folder}; "
        "add the file or correct the name."
    )


def test_a_data_file_name_cannot_leave_its_folder(tmp_path: Path) -> None:
    data = real_metadata()
    data["datasets"][0]["name"] = "../outside.csv"
    (tmp_path / "real" / "test").mkdir(parents=True)
    (tmp_path / "real" / "test" / "outside.csv").write_text("a\n1\n")
    folder = make_folder(tmp_path / "real" / "test", "survey", {0: data})
    with pytest.raises(DiscoveryBenchFormatError, match=r"datasets\[0\]\.name names the data file '\.\./outside\.csv'"):
        read_task_folder(folder)


def test_an_unreadable_data_file_is_named(tmp_path: Path) -> None:
    data = real_metadata(datasets=[{"name": "immi.dta", "description": "x", "columns": {"raw": []}}])
    folder = make_folder(tmp_path / "real" / "train", "immigration", {0: data}, files={"immi.dta": b"not stata"})
    with pytest.raises(DiscoveryBenchFormatError, match=r"immigration/immi\.dta: not a readable Stata \.dta file"):
        read_task_folder(folder)
    empty = make_folder(tmp_path / "real" / "train", "empty", {0: real_metadata()}, files={"data.csv": b""})
    with pytest.raises(DiscoveryBenchFormatError, match=r"empty/data\.csv: the data file is empty"):
        read_task_folder(empty)


def test_an_answer_key_row_that_matches_no_query(tmp_path: Path) -> None:
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "survey", {0: real_metadata()})
    (root / "answer_key_real.csv").write_text(
        "dataset,metadataid,query_id,gold_hypo\nsurvey,0,0,BMI rises with age.\nsurvey,0,5,Nothing.\n"
        "gone,2,0,Elsewhere.\n",
        encoding="utf-8",
    )
    with pytest.raises(DiscoveryBenchFormatError) as caught:
        read_discoverybench(root)
    rows = [(p.file, p.row, p.field) for p in caught.value.problems]
    assert rows == [(f"{root}/answer_key_real.csv", 2, "dataset, metadataid, query_id"),
                    (f"{root}/answer_key_real.csv", 3, "dataset, metadataid, query_id")]
    assert caught.value.problems[0].message == (
        f"{root}/answer_key_real.csv: row 2 (dataset 'survey', metadataid 0, query_id 5) matches no query: there is "
        "no real/<split>/survey/metadata_0.json with qid 5. Add the task folder or remove the row."
    )


def test_an_answer_key_that_contradicts_the_metadata(tmp_path: Path) -> None:
    root = tmp_path / "db"
    data = synth_metadata(queries=[{"qid": 7, "question": "Q?", "true_hypothesis": "Tempo matters."}])
    make_folder(root / "synth" / "test", "jazz_0_0", {0: data})
    (root / "answer_key_synth.csv").write_text("dataset,metadataid,query_id,gold_hypo\njazz_0_0,0,7,It does not.\n")
    with pytest.raises(DiscoveryBenchFormatError, match=r"row 1, gold_hypo differs from the true_hypothesis"):
        read_discoverybench(root)


@pytest.mark.parametrize(
    ("text", "row", "field", "words"),
    [
        ("dataset,metadataid,gold_hypo\nx,0,h\n", None, "query_id", "the header lacks the column(s) query_id"),
        ("dataset,metadataid,query_id,gold_hypo\nx,zero,0,h\n", 1, "metadataid",
         "row 1, column metadataid: 'zero' is not a whole number"),
        ("dataset,metadataid,query_id,gold_hypo\nx,0,0\n", 1, None, "row 1 has 3 cells but the header has 4"),
        ("dataset,metadataid,query_id,gold_hypo\nx,0,0,\n", 1, "gold_hypo", "row 1, column gold_hypo is empty"),
        ("dataset,metadataid,query_id,gold_hypo\nx,0,0,a\nx,0,0,b\n", 2, None, "row 2 repeats the query of row 1"),
        ("", None, None, "is empty"),
    ],
)
def test_malformed_answer_keys(text: str, row: int | None, field: str | None, words: str) -> None:
    with pytest.raises(DiscoveryBenchFormatError) as caught:
        parse_answer_key(text.encode(), kind="real", label="answer_key_real.csv")
    assert str(caught.value).startswith("answer_key_real.csv")
    assert words in str(caught.value)
    assert (caught.value.first.row, caught.value.first.field) == (row, field)


def test_every_problem_of_a_tree_is_reported_and_nothing_returned(tmp_path: Path) -> None:
    root = tmp_path / "db"
    make_folder(root / "real" / "test", "good", {0: real_metadata()})
    make_folder(root / "real" / "test", "bad", {0: b"{", 1: _with(lambda d: d["queries"][0][0].pop("question"))})
    make_folder(root / "synth" / "dev", "nodata_0_0", {0: synth_metadata()}, files={})
    with pytest.raises(DiscoveryBenchFormatError) as caught:
        read_discoverybench(root)
    files = [Path(p.file).relative_to(root).as_posix() for p in caught.value.problems]
    assert files == ["real/test/bad/metadata_0.json", "real/test/bad/metadata_1.json",
                     "synth/dev/nodata_0_0/metadata_0.json"]
    assert str(caught.value).startswith("3 problems:")


def test_not_a_discoverybench_folder(tmp_path: Path) -> None:
    with pytest.raises(DiscoveryBenchFormatError, match="holds no DiscoveryBench task folder"):
        read_discoverybench(tmp_path)
    with pytest.raises(DiscoveryBenchFormatError, match="is not a folder"):
        read_discoverybench(tmp_path / "nowhere")
    with pytest.raises(DiscoveryBenchFormatError, match="holds no metadata_<k>.json"):
        read_task_folder(tmp_path)


def test_a_symbolic_link_in_a_folder_is_refused_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n")
    folder = make_folder(tmp_path / "real" / "test", "survey", {0: real_metadata()}, files={})
    (folder / "data.csv").symlink_to(secret)
    with pytest.raises(DiscoveryBenchFormatError) as caught:
        read_task_folder(folder)
    assert caught.value.first.message == f"{folder}/data.csv is a symbolic link; put the file itself in the folder."
