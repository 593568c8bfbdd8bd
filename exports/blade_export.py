"""Write a release (or one of its datasets) in BLADE's layout: info.json, data.csv, annotations.csv,
mcq_dataset.json per dataset folder."""

from __future__ import annotations

import json
from pathlib import Path

from exports.blade_annotations import BladeAnnotations, BladeRow
from exports.blade_convert import blade_mcqs_from_release, blade_rows_from_release
from exports.blade_info import parse_info_json
from exports.blade_layout import write_blade_folder
from exports.blade_mcq import parse_mcqs
from exports.schema import DatasetRelease, Release

__all__ = ["blade_annotations_of", "write_blade_dataset_from_release", "write_blade_release"]


def blade_annotations_of(ds: DatasetRelease) -> BladeAnnotations:
    """The dataset's ground truth as BLADE's ``annotations.csv`` rows."""
    rows = [BladeRow(spec_id=sid, kind=kind, data=data) for sid, kind, data in blade_rows_from_release(ds)]  # type: ignore[arg-type]
    return BladeAnnotations(label=f"{ds.name}/annotations.csv", rows=rows)


def write_blade_dataset_from_release(ds: DatasetRelease, data_csv: Path, dest: Path) -> Path:
    """One dataset folder in BLADE's layout at ``dest`` (written atomically)."""
    info = parse_info_json(json.dumps(ds.info, ensure_ascii=False), label=f"{ds.name}/info.json")
    annotations = blade_annotations_of(ds) if (ds.transforms or ds.variables or ds.models or ds.alternatives) else None
    mcq_doc = blade_mcqs_from_release(ds)
    mcqs = parse_mcqs(json.dumps(mcq_doc), label=f"{ds.name}/mcq_dataset.json") if mcq_doc is not None else None
    return write_blade_folder(dest, info=info, data_csv=data_csv, annotations=annotations, mcqs=mcqs)


def write_blade_release(release: Release, release_dir: Path, out: Path) -> list[Path]:
    """Every dataset of an (unpacked, verified) release as BLADE folders under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    return [write_blade_dataset_from_release(ds, release_dir / ds.data_file, out / ds.name) for ds in release.datasets]
