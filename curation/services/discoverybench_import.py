"""Import DiscoveryBench (Majumder et al. 2024; data under ODC-By 1.0) into the curation database.

A folder or a whole tree is read by :mod:`exports.discoverybench` (every quirk of upstream's files is handled
there); each task folder becomes a dataset of the registry with all its files and its column descriptions, and
each query a :class:`~curation.models.HypothesisTask` with its gold hypothesis (from the metadata or the answer
key), gold workflow and domain knowledge. A query with no gold is a task still to be curated.

Everything is read and checked before anything is stored, and the import is one transaction: a failed import
stores nothing (no dataset, no task, no file in the store).

Importing a folder a second time is **idempotent**: a folder already imported with the same content (the same
files byte for byte and the same tasks, gold included) is skipped and counted as such. A folder already
imported with *different* content is refused, with nothing imported, rather than silently changed: curated work
may rest on it.

Hypothesis tasks are listed per dataset by :func:`list_hypothesis_tasks`; analysts see only the datasets they
are assigned to and never the gold (stage 1 is blind).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import stat
import tempfile
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, func, select

from curation.dataset_files import MAX_UPLOAD_SETTING, FolderBundle, FolderFile, slugify
from curation.errors import DatasetImportError, NotFoundError, PermissionDenied
from curation.models import (
    Alternative,
    Consensus,
    CuratedItem,
    Dataset,
    DatasetReview,
    HypothesisProposal,
    HypothesisTask,
    HypothesisTaskStatus,
    Meeting,
    Role,
    Stage,
    User,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.datasets import is_assigned, register_folder_dataset, replace_folder_dataset
from evaluation.tasks import KINDS
from exports.archive_names import ArchiveNameError, ArchiveWords, check_entry_names
from exports.discoverybench import DiscoveryBenchTree, Task, TaskFolder, read_discoverybench
from exports.discoverybench.metadata import METADATA_NAME
from exports.errors import DiscoveryBenchFormatError

__all__ = [
    "SOURCE",
    "DiscoveryBenchImportReport",
    "HypothesisTaskView",
    "dataset_name_for",
    "import_discoverybench",
    "import_discoverybench_zip",
    "list_hypothesis_tasks",
]

log = logging.getLogger(__name__)

#: ``Dataset.source`` of an imported DiscoveryBench folder.
SOURCE = "discoverybench"
_ROWS_PER_CHUNK = 50_000


@dataclass
class DiscoveryBenchImportReport:
    """What an import found and stored."""

    folders: int = 0  # task folders read
    datasets: int = 0  # datasets registered now
    unchanged: list[str] = field(default_factory=list)  # folders already imported with the same content: skipped
    tasks: int = 0  # hypothesis tasks stored now
    needs_curation: int = 0  # of those, tasks with no gold hypothesis
    by_split: dict[str, int] = field(default_factory=dict)  # "real/test" -> tasks stored now
    answer_keys: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # one sentence per folder not imported (changed content...)
    replaced: list[str] = field(default_factory=list)  # folders re-imported in place (replace)
    ignored_answer_rows: int = 0  # answer-key rows of folders not in the tree, left out
    ignored_answer_folders: list[str] = field(default_factory=list)
    without_gold: bool = False

    def lines(self) -> list[str]:
        """The report as the CLI prints it and the import page shows it (the refusals are :attr:`refused`)."""
        splits = ", ".join(f"{key} {count}" for key, count in sorted(self.by_split.items()))
        out = [f"Read {self.folders} DiscoveryBench folder{'s' if self.folders != 1 else ''}"
               f"{' and ' + ', '.join(self.answer_keys) if self.answer_keys else ''}."]
        out.append(f"Registered {self.datasets} dataset{'s' if self.datasets != 1 else ''}"
                   f"{f' and replaced {len(self.replaced)}' if self.replaced else ''} with {self.tasks} hypothesis "
                   f"task{'s' if self.tasks != 1 else ''}{f' ({splits})' if splits else ''}; {self.needs_curation} "
                   f"need{'s' if self.needs_curation == 1 else ''} curation (no gold hypothesis)"
                   f"{' (imported without gold, as asked)' if self.without_gold else ''}.")
        if self.unchanged:
            out.append(f"Already imported with the same content, skipped: {len(self.unchanged)} folder"
                       f"{'s' if len(self.unchanged) != 1 else ''} ({', '.join(self.unchanged[:5])}"
                       f"{', ...' if len(self.unchanged) > 5 else ''}).")
        if self.ignored_answer_rows:
            folders = self.ignored_answer_folders
            out.append(f"Ignored {self.ignored_answer_rows} answer-key row{'s' if self.ignored_answer_rows != 1 else ''}"
                       f" of {len(folders)} folder{'s' if len(folders) != 1 else ''} not in the tree "
                       f"({', '.join(folders[:5])}{', ...' if len(folders) > 5 else ''}).")
        return out


def dataset_name_for(folder: TaskFolder) -> str:
    """The registry name of a task folder: ``db_real_test_archaeology`` (kind, split and folder; cut to 64
    characters like every dataset name, so an import refuses two folders that would get the same one)."""
    return slugify(f"db {folder.kind} {folder.split} {folder.name}")


def _fingerprint(folder: TaskFolder, tasks: list[Task]) -> str:
    """The SHA-256 of the folder's files (names and bytes) and of its tasks as read (gold from answer keys too)."""
    digest = hashlib.sha256()
    for path in sorted([folder.path / m.file_name for m in folder.metadata] + [f.path for f in folder.files]):
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    digest.update(json.dumps([t.model_dump(mode="json") for t in tasks], sort_keys=True).encode())
    return digest.hexdigest()


def _dictionary(folder: TaskFolder) -> list[dict[str, Any]]:
    """Column descriptions of every data file, from the metadata (first description wins), Stata labels else."""
    entries: dict[tuple[str, str], dict[str, Any]] = {}
    for meta in folder.metadata:
        for dataset in meta.metadata.datasets:
            for column in dataset.column_list:
                key = (dataset.name, column.name)
                entry = entries.get(key)
                if entry is None:
                    entries[key] = {"column": column.name, "file": dataset.name,
                                    "properties": {"description": column.description or ""}}
                elif not entry["properties"]["description"] and column.description:
                    entry["properties"]["description"] = column.description
    for data in folder.files:
        for name, label in data.column_labels.items():
            entry = entries.setdefault((data.name, name), {"column": name, "file": data.name,
                                                           "properties": {"description": ""}})
            if not entry["properties"]["description"]:
                entry["properties"]["description"] = label
    return list(entries.values())


def _read_table(path: Path, fmt: str, encoding: str | None, columns: tuple[str, ...] | None) -> tuple[int, str | None]:
    """Rows of the main table read to the end, and the encoding that reads it (a CSV whose header is ASCII can
    still hold cp1252 bytes further down)."""
    if not columns:
        return 0, encoding
    try:
        if fmt == "csv":
            for attempt in dict.fromkeys([encoding or "utf-8", "cp1252"]):
                try:
                    # in chunks: a table at the upload limit read whole takes several times its size in memory
                    with pd.read_csv(path, encoding=attempt, dtype=str, chunksize=_ROWS_PER_CHUNK) as chunks:
                        return sum(len(chunk) for chunk in chunks), attempt
                except UnicodeDecodeError:
                    if attempt == "cp1252":
                        raise
        if fmt == "stata":
            with pd.read_stata(path, columns=[columns[0]], chunksize=_ROWS_PER_CHUNK) as reader:
                return sum(len(chunk) for chunk in reader), None
    except Exception as exc:  # the header was readable (checked by the format layer); the body is not
        raise DatasetImportError(f"{path}: the data cannot be read to the end ({type(exc).__name__}: {exc}); "
                                 "fix or replace the file.") from exc
    return 0, encoding


def _answer_key_rows(tree: DiscoveryBenchTree, tasks: list[Task]) -> dict[str, int]:
    """``metadata_<k>/q<qid>`` → the answer-key row that gave a task its gold, so that an export writes the rows
    back in the order they were read."""
    rows = {(key.kind, row.dataset, row.metadataid, row.query_id): row.row
            for key in tree.answer_keys.values() for row in key.rows if row.row is not None}
    found = {}
    for task in tasks:
        row = rows.get((task.kind, task.folder, task.metadata_k, task.qid))
        if task.gold is not None and task.gold.source == "answer_key" and row is not None:
            found[f"metadata_{task.metadata_k}/q{task.qid}"] = row
    return found


def _bundle(folder: TaskFolder, tasks: list[Task], *, name: str, fingerprint: str, max_bytes: int,
            answer_key_rows: dict[str, int] | None = None, without_gold: bool = False) -> FolderBundle:
    for path in [folder.path / m.file_name for m in folder.metadata] + [d.path for d in folder.files]:
        size = path.stat().st_size
        if size > max_bytes:  # before any table is read
            raise DatasetImportError(
                f"{path} is {size:,} bytes, over the upload limit of {max_bytes:,} bytes; nothing was "
                f"imported. An administrator can raise the limit with the setting {MAX_UPLOAD_SETTING}.")
    named = [d for d in folder.files if d.named]
    first_named = folder.metadata[0].metadata.datasets[0].name
    main = next((d for d in named if d.name == first_named), named[0] if named else folder.files[0])
    num_rows, main_encoding = _read_table(main.path, main.format, main.encoding, main.columns)
    files: list[FolderFile] = []
    for meta in folder.metadata:
        path = folder.path / meta.file_name
        files.append(FolderFile(name=meta.file_name, path=path, role="metadata", format="json",
                                size=path.stat().st_size))
    for data in folder.files:
        files.append(FolderFile(name=data.name, path=data.path, role="data" if data.named else "other",
                                format=data.format, size=data.size,
                                columns=list(data.columns) if data.columns is not None else None,
                                encoding=main_encoding if data is main else data.encoding))
    descriptions = list(dict.fromkeys(
        d.description.strip() for m in folder.metadata for d in m.metadata.datasets if d.description and d.description.strip()
    ))
    return FolderBundle(
        name=name,
        title=folder.name[:256],
        research_question=f"DiscoveryBench {folder.kind}/{folder.split} folder {folder.name}: {len(tasks)} "
        f"quer{'y' if len(tasks) == 1 else 'ies'} (see its hypothesis tasks).",
        description="\n\n".join(descriptions),
        dictionary=_dictionary(folder),
        files=files,
        main_file=main.name,
        num_rows=num_rows,
        num_columns=len(main.columns or ()),
        source=SOURCE,
        extra={"discoverybench": {
            "kind": folder.kind, "split": folder.split, "folder": folder.name, "path": folder.relative,
            "metadata": [m.k for m in folder.metadata], "fingerprint": fingerprint,
            "licence": "ODC-By 1.0 (DiscoveryBench, Majumder et al. 2024, allenai/discoverybench)",
            **({"answer_key_rows": answer_key_rows} if answer_key_rows else {}),
            **({"without_gold": True} if without_gold else {}),
        }},
    )


def _task_row(task: Task, dataset_id: int, actor: User | None) -> HypothesisTask:
    gold = task.gold
    return HypothesisTask(
        dataset_id=dataset_id,
        key=task.key,
        source=task.kind,
        split=task.split,
        metadata_k=task.metadata_k,
        qid=task.qid,
        query_field=task.field,
        question=task.question,
        question_type=task.question_type.value if task.question_type is not None else None,
        question_type_raw=task.question_type_raw,
        difficulty=task.difficulty,
        domain=task.domain,
        domain_knowledge=task.domain_knowledge,
        workflow_tags=task.workflow_tags,
        data_files=list(task.datasets),
        gold_hypothesis=gold.text if gold else None,
        gold_source=gold.source if gold else None,
        gold_workflow=gold.workflow if gold else None,
        gold_context=gold.context if gold else None,
        gold_variables=list(gold.variables) if gold and gold.variables is not None else None,
        gold_relationship=gold.relationship if gold else None,
        true_hypothesis_expr=gold.true_hypothesis_expr if gold else None,
        target_col=gold.target_col if gold else None,
        relevant_cols=list(gold.relevant_cols) if gold and gold.relevant_cols is not None else None,
        status=(HypothesisTaskStatus.NEEDS_CURATION if task.needs_curation else HypothesisTaskStatus.GOLD).value,
        created_by_id=actor.id if actor is not None else None,
    )


def _read(path: Path, label: str | None) -> DiscoveryBenchTree:
    if not path.exists():
        raise DatasetImportError(f"{label or path} does not exist; give a DiscoveryBench folder or a tree of them.")
    try:
        return read_discoverybench(path, label=label, ignore_absent_folders=True)
    except DiscoveryBenchFormatError as exc:
        raise DatasetImportError(f"{exc}\nNothing was imported.") from exc


def _file_hashes(folder: TaskFolder) -> dict[str, str]:
    out = {}
    for path in [folder.path / m.file_name for m in folder.metadata] + [f.path for f in folder.files]:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        out[path.name] = digest.hexdigest()
    return out


def _what_changed(folder: TaskFolder, found: Dataset, tree: DiscoveryBenchTree, without_gold: bool) -> str:
    """``metadata_0.json differs and data2.csv is new``, or what differs in the gold when the files do not."""
    before = {str(f["name"]): str(f["sha256"]) for f in found.files or []}
    now = _file_hashes(folder)
    parts = [f"{name} differs" for name in sorted(now) if name in before and before[name] != now[name]]
    parts += [f"{name} is new" for name in sorted(set(now) - set(before))]
    parts += [f"{name} is gone" for name in sorted(set(before) - set(now))]
    if parts:
        return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]
    known = (found.extra or {}).get("discoverybench", {})
    if bool(known.get("without_gold")) != without_gold:
        return ("it was imported " + ("without" if known.get("without_gold") else "with") + " its gold hypotheses "
                "and is now imported " + ("without" if without_gold else "with") + " them")
    keys = sorted(k.file_name for k in tree.answer_keys.values() if k.kind == folder.kind)
    return (f"its gold hypotheses from {' and '.join(keys)} differ" if keys
            else "its gold hypotheses differ (the answer key given before is not given now)")


_WORK = (  # what curated work rests on a dataset: (table, one, many); an analyst's Analysis row only holds
    # the hypotheses (counted) of a DiscoveryBench dataset, and an assignment is not work
    (HypothesisProposal, "hypothesis written by an analyst", "hypotheses written by analysts"),
    (Alternative, "alternative", "alternatives"),
    (Consensus, "consensus decision", "consensus decisions"),
    (Meeting, "meeting", "meetings"),
)


def _curated_items(session: Session, dataset: Dataset) -> list[str]:
    """The curated items resting on the dataset, counted by kind and named as the kind's release names them
    (``3 MCQs``; a kind without a release part: ``curated items``)."""
    found = []
    for kind, count in session.exec(select(CuratedItem.kind, func.count()).where(
            CuratedItem.dataset_id == dataset.id).group_by(col(CuratedItem.kind)).order_by(col(CuratedItem.kind))):
        part = KINDS[kind].release_part if kind in KINDS else None
        one, many = (part.one or part.noun, part.noun) if part is not None else ("curated item", "curated items")
        found.append(f"{count} {one if count == 1 else many}")
    return found


def _dependent_work(session: Session, dataset: Dataset) -> list[str]:
    """What rests on the dataset's content (``3 hypotheses written by analysts``); empty when nothing does."""
    found = []
    for table, one, many in _WORK:
        column = table.dataset_id  # type: ignore[attr-defined]
        count = int(session.exec(select(func.count()).select_from(table).where(column == dataset.id)).one())
        if count:
            found.append(f"{count} {one if count == 1 else many}")
    found += _curated_items(session, dataset)
    curated = int(session.exec(select(func.count()).select_from(HypothesisTask).where(
        HypothesisTask.dataset_id == dataset.id,
        col(HypothesisTask.gold_source).not_in(["metadata", "answer_key"]))).one())
    if curated:
        found.append(f"{curated} gold hypothes{'is' if curated == 1 else 'es'} decided by curators")
    review = session.get(DatasetReview, dataset.id)
    if review is not None and review.stage != Stage.ANNOTATE.value:
        found.append(f"its curation has moved on to stage '{review.stage}'")
    return found


@judges_actor
def import_discoverybench(
    *, session: Session, actor: User | None, path: Path, store: Path, max_bytes: int, replace: bool = False,
    without_gold: bool = False, label: str | None = None,
) -> DiscoveryBenchImportReport:
    """Import a DiscoveryBench task folder or a tree of them (real and synth; train, dev, test; answer keys).

    Curators and admins (``actor`` ``None``: the CLI's operator). Never commits: the caller's one transaction
    holds the whole import.

    Folder by folder: a folder already imported with the same content is skipped; one imported with different
    content is refused (the report names the folder and the changed file) while the other folders import, unless
    ``replace``, which re-imports it in place while no curated work rests on it (else the report says what
    does). Answer-key rows of folders the tree does not have are left out and counted. ``without_gold`` imports
    every query without a gold hypothesis, to be curated from scratch. ``label`` names ``path`` in messages (an
    uploaded zip's name).

    Raises:
        DatasetImportError: the format layer's problems (each naming the file and field, all of them at once);
            a file over ``max_bytes``; two folders that would get one registry name. Nothing is imported then.
    """
    if actor is not None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    path = Path(path)
    tree = _read(path, label)
    tasks_read = [t.model_copy(update={"gold": None}) for t in tree.tasks] if without_gold else tree.tasks
    by_folder: dict[str, list[Task]] = {}
    for task in tasks_read:
        by_folder.setdefault(f"{task.kind}/{task.split}/{task.folder}", []).append(task)
    names: dict[str, TaskFolder] = {}
    problems: list[str] = []
    for folder in tree.folders:
        name = dataset_name_for(folder)
        if name in names:
            problems.append(f"{folder.path} and {names[name].path} would both be registered as '{name}'; rename one.")
        names[name] = folder
    if problems:
        raise DatasetImportError(" ".join(problems) + " Nothing was imported.")
    existing = {d.name: d for d in session.exec(select(Dataset).where(col(Dataset.name).in_(list(names)))).all()}
    ignored = tree.ignored_answer_rows
    report = DiscoveryBenchImportReport(
        folders=len(tree.folders), answer_keys=sorted(k.file_name for k in tree.answer_keys.values()),
        ignored_answer_rows=len(ignored), ignored_answer_folders=sorted({r.dataset for r in ignored}),
        without_gold=without_gold)
    todo: list[tuple[str, TaskFolder, str, Dataset | None]] = []
    for name, folder in names.items():
        tasks = by_folder.get(folder.relative, [])
        fingerprint = _fingerprint(folder, tasks)
        found = existing.get(name)
        if found is None:
            todo.append((name, folder, fingerprint, None))
            continue
        known = (found.extra or {}).get("discoverybench", {}) if found.source == SOURCE else {}
        if not known:
            report.refused.append(f"{folder.relative}: a dataset called '{name}' is already registered and was not "
                                  "imported from DiscoveryBench; rename or archive it first.")
        elif known.get("fingerprint") == fingerprint:
            report.unchanged.append(folder.relative)
        elif replace:
            work = _dependent_work(session, found)
            if work:
                report.refused.append(
                    f"{folder.relative} was imported before (as '{name}') with different content "
                    f"({_what_changed(folder, found, tree, without_gold)}), and was not replaced: "
                    f"{', '.join(work)} {'rests' if len(work) == 1 and work[0].startswith('1 ') else 'rest'} on "
                    "it. Import the changed folder under another folder name.")
            else:
                todo.append((name, folder, fingerprint, found))
        else:
            report.refused.append(
                f"{folder.relative} was imported before (as '{name}') with different content: "
                f"{_what_changed(folder, found, tree, without_gold)}. It was not imported; use --replace (\"Replace "
                "changed folders\" on the page) to re-import it while no curated work rests on it, or import it "
                "under another folder name.")
    # every bundle (sizes checked, tables read to the end) before the first file is stored
    bundles = []
    for name, folder, fingerprint, found in todo:
        tasks = by_folder.get(folder.relative, [])
        bundle = _bundle(folder, tasks, name=name, fingerprint=fingerprint, max_bytes=max_bytes,
                         answer_key_rows=_answer_key_rows(tree, tasks), without_gold=without_gold)
        bundles.append((bundle, folder, found))
    for bundle, folder, found in bundles:
        tasks = by_folder.get(folder.relative, [])
        try:
            if found is None:
                dataset = register_folder_dataset(session=session, actor=actor, bundle=bundle, store=store)  # type: ignore[arg-type]
            else:
                for old in session.exec(select(HypothesisTask).where(HypothesisTask.dataset_id == found.id)).all():
                    session.delete(old)
                session.flush()
                dataset = replace_folder_dataset(session=session, actor=actor, dataset=found, bundle=bundle,  # type: ignore[arg-type]
                                                 store=store)
                report.replaced.append(folder.relative)
            for task in tasks:
                session.add(_task_row(task, dataset.id or 0, actor))
            session.flush()
        except IntegrityError as exc:  # another import registered the same folder after our check
            raise DatasetImportError(
                f"{folder.path} was registered as '{bundle.name}' by another import at the same moment; nothing "
                "was imported. Run the import again: folders imported meanwhile are skipped when unchanged."
            ) from exc
        report.datasets += 1 if found is None else 0
        report.tasks += len(tasks)
        report.needs_curation += sum(1 for t in tasks if t.needs_curation)
        split = Counter(f"{t.kind}/{t.split}" for t in tasks)
        for key, count in split.items():
            report.by_split[key] = report.by_split.get(key, 0) + count
    log.info("imported DiscoveryBench from %s: %d datasets, %d tasks, %d folders refused", label or path,
             report.datasets, report.tasks, len(report.refused))
    return report


#: Most entries in an uploaded DiscoveryBench zip (upstream's whole tree has about 300 files).
MAX_ZIP_ENTRIES = 20_000
_ZIP_WORDS = ArchiveWords(what="a DiscoveryBench zip", unit="a DiscoveryBench tree", action="nothing was imported")


def _unzip(filename: str, content: bytes, dest: Path, max_bytes: int) -> None:
    """Unpack an uploaded zip into ``dest``, refusing names that cannot be unpacked or that would leave it, links,
    and more than ``max_bytes`` in a file or in all (counted while decompressing: the header's sizes are the
    uploader's word)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise DatasetImportError(f"{filename} is not a readable zip archive ({exc}); zip the DiscoveryBench folder "
                                 "or tree. Nothing was imported.") from None
    total = 0
    with archive:
        infos = archive.infolist()
        try:
            check_entry_names((i.filename for i in infos), label=filename, max_entries=MAX_ZIP_ENTRIES,
                              words=_ZIP_WORDS)
        except ArchiveNameError as exc:
            raise DatasetImportError(str(exc)) from None
        for info in infos:
            name = info.filename.replace("\\", "/")
            parts = [p for p in name.split("/") if p not in ("", ".")]
            if name.startswith("/") or (parts and ":" in parts[0]) or ".." in parts:
                raise DatasetImportError(f"{filename}: the entry '{info.filename}' points outside the archive's "
                                         "folder; nothing was imported.")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise DatasetImportError(f"{filename}: the entry '{info.filename}' is a symbolic link; put the file "
                                         "itself in the zip. Nothing was imported.")
            if info.is_dir() or not parts or parts[0] == "__MACOSX":
                continue
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            size = 0
            with archive.open(info) as source, target.open("xb") as out:
                for chunk in iter(lambda: source.read(1 << 20), b""):
                    size += len(chunk)
                    total += len(chunk)
                    if size > max_bytes or total > max_bytes:
                        raise DatasetImportError(
                            f"{filename}: '{info.filename}' makes the upload larger than the limit of {max_bytes:,} "
                            f"bytes unpacked; nothing was imported. An administrator can raise it with the setting "
                            f"{MAX_UPLOAD_SETTING}, or import the tree with forkpaths import-discoverybench.")
                    out.write(chunk)


@judges_actor
def import_discoverybench_zip(*, session: Session, actor: User, filename: str, content: bytes, store: Path,
                              max_bytes: int, replace: bool = False, without_gold: bool = False
                              ) -> DiscoveryBenchImportReport:
    """The import page's upload: a zip of a DiscoveryBench folder or tree, imported as
    :func:`import_discoverybench` imports a folder (the same options and the same report; messages name the
    zip's entries). Curators and admins.

    Raises:
        PermissionDenied: not a curator or admin.
        DatasetImportError: not a zip; an entry that cannot be unpacked (a file and a folder at one path, too
            deep, a name too long, too many entries), that leaves the zip, or a link; more than ``max_bytes``
            unpacked; and everything :func:`import_discoverybench` refuses.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    label = Path(filename).name or "the zip"
    with tempfile.TemporaryDirectory(prefix="forkpaths-discoverybench-") as tmp:
        root = Path(tmp)
        _unzip(label, content, root, max_bytes)
        entries = [p for p in root.iterdir() if not p.name.startswith(".")]
        if len(entries) == 1 and entries[0].is_dir() and not METADATA_NAME.fullmatch(entries[0].name) and \
                not any(METADATA_NAME.fullmatch(p.name) for p in entries[0].iterdir()):
            root, label = entries[0], f"{label}/{entries[0].name}"  # a zip of the tree's folder itself
        return import_discoverybench(session=session, actor=actor, path=root, store=store, max_bytes=max_bytes,
                                     replace=replace, without_gold=without_gold, label=label)


@dataclass(frozen=True)
class HypothesisTaskView:
    """A hypothesis task as the caller may see it: ``gold_*`` are ``None`` and ``gold_hidden`` is true for
    analysts (they write their own hypothesis blind)."""

    id: int
    key: str
    dataset_id: int
    source: str
    split: str
    metadata_k: int
    qid: int
    question: str
    question_type: str | None
    question_type_raw: str | None
    difficulty: int | None
    domain: str | None
    domain_knowledge: str | None
    workflow_tags: str | None
    data_files: tuple[str, ...]
    status: str
    gold_hidden: bool
    gold_hypothesis: str | None
    gold_source: str | None
    gold_workflow: str | None
    gold_context: str | None
    gold_variables: tuple[str, ...] | None
    gold_relationship: str | None
    true_hypothesis_expr: str | None
    target_col: str | None

    @property
    def needs_curation(self) -> bool:
        return self.status == HypothesisTaskStatus.NEEDS_CURATION.value


def _view(row: HypothesisTask, *, hide_gold: bool) -> HypothesisTaskView:
    def gold(value: Any) -> Any:
        return None if hide_gold else value

    return HypothesisTaskView(
        id=row.id or 0, key=row.key, dataset_id=row.dataset_id, source=row.source, split=row.split,
        metadata_k=row.metadata_k, qid=row.qid, question=row.question, question_type=row.question_type,
        question_type_raw=row.question_type_raw, difficulty=row.difficulty, domain=row.domain,
        domain_knowledge=row.domain_knowledge, workflow_tags=row.workflow_tags, data_files=tuple(row.data_files),
        status=row.status, gold_hidden=hide_gold, gold_hypothesis=gold(row.gold_hypothesis),
        gold_source=gold(row.gold_source), gold_workflow=gold(row.gold_workflow), gold_context=gold(row.gold_context),
        gold_variables=gold(tuple(row.gold_variables) if row.gold_variables is not None else None),
        gold_relationship=gold(row.gold_relationship), true_hypothesis_expr=gold(row.true_hypothesis_expr),
        target_col=gold(row.target_col),
    )


@judges_actor
def list_hypothesis_tasks(*, session: Session, actor: User, dataset_id: int) -> list[HypothesisTaskView]:
    """The hypothesis tasks of one dataset, in file order (metadata ``k``, then ``qid``).

    Curators, admins and evaluators see every dataset's tasks with their gold. Analysts see the tasks of the
    datasets they are assigned to, without the gold: stage 1 is blind.

    Raises:
        NotFoundError: no such dataset.
        PermissionDenied: an analyst not assigned to it.
    """
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN, Role.EVALUATOR)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    analyst = actor.role == Role.ANALYST.value
    if analyst and not is_assigned(session=session, user_id=actor.id or 0, dataset_id=dataset_id):
        raise PermissionDenied(f"You are not assigned to the dataset '{dataset.name}'.")
    rows = session.exec(
        select(HypothesisTask).where(HypothesisTask.dataset_id == dataset_id)
        .order_by(col(HypothesisTask.metadata_k), col(HypothesisTask.qid))
    ).all()
    return [_view(row, hide_gold=analyst) for row in rows]
