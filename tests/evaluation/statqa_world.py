"""StatQA test data: the shared subset (``../shared/statqa``, skipped with the reason where it is absent) read by
:func:`exports.statqa.read_statqa_folder`, and a release folder holding it the way a cut lays a dataset out
(``data/<dataset>/<file>``, ``DatasetRelease.parts["statqa"]``)."""

from __future__ import annotations

import csv
import hashlib
import shutil
from datetime import UTC, datetime
from pathlib import Path

from exports.schema import DatasetRelease, Release, ReleaseFile
from exports.statqa import StatQAImport, read_statqa_folder
from tests.conftest import PROJECT_ROOT, unavailable

SHARED_STATQA = PROJECT_ROOT.parent / "shared" / "statqa"


def shared_statqa() -> Path:
    if not (SHARED_STATQA / "mini-StatQA.json").is_file():
        unavailable("shared", f"the shared StatQA subset is absent (expected at {SHARED_STATQA})")
    return SHARED_STATQA


def statqa_release(folder: Path, imported: StatQAImport | None = None, *, version: str = "1.0.0") -> Release:
    """A release of every dataset of ``imported`` (default: the shared subset), its files copied into ``folder``."""
    imported = imported or read_statqa_folder(shared_statqa())
    datasets = []
    for d in imported.datasets:
        files = []
        for f in d.files:
            rel = f"data/{d.name}/{f.name}"
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f.source, folder / rel)
            files.append(ReleaseFile(name=f.name, path=rel, sha256=f.sha256, size=f.size, role=f.role,
                                     format=f.format, columns=f.columns))
        data = next(f for f in files if f.name == d.data_file)
        with (folder / data.path).open(encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))
        datasets.append(DatasetRelease(
            name=d.name, title=d.title, research_question=d.research_question, description=d.description,
            data_file=data.path, data_sha256=hashlib.sha256((folder / data.path).read_bytes()).hexdigest(),
            num_rows=len(rows) - 1, num_columns=len(rows[0]), files=files,
            parts={"statqa": d.part.model_dump(mode="json")}))
    return Release(version=version, created_at=datetime(2026, 11, 28, tzinfo=UTC), app_version="test",
                   licence="GPL-3.0", datasets=datasets)
