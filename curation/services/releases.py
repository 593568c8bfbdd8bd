"""Benchmark releases: cut (immutable, versioned, with checksums and a changelog), list, diff, export."""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path

from sqlmodel import Session, select

from curation.errors import NotFoundError, ReleaseError
from curation.models import Dataset, ReleaseRecord, Role, User, utcnow
from curation.services.accounts import require_role
from curation.services.release_data import dataset_release
from exports.blade_export import write_blade_release
from exports.changelog import ReleaseDiff, diff_releases
from exports.errors import FormatError
from exports.native import read_release, write_release
from exports.schema import FORMAT_VERSION, Release

__all__ = [
    "SEMVER",
    "app_version",
    "cut_release",
    "diff_release_versions",
    "export_release",
    "get_release",
    "list_release_records",
    "next_version",
    "release_archive",
    "load_release",
    "release_dir",
]

log = logging.getLogger(__name__)
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
Progress = Callable[[str, float], None]


def app_version() -> str:
    try:
        return package_version("forkpaths")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


def _semver_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def list_release_records(*, session: Session, actor: User) -> list[ReleaseRecord]:
    """Every cut release, newest version first."""
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    rows = session.exec(select(ReleaseRecord)).all()
    return sorted(rows, key=lambda r: _semver_key(r.version), reverse=True)


def get_release(*, session: Session, version: str) -> ReleaseRecord:
    row = session.exec(select(ReleaseRecord).where(ReleaseRecord.version == version)).first()
    if row is None:
        known = ", ".join(r.version for r in session.exec(select(ReleaseRecord)).all()) or "none yet"
        raise NotFoundError(f"There is no release {version} (releases: {known}).")
    return row


def release_dir(record: ReleaseRecord, releases_root: Path) -> Path:
    return releases_root / record.path


def load_release(record: ReleaseRecord, releases_root: Path) -> Release:
    """Read a cut release, checking every file against its manifest first (a tampered release is refused)."""
    try:
        return read_release(release_dir(record, releases_root))
    except FormatError as exc:
        raise ReleaseError(f"Release {record.version} cannot be used: {exc}") from exc


def _licence_and_attribution(datasets: Sequence[Dataset]) -> tuple[str, str]:
    blade = any(d.extra.get("blade") for d in datasets)
    licence = ("Decisions, votes and MCQs: as set by the curators of this release. Data tables keep the licence "
               "of their source (see each dataset's description).")
    attribution = ""
    if blade:
        attribution = ('Includes BLADE ground truth: Gu et al., "BLADE: Benchmarking Language Model Agents for '
                       'Data-Driven Science", EMNLP 2024 Findings; data under ODC-By 1.0.')
    return licence, attribution


def cut_release(
    *,
    session: Session,
    actor: User,
    version: str,
    notes: str,
    releases_root: Path,
    store: Path,
    dataset_names: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> ReleaseRecord:
    """Cut release ``version`` of the chosen datasets (all by default): curators and admins only.

    The files are written to a temporary folder and renamed into place when complete; if recording the
    release then fails, the files are removed again, so a release exists exactly when its record does.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    version = version.strip()
    if not SEMVER.match(version):
        raise ReleaseError(f"'{version}' is not a semantic version; use MAJOR.MINOR.PATCH such as 1.0.0.")
    records = session.exec(select(ReleaseRecord)).all()
    if any(r.version == version for r in records):
        raise ReleaseError(f"Release {version} already exists; releases never change. Choose a new version.")
    newer = [r.version for r in records if _semver_key(r.version) >= _semver_key(version)]
    if newer:
        raise ReleaseError(f"Version {version} must be higher than the latest release ({max(newer, key=_semver_key)}).")
    datasets = list(session.exec(select(Dataset).order_by(Dataset.name)).all())
    if dataset_names is not None:
        unknown = sorted(set(dataset_names) - {d.name for d in datasets})
        if unknown:
            raise NotFoundError(f"No dataset called {', '.join(unknown)}.")
        datasets = [d for d in datasets if d.name in set(dataset_names)]
    if not datasets:
        raise ReleaseError("There is nothing to release: no datasets are registered.")
    previous_record = max(records, key=lambda r: _semver_key(r.version)) if records else None
    previous = load_release(previous_record, releases_root) if previous_record else None
    licence, attribution = _licence_and_attribution(datasets)
    release = Release(version=version, created_at=utcnow(), app_version=app_version(), notes=notes.strip(),
                      previous_version=previous_record.version if previous_record else None, licence=licence,
                      attribution=attribution, datasets=[dataset_release(session, d) for d in datasets])
    data_files = {d.name: store / d.data_relpath for d in datasets}
    releases_root.mkdir(parents=True, exist_ok=True)
    _set_aside_orphans(releases_root, version)
    try:
        path = write_release(release, data_files, releases_root, previous=previous, progress=progress)
    except FormatError as exc:
        raise ReleaseError(f"Release {version} could not be written: {exc}") from exc
    try:
        record = ReleaseRecord(
            version=version, format_version=FORMAT_VERSION, previous_version=release.previous_version,
            notes=release.notes, created_at=release.created_at, created_by_id=actor.id,
            path=path.relative_to(releases_root).as_posix(),
            manifest_sha256=hashlib.sha256((path / "MANIFEST").read_bytes()).hexdigest(),
            summary={d.name: {"variables": len(d.variables), "transforms": len(d.transforms), "models": len(d.models),
                              "alternatives": len(d.alternatives), "votes": len(d.votes), "mcqs": len(d.mcqs)}
                     for d in release.datasets},
        )
        session.add(record)
        session.flush()
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        path.with_suffix(".zip").unlink(missing_ok=True)
        (releases_root / f"{version}.zip").unlink(missing_ok=True)
        raise
    return record


def _set_aside_orphans(releases_root: Path, version: str) -> None:
    """Files of a release whose recording transaction failed have no record: a release exists exactly when
    its record does, so such files are moved aside (kept, never deleted) before the version is cut again."""
    stamp = utcnow().strftime("%Y%m%dT%H%M%S")
    for path in (releases_root / version, releases_root / f"{version}.zip"):
        if path.exists():
            target = releases_root / f".orphan-{stamp}-{path.name}"
            path.rename(target)
            log.warning("release files %s had no record (a failed cut); moved to %s", path, target)


def diff_release_versions(*, session: Session, actor: User, old: str, new: str, releases_root: Path) -> ReleaseDiff:
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    a = load_release(get_release(session=session, version=old), releases_root)
    b = load_release(get_release(session=session, version=new), releases_root)
    return diff_releases(a, b)


def export_release(*, session: Session, actor: User, version: str, fmt: str, out: Path, releases_root: Path) -> Path:
    """Write release ``version`` to ``out``: ``native`` (the verified folder and its zip) or ``blade`` layout."""
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    record = get_release(session=session, version=version)
    release = load_release(record, releases_root)  # verifies every file first
    source = release_dir(record, releases_root)
    if fmt == "native":
        dest = out / version
        if dest.exists():
            raise ReleaseError(f"{dest} already exists; choose another --out.")
        shutil.copytree(source, dest)
        zip_path = releases_root / f"{version}.zip"
        if zip_path.exists():
            shutil.copy2(zip_path, out / f"{version}.zip")
        return dest
    if fmt == "blade":
        dest = out / f"{version}-blade"
        if dest.exists():
            raise ReleaseError(f"{dest} already exists; choose another --out.")
        try:
            write_blade_release(release, source, dest)
        except FormatError as exc:
            raise ReleaseError(f"Release {version} could not be written in BLADE's layout: {exc}") from exc
        return dest
    raise ReleaseError(f"Unknown export format '{fmt}'; use native or blade.")


def release_archive(*, session: Session, actor: User, version: str, fmt: str, releases_root: Path) -> tuple[str, bytes]:
    """A downloadable zip of release ``version``: the native zip as cut, or BLADE's layout built from it."""
    import io
    import tempfile
    import zipfile

    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    record = get_release(session=session, version=version)
    if fmt == "native":
        load_release(record, releases_root)  # refuse a tampered release before handing it out
        return f"forkpaths-{version}.zip", (releases_root / f"{version}.zip").read_bytes()
    with tempfile.TemporaryDirectory(prefix="forkpaths-blade-") as tmp:
        folder = export_release(session=session, actor=actor, version=version, fmt="blade", out=Path(tmp),
                                releases_root=releases_root)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for file in sorted(folder.rglob("*")):
                if file.is_file():
                    zf.write(file, file.relative_to(folder.parent).as_posix())
        return f"forkpaths-{version}-blade.zip", buffer.getvalue()


def next_version(records: Sequence[ReleaseRecord]) -> str:
    """The next patch version after the latest release (1.0.0 for the first)."""
    if not records:
        return "1.0.0"
    major, minor, patch = _semver_key(max((r.version for r in records), key=_semver_key))
    return f"{major}.{minor}.{patch + 1}"
