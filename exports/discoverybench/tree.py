"""A DiscoveryBench folder or tree of them: read into :class:`DiscoveryBenchTree`, written back in upstream's layout.

Layout (evaluation-seeds-reference §1.1)::

    <root>/answer_key_real.csv, answer_key_synth.csv
    <root>/real/{train,test}/<folder>/metadata_<k>.json + the data files the metadata names
    <root>/synth/{train,dev,test}/<domain>_<height>_<depth>/metadata_<k>.json + data.csv

:func:`read_discoverybench` accepts the root, ``real/`` or ``synth/``, one split, or one task folder. Kind and
split come from the path (``real``/``synth``, ``train``/``dev``/``test``); a folder outside that layout gets its
kind from the shape of its ``columns`` and the split ``test`` unless told otherwise. Hidden entries and notebook
checkpoints (``.ipynb_checkpoints``) are ignored. Each named data file must exist; CSV headers are read with
pandas (UTF-8, or cp1252 as a fallback), Stata ``.dta`` files with :func:`pandas.read_stata`, other files
(``phylogenetic_tree.txt``) are kept as they are.

Each query becomes a :class:`Task`. Its gold hypothesis is the query's ``true_hypothesis`` (train, dev) or the
answer key's ``gold_hypo`` (test); a query with neither is a task still to be curated. An answer-key row that
matches no query of the tree read is an error naming the row.

:func:`write_discoverybench` writes the tree back: metadata byte-identical while unchanged (see
:mod:`exports.discoverybench.metadata`), data files copied, answer keys rewritten; atomically (a sibling
``.partial`` folder renamed into place).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from exports.blade_layout import swap_into_place
from exports.discoverybench.answer_key import (
    MAX_ANSWER_KEY_BYTES,
    AnswerKey,
    AnswerKeyRow,
    parse_answer_key,
    write_answer_key,
)
from exports.discoverybench.metadata import (
    MAX_METADATA_BYTES,
    METADATA_NAME,
    MetadataFile,
    dump_metadata,
    parse_metadata,
)
from exports.discoverybench.models import ColumnGroups, QuestionType
from exports.errors import DiscoveryBenchFormatError, DiscoveryBenchProblem

__all__ = [
    "DataFile",
    "DiscoveryBenchTree",
    "GoldHypothesis",
    "Task",
    "TaskFolder",
    "read_discoverybench",
    "read_task_folder",
    "write_discoverybench",
]

log = logging.getLogger(__name__)

Kind = Literal["real", "synth"]
SPLITS = ("train", "dev", "test")
NOTICE_PREFIXES = ("license", "licence", "readme", "notice", "attribution")
IGNORED_DIRS = {".ipynb_checkpoints", "__pycache__", "__MACOSX"}
#: Most metadata bytes one read holds in memory (all the tree's metadata files together).
MAX_TREE_METADATA_BYTES = 32 * 2**20


class DataFile(BaseModel):
    """A file of a task folder: a data file the metadata names, or another file that was there."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    name: str
    path: Path
    format: Literal["csv", "stata", "other"]
    size: int
    columns: tuple[str, ...] | None = None  # CSV header / Stata variables; None for other files
    column_labels: dict[str, str] = Field(default_factory=dict)  # Stata variable labels, where given
    encoding: str | None = None  # of a CSV: utf-8 or cp1252
    named: bool = True  # named by some metadata file's datasets


class TaskFolder(BaseModel):
    """One dataset folder: its metadata files (sorted by ``k``) and its files."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: Kind
    split: str
    name: str
    path: Path
    metadata: list[MetadataFile]
    files: list[DataFile]

    @property
    def relative(self) -> str:
        return f"{self.kind}/{self.split}/{self.name}"


class GoldHypothesis(BaseModel):
    """A query's gold hypothesis as upstream ships it: natural-language text. The decomposition into context,
    variables and relationship is not in upstream's files (its evaluator asks an LLM); curation fills it."""

    text: str
    source: Literal["metadata", "answer_key"]
    workflow: str | None = None  # the metadata's free-text gold workflow (real train only)
    context: str | None = None
    variables: list[str] | None = None
    relationship: str | None = None
    # synthetic tasks: an executable form of the hypothesis
    true_hypothesis_expr: str | None = None
    target_col: str | None = None
    relevant_cols: list[str] | None = None


class Task(BaseModel):
    """One query of one metadata file, with what scoring and curation need."""

    kind: Kind
    split: str
    folder: str
    metadata_k: int
    qid: int
    field: str  # JSON path of the query in its file (queries[0][1])
    question: str
    question_type: QuestionType | None
    question_type_raw: str | None
    difficulty: int | None = None
    domain: str | None = None
    domain_knowledge: str | None = None
    workflow_tags: str | None = None
    datasets: list[str]
    gold: GoldHypothesis | None = None

    @property
    def key(self) -> str:
        """A stable identifier: ``real/test/archaeology/metadata_3/q0``."""
        return f"{self.kind}/{self.split}/{self.folder}/metadata_{self.metadata_k}/q{self.qid}"

    @property
    def needs_curation(self) -> bool:
        """No gold hypothesis shipped: experts have to write one."""
        return self.gold is None


class DiscoveryBenchTree(BaseModel):
    """Everything read: task folders (sorted by kind, split, name), answer keys and the tasks."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    root: Path
    folders: list[TaskFolder]
    answer_keys: dict[str, AnswerKey] = Field(default_factory=dict)
    tasks: list[Task] = Field(default_factory=list)
    #: licence and README files at the root (upstream's data is ODC-By: the attribution travels with it)
    notices: list[Path] = Field(default_factory=list)
    #: answer-key rows of folders not in the tree, left out (``read_discoverybench(ignore_absent_folders=True)``)
    ignored_answer_rows: list[AnswerKeyRow] = Field(default_factory=list)


# ---------------------------------------------------------------------------------------------- reading


def _problem(label: str, message: str, field: str | None = None) -> DiscoveryBenchProblem:
    return DiscoveryBenchProblem(file=label, message=message, field=field)


def _csv_header(path: Path, label: str) -> tuple[tuple[str, ...], str]:
    for encoding in ("utf-8", "cp1252"):
        try:
            columns = pd.read_csv(path, nrows=0, encoding=encoding, encoding_errors="strict").columns
            return tuple(str(column) for column in columns), encoding
        except UnicodeDecodeError:
            continue
        except pd.errors.EmptyDataError as exc:
            raise DiscoveryBenchFormatError(
                _problem(label, f"{label}: the data file is empty; it needs a header row and the data.")
            ) from exc
        except (pd.errors.ParserError, ValueError) as exc:
            raise DiscoveryBenchFormatError(_problem(label, f"{label}: not readable as CSV: {exc}")) from exc
    raise DiscoveryBenchFormatError(
        _problem(label, f"{label}: the data file is neither UTF-8 nor cp1252 text; save it as UTF-8.")
    )


def _stata_header(path: Path, label: str) -> tuple[tuple[str, ...], dict[str, str]]:
    try:
        with pd.read_stata(path, iterator=True) as reader:
            labels = reader.variable_labels()
    except Exception as exc:  # pandas raises ValueError, struct.error, UnicodeDecodeError... on a bad file
        raise DiscoveryBenchFormatError(
            _problem(label, f"{label}: not a readable Stata .dta file ({type(exc).__name__}: {exc}).")
        ) from exc
    return tuple(labels), {name: text for name, text in labels.items() if text}


def _data_file(path: Path, label: str, *, named: bool) -> DataFile:
    suffix = path.suffix.lower()
    size = path.stat().st_size
    if suffix == ".csv":
        columns, encoding = _csv_header(path, label)
        return DataFile(name=path.name, path=path, format="csv", size=size, columns=columns, encoding=encoding,
                        named=named)
    if suffix == ".dta":
        columns, labels = _stata_header(path, label)
        return DataFile(name=path.name, path=path, format="stata", size=size, columns=columns,
                        column_labels=labels, named=named)
    return DataFile(name=path.name, path=path, format="other", size=size, named=named)


def _unnamed_file(path: Path) -> DataFile:
    """A file no metadata names (upstream ships such files): kept and copied, its content not checked."""
    formats: dict[str, Literal["csv", "stata"]] = {".csv": "csv", ".dta": "stata"}
    return DataFile(name=path.name, path=path, format=formats.get(path.suffix.lower(), "other"),
                    size=path.stat().st_size, named=False)


def _infer_kind_split(path: Path, kind: Kind | None, split: str | None) -> tuple[Kind | None, str | None]:
    parts = path.resolve().parts
    if split is None and len(parts) >= 2 and parts[-2] in SPLITS:
        split = parts[-2]
    if kind is None and len(parts) >= 3 and parts[-3] in ("real", "synth"):
        kind = "real" if parts[-3] == "real" else "synth"
    return kind, split


def read_task_folder(
    folder: Path, *, label: str | None = None, kind: Kind | None = None, split: str | None = None
) -> TaskFolder:
    """Read one dataset folder (``metadata_<k>.json`` files and the files they name).

    Args:
        folder: the folder.
        label: how to name it in messages (default: its path).
        kind, split: override what the path says (``.../real/test/<folder>``).

    Raises:
        DiscoveryBenchFormatError: every problem of every metadata file, every data file a metadata file
            names that the folder lacks (naming the metadata file and ``datasets[i].name``) or that pandas
            cannot read, and every symbolic link in the folder (never followed).
    """
    folder = Path(folder)
    prefix = label or str(folder)
    if not folder.is_dir():
        raise DiscoveryBenchFormatError(_problem(prefix, f"{prefix} is not a folder."))
    kind, split = _infer_kind_split(folder, kind, split)
    problems: list[DiscoveryBenchProblem] = []
    files: list[MetadataFile] = []
    others: list[Path] = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name in IGNORED_DIRS:
            continue
        if entry.is_symlink():
            # A link could point anywhere (an uploaded tree is hostile input): its target would be read and
            # copied into exports. Refuse it by name instead of following it.
            problems.append(
                _problem(
                    f"{prefix}/{entry.name}",
                    f"{prefix}/{entry.name} is a symbolic link; put the file itself in the folder.",
                )
            )
            continue
        match = METADATA_NAME.fullmatch(entry.name)
        if match and entry.is_file():
            shown = f"{prefix}/{entry.name}"
            size = entry.stat().st_size
            if size > MAX_METADATA_BYTES:  # before it is read: it is read whole
                problems.append(_problem(shown, f"{shown} is {size:,} bytes; a metadata file may be at most "
                                         f"{MAX_METADATA_BYTES:,} bytes (upstream's largest is 28 KB). Split its "
                                         "queries into several metadata files."))
                continue
            try:
                files.append(parse_metadata(entry.read_bytes(), k=int(match.group(1)), label=shown))
            except DiscoveryBenchFormatError as exc:
                problems.extend(exc.problems)
        elif entry.is_file():
            others.append(entry)
    if not files and not problems:
        raise DiscoveryBenchFormatError(
            _problem(prefix, f"{prefix} holds no metadata_<k>.json; it is not a DiscoveryBench task folder.")
        )
    files.sort(key=lambda f: f.k)
    present = {p.name: p for p in others}
    named: dict[str, DataFile] = {}
    for file in files:
        for index, dataset in enumerate(file.metadata.datasets):
            if dataset.name in named:
                continue
            where = f"datasets[{index}].name"
            if dataset.name not in present or "/" in dataset.name or "\\" in dataset.name:
                problems.append(
                    _problem(
                        file.label,
                        f"{file.label}: {where} names the data file {dataset.name!r}, which is not in "
                        f"{prefix}; add the file or correct the name.",
                        field=where,
                    )
                )
                continue
            try:
                named[dataset.name] = _data_file(present[dataset.name], f"{prefix}/{dataset.name}", named=True)
            except DiscoveryBenchFormatError as exc:
                problems.extend(exc.problems)
    if problems:
        raise DiscoveryBenchFormatError(problems)
    data_files = [named.get(p.name) or _unnamed_file(p) for p in others]
    if kind is None:
        shapes = {isinstance(d.columns, ColumnGroups) for f in files for d in f.metadata.datasets}
        kind = "real" if shapes == {True} else "synth"
    return TaskFolder(kind=kind, split=split or "test", name=folder.name, path=folder, metadata=files, files=data_files)


def _walk(root: Path) -> list[Path]:
    found = []
    for current, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in IGNORED_DIRS)
        if any(METADATA_NAME.fullmatch(name) for name in names):
            found.append(Path(current))
    return found


def _tasks(folder: TaskFolder) -> list[Task]:
    tasks = []
    for file in folder.metadata:
        meta = file.metadata
        for path, query in meta.query_list():
            gold = None
            if query.true_hypothesis is not None and query.true_hypothesis.strip():
                gold = GoldHypothesis(
                    text=query.true_hypothesis,
                    source="metadata",
                    workflow=meta.workflow,
                    true_hypothesis_expr=query.true_hypothesis_expr,
                    target_col=query.target_col,
                    relevant_cols=query.relevant_cols,
                )
            tasks.append(
                Task(
                    kind=folder.kind,
                    split=folder.split,
                    folder=folder.name,
                    metadata_k=file.k,
                    qid=query.qid,
                    field=path,
                    question=query.question,
                    question_type=query.kind,
                    question_type_raw=query.question_type,
                    difficulty=query.difficulty,
                    domain=meta.domain,
                    domain_knowledge=meta.domain_knowledge,
                    workflow_tags=meta.workflow_tags,
                    datasets=[d.name for d in meta.datasets],
                    gold=gold,
                )
            )
    return tasks


def _apply_answer_key(key: AnswerKey, tasks: list[Task], ignored: list[AnswerKeyRow] | None = None
                      ) -> list[DiscoveryBenchProblem]:
    index: dict[tuple[str, int, int], list[Task]] = {}
    for task in tasks:
        if task.kind == key.kind:
            index.setdefault((task.folder, task.metadata_k, task.qid), []).append(task)
    present = {folder for folder, _k, _q in index}
    problems = []
    for row in key.rows:
        candidates = index.get(row.key, [])
        if not candidates and ignored is not None and row.dataset not in present:
            ignored.append(row)  # a folder the tree read does not have: a subset of the benchmark
            continue
        if not candidates:
            problems.append(
                DiscoveryBenchProblem(
                    file=key.label,
                    row=row.row,
                    field="dataset, metadataid, query_id",
                    message=f"{key.label}: row {row.row} (dataset {row.dataset!r}, metadataid {row.metadataid}, "
                    f"query_id {row.query_id}) matches no query: there is no {key.kind}/<split>/{row.dataset}/"
                    f"metadata_{row.metadataid}.json with qid {row.query_id}. Add the task folder or remove the row.",
                )
            )
            continue
        task = next((t for t in candidates if t.split == "test"), candidates[0])
        if task.gold is not None and task.gold.text.strip() != row.gold_hypo.strip():
            problems.append(
                DiscoveryBenchProblem(
                    file=key.label,
                    row=row.row,
                    field="gold_hypo",
                    message=f"{key.label}: row {row.row}, gold_hypo differs from the true_hypothesis of "
                    f"{task.key} in its metadata; keep one gold hypothesis per query.",
                )
            )
            continue
        if task.gold is None:
            task.gold = GoldHypothesis(text=row.gold_hypo, source="answer_key")
    return problems


def read_discoverybench(
    path: Path, *, label: str | None = None, kind: Kind | None = None, split: str | None = None,
    ignore_absent_folders: bool = False,
) -> DiscoveryBenchTree:
    """Read a DiscoveryBench root, ``real/``/``synth/``, a split, or one task folder.

    Answer keys (``answer_key_real.csv``, ``answer_key_synth.csv``) are read from ``path`` itself (or its
    ``eval/`` folder, where upstream keeps them). ``kind``/``split`` override the path for folders read outside
    the layout. With ``ignore_absent_folders``, answer-key rows of folders the tree does not have (a subset read
    with the benchmark's full answer key) are left out and listed in ``ignored_answer_rows``; a row of a folder
    the tree has that matches none of its queries is still an error.

    Raises:
        DiscoveryBenchFormatError: every problem found in every folder and answer key (nothing is returned
            half-read): malformed metadata, a data file the metadata names but the folder lacks, a query with no
            question, an answer-key row that matches no query...
    """
    root = Path(path)
    prefix = label or str(root)
    if not root.is_dir():
        raise DiscoveryBenchFormatError(_problem(prefix, f"{prefix} is not a folder."))
    problems: list[DiscoveryBenchProblem] = []
    folders: list[TaskFolder] = []
    found_folders = _walk(root)
    sizes = [entry.stat().st_size for found in found_folders for entry in found.iterdir()
             if METADATA_NAME.fullmatch(entry.name) and entry.is_file() and not entry.is_symlink()]
    total = sum(size for size in sizes if size <= MAX_METADATA_BYTES)  # larger ones are refused one by one
    if total > MAX_TREE_METADATA_BYTES:  # every metadata file is held in memory while the tree is read
        raise DiscoveryBenchFormatError(_problem(
            prefix, f"{prefix} holds {total:,} bytes of metadata files; one import reads at most "
            f"{MAX_TREE_METADATA_BYTES:,} (upstream's whole benchmark has 1.5 MB). Import it in parts."))
    for found in found_folders:
        relative = found.relative_to(root).as_posix()
        try:
            folders.append(
                read_task_folder(found, label=prefix if relative == "." else f"{prefix}/{relative}", kind=kind,
                                 split=split)
            )
        except DiscoveryBenchFormatError as exc:
            problems.extend(exc.problems)
    keys: dict[str, AnswerKey] = {}
    for key_kind in ("real", "synth"):
        name = f"answer_key_{key_kind}.csv"
        for place in (root / name, root / "eval" / name):
            if place.is_file():
                shown = f"{prefix}/{place.relative_to(root).as_posix()}"
                size = place.stat().st_size
                if size > MAX_ANSWER_KEY_BYTES:  # before it is read: it is read whole
                    problems.append(_problem(shown, f"{shown} is {size:,} bytes; an answer key may be at most "
                                             f"{MAX_ANSWER_KEY_BYTES:,} bytes (upstream's is 32 KB)."))
                    break
                try:
                    keys[key_kind] = parse_answer_key(place.read_bytes(), kind=key_kind, label=shown)  # type: ignore[arg-type]
                except DiscoveryBenchFormatError as exc:
                    problems.extend(exc.problems)
                break
    if not folders and not problems:
        raise DiscoveryBenchFormatError(
            _problem(prefix, f"{prefix} holds no DiscoveryBench task folder (no metadata_<k>.json anywhere under it).")
        )
    folders.sort(key=lambda f: (f.kind, SPLITS.index(f.split) if f.split in SPLITS else 9, f.split, f.name))
    tasks = [task for folder in folders for task in _tasks(folder)]
    ignored: list[AnswerKeyRow] | None = [] if ignore_absent_folders else None
    for key in keys.values():
        problems.extend(_apply_answer_key(key, tasks, ignored))
    if problems:
        raise DiscoveryBenchFormatError(problems)
    notices = sorted(
        p for p in root.iterdir() if p.is_file() and p.name.lower().startswith(NOTICE_PREFIXES)
    )
    return DiscoveryBenchTree(root=root, folders=folders, answer_keys=keys, tasks=tasks, notices=notices,
                              ignored_answer_rows=ignored or [])


# ---------------------------------------------------------------------------------------------- writing


def _write_file(path: Path, content: bytes) -> None:
    with open(path, "xb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())


def write_discoverybench(
    tree: DiscoveryBenchTree, dest: Path, *, overwrite: bool = False, include_unnamed_files: bool = True
) -> Path:
    """Write the tree in DiscoveryBench's layout at ``dest``, all or nothing.

    ``<kind>/<split>/<folder>/metadata_<k>.json`` (see :func:`exports.discoverybench.metadata.dump_metadata`),
    the data files copied byte for byte (files no metadata names too, unless ``include_unnamed_files`` is
    false), ``answer_key_<kind>.csv`` at the top for each answer key the tree has, and the root's licence and
    README files (ODC-By asks that the attribution go wherever the data goes).

    Raises:
        FileExistsError: ``dest`` exists and is not an empty folder, and ``overwrite`` is false.
    """
    dest = Path(dest)
    if dest.exists() and not overwrite and (not dest.is_dir() or any(dest.iterdir())):
        raise FileExistsError(f"{dest} already exists; pass overwrite=True to replace it.")
    contents: dict[str, bytes] = {}
    copies: dict[str, Path] = {}
    for folder in tree.folders:
        for file in folder.metadata:
            contents[f"{folder.relative}/{file.file_name}"] = dump_metadata(file)
        for data in folder.files:
            if data.named or include_unnamed_files:
                copies[f"{folder.relative}/{data.name}"] = data.path
    for key in tree.answer_keys.values():
        contents[key.file_name] = write_answer_key(key)
    for notice in tree.notices:
        copies.setdefault(notice.name, notice)
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.parent / f".{dest.name}.partial-{uuid.uuid4().hex[:12]}"
    partial.mkdir()
    try:
        for relative, content in contents.items():
            target = partial / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_file(target, content)
        for relative, source in copies.items():
            target = partial / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
        swap_into_place(partial, dest, overwrite=True)  # refused earlier unless overwrite
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return dest


