"""Import BLADE dataset folders with their ground truth: datasets, conceptual variables, transforms with
branches, models, the reviewed LLM alternatives (their judgements become votes of the clearly labelled
imported annotator) and the MCQs. Every folder is read and checked before anything is stored, and the whole
import is one transaction: a failed import stores nothing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from curation.dataset_files import read_blade_folder
from curation.errors import DatasetImportError
from curation.models import Alternative as AlternativeRow
from curation.models import ConceptualVariable, Dataset, Role, StatModel, Transform, User
from curation.services.accounts import require_role
from curation.services.datasets import register_dataset
from curation.services.release_data import imported_annotator, store_dataset_release
from exports.blade_convert import BLADE_ANNOTATOR, release_dataset_from_blade
from exports.blade_layout import find_blade_datasets, read_blade_dataset
from exports.errors import FormatError
from exports.schema import DatasetRelease

__all__ = ["ImportReport", "import_blade"]


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
    mcq_raw = json.loads((folder / "mcq_dataset.json").read_text(encoding="utf-8")) if blade.mcqs else None
    ds = release_dataset_from_blade(
        name=bundle.name, title=bundle.title, info=json.loads((folder / "info.json").read_text(encoding="utf-8")),
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
    owner = imported_annotator(session)
    reports = []
    for ds, bundle in parsed:
        clash = _clashing_ids(session, ds)
        if clash:
            raise DatasetImportError(
                f"{ds.name}: spec ids {clash[:3]} already exist in this database (was this BLADE dataset imported "
                "under another name?); nothing was imported.")
        dataset = register_dataset(session=session, actor=actor, bundle=bundle, store=store)  # type: ignore[arg-type]
        ds.data_sha256 = dataset.data_sha256
        store_dataset_release(session, dataset, ds, {BLADE_ANNOTATOR.id: owner})
        reports.append(ImportReport(ds.name, len(ds.variables), len(ds.transforms), len(ds.models),
                                    len(ds.alternatives), len(ds.votes), len(ds.mcqs)))
    return reports
