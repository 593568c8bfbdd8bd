"""Where ground truth comes from: a release dataset and its data file, read through :mod:`exports` only."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from exports.blade_convert import release_dataset_from_blade
from exports.blade_layout import read_blade_dataset
from exports.manifest import sha256_file
from exports.native import read_release, release_data_path
from exports.schema import DatasetRelease, Release

__all__ = ["DatasetSource", "sources_from_blade_folders", "sources_from_release"]


@dataclass(frozen=True)
class DatasetSource:
    dataset: DatasetRelease
    data_path: Path
    release_version: str = ""


def sources_from_release(path: Path, *, datasets: list[str] | None = None,
                         release: Release | None = None) -> tuple[Release, list[DatasetSource]]:
    """Read (and verify) a release folder; return its datasets with ground truth and their data files.

    ``release`` is the release at ``path`` when the caller has read and verified it already (a recorded release,
    checked against the hashes recorded at its cut): it is not read a second time.

    Raises:
        exports.errors.FormatError / ReleaseIntegrityError: no readable, intact release at ``path``; or a
            requested dataset is not in it (the message lists what it has).
    """
    from exports.errors import FormatError

    release = read_release(path) if release is None else release
    by_name = {ds.name: ds for ds in release.datasets}
    wanted = datasets or [ds.name for ds in release.datasets if ds.transforms]
    unknown = [name for name in wanted if name not in by_name]
    if unknown:
        raise FormatError(f"release {release.version}: no dataset {', '.join(map(repr, unknown))} "
                          f"(it has: {', '.join(sorted(by_name)) or 'none'})")
    return release, [DatasetSource(by_name[n], release_data_path(path, by_name[n]), release.version) for n in wanted]


def sources_from_blade_folders(folders: list[Path]) -> list[DatasetSource]:
    """BLADE dataset folders as release datasets, through exports' own BLADE reader and converter (no DB)."""
    out = []
    for folder in folders:
        blade = read_blade_dataset(folder)
        ds = release_dataset_from_blade(
            name=blade.name, info=json.loads((folder / "info.json").read_text(encoding="utf-8")), dictionary=[],
            data_file=f"data/{blade.name}/data.csv", data_sha256=sha256_file(blade.data_path),
            num_rows=blade.data_rows, num_columns=len(blade.data_columns),
            rows=blade.annotations.rows if blade.annotations else [], mcqs=None,
            extra_columns=list(blade.annotations.extra_columns) if blade.annotations else [])
        out.append(DatasetSource(ds, blade.data_path))
    return out
