"""Turn dataset files into a validated :class:`DatasetBundle` (pure: no database, no Streamlit).

Three ways in, one way out:

- :func:`read_blade_folder`: a folder in BLADE's layout (``info.json`` + ``data.csv``, blade-reference 1.1-1.3);
- :func:`read_blade_files`: the same two files uploaded, or one ``.zip`` holding one such folder
  (:func:`collect_blade_upload` gathers them, ground truth included, for an import);
- :func:`read_csv_with_form`: a bare CSV plus the research question and column descriptions typed into a form;
- :func:`write_blade_folder`: store a bundle as ``info.json`` + ``data.csv``.

The CSV is always parsed with ``pd.read_csv`` defaults, as BLADE reads it. Every problem raises
:class:`~curation.errors.DatasetImportError` with a sentence that names the file and what is wrong in it
(the column, the JSON path, the line), and nothing is stored.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import stat
import sys
import unicodedata
import zipfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import overload

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from curation.errors import DatasetImportError
from curation.profiling import profile_columns
from exports.archive_names import ArchiveNameError, ArchiveWords, check_entry_names
from exports.blade_info import BladeInfo, DataDesc, FieldSpec, dump_info_json
from exports.blade_info import parse_info_json as _parse_info_json
from exports.errors import FormatError

__all__ = [
    "CSV_FILENAME",
    "INFO_FILENAME",
    "MAX_UPLOAD_SETTING",
    "GROUND_TRUTH_FILES",
    "BladeUpload",
    "DatasetBundle",
    "FolderBundle",
    "FolderFile",
    "bundle_from_upload",
    "collect_blade_upload",
    "copy_folder_files",
    "frame_to_csv_bytes",
    "parse_csv",
    "read_blade_files",
    "read_blade_folder",
    "read_csv_with_form",
    "slugify",
    "write_blade_folder",
]

log = logging.getLogger(__name__)

INFO_FILENAME = "info.json"
CSV_FILENAME = "data.csv"
#: The setting that raises ``max_bytes``; named in the "file too large" message.
MAX_UPLOAD_SETTING = "FORKPATHS_MAX_UPLOAD_MB"

_SLUG_PATTERN = r"^[a-z0-9]+(?:_[a-z0-9]+)*$"
_SLUG_MAX_LENGTH = 64
#: Files an uploaded folder may carry that no reader needs.
_IGNORED_NAMES = {".DS_Store", "LICENSE"}


class DatasetBundle(BaseModel):
    """A dataset that passed every check, ready to be stored.

    ``fields`` is the data dictionary used by the app: the profile of ``data.csv`` (statistics computed
    here) with the descriptions from ``info.json`` or the form. ``info`` is the ``info.json`` exactly as
    given (or built from the form), kept for lossless export. ``csv_bytes`` are the data file's bytes as
    uploaded; ``frame_path`` is where they were read from, when they came from a folder.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=_SLUG_PATTERN, max_length=_SLUG_MAX_LENGTH)
    title: str = Field(max_length=256)
    research_question: str = Field(min_length=1)
    description: str
    fields: list[FieldSpec]
    csv_bytes: bytes = Field(repr=False)
    frame_path: Path | None = None
    num_rows: int = Field(ge=1)
    num_columns: int = Field(ge=1)
    info: BladeInfo
    source: str = Field(max_length=32)

    def frame(self) -> pd.DataFrame:
        """The table, read as BLADE reads it (``pd.read_csv`` defaults)."""
        return pd.read_csv(io.BytesIO(self.csv_bytes))


# --------------------------------------------------------------------------------------------------- names


def parse_info_json(data: bytes | str, *, label: str) -> BladeInfo:
    """:func:`exports.blade_info.parse_info_json`, with format errors reported as dataset import errors."""
    try:
        return _parse_info_json(data, label=label)
    except FormatError as exc:
        raise DatasetImportError(str(exc)) from exc


def slugify(name: str) -> str:
    """A dataset name fit for a folder and a URL: lower-case ASCII letters and digits joined by ``_``.

    ``"Panda nuts (2019)"`` -> ``"panda_nuts_2019"``; accents are dropped (``"Café"`` -> ``"cafe"``).

    A name that looks like a file path (``../../evil``, ``a/b``) is refused rather than quietly cut down:
    a dataset name is a label, and whoever typed a path meant something else.

    Raises:
        DatasetImportError: the name contains ``/`` or ``\\`` or is ``.`` / ``..``, or has no letter or digit.
    """
    if "/" in name or "\\" in name or name.strip() in {".", ".."}:
        raise DatasetImportError(
            f"The dataset name {name!r} looks like a file path; a dataset name is a label, not a place. "
            "Use letters, digits and spaces, such as 'fish catch 2019'."
        )
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")
    slug = slug[:_SLUG_MAX_LENGTH].rstrip("_")
    if not slug:
        raise DatasetImportError(
            f"The dataset name {name!r} has no letters or digits; give it a name such as 'fish_catch'."
        )
    return slug


# ---------------------------------------------------------------------------------------------- messages


def _size_text(n_bytes: int) -> str:
    """``"717 bytes"``, ``"1.5 KB (1,536 bytes)"``, ``"250.0 MB (262,144,000 bytes)"``."""
    if n_bytes < 1024:
        return f"{n_bytes:,} bytes"
    if n_bytes < 1024 * 1024:
        return f"{n_bytes / 1024:.1f} KB ({n_bytes:,} bytes)"
    return f"{n_bytes / (1024 * 1024):.1f} MB ({n_bytes:,} bytes)"


def _check_size(n_bytes: int, *, max_bytes: int, label: str) -> None:
    if n_bytes > max_bytes:
        raise DatasetImportError(
            f"{label} is {_size_text(n_bytes)}, over the upload limit of {_size_text(max_bytes)}. "
            f"An administrator can raise the limit with the setting {MAX_UPLOAD_SETTING}."
        )


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


# -------------------------------------------------------------------------------------------------- CSV


def _header(csv_bytes: bytes) -> list[str]:
    """The header cells of a CSV as written (pandas renames duplicates to ``a.1``, so read them here)."""
    head = csv_bytes[: 1 << 20].decode("utf-8-sig", errors="replace")
    _allow_large_csv_fields()
    for row in csv.reader(io.StringIO(head)):
        if row:
            return row
    return []


def parse_csv(csv_bytes: bytes, *, label: str) -> pd.DataFrame:
    """``pd.read_csv`` with defaults, with every failure turned into a sentence naming ``label``.

    Raises:
        DatasetImportError: the bytes are empty, not UTF-8 (with the line), not CSV (with the line), have
            duplicate header names, or have a header but no data rows.
    """
    if not csv_bytes.strip():
        raise DatasetImportError(f"{label} is empty: it needs a header row and at least one data row.")
    nul = csv_bytes.find(b"\x00")
    if nul >= 0 and not csv_bytes.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 is named below
        line = csv_bytes.count(b"\n", 0, nul) + 1
        raise DatasetImportError(
            f"{label} has a NUL byte (0x00) on line {line}, which a text CSV cannot hold (pandas would read "
            "that cell as missing). The file may be saved as UTF-16 or be damaged; save it as UTF-8 CSV and "
            "upload it again."
        )
    try:
        frame = pd.read_csv(io.BytesIO(csv_bytes))
    except UnicodeDecodeError as exc:
        line = csv_bytes[: exc.start].count(b"\n") + 1
        utf16 = " (it looks like UTF-16)" if csv_bytes.startswith((b"\xff\xfe", b"\xfe\xff")) else ""
        raise DatasetImportError(
            f"{label} is not UTF-8 text{utf16}: line {line} has a byte (0x{csv_bytes[exc.start]:02x}) that "
            "is not UTF-8. Save the file as UTF-8 CSV and upload it again."
        ) from exc
    except pd.errors.EmptyDataError as exc:
        raise DatasetImportError(
            f"{label} is empty: it needs a header row and at least one data row."
        ) from exc
    except pd.errors.ParserError as exc:
        raise DatasetImportError(_describe_parser_error(str(exc), label)) from exc
    header = _header(csv_bytes)
    duplicates = [name for name, count in Counter(header).items() if count > 1 and name.strip()]
    if duplicates:
        where = "; ".join(
            f"'{name}' is column " + " and ".join(str(i + 1) for i, h in enumerate(header) if h == name)
            for name in duplicates
        )
        raise DatasetImportError(
            f"{label} has duplicate column names in its header ({where}). Rename them so every column "
            "name is unique."
        )
    if frame.empty and len(frame.columns):
        raise DatasetImportError(f"{label} has a header row but no data rows.")
    if not isinstance(frame.index, pd.RangeIndex):
        raise DatasetImportError(_describe_ragged_first_row(csv_bytes, label))
    return frame


def _describe_ragged_first_row(csv_bytes: bytes, label: str) -> str:
    """pandas reads a first data row longer than the header as row labels, shifting every column: name it."""
    _allow_large_csv_fields()
    reader = csv.reader(io.StringIO(csv_bytes.decode("utf-8-sig"), newline=""))
    records: list[tuple[int, int]] = []  # (first line, number of fields), blank lines skipped as pandas does
    previous_end = 0
    for row in reader:
        if row:
            records.append((previous_end + 1, len(row)))
            if len(records) == 2:
                break
        previous_end = reader.line_num
    if len(records) < 2:  # the csv module and pandas disagree about the layout: say what pandas saw
        return f"{label} does not parse as CSV: its first data row has more fields than the header."
    (header_line, expected), (line, saw) = records
    return (
        f"{label} does not parse as CSV: line {line}, the first data row, has {saw} fields but the header "
        f"(line {header_line}) has {expected}, so pandas would take the extra field as row labels and shift "
        "every column by one. Check that row for an unquoted comma, or name every column in the header."
    )


def _allow_large_csv_fields() -> None:
    # A cell can exceed the csv module's default 128 KiB field limit (pandas has no such limit). The limit is
    # process-wide; it is only ever raised here, which cannot make any other reader stricter.
    wanted = min(sys.maxsize, 2**31 - 1)
    if csv.field_size_limit() < wanted:
        csv.field_size_limit(wanted)


def _describe_parser_error(message: str, label: str) -> str:
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", message)
    if fields:
        expected, line, saw = fields.groups()
        return (
            f"{label} does not parse as CSV: line {line} has {saw} fields but the header has {expected}. "
            "Check that row for an unquoted comma or a missing value."
        )
    quote = re.search(r"EOF inside string starting at row (\d+)", message)
    if quote:
        line = int(quote.group(1)) + 1
        return (
            f"{label} does not parse as CSV: the quoted value that starts on line {line} is never closed "
            '(a " without its closing ").'
        )
    return f"{label} does not parse as CSV: {message.strip()}"


# ------------------------------------------------------------------------------------------ consistency


def _check_info_against_csv(info: BladeInfo, frame: pd.DataFrame, *, info_label: str, csv_label: str) -> None:
    """Every disagreement between the dictionary in ``info.json`` and the CSV, in one message."""
    columns = [str(c) for c in frame.columns]
    problems: list[str] = []
    question = info.research_questions[0]
    if not question.strip():
        problems.append("research_questions[0] is empty; write the research question the data should answer")
    described = [f.column for f in info.data_desc.fields]
    repeated = [name for name, count in Counter(described).items() if count > 1]
    if repeated:
        problems.append(f"data_desc.fields describes {_quoted(repeated)} more than once")
    missing = [name for name in dict.fromkeys(described) if name not in columns]
    if missing:
        problems.append(
            f"data_desc.fields describes column{'s' if len(missing) > 1 else ''} {_quoted(missing)} that "
            f"{csv_label} does not have (its columns are {_quoted(columns)})"
        )
    names = info.data_desc.field_names
    if names is not None and list(names) != columns:
        not_in_csv = [n for n in names if n not in columns]
        not_listed = [c for c in columns if c not in names]
        detail = []
        if not_in_csv:
            detail.append(f"listed but not in {csv_label}: {_quoted(not_in_csv)}")
        if not_listed:
            detail.append(f"in {csv_label} but not listed: {_quoted(not_listed)}")
        if not detail:
            detail.append(f"same columns in a different order; the header is {_quoted(columns)}")
        problems.append(
            f"data_desc.field_names does not match the header of {csv_label} ({'; '.join(detail)})"
        )
    num_rows = info.data_desc.num_rows
    if num_rows is not None and num_rows != len(frame):
        problems.append(f"data_desc.num_rows is {num_rows} but {csv_label} has {len(frame)} data rows")
    if problems:
        raise DatasetImportError(f"{info_label} disagrees with {csv_label}: " + "; ".join(problems) + ".")


def _bundle(
    *,
    info: BladeInfo,
    csv_bytes: bytes,
    name: str,
    title: str,
    source: str,
    info_label: str,
    csv_label: str,
    frame_path: Path | None = None,
) -> DatasetBundle:
    frame = parse_csv(csv_bytes, label=csv_label)
    _check_info_against_csv(info, frame, info_label=info_label, csv_label=csv_label)
    descriptions = {f.column: f.description for f in info.data_desc.fields}
    return DatasetBundle(
        name=name,
        title=title,
        research_question=info.research_questions[0].strip(),
        description=info.data_desc.dataset_description or "",
        fields=profile_columns(frame, descriptions=descriptions),
        csv_bytes=csv_bytes,
        frame_path=frame_path,
        num_rows=len(frame),
        num_columns=len(frame.columns),
        info=info,
        source=source,
    )


# ---------------------------------------------------------------------------------------- BLADE folder


def read_blade_folder(
    path: Path, *, max_bytes: int, name: str | None = None, source: str = "blade_folder"
) -> DatasetBundle:
    """Read a dataset folder in BLADE's layout.

    Args:
        path: the folder holding ``info.json`` and ``data.csv`` (other files, such as BLADE's
            ``annotations.csv``, are ignored).
        max_bytes: largest accepted file (``Settings.max_upload_bytes``).
        name: the dataset's name; defaults to the folder's name. Made into a slug.
        source: how the dataset arrived, stored with it (``blade_folder``, ``starter``...).

    Raises:
        DatasetImportError: a file is missing, too large or malformed, or info.json disagrees with data.csv.
    """
    path = Path(path)
    if not path.is_dir():
        raise DatasetImportError(
            f"{path} is not a folder; a BLADE dataset is a folder with info.json and data.csv."
        )
    info_path, csv_path = path / INFO_FILENAME, path / CSV_FILENAME
    missing = [p.name for p in (info_path, csv_path) if not p.is_file()]
    if missing:
        raise DatasetImportError(
            f"The dataset folder {path} has no {' and no '.join(missing)}; a BLADE dataset folder needs "
            "both info.json and data.csv."
        )
    for file in (info_path, csv_path):
        _check_size(file.stat().st_size, max_bytes=max_bytes, label=str(file))
    info = parse_info_json(info_path.read_bytes(), label=str(info_path))
    return _bundle(
        info=info,
        csv_bytes=csv_path.read_bytes(),
        name=slugify(name or path.name),
        title=(name or path.name).strip(),
        source=source,
        info_label=str(info_path),
        csv_label=str(csv_path),
        frame_path=csv_path,
    )


# ------------------------------------------------------------------------------------------- uploads


#: Files of a BLADE dataset folder that carry its ground truth (brought in by ``import-blade``).
GROUND_TRUTH_FILES = ("annotations.csv", "mcq_dataset.json")


class BladeUpload(BaseModel):
    """The files of one uploaded BLADE dataset, checked for shape but not yet parsed.

    ``files`` maps ``info.json``, ``data.csv`` and, when present, :data:`GROUND_TRUTH_FILES` to their bytes;
    ``labels`` names each file in messages (``upload.zip:affairs/info.json``); ``where`` names the upload's
    folder (``upload.zip:affairs``, or ``the upload`` for loose files).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    files: dict[str, bytes] = Field(repr=False)
    labels: dict[str, str]
    where: str
    source: str

    @property
    def ground_truth(self) -> list[str]:
        """The ground-truth files the upload holds (``annotations.csv``, ``mcq_dataset.json``)."""
        return [f for f in GROUND_TRUTH_FILES if f in self.files]


def _pairs(files: Mapping[str, bytes] | Sequence[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    return list(files.items()) if isinstance(files, Mapping) else [(n, c) for n, c in files]


def collect_blade_upload(
    files: Mapping[str, bytes] | Sequence[tuple[str, bytes]], *, max_bytes: int, name: str | None = None
) -> BladeUpload:
    """Gather the files of an upload of BLADE's loose files, or of one ``.zip`` holding one dataset folder.

    Args:
        files: (file name, content) pairs as uploaded, or a mapping. Either ``info.json`` and ``data.csv``
            (with ``annotations.csv`` / ``mcq_dataset.json`` if wanted) or one ``<anything>.zip``. Pairs keep
            two uploads of the same name apart, so that they can be refused.
        max_bytes: largest accepted file, for the zip itself and for each file inside it.
        name: the dataset's name. Required for loose files; a zip defaults to its folder's name (or the
            zip's own name when the files sit at its root).

    Raises:
        DatasetImportError: nothing or too much was uploaded (two files of one name, a file forkpaths does
            not use, a zip with other files), a file is missing or too large, the zip is unreadable, has an
            unsafe path or holds more than one dataset, or the name is unusable.
    """
    pairs = _pairs(files)
    if not pairs:
        raise DatasetImportError("Nothing was uploaded; upload info.json and data.csv, or one .zip.")
    for filename, content in pairs:
        _check_size(len(content), max_bytes=max_bytes, label=filename)
    names = [filename for filename, _ in pairs]
    zips = [f for f in names if f.lower().endswith(".zip")]
    if zips:
        if len(pairs) > 1:
            raise DatasetImportError(
                f"Upload either one .zip or info.json + data.csv, not both ({_quoted(names)} were uploaded)."
            )
        return _read_zip(zips[0], pairs[0][1], max_bytes=max_bytes, name=name)
    by_name: dict[str, bytes] = {}
    for filename, content in pairs:
        base = PurePosixPath(filename.replace("\\", "/")).name
        if base in by_name:
            raise DatasetImportError(
                f"Two uploaded files are called {base}; upload one of each (remove one and upload again)."
            )
        by_name[base] = content
    wanted = {INFO_FILENAME, CSV_FILENAME, *GROUND_TRUTH_FILES}
    unknown = [f for f in by_name if f not in wanted and f not in _IGNORED_NAMES]
    if unknown:
        raise DatasetImportError(
            f"The upload has file{'s' if len(unknown) > 1 else ''} forkpaths does not use ({_quoted(unknown)}); "
            "upload info.json and data.csv (and BLADE's annotations.csv and mcq_dataset.json, if you have "
            "them), or one .zip of a dataset folder."
        )
    missing = [f for f in (INFO_FILENAME, CSV_FILENAME) if f not in by_name]
    if missing:
        raise DatasetImportError(
            f"The upload has no {' and no '.join(missing)} (got {_quoted(by_name)}); upload info.json and "
            "data.csv together, or one .zip of a dataset folder."
        )
    if not name or not name.strip():
        raise DatasetImportError(
            "Give the dataset a name: the uploaded info.json and data.csv do not say one."
        )
    slugify(name)  # an unusable name is refused before anything else is read
    kept = {f: c for f, c in by_name.items() if f in wanted}
    return BladeUpload(name=name, files=kept, labels={f: f for f in kept}, where="the upload", source="blade_files")


def bundle_from_upload(upload: BladeUpload) -> DatasetBundle:
    """Parse and check an upload's ``info.json`` and ``data.csv`` (its ground truth is not read here).

    Raises:
        DatasetImportError: info.json or data.csv is malformed, or they disagree.
    """
    info_label = upload.labels[INFO_FILENAME]
    return _bundle(
        info=parse_info_json(upload.files[INFO_FILENAME], label=info_label),
        csv_bytes=upload.files[CSV_FILENAME],
        name=slugify(upload.name),
        title=upload.name.strip(),
        source=upload.source,
        info_label=info_label,
        csv_label=upload.labels[CSV_FILENAME],
    )


def read_blade_files(
    files: Mapping[str, bytes] | Sequence[tuple[str, bytes]], *, max_bytes: int, name: str | None = None
) -> DatasetBundle:
    """Read an upload of BLADE's files, or of one ``.zip`` holding one dataset folder, as a dataset bundle.

    The upload's ground truth (``annotations.csv``, ``mcq_dataset.json``) is accepted but not read: the
    caller that wants it imports the upload through ``curation.services.blade_import``. See
    :func:`collect_blade_upload` for the arguments.

    Raises:
        DatasetImportError: see :func:`collect_blade_upload` and :func:`bundle_from_upload`.
    """
    return bundle_from_upload(collect_blade_upload(files, max_bytes=max_bytes, name=name))


#: Most entries in an uploaded dataset zip (a BLADE folder holds a handful of files).
MAX_ZIP_ENTRIES = 10_000
_ZIP_WORDS = ArchiveWords(what="a dataset zip", unit="a dataset folder", action="the upload was rejected")


def _unsafe_reason(member: zipfile.ZipInfo) -> str | None:
    raw = member.filename
    parts = raw.replace("\\", "/").split("/")
    if raw.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", raw):
        return "it is an absolute path"
    if ".." in parts:
        return "it points outside the archive's folder"
    if stat.S_ISLNK(member.external_attr >> 16):
        return "it is a symbolic link"
    return None


def _is_junk(path: PurePosixPath) -> bool:
    return path.parts[0] == "__MACOSX" or path.name.startswith("._") or path.name == ".DS_Store"


def _read_zip(filename: str, content: bytes, *, max_bytes: int, name: str | None) -> BladeUpload:
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except zipfile.BadZipFile as exc:
        raise DatasetImportError(f"{filename} is not a readable zip archive ({exc}).") from exc
    with archive:
        try:  # names that cannot be unpacked (a file and a folder at one path, too deep, too long)
            check_entry_names((m.filename for m in archive.infolist()), label=filename,
                              max_entries=MAX_ZIP_ENTRIES, words=_ZIP_WORDS)
        except ArchiveNameError as exc:
            raise DatasetImportError(str(exc)) from None
        members: dict[PurePosixPath, zipfile.ZipInfo] = {}
        for member in archive.infolist():
            reason = _unsafe_reason(member)
            if reason:
                raise DatasetImportError(
                    f"{filename} contains the unsafe path '{member.filename}' ({reason}); the upload was "
                    "rejected. Zip the dataset folder itself."
                )
            if member.is_dir():
                continue
            path = PurePosixPath(member.filename.replace("\\", "/"))
            if not _is_junk(path):
                members[path] = member
        info_paths = sorted(p for p in members if p.name == INFO_FILENAME)
        if not info_paths:
            raise DatasetImportError(
                f"{filename} has no info.json; zip a BLADE dataset folder (info.json + data.csv)."
            )
        if len(info_paths) > 1:
            folders = _quoted(
                f"{p.parent}/" if p.parent != PurePosixPath(".") else "(top level)" for p in info_paths
            )
            raise DatasetImportError(
                f"{filename} holds more than one dataset (info.json in {folders}); upload one dataset per zip."
            )
        folder = info_paths[0].parent
        where = f"folder '{folder}/'" if folder != PurePosixPath(".") else "its top level"
        if folder / CSV_FILENAME not in members:
            raise DatasetImportError(f"{filename} has info.json in {where} but no data.csv next to it.")
        kept = {
            base: _read_member(archive, members[folder / base], filename, max_bytes)
            for base in (INFO_FILENAME, CSV_FILENAME, *GROUND_TRUTH_FILES)
            if folder / base in members
        }
    default_name = folder.name if folder != PurePosixPath(".") else PurePosixPath(filename).stem
    chosen = name if name and name.strip() else default_name
    slugify(chosen)
    return BladeUpload(
        name=chosen,
        files=kept,
        labels={base: f"{filename}:{folder / base}" for base in kept},
        where=f"{filename}:{folder}" if folder != PurePosixPath(".") else filename,
        source="blade_zip",
    )


def _read_member(archive: zipfile.ZipFile, member: zipfile.ZipInfo, filename: str, max_bytes: int) -> bytes:
    label = f"{filename}:{member.filename}"
    _check_size(member.file_size, max_bytes=max_bytes, label=label)
    try:
        with archive.open(member) as handle:
            data = handle.read(max_bytes + 1)  # never trust the declared size alone
    except (zipfile.BadZipFile, RuntimeError, NotImplementedError, OSError) as exc:
        raise DatasetImportError(f"{label} could not be extracted ({exc}).") from exc
    _check_size(len(data), max_bytes=max_bytes, label=label)
    return data


# ---------------------------------------------------------------------------------------- CSV + form


def read_csv_with_form(
    csv_bytes: bytes,
    *,
    filename: str,
    name: str,
    research_question: str,
    description: str,
    column_descriptions: Mapping[str, str],
    max_bytes: int,
    source: str = "csv_form",
) -> DatasetBundle:
    """Build a dataset from an uploaded CSV and what the curator typed into the form.

    The bundle's ``info`` is a BLADE ``info.json`` built from the form: the question, the description, the
    profiled dictionary with the typed column descriptions, ``num_rows``, ``field_names`` and
    ``data_path = "data.csv"``.

    Raises:
        DatasetImportError: the question is empty, the name has no letters, a description names a column the
            CSV lacks, or the CSV is too large, empty or malformed.
    """
    question = research_question.strip()
    if not question:
        raise DatasetImportError(
            "The research question is empty; type the question the dataset should answer."
        )
    slug = slugify(name)
    _check_size(len(csv_bytes), max_bytes=max_bytes, label=filename)
    frame = parse_csv(csv_bytes, label=filename)
    columns = [str(c) for c in frame.columns]
    unknown = [c for c in column_descriptions if c not in columns]
    if unknown:
        raise DatasetImportError(
            f"The column descriptions name column{'s' if len(unknown) > 1 else ''} {_quoted(unknown)} that "
            f"{filename} does not have (its columns are {_quoted(columns)})."
        )
    descriptions = {c: text.strip() for c, text in column_descriptions.items()}
    fields = profile_columns(frame, descriptions=descriptions)
    info = BladeInfo(
        research_questions=[question],
        data_desc=DataDesc(
            dataset_description=description.strip(),
            fields=fields,
            num_rows=len(frame),
            field_names=columns,
        ),
        data_path=CSV_FILENAME,
    )
    return DatasetBundle(
        name=slug,
        title=name.strip(),
        research_question=question,
        description=description.strip(),
        fields=fields,
        csv_bytes=csv_bytes,
        num_rows=len(frame),
        num_columns=len(columns),
        info=info,
        source=source,
    )


# -------------------------------------------------------------------------------------------- writing


def frame_to_csv_bytes(frame: pd.DataFrame) -> bytes:
    """A frame as BLADE-style CSV bytes: header, no index, ``\\n`` line ends, UTF-8."""
    return frame.to_csv(index=False, lineterminator="\n").encode("utf-8")


@overload
def write_blade_folder(bundle: DatasetBundle, data: pd.DataFrame | bytes, dest: Path) -> Path: ...


@overload
def write_blade_folder(bundle: DatasetBundle, data: Path, dest: None = None) -> Path: ...


def write_blade_folder(
    bundle: DatasetBundle, data: pd.DataFrame | bytes | Path, dest: Path | None = None
) -> Path:
    """Write ``info.json`` + ``data.csv`` of a bundle into ``dest`` (created if needed); returns ``dest``.

    ``write_blade_folder(bundle, frame_or_csv_bytes, dest)`` writes the given table (a frame is written
    without its index); ``write_blade_folder(bundle, dest)`` writes the bundle's own ``csv_bytes``.
    ``info.json`` is ``bundle.info`` in BLADE's own formatting (:func:`exports.blade_info.dump_info_json`).
    Existing ``info.json`` / ``data.csv`` in ``dest`` are replaced; other files are left alone.
    """
    if dest is None:
        if not isinstance(data, Path):
            raise TypeError("write_blade_folder(bundle, dest) needs dest to be a Path")
        dest, csv_bytes = data, bundle.csv_bytes
    elif isinstance(data, pd.DataFrame):
        csv_bytes = frame_to_csv_bytes(data)
    elif isinstance(data, bytes):
        csv_bytes = data
    else:
        raise TypeError("data must be a DataFrame or the CSV's bytes")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    _write_atomically(dest / INFO_FILENAME, dump_info_json(bundle.info).encode("ascii"))
    _write_atomically(dest / CSV_FILENAME, csv_bytes)
    return dest


def _write_atomically(path: Path, content: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(content)
    tmp.replace(path)


# ------------------------------------------------------------------------------- datasets of several files


class FolderFile(BaseModel):
    """One file of a dataset that has several (a DiscoveryBench folder): where it is read from and what it is."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1, max_length=255)
    path: Path
    role: str = Field(description="data (a table the metadata names), metadata, or other")
    format: str = Field(description="csv, stata or other")
    size: int = Field(ge=0)
    columns: list[str] | None = None
    encoding: str | None = None  # of a CSV: utf-8 or cp1252


class FolderBundle(BaseModel):
    """A checked dataset of several files, ready to be stored: every file is copied as it is.

    ``main_file`` is the dataset's main table (what ``Dataset.data_relpath`` points at); ``dictionary`` has
    BLADE's entry shape (``{column, properties: {description}}``) plus the ``file`` each column belongs to.
    """

    model_config = ConfigDict(frozen=True)

    name: str = Field(pattern=_SLUG_PATTERN, max_length=128)
    title: str = Field(max_length=256)
    research_question: str
    description: str
    dictionary: list[dict[str, object]]
    files: list[FolderFile] = Field(min_length=1)
    main_file: str
    num_rows: int = Field(ge=0)
    num_columns: int = Field(ge=0)
    source: str = Field(max_length=32)
    extra: dict[str, object] = Field(default_factory=dict)


def copy_folder_files(bundle: FolderBundle, dest: Path) -> None:
    """Copy every file of ``bundle`` into ``dest`` (created), byte for byte; names must not leave ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for file in bundle.files:
        # a name may have folders (a DataSciBench task's data/x.xlsx), each part a plain name
        parts = file.name.split("/")
        if "\\" in file.name or any(p in {"", ".", ".."} for p in parts):
            raise DatasetImportError(f"{file.path}: the file name {file.name!r} cannot be stored; rename the file.")
        target = dest.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with file.path.open("rb") as source, target.open("xb") as out:
            for chunk in iter(lambda: source.read(1 << 20), b""):
                out.write(chunk)
