"""BLADE's dataset folder (blade-reference 1.1): ``info.json`` + ``data.csv`` [+ ``annotations.csv``]
[+ ``mcq_dataset.json``], read as one validated :class:`BladeDataset` and written atomically.

Reading checks each file with its own reader (:mod:`exports.blade_info`, :mod:`exports.blade_annotations`,
:mod:`exports.blade_mcq`) and then the one cross-file rule that needs the data: every original (``🟨 ``)
column a conceptual or model spec names exists in ``data.csv``
(:func:`exports.blade_annotations.validate_against_data`).

Writing builds the folder under a temporary name next to the destination and renames it into place, so a
reader never sees a half-written dataset and a failure leaves nothing behind.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import shutil
import uuid
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict

from exports.blade_annotations import (
    BladeAnnotations,
    read_annotations,
    validate_against_data,
    write_annotations,
)
from exports.blade_info import BladeInfo, dump_info_json, read_info_json
from exports.blade_mcq import BladeMCQs, read_mcqs, write_mcqs
from exports.errors import BladeFormatError, BladeProblem

__all__ = [
    "ANNOTATIONS_FILE",
    "DATA_FILE",
    "INFO_FILE",
    "MCQ_FILE",
    "BladeDataset",
    "find_blade_datasets",
    "read_blade_dataset",
    "read_data_header",
    "swap_into_place",
    "write_blade_dataset",
    "write_blade_folder",
]

log = logging.getLogger(__name__)

INFO_FILE = "info.json"
DATA_FILE = "data.csv"
ANNOTATIONS_FILE = "annotations.csv"
MCQ_FILE = "mcq_dataset.json"


class BladeDataset(BaseModel):
    """One BLADE dataset folder, read and cross-checked.

    Attributes:
        folder: where it was read from.
        info: the parsed ``info.json``.
        data_path: the ``data.csv`` file (not loaded: it can be large; use pandas on it).
        data_columns: ``data.csv``'s column names as pandas reads them (how BLADE sees them).
        data_rows: the number of data records (blank lines skipped, as pandas does).
        annotations: the ground truth, if the folder has ``annotations.csv``.
        mcqs: the multiple-choice questions, if the folder has ``mcq_dataset.json``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    folder: Path
    info: BladeInfo
    data_path: Path
    data_columns: tuple[str, ...]
    data_rows: int
    annotations: BladeAnnotations | None = None
    mcqs: BladeMCQs | None = None

    @property
    def name(self) -> str:
        """The folder's name, which is BLADE's dataset name (``affairs``...)."""
        return self.folder.name


def _fail(label: str, what: str) -> BladeFormatError:
    return BladeFormatError(BladeProblem(file=label, message=f"{label}: {what}"))


def read_data_header(source: Path | bytes, *, label: str) -> tuple[tuple[str, ...], int]:
    """Column names (as ``pandas.read_csv`` names them) and number of data records of a ``data.csv``.

    Raises:
        BladeFormatError: the file is empty, not UTF-8, or not CSV.
    """
    try:
        if isinstance(source, bytes):
            columns = pd.read_csv(io.BytesIO(source), nrows=0).columns
            text = io.StringIO(source.decode("utf-8-sig"), newline="")
            rows = sum(1 for cells in csv.reader(text) if cells) - 1
        else:
            columns = pd.read_csv(source, nrows=0).columns
            with open(source, encoding="utf-8-sig", newline="") as handle:
                rows = sum(1 for cells in csv.reader(handle) if cells) - 1
    except pd.errors.EmptyDataError as exc:
        raise _fail(label, "the file is empty; it needs a header row and the data.") from exc
    except UnicodeDecodeError as exc:
        raise _fail(label, f"not UTF-8 text (undecodable byte at offset {exc.start}).") from exc
    except (pd.errors.ParserError, csv.Error, ValueError) as exc:
        raise _fail(label, f"not readable as CSV: {exc}") from exc
    return tuple(str(column) for column in columns), max(rows, 0)


def read_blade_dataset(folder: Path, *, label: str | None = None) -> BladeDataset:
    """Read and validate one BLADE dataset folder.

    Args:
        folder: the folder holding ``info.json`` and ``data.csv`` (and optionally ``annotations.csv``,
            ``mcq_dataset.json``).
        label: how to name the folder in messages (e.g. ``upload.zip:affairs``); defaults to its path.

    Raises:
        BladeFormatError: a required file is missing (every missing one is named), or any file or the
            annotations-vs-data check fails (see the readers).
        FormatError: ``info.json`` is invalid (from :func:`exports.blade_info.read_info_json`).
    """
    folder = Path(folder)
    prefix = label or str(folder)
    if not folder.is_dir():
        raise _fail(prefix, "is not a folder; a BLADE dataset is a folder with info.json and data.csv.")
    missing = [name for name in (INFO_FILE, DATA_FILE) if not (folder / name).is_file()]
    if missing:
        raise BladeFormatError(
            [
                BladeProblem(
                    file=f"{prefix}/{name}",
                    message=f"{prefix}/{name}: the file is missing; every BLADE dataset folder needs "
                    f"{INFO_FILE} and {DATA_FILE}.",
                )
                for name in missing
            ]
        )
    info = read_info_json(folder / INFO_FILE)
    data_path = folder / DATA_FILE
    data_columns, data_rows = read_data_header(data_path, label=f"{prefix}/{DATA_FILE}")
    annotations = None
    if (folder / ANNOTATIONS_FILE).is_file():
        annotations = read_annotations(folder / ANNOTATIONS_FILE, label=f"{prefix}/{ANNOTATIONS_FILE}")
        validate_against_data(annotations, data_columns, label=f"{prefix}/{DATA_FILE}")
    mcqs = None
    if (folder / MCQ_FILE).is_file():
        mcqs = read_mcqs(folder / MCQ_FILE, label=f"{prefix}/{MCQ_FILE}")
    return BladeDataset(
        folder=folder,
        info=info,
        data_path=data_path,
        data_columns=data_columns,
        data_rows=data_rows,
        annotations=annotations,
        mcqs=mcqs,
    )


def find_blade_datasets(path: Path) -> list[Path]:
    """The dataset folders at ``path``: the folder itself if it holds ``info.json``, else its sub-folders
    that do, sorted by name (one level deep; a folder without ``info.json`` is not a dataset).

    Raises:
        BladeFormatError: ``path`` does not exist or is not a folder.
    """
    path = Path(path)
    if not path.is_dir():
        raise _fail(str(path), "is not a folder.")
    if (path / INFO_FILE).is_file():
        return [path]
    return sorted(child for child in path.iterdir() if child.is_dir() and (child / INFO_FILE).is_file())


def _write_file(path: Path, content: bytes) -> None:
    with open(path, "xb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def write_blade_folder(
    dest: Path,
    *,
    info: BladeInfo,
    data_csv: Path | bytes,
    annotations: BladeAnnotations | None = None,
    mcqs: BladeMCQs | None = None,
    overwrite: bool = False,
    keep_extra_columns: bool = False,
) -> Path:
    """Write a BLADE dataset folder atomically: all files or nothing.

    Everything is serialised and checked first (the annotations against the data's columns too); the files
    are then written into a fresh sibling folder ``.<name>.partial-<random>`` and that folder is renamed to
    ``dest``. An existing ``dest`` is replaced only with ``overwrite`` (moved aside, swapped, then deleted;
    on failure it is put back).

    Args:
        dest: the dataset folder to create (its name is the dataset's name).
        info: becomes ``info.json``.
        data_csv: a ``data.csv`` to copy, or its bytes.
        annotations: becomes ``annotations.csv`` (BLADE's eight columns) if given.
        mcqs: becomes ``mcq_dataset.json`` if given.
        overwrite: replace an existing non-empty ``dest``.
        keep_extra_columns: see :func:`exports.blade_annotations.write_annotations`.

    Returns:
        ``dest``.

    Raises:
        FileExistsError: ``dest`` exists, is not an empty folder, and ``overwrite`` is false.
        BladeFormatError: the content does not serialise or fails its checks; nothing is written.
    """
    dest = Path(dest)
    if dest.exists() and not overwrite and (not dest.is_dir() or any(dest.iterdir())):
        raise FileExistsError(f"{dest} already exists; pass overwrite=True to replace it.")
    data_label = f"{dest}/{DATA_FILE}"
    if isinstance(data_csv, bytes):
        data_source: Path | bytes = data_csv
    else:
        data_source = Path(data_csv)
        if not data_source.is_file():
            raise _fail(str(data_source), "the data file to copy does not exist.")
    contents: dict[str, bytes] = {INFO_FILE: dump_info_json(info).encode("utf-8")}
    if annotations is not None:
        columns, _ = read_data_header(data_source, label=data_label)
        validate_against_data(annotations, columns, label=data_label)
        contents[ANNOTATIONS_FILE] = write_annotations(annotations, keep_extra_columns=keep_extra_columns)
    if mcqs is not None:
        contents[MCQ_FILE] = write_mcqs(mcqs)

    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.parent / f".{dest.name}.partial-{uuid.uuid4().hex[:12]}"
    partial.mkdir()  # mode from the umask (mkdtemp would make it 0700)
    try:
        for name, content in contents.items():
            _write_file(partial / name, content)
        if isinstance(data_source, bytes):
            _write_file(partial / DATA_FILE, data_source)
        else:
            shutil.copyfile(data_source, partial / DATA_FILE)
        swap_into_place(partial, dest, overwrite=overwrite)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return dest


def swap_into_place(partial: Path, dest: Path, *, overwrite: bool) -> None:
    """Put the finished folder ``partial`` at ``dest`` atomically (an existing ``dest`` only with ``overwrite``;
    it is restored if the swap fails). Every release-format writer ends with it."""
    if not dest.exists() or (dest.is_dir() and not any(dest.iterdir())):
        # rename() replaces an empty folder atomically and fails on a non-empty one (a concurrent writer).
        os.rename(partial, dest)
        return
    if not overwrite:
        raise FileExistsError(f"{dest} already exists; pass overwrite=True to replace it.")
    backup = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:12]}"
    os.rename(dest, backup)
    try:
        os.rename(partial, dest)
    except BaseException:
        os.rename(backup, dest)
        raise
    if backup.is_dir():
        shutil.rmtree(backup, ignore_errors=True)
    else:
        backup.unlink(missing_ok=True)
    log.debug("replaced %s", dest)


def write_blade_dataset(
    dataset: BladeDataset, dest: Path, *, overwrite: bool = False, keep_extra_columns: bool = False
) -> Path:
    """Write a read dataset to ``dest`` (``data.csv`` copied unchanged); see :func:`write_blade_folder`."""
    return write_blade_folder(
        dest,
        info=dataset.info,
        data_csv=dataset.data_path,
        annotations=dataset.annotations,
        mcqs=dataset.mcqs,
        overwrite=overwrite,
        keep_extra_columns=keep_extra_columns,
    )
