"""Import the datasets of a kind whose items come from a benchmark's own files (``forkpaths import-<kind> PATH``):
one service for every kind that declares an :class:`~evaluation.tasks.base.Importer`.

The kind reads the folder (its format, every quirk, every check: nothing is stored by it); this service stores
each dataset with its files (:func:`~curation.services.datasets.register_folder_dataset`) and the kind's part in
``Dataset.parts[kind]``, which every release cut carries as it is. A new imported kind needs no table and no
migration.

As for DiscoveryBench: importing again is idempotent. A dataset already imported with the same content (its files
byte for byte and its part) is skipped; one imported with different content is refused, naming what changed,
while the other datasets import. Everything is read and checked before the first file is stored, and the caller's
one transaction holds the import: a failed import stores nothing.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from curation.dataset_files import MAX_UPLOAD_SETTING, FolderBundle, FolderFile, slugify
from curation.errors import DatasetImportError
from curation.models import Dataset, Role, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.datasets import register_folder_dataset
from evaluation.errors import EvaluationError
from evaluation.tasks import ImportedDataset, TaskKind, task_kind

__all__ = ["KindImportReport", "import_kind", "importable_kinds", "imported_by"]

log = logging.getLogger(__name__)

#: ``Dataset.source`` of a dataset imported by a kind: ``kind:<name>`` (fits the column's 32 characters).
SOURCE_PREFIX = "kind:"


@dataclass
class KindImportReport:
    """What an import found and stored."""

    kind: str
    noun: str  # what the kind's items are called ("QRData questions")
    read: int = 0  # datasets read
    datasets: list[str] = field(default_factory=list)  # registered now
    items: int = 0  # the kind's items in the datasets registered now
    unchanged: list[str] = field(default_factory=list)  # imported before with the same content: skipped
    refused: list[str] = field(default_factory=list)  # one sentence per dataset not imported

    def lines(self) -> list[str]:
        """The report as the CLI prints it and the Datasets page shows it (refusals are :attr:`refused`)."""
        n = len(self.datasets)
        out = [f"Read {self.read} dataset{'s' if self.read != 1 else ''}.",
               f"Registered {n} dataset{'s' if n != 1 else ''} with {self.items} {self.noun}"
               f"{': ' + ', '.join(self.datasets) if self.datasets else ''}."]
        if self.unchanged:
            out.append(f"Already imported with the same content, skipped: {', '.join(self.unchanged)}.")
        return out


def imported_by(dataset: Dataset) -> TaskKind | None:
    """The kind that imported ``dataset`` with its gold (``forkpaths import-<kind>``), or None."""
    from evaluation.tasks import KINDS

    source = dataset.source or ""
    if not source.startswith(SOURCE_PREFIX):
        return None
    return KINDS.get(source[len(SOURCE_PREFIX):])


def importable_kinds() -> list[TaskKind]:
    """The registered kinds that import datasets, in the registry's order."""
    from evaluation.tasks import KINDS

    return [k for k in KINDS.values() if k.importer is not None]


def _fingerprint(ds: ImportedDataset) -> str:
    h = hashlib.sha256()
    for f in sorted(ds.files, key=lambda f: f.name):
        h.update(f.name.encode() + b"\0" + hashlib.sha256(f.path.read_bytes()).hexdigest().encode() + b"\0")
    h.update(json.dumps(ds.part.model_dump(mode="json"), sort_keys=True).encode())
    return h.hexdigest()


def _table_shape(path: Path, label: str) -> tuple[int, int, list[str] | None]:
    """Rows and columns of a CSV table (the header counted out), read to the end in a streaming pass."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, [])
            rows = sum(1 for _ in reader)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DatasetImportError(f"{label}: the table cannot be read as CSV ({exc}); nothing was imported.") from exc
    return rows, len(header), header


def _bundle(kind: TaskKind, ds: ImportedDataset, fingerprint: str, max_bytes: int) -> FolderBundle:
    files = []
    for f in ds.files:
        try:
            size = f.path.stat().st_size
        except OSError as exc:
            raise DatasetImportError(f"{f.path}: {exc.strerror or exc}; nothing was imported.") from exc
        if size > max_bytes:
            raise DatasetImportError(
                f"{f.path} is {size:,} bytes, over the upload limit of {max_bytes:,} bytes; nothing was imported. "
                f"An administrator can raise the limit with the setting {MAX_UPLOAD_SETTING}.")
        columns = _table_shape(f.path, str(f.path))[2] if f.format == "csv" else None
        files.append(FolderFile(name=f.name, path=f.path, role=f.role, format=f.format, size=size, columns=columns))
    main = next((f for f in ds.files if f.name == ds.main_file), None)
    if main is None:
        raise DatasetImportError(f"The {kind.name} dataset '{ds.name}' has no file {ds.main_file!r} to use as its "
                                 "table; nothing was imported.")
    rows, ncols, _ = _table_shape(main.path, str(main.path)) if main.format == "csv" else (0, 0, None)
    return FolderBundle(
        name=ds.name, title=ds.title[:256], research_question=ds.research_question, description=ds.description,
        dictionary=[dict(d) for d in ds.dictionary], files=files, main_file=ds.main_file, num_rows=rows,
        num_columns=ncols, source=f"{SOURCE_PREFIX}{kind.name}",
        extra={kind.name: {**ds.extra, "fingerprint": fingerprint, "licence": ds.licence,
                           "attribution": ds.attribution}})


def _what_changed(kind: TaskKind, ds: ImportedDataset, found: Dataset) -> str:
    stored = {f.get("name"): f.get("sha256") for f in found.files or []}
    changed = [f.name for f in ds.files if stored.get(f.name) != hashlib.sha256(f.path.read_bytes()).hexdigest()]
    changed += [f"{name} (gone)" for name in stored if name not in {f.name for f in ds.files}]
    if changed:
        return f"the file{'s' if len(changed) != 1 else ''} {', '.join(changed)} changed"
    return f"its {kind.release_part.noun if kind.release_part else 'items'} changed"


@judges_actor
def import_kind(*, session: Session, actor: User | None, kind: str, path: Path, store: Path,
                max_bytes: int) -> KindImportReport:
    """Import ``path`` with kind ``kind``'s importer: each dataset it reads is registered with its files and the
    kind's part, or skipped (same content) or refused (different content, or the name taken by another dataset).

    Curators and admins (``actor`` ``None``: the CLI's operator). Never commits: the caller's one transaction
    holds the whole import.

    Raises:
        DatasetImportError: the kind imports nothing; the folder cannot be read (the kind's sentence, naming the
            file and record); a file over ``max_bytes``. Nothing is imported then.
    """
    if actor is not None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    try:
        spec = task_kind(kind)
    except EvaluationError as exc:
        raise DatasetImportError(str(exc)) from exc
    if spec.importer is None or spec.release_part is None:
        known = ", ".join(k.name for k in importable_kinds()) or "none"
        raise DatasetImportError(f"The kind '{kind}' does not import datasets; the kinds that do are: {known}.")
    try:
        # dataset names as the registry keeps them (lower-case letters and digits joined by _)
        read = [replace(d, name=slugify(d.name)) for d in spec.importer.read(Path(path))]
    except EvaluationError as exc:
        raise DatasetImportError(f"{exc} Nothing was imported.") from exc
    names = [d.name for d in read]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DatasetImportError(f"{path}: the datasets {', '.join(twice)} are read twice; nothing was imported.")
    report = KindImportReport(kind=kind, noun=spec.release_part.noun, read=len(read))
    existing = {d.name: d for d in session.exec(select(Dataset).where(col(Dataset.name).in_(names))).all()}
    todo: list[tuple[ImportedDataset, FolderBundle]] = []
    for ds in read:
        fingerprint = _fingerprint(ds)
        found = existing.get(ds.name)
        if found is None:
            todo.append((ds, _bundle(spec, ds, fingerprint, max_bytes)))
        elif found.source != f"{SOURCE_PREFIX}{kind}":
            report.refused.append(f"{ds.name}: a dataset of that name is already registered and was not imported "
                                  f"as {kind}; rename or archive it first.")
        elif (found.extra or {}).get(kind, {}).get("fingerprint") == fingerprint:
            report.unchanged.append(ds.name)
        else:
            report.refused.append(f"{ds.name} was imported before with different content ({_what_changed(spec, ds, found)}); "
                                  "it was not imported again, since releases and runs may rest on it. Import the "
                                  "changed version under another name.")
    for ds, bundle in todo:
        try:
            dataset = register_folder_dataset(session=session, actor=actor, bundle=bundle, store=store)
            dataset.parts = {kind: ds.part.model_dump(mode="json")}
            session.add(dataset)
            session.flush()
        except IntegrityError as exc:  # another import registered the same name after our check
            raise DatasetImportError(f"'{ds.name}' was registered by another import at the same moment; nothing was "
                                     "imported. Run the import again: unchanged datasets are skipped.") from exc
        report.datasets.append(ds.name)
        report.items += next(iter(spec.release_part.counts(ds.part).values()), 0)  # the first count: its items
    log.info("imported %s from %s: %d datasets, %d refused", kind, path, len(report.datasets), len(report.refused))
    return report
