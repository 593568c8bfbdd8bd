"""Bad input found by the hostile probe (issue 7, part 8): each is refused with a sentence, or handled, on every
path that reads it, and a failed import leaves nothing behind (SQLite and PostgreSQL where a database is
involved)."""

from __future__ import annotations

import json
import shutil

import pytest
from sqlmodel import func, select

from curation.dataset_files import read_blade_files, read_blade_folder, read_csv_with_form
from curation.dataset_staging import staging_root
from curation.db import session_scope
from curation.errors import DatasetImportError
from curation.models import Dataset, Transform
from curation.profiling import MAX_SAMPLE_CHARS
from curation.services.blade_import import import_blade
from curation.services.datasets import csv_columns, register_dataset
from exports.blade_annotations import ANNOTATION_COLUMNS, parse_annotations
from exports.blade_mcq import parse_mcqs
from exports.errors import FormatError
from exports.jsontext import MAX_DEPTH
from exports.native import parse_release_json
from tests import factories as f
from tests.cli_runner import forkpaths

MB = 2**20


def _form(csv_bytes: bytes, name: str = "probe"):
    return read_csv_with_form(csv_bytes, filename="probe.csv", name=name, research_question="Why?", description="",
                              column_descriptions={}, max_bytes=200 * MB)


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


# ------------------------------------------------------------------------------------------ long cells


def test_a_megabyte_digits_cell_profiles_and_dates_are_still_found(tmp_path):
    """dateutil's tokenizer is quadratic in a cell's length; the profile must not depend on it."""
    digits = "7" * MB
    csv_bytes = f"id,code,when\n1,{digits},2020-01-02\n2,5,2021-03-04\n3,6,2019-12-31\n".encode()
    bundle = _form(csv_bytes)
    kinds = {field.column: field.properties for field in bundle.fields}
    assert kinds["id"].dtype == "number"
    assert kinds["code"].dtype == "string" and kinds["code"].num_unique_values == 3
    # the megabyte does not travel into info.json, the database and the pages as a "sample"
    assert max(len(str(v)) for v in kinds["code"].samples) == MAX_SAMPLE_CHARS
    assert len(json.dumps(bundle.info.model_dump(mode="json"))) < 10_000
    assert kinds["when"].dtype == "date"
    assert (kinds["when"].min, kinds["when"].max) == ("2019-12-31", "2021-03-04")
    folder = tmp_path / "longcell"
    folder.mkdir()
    (folder / "data.csv").write_bytes(csv_bytes)
    (folder / "info.json").write_text(json.dumps({"research_questions": ["Why?"],
                                                  "data_desc": {"fields": []}}))
    assert read_blade_folder(folder, max_bytes=200 * MB).fields[1].properties.dtype == "string"


def test_a_long_padded_cell_is_text_but_a_short_padded_date_is_a_date():
    frame_bytes = b"when\n2020-01-02" + b" " * 150 + b"\n2021-03-04" + b" " * 150 + b"\n"  # pandas: dates
    assert _form(frame_bytes).fields[0].properties.dtype == "date"
    frame_bytes = b"when\n2020-01-02" + b"0" * 200 + b"\n2021-03-04\n"
    assert _form(frame_bytes).fields[0].properties.dtype != "date"


# ------------------------------------------------------------------------------------------ CSV shape


@pytest.mark.parametrize(("content", "line"), [
    (b"a,b\n1,2,3\n4,5,6\n", 2),
    (b"a,b\n\n\"x\ny\",2,3,4\n4,5\n", 3),  # a blank line skipped, a quoted newline inside the row
    (b"\xef\xbb\xbfa,b,c\n1,2,3,4\n", 2),
])
def test_a_ragged_first_data_row_is_refused_with_its_line(content, line):
    expected = f"line {line}, the first data row, has"
    with pytest.raises(DatasetImportError, match=expected):
        _form(content)
    with pytest.raises(DatasetImportError, match=expected):
        csv_columns(content, filename="probe.csv")
    info = json.dumps({"research_questions": ["Why?"], "data_desc": {"fields": []}}).encode()
    with pytest.raises(DatasetImportError, match=f"data.csv does not parse as CSV: {expected}"):
        read_blade_files({"info.json": info, "data.csv": content}, max_bytes=MB, name="probe")


def test_a_nul_byte_is_refused_with_its_line():
    with pytest.raises(DatasetImportError, match=r"probe\.csv has a NUL byte \(0x00\) on line 3"):
        _form(b"a,b\n1,2\n3,\x004\n")
    with pytest.raises(DatasetImportError, match=r"looks like UTF-16"):
        _form("a,b\n1,2\n".encode("utf-16"))


# ------------------------------------------------------------------------------------------ JSON files


def _info(**extra) -> dict:
    return {"research_questions": ["Do storms with feminine names kill more people?"],
            "data_desc": {"fields": [], **extra}}


def test_every_json_reader_refuses_deep_nesting_with_a_sentence():
    for depth in (MAX_DEPTH + 1, 5000):  # just over the limit, and past Python's own recursion limit
        deep = _deep(depth)
        with pytest.raises(FormatError, match=rf"more than {MAX_DEPTH} levels deep \(level 101 opens at line 1, column 101\)"):
            parse_mcqs(deep.encode(), label="mcq_dataset.json")
        with pytest.raises(FormatError, match=f"release.json: nests objects and lists more than {MAX_DEPTH}"):
            parse_release_json(deep.encode())
        cell = json.dumps({"x": json.loads(_deep(MAX_DEPTH - 5))})[:-1] + "," + json.dumps("y") + ": " + deep + "}"
        header = ",".join(ANNOTATION_COLUMNS)
        cells = ["abc" if c == "spec_id" else '"' + cell.replace('"', '""') + '"' if c == "transform_spec_json" else ""
                 for c in ANNOTATION_COLUMNS]
        csv_text = f"{header}\n{','.join(cells)}\n".encode()
        with pytest.raises(FormatError, match="annotations.csv.*the cell nests objects and lists more than"):
            parse_annotations(csv_text)
    assert parse_mcqs(json.dumps({"mcqs_cvar": [], "mcqs_transform": {}}).encode("utf-8-sig")) is not None


@pytest.mark.parametrize("damage", ["bom", "deep"])
def test_info_json_is_read_the_same_way_by_add_dataset_and_import_blade(engine, store, tmp_path, damage):
    folder = f.tiny_blade_folder(tmp_path / "in", "storms")
    info = json.loads((folder / "info.json").read_text())
    if damage == "bom":
        (folder / "info.json").write_bytes(json.dumps(info).encode("utf-8-sig"))
        assert read_blade_folder(folder, max_bytes=MB).research_question.startswith("Do storms")
        with session_scope(engine) as s:
            [report] = import_blade(session=s, actor=None, path=folder, store=store, max_bytes=MB)
        assert report.dataset == "storms"
        with session_scope(engine) as s:
            stored = s.exec(select(Dataset)).one()
            assert stored.info["research_questions"] == info["research_questions"]
        return
    text = json.dumps(info)[:-1] + ', "notes": ' + _deep(3000) + "}"
    (folder / "info.json").write_text(text)
    for read in (lambda: read_blade_folder(folder, max_bytes=MB),
                 lambda: import_blade(session=s, actor=None, path=folder, store=store, max_bytes=MB)):
        with pytest.raises(DatasetImportError, match="info.json nests objects and lists"), session_scope(engine) as s:
            read()
    with session_scope(engine) as s:
        assert s.exec(select(func.count()).select_from(Dataset)).one() == 0
    assert not list(store.iterdir())


_cli = forkpaths  # in this process; process=True for the real command


def test_cli_add_dataset_and_import_blade_both_accept_a_bom_and_refuse_deep_json(tmp_path):
    bom = f.tiny_blade_folder(tmp_path / "a", "bom_storms")
    (bom / "info.json").write_bytes((bom / "info.json").read_bytes().decode().encode("utf-8-sig"))
    bom2 = tmp_path / "b" / "bom_storms_two"
    shutil.copytree(bom, bom2)
    assert _cli(tmp_path, "add-dataset", str(bom), process=True).returncode == 0  # the real command, once
    r = _cli(tmp_path, "import-blade", str(bom2))
    assert r.returncode == 0, r.stderr
    deep = f.tiny_blade_folder(tmp_path / "c", "deep_storms")
    (deep / "info.json").write_text(_deep(5000))
    for command in ("add-dataset", "import-blade"):
        r = _cli(tmp_path, command, str(deep))
        assert r.returncode == 2, r.stderr
        assert "nests objects and lists more than 100 levels deep" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------------------------------ store hygiene


def test_a_multi_folder_import_failing_on_its_second_folder_leaves_no_files(engine, store, shared_blade, tmp_path):
    source = tmp_path / "in"
    shutil.copytree(shared_blade / "datasets" / "fish", source / "fish")
    shutil.copytree(shared_blade / "datasets" / "fish", source / "fish_again")  # same spec ids: refused second
    with pytest.raises(DatasetImportError, match="fish_again: spec ids"), session_scope(engine) as s:
        import_blade(session=s, actor=None, path=source, store=store, max_bytes=200 * MB)
    assert list(store.iterdir()) == []
    with session_scope(engine) as s:
        assert s.exec(select(func.count()).select_from(Dataset)).one() == 0
        assert s.exec(select(func.count()).select_from(Transform)).one() == 0


def test_files_of_a_registration_whose_transaction_rolls_back_are_removed(engine, store, tmp_path):
    bundle = read_blade_folder(f.tiny_blade_folder(tmp_path / "src", "storms"), max_bytes=MB)
    with pytest.raises(RuntimeError), session_scope(engine) as s:
        register_dataset(session=s, actor=None, bundle=bundle, store=store)
        # written to the staging area, not yet to the store: it moves in at the commit
        assert list(store.iterdir()) == [] and len(list(staging_root(store).rglob("data.csv"))) == 1
        raise RuntimeError("a later step of the same action failed")
    assert list(store.iterdir()) == [] and not staging_root(store).exists()
    with session_scope(engine) as s:  # a committed registration keeps its files
        register_dataset(session=s, actor=None, bundle=bundle, store=store)
    assert [p.name.startswith("storms-") for p in store.iterdir()] == [True]


@pytest.mark.parametrize(("data", "needle"), [
    (b"deaths,masfem,wind,year\n10,2.5,100,1990,7\n0,8.1,80,1991\n", "line 2, the first data row, has 5 fields"),
    (b"deaths,masfem,wind,year\n10,2.5,100,1990\n0,8.1,\x0080,1991\n", r"has a NUL byte \(0x00\) on line 3"),
])
def test_import_blade_refuses_a_ragged_or_nul_data_file_and_stores_nothing(engine, store, tmp_path, data, needle):
    folder = f.tiny_blade_folder(tmp_path / "in", "storms")
    info = json.loads((folder / "info.json").read_text())
    info["data_desc"].pop("num_rows")
    (folder / "info.json").write_text(json.dumps(info))
    (folder / "data.csv").write_bytes(data)
    with pytest.raises(DatasetImportError, match=needle), session_scope(engine) as s:
        import_blade(session=s, actor=None, path=folder, store=store, max_bytes=MB)
    with session_scope(engine) as s:
        assert s.exec(select(func.count()).select_from(Dataset)).one() == 0
    assert list(store.iterdir()) == []


def test_brackets_inside_strings_do_not_count_as_nesting():
    from exports.jsontext import load_json

    text = json.dumps({"code": "[" * 500 + '\\"{' * 300, "deep": json.loads(_deep(MAX_DEPTH - 1))})
    assert load_json(text.encode("utf-8-sig"), label="x.json")["code"].startswith("[[[")
    with pytest.raises(FormatError, match=r"x\.json nests .* \(level 101 opens at line 1, column \d+\)"):
        load_json(text[:-1] + ', "deeper": ' + _deep(MAX_DEPTH + 1) + "}", label="x.json")
