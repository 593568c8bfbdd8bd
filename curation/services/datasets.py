"""Dataset registry: register (BLADE folder, uploaded files, CSV + form), list, assign analysts, load data."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
from sqlalchemy import event
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import SessionTransaction
from sqlmodel import Session, col, select

from curation.dataset_files import (
    DatasetBundle,
    FolderBundle,
    copy_folder_files,
    parse_csv,
    write_blade_folder,
)
from curation.dataset_staging import staging_folder
from curation.errors import DatasetImportError, NotFoundError, PermissionDenied
from curation.models import Dataset, DatasetAssignment, Role, User, utcnow
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from exports.blade_info import dump_info_json

# Who can be assigned to a dataset: the roles that annotate (evaluators score agents).
ANNOTATING_ROLES = frozenset({Role.ANALYST.value, Role.CURATOR.value, Role.ADMIN.value})

__all__ = [
    "ANNOTATING_ROLES",
    "archive_dataset",
    "assign_analysts",
    "assigned_user_ids",
    "dataset_data_path",
    "get_dataset",
    "is_assigned",
    "list_datasets",
    "load_frame",
    "column_descriptions",
    "csv_columns",
    "original_columns",
    "register_dataset",
    "register_folder_dataset",
    "replace_folder_dataset",
    "stored_file",
    "restore_dataset",
]

log = logging.getLogger(__name__)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@judges_actor
def register_dataset(*, session: Session, actor: User | None, bundle: DatasetBundle, store: Path) -> Dataset:
    """Store a validated dataset: its files under ``store`` and its row in the database.

    ``actor`` must be a curator or admin (``None`` for the CLI and first-start loading). The files go to a
    fresh folder, so a failed registration leaves nothing that any record points to.
    """
    if actor is not None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    if session.exec(select(Dataset).where(Dataset.name == bundle.name)).first() is not None:
        raise DatasetImportError(
            f"A dataset called '{bundle.name}' is already registered; choose another name."
        )
    folder_name = f"{bundle.name}-{uuid.uuid4().hex[:8]}"
    staged = staging_folder(store) / folder_name
    try:
        write_blade_folder(bundle, staged)
        data_path = staged / "data.csv"
        dataset = Dataset(
            name=bundle.name,
            title=bundle.title or bundle.name,
            research_question=bundle.research_question,
            description=bundle.description,
            dictionary=[f.model_dump(mode="json", exclude_none=True) for f in bundle.fields],
            info=json.loads(dump_info_json(bundle.info)),  # lossless: nulls and key order kept
            data_relpath=f"{folder_name}/data.csv",
            data_sha256=_sha256(data_path),
            num_rows=bundle.num_rows,
            num_columns=bundle.num_columns,
            source=bundle.source,
            created_by_id=actor.id if actor is not None else None,
        )
        session.add(dataset)
        session.flush()
    except BaseException:
        _discard_staged(staged)
        raise
    _move_in_on_commit(session, staged, store / folder_name)
    log.info("registered dataset %s (%s rows)", bundle.name, bundle.num_rows)
    return dataset


@judges_actor
def register_folder_dataset(*, session: Session, actor: User | None, bundle: FolderBundle, store: Path) -> Dataset:
    """Store a dataset of several files (a DiscoveryBench folder): every file under one fresh folder of
    ``store``, each listed with its SHA-256 in ``Dataset.files``; ``data_relpath`` is the main table.

    Curators and admins (``actor`` ``None``: the CLI's operator). As :func:`register_dataset`, the files are
    removed again when the transaction does not commit.

    Raises:
        DatasetImportError: the name is taken, or the main table is not among the files.
    """
    if actor is not None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    if session.exec(select(Dataset).where(Dataset.name == bundle.name)).first() is not None:
        raise DatasetImportError(f"A dataset called '{bundle.name}' is already registered; choose another name.")
    if bundle.main_file not in {f.name for f in bundle.files}:
        raise DatasetImportError(f"The dataset '{bundle.name}' has no file {bundle.main_file!r} to use as its table.")
    dataset = Dataset(name=bundle.name, title="", research_question="", data_relpath="", data_sha256="",
                      num_rows=0, num_columns=0, info={}, created_by_id=actor.id if actor is not None else None)
    _store_folder(session, dataset, bundle, store)
    log.info("registered dataset %s (%d files)", bundle.name, len(bundle.files))
    return dataset


def _store_folder(session: Session, dataset: Dataset, bundle: FolderBundle, store: Path) -> None:
    """Stage the bundle's files in a fresh folder, point ``dataset`` at them and flush; the folder moves into the
    store at the commit (and the folder the row pointed at before, if any, is removed then)."""
    if bundle.main_file not in {f.name for f in bundle.files}:
        raise DatasetImportError(f"The dataset '{bundle.name}' has no file {bundle.main_file!r} to use as its table.")
    retired = store / dataset.data_relpath.split("/", 1)[0] if dataset.data_relpath else None
    folder_name = f"{bundle.name[:64]}-{uuid.uuid4().hex[:8]}"
    staged = staging_folder(store) / folder_name
    try:
        copy_folder_files(bundle, staged)
        files = []
        for file in bundle.files:
            files.append({
                "name": file.name, "relpath": f"{folder_name}/{file.name}", "sha256": _sha256(staged / file.name),
                "size": file.size, "format": file.format, "role": file.role,
                **({"columns": list(file.columns)} if file.columns is not None else {}),
                **({"encoding": file.encoding} if file.encoding else {}),
            })
        main = next(f for f in files if f["name"] == bundle.main_file)
        dataset.title = bundle.title or bundle.name
        dataset.research_question = bundle.research_question
        dataset.description = bundle.description
        dataset.dictionary = list(bundle.dictionary)
        dataset.data_relpath = str(main["relpath"])
        dataset.data_sha256 = str(main["sha256"])
        dataset.num_rows = bundle.num_rows
        dataset.num_columns = bundle.num_columns
        dataset.source = bundle.source
        dataset.extra = dict(bundle.extra)
        dataset.files = files
        session.add(dataset)
        session.flush()
    except BaseException:
        _discard_staged(staged)
        raise
    _move_in_on_commit(session, staged, store / folder_name, retired=retired)


@judges_actor
def replace_folder_dataset(*, session: Session, actor: User | None, dataset: Dataset, bundle: FolderBundle,
                           store: Path) -> Dataset:
    """Give a registered folder dataset new files and metadata, keeping its row (id, name, assignments).

    The caller has checked that no work rests on the old content. The new files are staged and moved in at the
    commit, and the old folder is removed then; a rollback leaves the old row and files as they were.

    Raises:
        DatasetImportError: the main table is not among the files.
    """
    if actor is not None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    _store_folder(session, dataset, bundle, store)
    log.info("replaced the files of dataset %s (%d files)", dataset.name, len(bundle.files))
    return dataset


_NEW_FOLDERS = "forkpaths.new_dataset_folders"


def _discard_staged(staged: Path) -> None:
    shutil.rmtree(staged, ignore_errors=True)
    for parent in (staged.parent, staged.parent.parent):  # this process's folder, then the staging root
        try:
            parent.rmdir()
        except OSError:
            break  # not empty (another import of this process, or of another one) or already gone


def _move_in_on_commit(session: Session, staged: Path, dest: Path, *, retired: Path | None = None) -> None:
    """Move ``staged`` to ``dest`` once the session's transaction commits; delete it when it does not.

    The files of a dataset are written to the staging area (:mod:`curation.dataset_staging`) before the
    transaction that records it commits, and only moved into the store after the commit. When that transaction
    rolls back (a later dataset of the same import fails, a later step of the caller raises, the commit
    itself fails), the staged files are removed; when the process is killed, the next start sweeps them
    (:func:`curation.dataset_staging.sweep_staging`), so the store holds only files a record points at.
    SQLAlchemy's session events tell commit from rollback, whoever ends the transaction.
    """
    pending: list[tuple[Path, Path, Path | None]] | None = session.info.get(_NEW_FOLDERS)
    if pending is None:
        pending = session.info[_NEW_FOLDERS] = []

        @event.listens_for(session, "after_commit")
        def _keep(_session: Session) -> None:
            for source, target, old in pending:
                target.parent.mkdir(parents=True, exist_ok=True)
                source.rename(target)
                _discard_staged(source)  # the now empty folders above it
                if old is not None:  # the files a replaced dataset pointed at before
                    shutil.rmtree(old, ignore_errors=True)
            pending.clear()

        @event.listens_for(session, "after_transaction_end")
        def _discard(_session: Session, transaction: SessionTransaction) -> None:
            if transaction.parent is not None:  # a savepoint or subtransaction: the outer one decides
                return
            for source, _target, _old in pending:
                log.info("removing %s: the transaction that registered it did not commit", source)
                _discard_staged(source)
            pending.clear()

    pending.append((staged, dest, retired))


def is_assigned(*, session: Session, user_id: int, dataset_id: int) -> bool:
    return session.get(DatasetAssignment, (dataset_id, user_id)) is not None


def assigned_user_ids(*, session: Session, dataset_id: int) -> list[int]:
    rows = session.exec(select(DatasetAssignment).where(DatasetAssignment.dataset_id == dataset_id)).all()
    return [r.user_id for r in rows]


@judges_actor
def list_datasets(
    *, session: Session, actor: User, only_assigned: bool = False, include_archived: bool = False
) -> Sequence[Dataset]:
    """Curators and admins see every dataset; analysts see those they are assigned to.

    Archived datasets are left out unless ``include_archived`` (curators and admins only: the registry).
    """
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    stmt = select(Dataset).order_by(Dataset.name)
    if include_archived:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    else:
        stmt = stmt.where(col(Dataset.archived_at).is_(None))
    if only_assigned or actor.role == Role.ANALYST.value:
        stmt = stmt.join(DatasetAssignment, col(DatasetAssignment.dataset_id) == col(Dataset.id)).where(
            DatasetAssignment.user_id == actor.id
        )
    return session.exec(stmt).all()


def _dataset_named(session: Session, name: str) -> Dataset:
    dataset = session.exec(select(Dataset).where(Dataset.name == name)).first()
    if dataset is None:
        known = ", ".join(session.exec(select(Dataset.name).order_by(Dataset.name)).all()) or "none"
        raise NotFoundError(f"There is no dataset called '{name}' (registered: {known}).")
    return dataset


@judges_actor
def archive_dataset(*, session: Session, actor: User, name: str) -> Dataset:
    """Archive a dataset (curators and admins): its files, decisions and votes are kept, but it is hidden from
    annotation and left out of new releases until it is restored. Releases already cut keep it."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = _dataset_named(session, name)
    if dataset.archived_at is not None:
        raise DatasetImportError(f"The dataset '{name}' is already archived (since {dataset.archived_at:%Y-%m-%d}).")
    dataset.archived_at = utcnow()
    dataset.archived_by_id = actor.id
    session.add(dataset)
    session.flush()
    log.info("dataset %s archived by %s", name, actor.username)
    return dataset


@judges_actor
def restore_dataset(*, session: Session, actor: User, name: str) -> Dataset:
    """Undo :func:`archive_dataset`: the dataset is annotated and released again, with everything it had."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = _dataset_named(session, name)
    if dataset.archived_at is None:
        raise DatasetImportError(f"The dataset '{name}' is not archived; there is nothing to restore.")
    dataset.archived_at = None
    dataset.archived_by_id = None
    session.add(dataset)
    session.flush()
    log.info("dataset %s restored by %s", name, actor.username)
    return dataset


@judges_actor
def get_dataset(*, session: Session, actor: User, dataset_id: int) -> Dataset:
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    if actor.role == Role.ANALYST.value and not is_assigned(
        session=session, user_id=actor.id or 0, dataset_id=dataset_id
    ):
        raise PermissionDenied(f"You are not assigned to the dataset '{dataset.name}'.")
    return dataset


@judges_actor
def assign_analysts(
    *, session: Session, actor: User, dataset_id: int, user_ids: Sequence[int]
) -> list[int]:
    """Set exactly which users are assigned to a dataset (admin only). Returns the new list."""
    require_role(actor, Role.ADMIN)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    wanted = set(user_ids)
    current = {
        a.user_id: a
        for a in session.exec(select(DatasetAssignment).where(DatasetAssignment.dataset_id == dataset_id))
    }
    for uid in wanted:
        user = session.get(User, uid)
        if user is None or user.is_system:
            raise NotFoundError(f"There is no user with id {uid} to assign.")
        if uid not in current and user.role not in ANNOTATING_ROLES:
            raise PermissionDenied(
                f"'{user.username}' is an {user.role}: evaluators score agents and do not annotate, so they cannot "
                f"be assigned to '{dataset.name}'. Assign analysts, curators or admins, or change their role first.")
    for uid, row in current.items():
        if uid not in wanted:
            session.delete(row)
    for uid in wanted - current.keys():
        session.add(DatasetAssignment(dataset_id=dataset_id, user_id=uid, assigned_by_id=actor.id))
    session.flush()
    return sorted(wanted)


def stored_file(*, session: OrmSession | None, store: Path, relpath: str) -> Path:
    """Where the file ``relpath`` of the dataset store is for this session: in the store, or, while the
    transaction that registered its dataset has not committed yet, where it is staged (its files move into the
    store at the commit, :func:`_move_in_on_commit`)."""
    path = store / relpath
    pending = session.info.get(_NEW_FOLDERS) if session is not None else None
    for source, target, _old in pending or ():
        if path.is_relative_to(target):
            return source / path.relative_to(target)
    return path


def dataset_data_path(dataset: Dataset, store: Path) -> Path:
    path = stored_file(session=Session.object_session(dataset), store=store, relpath=dataset.data_relpath)
    if not path.is_file():
        raise DatasetImportError(
            f"The data file of dataset '{dataset.name}' is missing at {path}; "
            "check FORKPATHS_DATA_DIR points at the folder the dataset was registered in."
        )
    return path


def load_frame(dataset: Dataset, store: Path, *, nrows: int | None = None) -> pd.DataFrame:
    """Read the dataset's table the way BLADE does (``pd.read_csv`` defaults).

    A dataset of several files (``Dataset.files``) reads its main table in its own format: a Stata ``.dta``
    file with :func:`pandas.read_stata`, a CSV in the encoding it was imported in (DiscoveryBench ships cp1252).
    """
    path = dataset_data_path(dataset, store)
    main = next((f for f in dataset.files or [] if f.get("relpath") == dataset.data_relpath), None)
    if main is not None and main.get("format") == "stata":
        frame = pd.read_stata(path)
        return frame.head(nrows) if nrows is not None else frame
    encoding = str(main.get("encoding") or "utf-8") if main is not None else None
    return pd.read_csv(path, nrows=nrows, encoding=encoding)


def original_columns(dataset: Dataset) -> list[str]:
    return [str(f.get("column")) for f in dataset.dictionary]


def column_descriptions(dataset: Dataset) -> Mapping[str, str]:
    return {str(f.get("column")): str(f.get("properties", {}).get("description", "")) for f in dataset.dictionary}


def csv_columns(csv_bytes: bytes, *, filename: str = "the uploaded CSV") -> list[str]:
    """The columns of an uploaded CSV, so the form can ask for one description per column.

    The whole file is parsed the way registration parses it, so a broken file is refused here with the same
    message (line, byte, field counts) before the curator types anything.

    Raises:
        DatasetImportError: the CSV is empty, not UTF-8, ragged or otherwise not CSV (see ``parse_csv``).
    """
    return [str(c) for c in parse_csv(csv_bytes, label=filename).columns]
