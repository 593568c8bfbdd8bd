"""Build a release dataset from a shared BLADE folder (tests only; the data itself is never copied)."""

from __future__ import annotations

import json
from pathlib import Path

from exports.blade_convert import release_dataset_from_blade
from exports.blade_layout import read_blade_dataset
from exports.schema import DatasetRelease


def blade_release_dataset(folder: Path) -> DatasetRelease:
    blade = read_blade_dataset(folder)
    info = json.loads((folder / "info.json").read_text(encoding="utf-8"))
    mcq_path = folder / "mcq_dataset.json"
    mcqs = json.loads(mcq_path.read_text(encoding="utf-8")) if mcq_path.exists() else None
    return release_dataset_from_blade(
        name=folder.name, info=info, dictionary=[], data_file=f"data/{folder.name}/data.csv", data_sha256="",
        num_rows=blade.data_rows, num_columns=len(blade.data_columns),
        rows=blade.annotations.rows if blade.annotations else [], mcqs=mcqs)
