"""Dataset files -> DatasetBundle: BLADE folders, uploads (loose or zipped), CSV + form, starters."""

from __future__ import annotations

import io
import json
import stat
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from curation.dataset_files import (
    MAX_UPLOAD_SETTING,
    DatasetBundle,
    read_blade_files,
    read_blade_folder,
    read_csv_with_form,
    slugify,
    write_blade_folder,
)
from curation.errors import DatasetImportError
from curation.profiling import profile_columns
from curation.starters import STARTERS, build_starter_datasets, list_starter_dirs
from exports.blade_info import dump_info_json, parse_info_json

PROJECT_ROOT = Path(__file__).resolve().parents[2]
STARTER_ROOT = PROJECT_ROOT / "datasets"
MB = 1024 * 1024

CSV = "deaths,masfem,name\n10,2.5,Able\n0,8.1,Baker\n256,9.0,Carol\n"


def _info(**changes: Any) -> dict[str, Any]:
    info: dict[str, Any] = {
        "research_questions": ["Do storms with feminine names kill more people?"],
        "data_desc": {
            "dataset_description": "Three made-up storms.",
            "fields": [
                {"column": "deaths", "properties": {"dtype": "number", "description": "people killed"}},
                {"column": "masfem", "properties": {"description": "femininity of the name, 1-11"}},
                {"column": "name", "properties": {"description": "the storm's name"}},
            ],
            "num_rows": 3,
            "field_names": ["deaths", "masfem", "name"],
        },
        "data_path": "/elsewhere/data.csv",
    }
    for key, value in changes.items():
        if key in info["data_desc"]:
            info["data_desc"][key] = value
        else:
            info[key] = value
    return info


def _folder(
    root: Path,
    *,
    info: dict[str, Any] | str | None = None,
    csv: str | bytes | None = CSV,
    name: str = "storms",
) -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    info = _info() if info is None else info
    text = info if isinstance(info, str) else json.dumps(info, indent=2)
    (folder / "info.json").write_text(text, encoding="utf-8")
    if csv is not None:
        (folder / "data.csv").write_bytes(csv.encode("utf-8") if isinstance(csv, str) else csv)
    return folder


def _folder_error(tmp_path: Path, **kwargs: Any) -> str:
    folder = _folder(tmp_path, **kwargs)
    with pytest.raises(DatasetImportError) as info:
        read_blade_folder(folder, max_bytes=MB)
    return str(info.value)


def _zip(entries: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
        if symlink:
            member = zipfile.ZipInfo(symlink)
            member.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(member, "/etc/passwd")
    return buffer.getvalue()


def _upload_error(files: dict[str, bytes], *, max_bytes: int = MB, name: str | None = "storms") -> str:
    with pytest.raises(DatasetImportError) as info:
        read_blade_files(files, max_bytes=max_bytes, name=name)
    return str(info.value)


def _blade_pair(info: dict[str, Any] | None = None, csv: str = CSV) -> dict[str, bytes]:
    return {"info.json": json.dumps(info or _info()).encode(), "data.csv": csv.encode()}


# ------------------------------------------------------------------------------------- BLADE folders


def test_a_blade_folder_becomes_a_bundle(tmp_path: Path) -> None:
    folder = _folder(tmp_path, name="Storm Deaths")
    bundle = read_blade_folder(folder, max_bytes=MB)
    assert (bundle.name, bundle.title, bundle.source) == ("storm_deaths", "Storm Deaths", "blade_folder")
    assert bundle.research_question == "Do storms with feminine names kill more people?"
    assert bundle.description == "Three made-up storms."
    assert (bundle.num_rows, bundle.num_columns) == (3, 3)
    assert bundle.frame_path == folder / "data.csv"
    assert bundle.csv_bytes == CSV.encode()
    # The dictionary is the data's profile with the file's descriptions ...
    assert [(f.column, f.description) for f in bundle.fields] == [
        ("deaths", "people killed"),
        ("masfem", "femininity of the name, 1-11"),
        ("name", "the storm's name"),
    ]
    assert bundle.fields[0].properties.max == 256 and bundle.fields[2].properties.dtype == "string"
    # ... while info keeps the file exactly as it was.
    assert json.loads(dump_info_json(bundle.info)) == _info()
    assert bundle.frame().equals(pd.read_csv(io.StringIO(CSV)))


def test_every_shared_blade_folder_reads_and_keeps_its_info_json(shared_blade: Path) -> None:
    folders = sorted(p.parent for p in (shared_blade / "datasets").glob("*/info.json"))
    assert len(folders) == 11
    for folder in folders:
        bundle = read_blade_folder(folder, max_bytes=50 * MB)
        original = (folder / "info.json").read_text(encoding="utf-8")
        assert dump_info_json(bundle.info) == original
        assert bundle.num_rows == bundle.info.data_desc.num_rows
        assert [f.column for f in bundle.fields] == bundle.info.data_desc.field_names
        assert [f.description for f in bundle.fields] == [f.description for f in bundle.info.data_desc.fields]


def test_blade_extra_files_in_a_folder_are_ignored(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "annotations.csv").write_text("spec_id\n", encoding="utf-8")
    assert read_blade_folder(folder, max_bytes=MB).num_rows == 3


@pytest.mark.parametrize("missing", ["info.json", "data.csv"])
def test_a_missing_file_is_named(tmp_path: Path, missing: str) -> None:
    folder = _folder(tmp_path)
    (folder / missing).unlink()
    with pytest.raises(DatasetImportError) as info:
        read_blade_folder(folder, max_bytes=MB)
    assert f"{folder} has no {missing}" in str(info.value)


def test_a_path_that_is_not_a_folder_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(DatasetImportError, match="is not a folder"):
        read_blade_folder(tmp_path / "nope", max_bytes=MB)


def test_malformed_info_json_names_the_file_and_the_place(tmp_path: Path) -> None:
    message = _folder_error(tmp_path, info='{"research_questions": ["q"],\n "data_desc": {]}')
    assert str(tmp_path / "storms" / "info.json") in message
    assert "not valid JSON" in message and "line 2, column 16" in message


def test_info_json_with_the_wrong_shape_names_the_json_path(tmp_path: Path) -> None:
    info = _info()
    del info["research_questions"]
    info["data_desc"]["fields"][1]["properties"]["num_unique_values"] = "3"
    message = _folder_error(tmp_path, info=info)
    assert "info.json" in message and "research_questions is missing" in message
    assert (
        "data_desc.fields[1].properties.num_unique_values (column 'masfem') must be a whole number" in message
    )


def test_a_row_with_too_many_fields_names_the_line(tmp_path: Path) -> None:
    message = _folder_error(
        tmp_path, csv="deaths,masfem,name\n10,2.5,Able\n0,8.1,Baker,extra\n256,9.0,Carol\n"
    )
    assert str(tmp_path / "storms" / "data.csv") in message
    assert "line 3 has 4 fields but the header has 3" in message


def test_an_unclosed_quote_names_the_line(tmp_path: Path) -> None:
    message = _folder_error(tmp_path, csv='deaths,masfem,name\n10,2.5,Able\n0,8.1,"Baker\n256,9.0,Carol\n')
    assert "data.csv does not parse as CSV" in message and "starts on line 3 is never closed" in message


@pytest.mark.parametrize("csv", ["", "\n\n"])
def test_an_empty_csv_is_rejected(tmp_path: Path, csv: str) -> None:
    message = _folder_error(tmp_path, csv=csv)
    assert "data.csv is empty" in message


def test_a_csv_with_only_a_header_is_rejected(tmp_path: Path) -> None:
    message = _folder_error(tmp_path, csv="deaths,masfem,name\n", info=_info(num_rows=0))
    assert "data.csv has a header row but no data rows" in message


def test_a_csv_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    message = _folder_error(tmp_path, csv=b"deaths,masfem,name\n10,2.5,Able\n0,8.1,B\xe4ker\n256,9.0,Carol\n")
    assert "data.csv is not UTF-8 text: line 3" in message and "0xe4" in message


def test_duplicate_column_names_are_named(tmp_path: Path) -> None:
    csv = "deaths,masfem,deaths\n1,2,3\n"
    message = _folder_error(tmp_path, csv=csv, info=_info(num_rows=1, field_names=None))
    assert "data.csv has duplicate column names" in message and "'deaths' is column 1 and 3" in message


@pytest.mark.parametrize("which", ["info.json", "data.csv"])
def test_a_file_over_the_limit_says_its_size_the_limit_and_the_setting(tmp_path: Path, which: str) -> None:
    rows = 3 if which == "info.json" else 200  # make the file under test the larger one
    csv = "deaths,masfem,name\n" + "10,2.5,Able\n" * rows
    folder = _folder(tmp_path, csv=csv, info=_info(num_rows=rows))
    size = (folder / which).stat().st_size
    with pytest.raises(DatasetImportError) as info:
        read_blade_folder(folder, max_bytes=size - 1)
    message = str(info.value)
    assert message.startswith(f"{folder / which} is ")
    size_part, limit_part = message.split("over the upload limit of")
    assert f"{size:,} bytes" in size_part and f"{size - 1:,} bytes" in limit_part
    assert MAX_UPLOAD_SETTING == "FORKPATHS_MAX_UPLOAD_MB" and MAX_UPLOAD_SETTING in message


def test_sizes_in_messages_are_readable() -> None:
    with pytest.raises(DatasetImportError) as info:
        read_blade_files({"data.csv": b"x" * (3 * MB)}, max_bytes=2 * MB)
    assert "data.csv is 3.0 MB (3,145,728 bytes), over the upload limit of 2.0 MB (2,097,152 bytes)" in str(
        info.value
    )


def test_dictionary_columns_missing_from_the_csv_are_listed(tmp_path: Path) -> None:
    info = _info(field_names=None)
    info["data_desc"]["fields"] += [
        {"column": "wind", "properties": {}},
        {"column": "year", "properties": {}},
    ]
    message = _folder_error(tmp_path, info=info)
    assert "info.json disagrees with" in message
    assert "data_desc.fields describes columns 'wind', 'year' that" in message
    assert "its columns are 'deaths', 'masfem', 'name'" in message


def test_field_names_that_disagree_with_the_header_are_explained(tmp_path: Path) -> None:
    message = _folder_error(tmp_path, info=_info(field_names=["deaths", "masfem", "wind"]))
    assert "data_desc.field_names does not match the header of" in message
    assert "listed but not in" in message and "'wind'" in message
    assert "but not listed: 'name'" in message


def test_field_names_in_another_order_are_explained(tmp_path: Path) -> None:
    message = _folder_error(tmp_path, info=_info(field_names=["name", "masfem", "deaths"]))
    assert "same columns in a different order" in message


def test_num_rows_that_disagree_with_the_csv_are_named(tmp_path: Path) -> None:
    message = _folder_error(tmp_path, info=_info(num_rows=4))
    assert "data_desc.num_rows is 4 but" in message and "has 3 data rows" in message


def test_a_column_described_twice_is_named(tmp_path: Path) -> None:
    info = _info()
    info["data_desc"]["fields"].append({"column": "deaths", "properties": {}})
    message = _folder_error(tmp_path, info=info)
    assert "data_desc.fields describes 'deaths' more than once" in message


def test_an_empty_research_question_is_named(tmp_path: Path) -> None:
    message = _folder_error(tmp_path, info=_info(research_questions=["  "]))
    assert "research_questions[0] is empty" in message


def test_undescribed_columns_are_allowed_with_an_empty_description(tmp_path: Path) -> None:
    info = _info(field_names=None)
    info["data_desc"]["fields"] = info["data_desc"]["fields"][:1]
    bundle = read_blade_folder(_folder(tmp_path, info=info), max_bytes=MB)
    assert [f.description for f in bundle.fields] == ["people killed", "", ""]


# ------------------------------------------------------------------------------------------ uploads


def test_an_upload_of_the_two_files_becomes_a_bundle() -> None:
    files = {**_blade_pair(), "annotations.csv": b"spec_id\n"}
    bundle = read_blade_files(files, max_bytes=MB, name="Storms 2024")
    assert (bundle.name, bundle.source, bundle.num_rows) == ("storms_2024", "blade_files", 3)
    assert bundle.frame_path is None


def test_loose_files_need_a_name() -> None:
    assert "Give the dataset a name" in _upload_error(_blade_pair(), name=None)


@pytest.mark.parametrize("missing", ["info.json", "data.csv"])
def test_an_upload_without_one_of_the_files_is_named(missing: str) -> None:
    files = _blade_pair()
    del files[missing]
    message = _upload_error(files)
    assert f"The upload has no {missing}" in message


def test_an_uploaded_file_over_the_limit_is_named() -> None:
    message = _upload_error(_blade_pair(), max_bytes=50)
    assert "over the upload limit" in message and "FORKPATHS_MAX_UPLOAD_MB" in message
    assert "info.json is" in message or "data.csv is" in message


def test_errors_in_uploaded_files_name_the_file() -> None:
    files = _blade_pair(csv="deaths,masfem,name\n1,2\n3,4,5,6\n")
    message = _upload_error(files)
    assert message.startswith("data.csv does not parse as CSV: line 3 has 4 fields")


def test_nothing_uploaded_is_rejected() -> None:
    assert "Nothing was uploaded" in _upload_error({})


def test_a_zip_of_a_blade_folder_becomes_a_bundle() -> None:
    pair = _blade_pair()
    content = _zip(
        {
            "hurricanes/info.json": pair["info.json"],
            "hurricanes/data.csv": pair["data.csv"],
            "hurricanes/annotations.csv": b"spec_id\n",
            "__MACOSX/hurricanes/._info.json": b"junk",
        }
    )
    bundle = read_blade_files({"upload.zip": content}, max_bytes=MB)
    assert (bundle.name, bundle.title, bundle.source) == ("hurricanes", "hurricanes", "blade_zip")
    assert bundle.csv_bytes == pair["data.csv"]
    assert read_blade_files({"upload.zip": content}, max_bytes=MB, name="Renamed").name == "renamed"


def test_a_zip_with_the_files_at_its_top_level_takes_the_zip_name() -> None:
    bundle = read_blade_files({"My Storms.zip": _zip(_blade_pair())}, max_bytes=MB)
    assert bundle.name == "my_storms"


def test_a_zip_made_on_windows_with_backslashes_is_understood() -> None:
    content = _zip({f"storms\\{k}": v for k, v in _blade_pair().items()})
    assert read_blade_files({"w.zip": content}, max_bytes=MB).name == "storms"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../evil/info.json", "outside the archive's folder"),
        ("storms/../../info.json", "outside the archive's folder"),
        ("/etc/info.json", "absolute path"),
        ("C:/temp/info.json", "absolute path"),
    ],
)
def test_a_zip_slip_path_rejects_the_whole_zip(path: str, reason: str) -> None:
    content = _zip({**{f"storms/{k}": v for k, v in _blade_pair().items()}, path: b"{}"})
    message = _upload_error({"evil.zip": content})
    assert f"evil.zip contains the unsafe path '{path}'" in message and reason in message


def test_a_symlink_in_a_zip_is_rejected() -> None:
    content = _zip({f"storms/{k}": v for k, v in _blade_pair().items()}, symlink="storms/link")
    message = _upload_error({"evil.zip": content})
    assert "'storms/link'" in message and "symbolic link" in message


def test_a_zip_with_two_datasets_is_rejected() -> None:
    pair = _blade_pair()
    content = _zip({f"{folder}/{k}": v for folder in ("a", "b") for k, v in pair.items()})
    message = _upload_error({"two.zip": content})
    assert "two.zip holds more than one dataset" in message and "'a/', 'b/'" in message


def test_a_zip_without_info_json_or_data_csv_is_rejected() -> None:
    assert "x.zip has no info.json" in _upload_error({"x.zip": _zip({"s/data.csv": CSV.encode()})})
    message = _upload_error({"x.zip": _zip({"s/info.json": json.dumps(_info()).encode()})})
    assert "x.zip has info.json in folder 's/' but no data.csv" in message


def test_a_zip_with_other_files_is_rejected() -> None:
    message = _upload_error({"x.zip": _zip(_blade_pair()), "data.csv": CSV.encode()})
    assert "either one .zip or info.json + data.csv" in message


def test_a_corrupt_zip_is_rejected() -> None:
    assert "x.zip is not a readable zip archive" in _upload_error({"x.zip": b"PK\x03\x04 not really"})


def test_a_zip_member_over_the_limit_is_named_before_extraction() -> None:
    big_csv = "a\n" + "1\n" * 5000
    content = _zip({"s/info.json": json.dumps(_info()).encode(), "s/data.csv": big_csv.encode()})
    assert len(content) < 2000  # the archive itself is under the limit ...
    message = _upload_error({"x.zip": content}, max_bytes=2000)
    assert "x.zip:s/data.csv is" in message and "FORKPATHS_MAX_UPLOAD_MB" in message  # ... its content is not


def test_errors_inside_a_zip_name_the_member() -> None:
    info = _info(num_rows=9)
    content = _zip({"s/info.json": json.dumps(info).encode(), "s/data.csv": CSV.encode()})
    message = _upload_error({"x.zip": content})
    assert message.startswith("x.zip:s/info.json disagrees with x.zip:s/data.csv")


# ------------------------------------------------------------------------------------------ CSV + form


def _form(**changes: Any) -> DatasetBundle:
    arguments: dict[str, Any] = {
        "filename": "storms.csv",
        "name": "Storms",
        "research_question": " Do storms with feminine names kill more people? ",
        "description": "Three made-up storms.",
        "column_descriptions": {"deaths": " people killed ", "name": "the name"},
        "max_bytes": MB,
    }
    arguments.update(changes)
    csv = arguments.pop("csv", CSV.encode())
    return read_csv_with_form(csv, **arguments)


def _form_error(**changes: Any) -> str:
    with pytest.raises(DatasetImportError) as info:
        _form(**changes)
    return str(info.value)


def test_a_csv_with_a_form_becomes_a_bundle_with_a_blade_info_json() -> None:
    bundle = _form()
    assert (bundle.name, bundle.title, bundle.source) == ("storms", "Storms", "csv_form")
    assert bundle.research_question == "Do storms with feminine names kill more people?"
    assert [f.description for f in bundle.fields] == ["people killed", "", "the name"]
    info = bundle.info
    assert info.research_questions == [bundle.research_question]
    assert info.data_path == "data.csv"
    assert info.data_desc.num_rows == 3 and info.data_desc.field_names == ["deaths", "masfem", "name"]
    assert info.data_desc.fields == bundle.fields
    assert dump_info_json(parse_info_json(dump_info_json(info))) == dump_info_json(info)


@pytest.mark.parametrize("question", ["", "   \n"])
def test_an_empty_question_is_rejected(question: str) -> None:
    assert "The research question is empty" in _form_error(research_question=question)


def test_a_description_for_a_column_the_csv_lacks_is_named() -> None:
    message = _form_error(column_descriptions={"deaths": "x", "wind": "y"})
    assert "name column 'wind' that storms.csv does not have" in message
    assert "its columns are 'deaths', 'masfem', 'name'" in message


def test_a_bad_csv_in_the_form_names_the_file_and_line() -> None:
    message = _form_error(csv=b"a,b\n1,2\n3\n4,5,6\n")
    assert message.startswith("storms.csv does not parse as CSV: line 4 has 3 fields but the header has 2")


def test_an_empty_csv_in_the_form_is_rejected() -> None:
    assert "storms.csv is empty" in _form_error(csv=b"")


def test_a_csv_over_the_limit_in_the_form_is_rejected() -> None:
    message = _form_error(max_bytes=10)
    assert "storms.csv is" in message and "over the upload limit of 10 bytes" in message
    assert "FORKPATHS_MAX_UPLOAD_MB" in message


def test_a_name_without_letters_is_rejected() -> None:
    assert "has no letters or digits" in _form_error(name="!!!")


# ------------------------------------------------------------------------------------------- writing


def test_writing_a_bundle_gives_a_folder_that_reads_back_the_same(tmp_path: Path) -> None:
    bundle = _form()
    dest = write_blade_folder(bundle, tmp_path / "out")
    assert (dest / "info.json").read_text(encoding="ascii") == dump_info_json(bundle.info)
    assert (dest / "data.csv").read_bytes() == CSV.encode()
    again = read_blade_folder(dest, max_bytes=MB, name="Storms")
    assert again.fields == bundle.fields and again.info == bundle.info


def test_writing_with_an_explicit_frame_or_bytes(tmp_path: Path) -> None:
    bundle = _form()
    frame = pd.read_csv(io.StringIO(CSV))
    write_blade_folder(bundle, frame, tmp_path / "frame")
    assert (tmp_path / "frame" / "data.csv").read_text(encoding="utf-8") == CSV  # no index column
    write_blade_folder(bundle, b"x\n1\n", tmp_path / "bytes")
    assert (tmp_path / "bytes" / "data.csv").read_bytes() == b"x\n1\n"


def test_a_shared_blade_folder_is_written_back_byte_for_byte(shared_blade: Path, tmp_path: Path) -> None:
    source = shared_blade / "datasets" / "fertility"
    bundle = read_blade_folder(source, max_bytes=MB)
    dest = write_blade_folder(bundle, tmp_path / "fertility")
    for name in ("info.json", "data.csv"):
        assert (dest / name).read_bytes() == (source / name).read_bytes(), name


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Panda nuts (2019)", "panda_nuts_2019"),
        ("panda-nuts", "panda_nuts"),
        ("  Café Société ", "cafe_societe"),
        ("teachingratings", "teachingratings"),
        ("x" * 100, "x" * 64),
    ],
)
def test_slugify(name: str, slug: str) -> None:
    assert slugify(name) == slug


def test_slugify_rejects_names_without_letters() -> None:
    with pytest.raises(DatasetImportError, match="'---' has no letters or digits"):
        slugify("---")


# ------------------------------------------------------------------------------------------ starters


def test_committed_starters_are_exactly_what_the_builder_writes(tmp_path: Path) -> None:
    built = build_starter_datasets(tmp_path)
    committed = list_starter_dirs(STARTER_ROOT)
    assert [p.name for p in committed] == sorted(spec.name for spec in STARTERS)
    assert sorted(p.name for p in built) == [p.name for p in committed]
    for folder in committed:
        for name in ("info.json", "data.csv"):
            assert (tmp_path / folder.name / name).read_bytes() == (folder / name).read_bytes(), (
                folder,
                name,
            )


def test_every_starter_reads_cleanly_and_its_profile_matches_its_info_json() -> None:
    for folder in list_starter_dirs(STARTER_ROOT):
        assert (folder / "data.csv").stat().st_size < MB, folder
        bundle = read_blade_folder(folder, max_bytes=MB, source="starter")
        info = bundle.info
        assert len(info.research_questions) == 1 and info.research_question.endswith("?")
        assert "statsmodels" in (info.data_desc.dataset_description or "")
        assert "Source:" in (info.data_desc.dataset_description or "")
        assert bundle.fields == info.data_desc.fields  # statistics and descriptions, exactly
        frame = pd.read_csv(folder / "data.csv")
        assert (
            profile_columns(frame, descriptions={f.column: f.description for f in bundle.fields})
            == bundle.fields
        )
        assert all(len(f.description) > 20 for f in bundle.fields), folder


def test_list_starter_dirs_skips_incomplete_folders(tmp_path: Path) -> None:
    _folder(tmp_path, name="complete")
    _folder(tmp_path, name="no_csv", csv=None)
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    assert list_starter_dirs(tmp_path) == [tmp_path / "complete"]
    assert list_starter_dirs(tmp_path / "absent") == []
