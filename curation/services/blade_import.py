"""Import BLADE dataset folders with their ground truth: datasets, conceptual variables, transforms with
branches, models, the reviewed LLM alternatives (their judgements become votes of the clearly labelled
imported annotator) and the MCQs. A dataset imported with votes arrives with its review closed, where BLADE's
review ended. Every folder is read and checked before anything is stored, and the whole
import is one transaction: a failed import stores nothing."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from curation.dataset_files import (
    INFO_FILENAME,
    bundle_from_upload,
    collect_blade_upload,
    read_blade_folder,
    slugify,
)
from curation.errors import DatasetImportError
from curation.models import Alternative as AlternativeRow
from curation.models import (
    ConceptualVariable,
    Dataset,
    DatasetReview,
    Role,
    Stage,
    StatModel,
    Transform,
    User,
    utcnow,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.datasets import register_dataset
from curation.services.release_data import imported_annotator, store_dataset_release
from exports.blade_convert import BLADE_ANNOTATOR, release_dataset_from_blade
from exports.blade_info import dump_info_json
from exports.blade_layout import find_blade_datasets, read_blade_dataset
from exports.errors import FormatError
from exports.jsontext import load_json
from exports.mcq_part import MCQPart
from exports.schema import DatasetRelease

__all__ = ["ImportReport", "UploadOutcome", "import_blade", "register_blade_upload"]


@dataclass
class ImportReport:
    dataset: str
    variables: int
    transforms: int
    models: int
    alternatives: int
    votes: int
    mcqs: int


def _read(folder: Path, max_bytes: int) -> tuple[DatasetRelease, object]:
    try:
        blade = read_blade_dataset(folder)
    except FormatError as exc:
        raise DatasetImportError(str(exc)) from exc
    bundle = read_blade_folder(folder, max_bytes=max_bytes, source="blade_import")
    # Both files were validated above by the one JSON reader (a BOM, depth, syntax); reuse what it read.
    mcq_raw = load_json((folder / "mcq_dataset.json").read_bytes(), label="mcq_dataset.json") if blade.mcqs else None
    ds = release_dataset_from_blade(
        name=bundle.name, title=bundle.title, info=json.loads(dump_info_json(blade.info)),
        dictionary=[f.model_dump(mode="json", exclude_none=True) for f in bundle.fields],
        data_file=f"data/{bundle.name}/data.csv", data_sha256="", num_rows=bundle.num_rows,
        num_columns=bundle.num_columns, rows=blade.annotations.rows if blade.annotations else [], mcqs=mcq_raw,
        extra_columns=list(blade.annotations.extra_columns) if blade.annotations else [],
    )
    return ds, bundle


def _clashing_ids(session: Session, ds: DatasetRelease) -> list[str]:
    checks: list[tuple[Any, list[str]]] = [(Transform, [t.id for t in ds.transforms]), (ConceptualVariable, [v.id for v in ds.variables]),
              (StatModel, [m.id for m in ds.models]), (AlternativeRow, [a.id for a in ds.alternatives])]
    found: list[str] = []
    for model, ids in checks:
        if ids:
            id_column = col(model.id)
            found += list(session.exec(select(id_column).where(id_column.in_(ids))).all())
    return found


@judges_actor
def import_blade(*, session: Session, actor: User | None, path: Path, store: Path, max_bytes: int) -> list[ImportReport]:
    """Import one BLADE dataset folder, or every dataset folder inside ``path`` (curators and admins)."""
    if actor is not None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    path = Path(path)
    if not path.exists():
        raise DatasetImportError(f"{path} does not exist.")
    folders = find_blade_datasets(path)
    if not folders:
        raise DatasetImportError(f"{path} holds no BLADE dataset (a folder with info.json and data.csv).")
    parsed = [_read(folder, max_bytes) for folder in folders]  # everything is checked before anything is stored
    names = [ds.name for ds, _ in parsed]
    taken = session.exec(select(Dataset.name).where(col(Dataset.name).in_(names))).all()
    if taken:
        raise DatasetImportError(f"Already registered: {', '.join(sorted(taken))}; nothing was imported.")
    owner = imported_annotator(session=session)
    reports = []
    for ds, bundle in parsed:
        clash = _clashing_ids(session, ds)
        if clash:
            raise DatasetImportError(
                f"{ds.name}: spec ids {clash[:3]} already exist in this database (was this BLADE dataset imported "
                "under another name?); nothing was imported.")
        dataset = register_dataset(session=session, actor=actor, bundle=bundle, store=store)  # type: ignore[arg-type]
        ds.data_sha256 = dataset.data_sha256
        store_dataset_release(session=session, dataset=dataset, ds=ds, owners={BLADE_ANNOTATOR.id: owner})
        if ds.votes:
            _arrive_reviewed(session, dataset, actor)
        reports.append(ImportReport(ds.name, len(ds.variables), len(ds.transforms), len(ds.models),
                                    len(ds.alternatives), len(ds.votes), len(MCQPart.of(ds).items)))
    return reports


def _arrive_reviewed(session: Session, dataset: Dataset, actor: User | None) -> None:
    """A dataset imported with reviewed alternatives and their votes stands where BLADE's review ended: stage 2
    closed. Agreement, rule changes, MCQs and the consensus meeting work on it at once; a curator who wants
    more votes re-opens stage 2 as for any closed review."""
    now = utcnow()
    who = actor.id if actor is not None else None
    session.add(DatasetReview(dataset_id=dataset.id or 0, stage=Stage.CLOSED.value, opened_at=now, opened_by_id=who,
                              closed_at=now, closed_by_id=who, updated_at=now))
    session.flush()


@dataclass
class UploadOutcome:
    """What an upload on the Datasets page stored.

    Attributes:
        dataset: the registered dataset.
        imported: the ground truth imported with it (``None`` when only the data was registered).
        left_out: ground-truth files the upload held that were not imported (the curator chose so).
        typed_name: the name as typed, when it differs from the dataset's stored name.
    """

    dataset: Dataset
    imported: ImportReport | None = None
    left_out: list[str] = field(default_factory=list)
    typed_name: str | None = None


@judges_actor
def register_blade_upload(
    *,
    session: Session,
    actor: User,
    files: Mapping[str, bytes] | Sequence[tuple[str, bytes]],
    name: str | None,
    store: Path,
    max_bytes: int,
    import_ground_truth: bool,
) -> UploadOutcome:
    """Register an uploaded BLADE dataset (loose files or one zip) and, if asked, import its ground truth.

    With ``import_ground_truth`` and an upload holding ``annotations.csv`` or ``mcq_dataset.json``, the
    upload goes through :func:`import_blade` exactly as ``forkpaths import-blade`` would take the folder
    (everything checked first, one transaction); otherwise only ``info.json`` + ``data.csv`` are registered
    and the outcome lists the ground-truth files left out. Curators and admins only.

    Raises:
        DatasetImportError: see :func:`curation.dataset_files.collect_blade_upload` and :func:`import_blade`;
            messages name the uploaded files, never the temporary folder they were checked in.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    upload = collect_blade_upload(files, max_bytes=max_bytes, name=name)
    slug = slugify(upload.name)
    typed = upload.name.strip() if upload.name.strip() != slug else None
    if not (import_ground_truth and upload.ground_truth):
        dataset = register_dataset(session=session, actor=actor, bundle=bundle_from_upload(upload), store=store)
        return UploadOutcome(dataset, None, upload.ground_truth, typed)
    with tempfile.TemporaryDirectory(prefix="forkpaths-upload-") as tmp:
        folder = Path(tmp) / slug
        folder.mkdir()
        for filename, content in upload.files.items():
            (folder / filename).write_bytes(content)
        try:
            [report] = import_blade(session=session, actor=actor, path=folder, store=store, max_bytes=max_bytes)
        except DatasetImportError as exc:
            prefix = upload.labels[INFO_FILENAME].removesuffix(INFO_FILENAME)  # "up.zip:affairs/", "up.zip:", ""
            raise DatasetImportError(
                str(exc).replace(f"{folder}/", prefix).replace(str(folder), upload.where)
            ) from exc
    dataset = session.exec(select(Dataset).where(Dataset.name == report.dataset)).one()
    dataset.title = upload.name.strip()  # the folder was named by the slug; keep the name as typed
    session.add(dataset)
    session.flush()
    return UploadOutcome(dataset, report, [], typed)
