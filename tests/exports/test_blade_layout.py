"""BLADE dataset folders: discovery, reading with the cross-file check against data.csv, errors for missing
files, and atomic writes that never leave a half-written folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import exports.blade_layout as layout
from exports.blade_annotations import BladeRow
from exports.blade_layout import (
    BladeDataset,
    find_blade_datasets,
    read_blade_dataset,
    read_data_header,
    write_blade_dataset,
    write_blade_folder,
)
from exports.errors import BladeFormatError

DATASETS = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fish", "hurricane", "panda_nuts", "reading"]
FILES = ("info.json", "data.csv", "annotations.csv", "mcq_dataset.json")


def _copy(shared_blade: Path, tmp_path: Path, name: str = "hurricane") -> Path:
    folder = tmp_path / "in" / name
    shutil.copytree(shared_blade / "datasets" / name, folder)
    for path in folder.iterdir():
        path.chmod(0o644)  # the shared copy is read-only
    folder.chmod(0o755)
    return folder


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if ".partial-" in p.name or ".old-" in p.name)


# -------------------------------------------------------------------------------------------- finding


def test_find_lists_dataset_subfolders_sorted(shared_blade: Path) -> None:
    found = find_blade_datasets(shared_blade / "datasets")
    assert [p.name for p in found] == sorted([*DATASETS, "fertility", "toy"])  # LICENSE is a file, skipped


def test_find_returns_the_folder_itself_when_it_is_a_dataset(shared_blade: Path, tmp_path: Path) -> None:
    assert find_blade_datasets(shared_blade / "datasets" / "fish") == [shared_blade / "datasets" / "fish"]
    (tmp_path / "empty").mkdir()
    (tmp_path / "not_a_dataset").mkdir()
    assert find_blade_datasets(tmp_path) == []
    with pytest.raises(BladeFormatError, match="is not a folder"):
        find_blade_datasets(tmp_path / "missing")


# -------------------------------------------------------------------------------------------- reading


@pytest.mark.parametrize("name", DATASETS)
def test_read_every_shipped_dataset(shared_blade: Path, name: str) -> None:
    dataset = read_blade_dataset(shared_blade / "datasets" / name)
    assert dataset.name == name
    assert dataset.data_rows == dataset.info.data_desc.num_rows
    assert list(dataset.data_columns) == dataset.info.data_desc.field_names
    assert dataset.annotations is not None and dataset.mcqs is not None
    assert dataset.annotations.label.endswith(f"{name}/annotations.csv")


def test_read_a_dataset_without_ground_truth(shared_blade: Path) -> None:
    dataset = read_blade_dataset(shared_blade / "datasets" / "fertility")
    assert (dataset.annotations, dataset.mcqs) == (None, None)
    assert (dataset.data_rows, len(dataset.data_columns)) == (275, 11)


@pytest.mark.parametrize("missing", [["info.json"], ["data.csv"], ["info.json", "data.csv"]])
def test_missing_required_files_are_named(shared_blade: Path, tmp_path: Path, missing: list[str]) -> None:
    folder = _copy(shared_blade, tmp_path)
    for name in missing:
        (folder / name).unlink()
    with pytest.raises(BladeFormatError) as info:
        read_blade_dataset(folder)
    assert [p.file for p in info.value.problems] == [str(folder / name) for name in missing]
    for name in missing:
        assert f"{folder / name}: the file is missing" in str(info.value)


def test_a_column_missing_from_data_csv(shared_blade: Path, tmp_path: Path) -> None:
    folder = _copy(shared_blade, tmp_path)
    data = (folder / "data.csv").read_text(encoding="utf-8")
    header, rest = data.split("\n", 1)
    assert ",masfem," in f",{header},"
    (folder / "data.csv").write_text(header.replace("masfem", "femininity") + "\n" + rest, encoding="utf-8")
    with pytest.raises(BladeFormatError) as info:
        read_blade_dataset(folder, label="upload.zip:hurricane")
    first = info.value.first
    assert first.file == "upload.zip:hurricane/annotations.csv"
    assert first.column in {"conceptual_spec_json", "model_spec_json"}
    assert first.field is not None and first.field.startswith(
        ("final_columns_orig[", "associated_columns_orig[")
    )
    assert first.row is not None and first.spec_id is not None
    message = str(info.value)
    assert f"data row {first.row} (line {first.line}, spec_id '{first.spec_id}')" in message
    assert "'🟨 masfem' is not a column of upload.zip:hurricane/data.csv" in message


def test_problems_of_the_annotations_name_the_file_in_the_folder(shared_blade: Path, tmp_path: Path) -> None:
    folder = _copy(shared_blade, tmp_path)
    path = folder / "annotations.csv"
    path.write_bytes(path.read_bytes().replace(b'{""spec_name"": ""ROOT""}', b'{""spec_name"": ""ROOT""', 1))
    with pytest.raises(BladeFormatError, match=rf"{folder}/annotations.csv, data row 2 .*not valid JSON"):
        read_blade_dataset(folder)


def test_data_header_as_pandas_names_it() -> None:
    columns, rows = read_data_header(b"a,b,,a\n1,2,3,4\n\n5,6,7,8\n", label="d.csv")
    assert columns == ("a", "b", "Unnamed: 2", "a.1")  # how BLADE (pandas) sees the columns
    assert rows == 2
    with pytest.raises(BladeFormatError, match="d.csv: the file is empty"):
        read_data_header(b"", label="d.csv")


# -------------------------------------------------------------------------------------------- writing


@pytest.mark.parametrize("name", DATASETS)
def test_copy_is_byte_identical(shared_blade: Path, tmp_path: Path, name: str) -> None:
    source = shared_blade / "datasets" / name
    dest = write_blade_dataset(read_blade_dataset(source), tmp_path / "out" / name, keep_extra_columns=True)
    for file in FILES:
        assert (dest / file).read_bytes() == (source / file).read_bytes(), file
    assert _leftovers(tmp_path / "out") == []


def test_write_folder_from_bytes_and_without_ground_truth(shared_blade: Path, tmp_path: Path) -> None:
    source = read_blade_dataset(shared_blade / "datasets" / "toy")
    dest = write_blade_folder(tmp_path / "toy", info=source.info, data_csv=source.data_path.read_bytes())
    assert sorted(p.name for p in dest.iterdir()) == ["data.csv", "info.json"]
    again = read_blade_dataset(dest)
    assert again.info == source.info and again.data_columns == source.data_columns


def test_an_existing_folder_is_replaced_only_on_request(shared_blade: Path, tmp_path: Path) -> None:
    fish = read_blade_dataset(shared_blade / "datasets" / "fish")
    toy = read_blade_dataset(shared_blade / "datasets" / "toy")
    dest = write_blade_dataset(fish, tmp_path / "ds")
    with pytest.raises(FileExistsError):
        write_blade_dataset(toy, dest)
    assert (dest / "annotations.csv").exists()
    write_blade_dataset(toy, dest, overwrite=True)
    assert sorted(p.name for p in dest.iterdir()) == ["data.csv", "info.json"]
    assert _leftovers(tmp_path) == []
    (tmp_path / "empty").mkdir()
    write_blade_dataset(toy, tmp_path / "empty")  # an empty folder is simply filled


def test_invalid_content_writes_nothing(shared_blade: Path, tmp_path: Path) -> None:
    dataset = read_blade_dataset(shared_blade / "datasets" / "hurricane")
    assert dataset.annotations is not None
    dataset.annotations.rows.append(dataset.annotations.rows[3].model_copy())  # duplicate spec_id
    with pytest.raises(BladeFormatError, match="already used by data row 4"):
        write_blade_dataset(dataset, tmp_path / "out")
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []


def test_annotations_are_checked_against_the_data_they_are_written_with(
    shared_blade: Path, tmp_path: Path
) -> None:
    dataset = read_blade_dataset(shared_blade / "datasets" / "hurricane")
    data = dataset.data_path.read_bytes().replace(b"masfem", b"femininity", 1)
    with pytest.raises(BladeFormatError, match="'🟨 masfem' is not a column of"):
        write_blade_folder(
            tmp_path / "out", info=dataset.info, data_csv=data, annotations=dataset.annotations
        )
    assert list(tmp_path.iterdir()) == []


def test_a_failure_while_writing_leaves_no_trace(
    shared_blade: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fish = read_blade_dataset(shared_blade / "datasets" / "fish")
    old = write_blade_dataset(read_blade_dataset(shared_blade / "datasets" / "toy"), tmp_path / "ds")
    before = {p.name: p.read_bytes() for p in old.iterdir()}

    def broken_copy(src: Path, dst: Path) -> None:
        Path(dst).write_bytes(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(layout.shutil, "copyfile", broken_copy)
    with pytest.raises(OSError, match="No space left"):
        write_blade_dataset(fish, tmp_path / "ds", overwrite=True)
    with pytest.raises(OSError, match="No space left"):
        write_blade_dataset(fish, tmp_path / "new")
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before  # the old folder is intact
    assert not (tmp_path / "new").exists()
    assert _leftovers(tmp_path) == []


def test_a_failed_swap_puts_the_old_folder_back(
    shared_blade: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    toy = read_blade_dataset(shared_blade / "datasets" / "toy")
    dest = write_blade_dataset(read_blade_dataset(shared_blade / "datasets" / "fish"), tmp_path / "ds")
    real_rename = layout.os.rename
    calls: list[str] = []

    def flaky_rename(src: Path, dst: Path) -> None:
        calls.append(Path(src).name)
        if ".partial-" in Path(src).name:
            raise OSError(5, "I/O error")
        real_rename(src, dst)

    monkeypatch.setattr(layout.os, "rename", flaky_rename)
    with pytest.raises(OSError, match="I/O error"):
        write_blade_dataset(toy, dest, overwrite=True)
    assert (dest / "annotations.csv").exists()  # fish is back in place
    assert _leftovers(tmp_path) == []
    assert len(calls) == 3  # dest aside, partial (fails), backup back


def test_dataset_model_is_plain_data(shared_blade: Path) -> None:
    dataset = read_blade_dataset(shared_blade / "datasets" / "crofoot")
    assert isinstance(dataset, BladeDataset)
    assert dataset.annotations is not None
    assert dataset.annotations.extra_columns == ("Unnamed: 8", "Unnamed: 9", "Unnamed: 10")
    assert all(isinstance(row, BladeRow) for row in dataset.annotations.rows)
