"""Writing a release: the folder and its zip are built in a hidden sibling, fsynced and renamed into place,
so that a writer killed at any point leaves no release; an existing version is never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import secrets
import shutil
import stat
import zipfile
from collections.abc import Callable, Mapping
from datetime import UTC
from pathlib import Path

from exports.card import render_card
from exports.changelog import diff_releases, render_changelog
from exports.errors import FormatError, ReleaseExistsError
from exports.manifest import MANIFEST_NAME, render_manifest
from exports.native.document import (
    CHANGELOG_NAME,
    README_NAME,
    RELEASE_JSON,
    document_problems,
    dump_release_json,
)
from exports.release_folder import parse_version
from exports.schema import FORMAT_VERSION, Release

__all__ = ["STAGES", "ProgressCallback", "write_release"]

# The package's name, not this module's: ``--verbose`` output says ``exports.native: wrote release ...``.
logger = logging.getLogger("exports.native")

#: The stage names :func:`write_release` reports, in order.
STAGES: tuple[str, ...] = (
    "checking",
    "writing release.json",
    "copying data",
    "writing README.md",
    "writing CHANGELOG.md",
    "manifest",
    "zip",
    "publishing",
    "done",
)

#: ``progress(stage, fraction)``: ``stage`` is one of :data:`STAGES`, ``fraction`` of the whole write in [0, 1].
ProgressCallback = Callable[[str, float], None]

_CHUNK = 1 << 20


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(path: Path) -> None:
    if os.name != "posix":  # pragma: no cover - directories cannot be opened for fsync elsewhere
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_new(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("xb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())


def _copy_hashing(src: Path, dst: Path, on_bytes: Callable[[int], None]) -> str:
    digest = hashlib.sha256()
    dst.parent.mkdir(parents=True, exist_ok=True)
    with src.open("rb") as inp, dst.open("xb") as out:
        while chunk := inp.read(_CHUNK):
            digest.update(chunk)
            out.write(chunk)
            on_bytes(len(chunk))
        out.flush()
        os.fsync(out.fileno())
    return digest.hexdigest()


def _zip_date(release: Release) -> tuple[int, int, int, int, int, int]:
    # A fixed timestamp per release makes the zip's bytes depend on its content only.
    moment = release.created_at
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    stamp = (moment.year, moment.month, moment.day, moment.hour, moment.minute, moment.second)
    return stamp if moment.year >= 1980 else (1980, 1, 1, 0, 0, 0)


def _write_zip(
    source_dir: Path,
    root: str,
    dest: Path,
    date: tuple[int, int, int, int, int, int],
    on_file: Callable[[float], None],
) -> None:
    files = sorted(p.relative_to(source_dir).as_posix() for p in source_dir.rglob("*") if p.is_file())
    with dest.open("xb") as raw:
        with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for index, rel in enumerate(files, start=1):
                info = zipfile.ZipInfo(f"{root}/{rel}", date_time=date)
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = (stat.S_IFREG | 0o644) << 16
                size = (source_dir / rel).stat().st_size
                with (
                    (source_dir / rel).open("rb") as inp,
                    archive.open(info, "w", force_zip64=size > 1 << 30) as out,
                ):
                    shutil.copyfileobj(inp, out, _CHUNK)
                on_file(index / len(files))
        raw.flush()
        os.fsync(raw.fileno())


def _refuse_existing(dest_root: Path, version: str) -> None:
    for target in (dest_root / version, dest_root / f"{version}.zip"):
        if os.path.lexists(target):
            raise ReleaseExistsError(
                f"release {version} already exists at {target}; releases never change. "
                "Cut a new version instead."
            )


def _publish_file(tmp: Path, final: Path, version: str) -> None:
    """Move ``tmp`` to ``final`` atomically, refusing to replace an existing file."""
    try:
        os.link(tmp, final)  # fails with EEXIST instead of replacing, unlike rename
    except FileExistsError as exc:
        raise ReleaseExistsError(f"release {version}: {final} already exists; releases never change") from exc
    except OSError:  # a file system without hard links
        if os.path.lexists(final):
            raise ReleaseExistsError(
                f"release {version}: {final} already exists; releases never change"
            ) from None
        os.rename(tmp, final)
        return
    os.unlink(tmp)


def _check_inputs(release: Release, data_files: Mapping[str, Path], previous: Release | None,
                  dataset_files: Mapping[str, Mapping[str, Path]]) -> None:
    label = f"release {release.version}"
    if release.format_version != FORMAT_VERSION:
        raise FormatError(
            f"{label}: format_version is {release.format_version!r}, but this forkpaths writes format "
            f"{FORMAT_VERSION} only"
        )
    problems = document_problems(release)
    if problems:
        raise FormatError(f"{label}: " + "; ".join(problems))
    names = [ds.name for ds in release.datasets]
    missing = [n for n in names if n not in data_files]
    unknown = sorted(set(data_files) - set(names))
    if missing:
        raise FormatError(f"{label}: no data file given for dataset(s) {', '.join(map(repr, missing))}")
    if unknown:
        raise FormatError(
            f"{label}: data file given for {', '.join(map(repr, unknown))}, which the release does not contain"
        )
    for name in names:
        if not Path(data_files[name]).is_file():
            raise FormatError(f"{label}: dataset {name!r}: data file {data_files[name]} does not exist")
    for ds in release.datasets:
        given = dataset_files.get(ds.name, {})
        for file in ds.files:
            if file.path == ds.data_file:
                continue  # the main table: copied from data_files
            source = given.get(file.name)
            if source is None:
                raise FormatError(f"{label}: dataset {ds.name!r}: no source given for its file {file.name!r}")
            if not Path(source).is_file():
                raise FormatError(f"{label}: dataset {ds.name!r}: file {file.name!r} ({source}) does not exist")
        unknown_files = sorted(set(given) - {f.name for f in ds.files})
        if unknown_files:
            raise FormatError(f"{label}: dataset {ds.name!r}: file(s) {', '.join(map(repr, unknown_files))} given "
                              "but not listed in its files")
    unknown_sets = sorted(set(dataset_files) - set(names))
    if unknown_sets:
        raise FormatError(f"{label}: files given for {', '.join(map(repr, unknown_sets))}, which the release does "
                          "not contain")
    if previous is not None:
        older, newer = parse_version(previous.version), parse_version(release.version)
        if older is None or newer is None or older >= newer:
            raise FormatError(
                f"{label}: the previous release {previous.version} must have a lower version than {release.version}"
            )
        if release.previous_version != previous.version:
            raise FormatError(
                f"{label}: previous_version is {release.previous_version!r} but the changelog would be written "
                f"against {previous.version}; set previous_version={previous.version!r}"
            )
    elif release.previous_version is not None:
        raise FormatError(
            f"{label}: it follows release {release.previous_version}; pass that release as previous= so the "
            "changelog can be written"
        )


def write_release(
    release: Release,
    data_files: Mapping[str, Path],
    dest_root: Path,
    *,
    previous: Release | None = None,
    progress: ProgressCallback | None = None,
    dataset_files: Mapping[str, Mapping[str, Path]] | None = None,
) -> Path:
    """Write ``release`` as ``dest_root/<version>/`` and ``dest_root/<version>.zip``, atomically.

    Args:
        release: the release document; each dataset's ``data_file`` (under ``data/``) is where its table goes.
        data_files: dataset name → the CSV to copy; its SHA-256 must equal the dataset's ``data_sha256``.
        dest_root: the folder holding all releases (created if missing).
        previous: the release this one follows (its ``previous_version``), for ``CHANGELOG.md``.
        progress: called as ``progress(stage, fraction)`` with a stage of :data:`STAGES`.
        dataset_files: dataset name → {file name → source} for the datasets that list ``files`` (format 1.2:
            every file of a DiscoveryBench folder); each is copied to its ``path`` and must match its ``sha256``.
            The file that is the dataset's ``data_file`` comes from ``data_files``.

    Returns:
        The release folder ``dest_root/<version>``.

    Raises:
        ReleaseExistsError: ``<version>`` or ``<version>.zip`` already exists (nothing is touched).
        FormatError: invalid release (version, paths, hashes, datasets without data, previous mismatch) or a
            data file whose content does not match its ``data_sha256``; nothing is left visible.
    """
    report: ProgressCallback = progress or (lambda _stage, _fraction: None)
    report("checking", 0.0)
    extra_files = dataset_files or {}
    _check_inputs(release, data_files, previous, extra_files)
    version = release.version
    dest_root = Path(dest_root)
    dest_root.mkdir(parents=True, exist_ok=True)
    _refuse_existing(dest_root, version)

    document = dump_release_json(release).encode("utf-8")
    card = render_card(release).encode("utf-8")
    changelog = render_changelog(diff_releases(previous, release)).encode("utf-8")

    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp_dir = dest_root / f".{version}.partial-{token}"
    tmp_zip = dest_root / f".{version}.zip.partial-{token}"
    final_dir = dest_root / version
    tmp_dir.mkdir()
    published = False
    try:
        report("writing release.json", 0.02)
        _write_new(tmp_dir / RELEASE_JSON, document)
        digests = {RELEASE_JSON: _sha256(document)}

        copies = [(ds, file, Path(extra_files[ds.name][file.name]))
                  for ds in release.datasets for file in ds.files if file.path != ds.data_file]
        sizes = {ds.name: Path(data_files[ds.name]).stat().st_size for ds in release.datasets}
        total = max(sum(sizes.values()) + sum(source.stat().st_size for _, _, source in copies), 1)
        done = 0

        def on_bytes(n: int) -> None:
            nonlocal done
            done += n
            report("copying data", 0.05 + 0.6 * min(done / total, 1.0))

        report("copying data", 0.05)
        for ds in release.datasets:
            source = Path(data_files[ds.name])
            digest = _copy_hashing(source, tmp_dir / ds.data_file, on_bytes)
            if digest != ds.data_sha256:
                raise FormatError(
                    f"release {version}: dataset {ds.name!r}: {source} has SHA-256 {digest}, but the release "
                    f"records data_sha256 {ds.data_sha256}; the file changed after the dataset was registered"
                )
            digests[ds.data_file] = digest
        for ds, file, source in copies:
            digest = _copy_hashing(source, tmp_dir / file.path, on_bytes)
            if digest != file.sha256:
                raise FormatError(
                    f"release {version}: dataset {ds.name!r}: file {file.name!r} ({source}) has SHA-256 {digest}, "
                    f"but the release records {file.sha256}; the file changed after the dataset was registered"
                )
            digests[file.path] = digest

        report("writing README.md", 0.66)
        _write_new(tmp_dir / README_NAME, card)
        digests[README_NAME] = _sha256(card)
        report("writing CHANGELOG.md", 0.68)
        _write_new(tmp_dir / CHANGELOG_NAME, changelog)
        digests[CHANGELOG_NAME] = _sha256(changelog)

        report("manifest", 0.7)
        _write_new(tmp_dir / MANIFEST_NAME, render_manifest(digests).encode("utf-8"))
        for folder in sorted((p for p in tmp_dir.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            _fsync_dir(folder)
        _fsync_dir(tmp_dir)

        report("zip", 0.72)
        _write_zip(tmp_dir, version, tmp_zip, _zip_date(release), lambda f: report("zip", 0.72 + 0.25 * f))

        report("publishing", 0.98)
        _refuse_existing(dest_root, version)
        try:
            os.rename(tmp_dir, final_dir)  # a non-empty target makes this fail: a release is never replaced
        except OSError as exc:
            if exc.errno in (errno.EEXIST, errno.ENOTEMPTY):
                raise ReleaseExistsError(
                    f"release {version} already exists at {final_dir}; releases never change"
                ) from exc
            raise
        published = True
        _fsync_dir(dest_root)
        _publish_file(tmp_zip, dest_root / f"{version}.zip", version)
        _fsync_dir(dest_root)
    except BaseException:
        if not published:
            shutil.rmtree(tmp_dir, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            tmp_zip.unlink()
        raise
    report("done", 1.0)
    logger.info("wrote release %s to %s", version, final_dir)
    return final_dir

