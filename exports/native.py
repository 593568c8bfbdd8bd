"""The native release on disk: an immutable, self-verifying folder (and a zip of it) per version.

Layout of ``<dest_root>/<version>/``::

    release.json              the Release document (keys sorted, indent 2, UTF-8, trailing newline)
    README.md                 dataset card generated from release.json
    CHANGELOG.md              what changed since the previous release (or "first release")
    data/<dataset>/data.csv   the data tables, at each dataset's ``data_file`` path
    data/<dataset>/<name>     every file of a multi-file dataset (a DiscoveryBench folder), at its ``files`` path
    MANIFEST                  ``<sha256>  <path>`` for every other file, sorted by path (sha256sum format)

and ``<dest_root>/<version>.zip`` holds the same files under a top folder named ``<version>/``.

Writing is atomic: everything is built in a hidden sibling ``.<version>.partial-<pid>-<random>``, fsynced and
renamed into place, so a writer killed at any point leaves no ``<version>`` folder (at most a ``.partial``
leftover that :func:`~exports.release_folder.list_releases` ignores and
:func:`~exports.release_folder.cleanup_partials` removes). An existing version is never
overwritten. Reading first checks every file against ``MANIFEST``; a release that does not match was modified
after it was cut and is refused with :class:`~exports.errors.ReleaseIntegrityError`.

The manifest alone detects accidental and naive edits; it is not a signature: someone who edits a file *and*
rewrites ``MANIFEST`` and ``release.json`` consistently is not detected by it. Pass the manifest's own SHA-256,
kept somewhere the files' editor cannot reach (forkpaths records it in its database when the release is cut),
as ``manifest_sha256`` and such a rewrite is refused too; :mod:`exports.published` checks a published folder
and its zip that way.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import logging
import math
import os
import re
import secrets
import shutil
import stat
import zipfile
from collections.abc import Callable, Mapping
from datetime import UTC
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol, Self

from pydantic import ValidationError

from exports.card import render_card
from exports.changelog import diff_releases, render_changelog
from exports.errors import (
    FormatError,
    ReleaseExistsError,
    ReleaseIntegrityError,
    UnsupportedFormatVersionError,
)
from exports.jsontext import JsonTextError, load_json
from exports.manifest import (
    MANIFEST_NAME,
    compare_manifest,
    parse_manifest,
    path_problem,
    render_manifest,
    sha256_stream,
)
from exports.release_folder import cleanup_partials, list_releases, parse_version
from exports.schema import FORMAT_VERSION, DatasetRelease, Release

__all__ = [
    "CHANGELOG_NAME",
    "DATA_DIR",
    "README_NAME",
    "RELEASE_JSON",
    "STAGES",
    "SUPPORTED_FORMAT_VERSIONS",
    "ProgressCallback",
    "cleanup_partials",
    "dump_release_json",
    "list_releases",
    "parse_release_json",
    "parse_version",
    "read_release",
    "release_data_path",
    "verify_release",
    "write_release",
]

logger = logging.getLogger(__name__)

RELEASE_JSON = "release.json"
README_NAME = "README.md"
CHANGELOG_NAME = "CHANGELOG.md"
DATA_DIR = "data"

#: Format versions :func:`read_release` understands.
SUPPORTED_FORMAT_VERSIONS: tuple[str, ...] = ("1.0", "1.1", FORMAT_VERSION)  # later ones only add optional fields

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
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MAX_PROBLEMS_SHOWN = 20
_RESERVED = {RELEASE_JSON, README_NAME, CHANGELOG_NAME, MANIFEST_NAME}


# --- versions and the JSON document ----------------------------------------------------------------------


def _non_finite_path(value: Any, path: str) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return path
    if isinstance(value, dict):
        for key, inner in value.items():
            found = _non_finite_path(inner, f"{path}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, inner in enumerate(value):
            found = _non_finite_path(inner, f"{path}[{index}]")
            if found:
                return found
    return None


def dump_release_json(release: Release) -> str:
    """Serialise ``release`` as the text of ``release.json``.

    Keys are sorted at every level so that equal releases give identical bytes (a consequence: key order of
    free-form dicts such as ``info`` is not kept; JSON gives it no meaning). Indent 2, non-ASCII kept as is,
    one trailing newline.

    Raises:
        FormatError: a value JSON cannot hold (NaN or infinity), naming where it is.
    """
    # mode="json" would quietly turn NaN into null; look for it in the Python values first.
    bad = _non_finite_path(release.model_dump(), "release")
    if bad is not None:
        raise FormatError(
            f"release {release.version}: {bad} is NaN or infinite, which JSON cannot hold; "
            "replace it with null or a number before cutting the release"
        )
    document = release.model_dump(mode="json")
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def _validation_summary(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        parts.append(f"{where}: {err['msg']}")
    more = len(exc.errors()) - 5
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def parse_release_json(data: bytes | str, *, source: str = RELEASE_JSON) -> Release:
    """Parse the text of a ``release.json``, checking its ``format_version`` first.

    Args:
        data: the file's bytes (UTF-8) or text.
        source: how to name the file in error messages.

    Raises:
        UnsupportedFormatVersionError: ``format_version`` is not one of :data:`SUPPORTED_FORMAT_VERSIONS`.
        FormatError: not UTF-8, not JSON, not an object, no ``format_version``, fields that do not fit the
            schema (named), an invalid version, or data-file paths that leave the release.
    """
    try:
        obj = load_json(data, label=source)
    except JsonTextError as exc:
        raise FormatError(f"{source}: {exc.reason.removeprefix('is ')}") from exc
    if not isinstance(obj, dict):
        raise FormatError(f"{source}: expected a JSON object, found {type(obj).__name__}")
    if "format_version" not in obj:
        raise FormatError(f"{source}: no format_version; this is not a forkpaths release document")
    found = obj["format_version"]
    if found not in SUPPORTED_FORMAT_VERSIONS:
        raise UnsupportedFormatVersionError(
            f"{source}: format_version {found!r} is not supported; this forkpaths reads format "
            f"{', '.join(SUPPORTED_FORMAT_VERSIONS)}. Use a forkpaths version that knows format {found!r}."
        )
    try:
        release = Release.model_validate(obj)
    except ValidationError as exc:
        raise FormatError(f"{source}: does not fit the release schema: {_validation_summary(exc)}") from exc
    problems = _document_problems(release)
    if problems:
        raise FormatError(f"{source}: " + "; ".join(problems))
    return release


def _document_problems(release: Release) -> list[str]:
    """Problems of a release document on its own: version, dataset names, data-file paths and hashes."""
    problems = []
    if parse_version(release.version) is None:
        problems.append(f"version {release.version!r} is not a semantic version X.Y.Z")
    seen_names: set[str] = set()
    seen_files: set[str] = set()
    for ds in release.datasets:
        where = f"dataset {ds.name!r}"
        if not ds.name:
            problems.append("a dataset has an empty name")
        elif ds.name in seen_names:
            problems.append(f"{where} appears twice")
        seen_names.add(ds.name)
        problem = path_problem(ds.data_file)
        if problem is not None:
            problems.append(f"{where}: data_file {ds.data_file!r}: {problem}")
        elif not ds.data_file.startswith(f"{DATA_DIR}/") or ds.data_file in _RESERVED:
            problems.append(f"{where}: data_file {ds.data_file!r} must lie under {DATA_DIR}/")
        elif ds.data_file in seen_files:
            problems.append(f"{where}: data_file {ds.data_file!r} is used by another dataset too")
        seen_files.add(ds.data_file)
        if not _SHA256.match(ds.data_sha256):
            problems.append(f"{where}: data_sha256 {ds.data_sha256!r} is not 64 lowercase hex digits")
        problems += _file_problems(ds, where, seen_files)
        keys = [t.key for t in ds.hypothesis_tasks]
        repeated = sorted({k for k in keys if keys.count(k) > 1})
        if repeated:
            problems.append(f"{where}: hypothesis task(s) {', '.join(repeated)} appear twice")
    return problems


def _file_problems(ds: DatasetRelease, where: str, seen_files: set[str]) -> list[str]:
    """Problems of a dataset's ``files`` list (format 1.2): paths inside ``data/<dataset>/``, each once.

    The dataset's main table is one of its files: ``data_file`` may be listed, with the same checksum.
    """
    problems = []
    names: set[str] = set()
    for file in ds.files:
        label = f"{where}: file {file.name!r}"
        problem = path_problem(file.path)
        if problem is not None:
            problems.append(f"{label}: path {file.path!r}: {problem}")
        elif not file.path.startswith(f"{DATA_DIR}/{ds.name}/"):
            problems.append(f"{label}: path {file.path!r} must lie under {DATA_DIR}/{ds.name}/")
        elif file.path == ds.data_file:
            if file.sha256 != ds.data_sha256:
                problems.append(f"{label} is the data_file but records another SHA-256 than data_sha256")
        elif file.path in seen_files:
            problems.append(f"{label}: path {file.path!r} is used twice")
        seen_files.add(file.path)
        if file.name in names:
            problems.append(f"{label} is listed twice")
        names.add(file.name)
        if not _SHA256.match(file.sha256):
            problems.append(f"{label}: sha256 {file.sha256!r} is not 64 lowercase hex digits")
    return problems


# --- writing ---------------------------------------------------------------------------------------------


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
    problems = _document_problems(release)
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


# --- reading ---------------------------------------------------------------------------------------------


class _Tree(Protocol):
    """The files of a release, from a folder or a zip, named by their path relative to the release root."""

    label: str
    problems: list[str]

    def files(self) -> list[str]: ...

    def open(self, name: str) -> IO[bytes]: ...

    def close(self) -> None: ...


class _TreeBase:
    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Release any open handle."""


class _DirTree(_TreeBase):
    def __init__(self, root: Path) -> None:
        self.root = root
        self.label = f"release folder {root}"
        self.problems: list[str] = []
        self._files: list[str] = []
        for dirpath, dirnames, filenames in os.walk(root):
            base = Path(dirpath)
            for name in list(dirnames):
                if (base / name).is_symlink():
                    self.problems.append(f"{(base / name).relative_to(root).as_posix()}: a symbolic link")
                    dirnames.remove(name)
            for name in filenames:
                path = base / name
                rel = path.relative_to(root).as_posix()
                if path.is_symlink() or not path.is_file():
                    self.problems.append(f"{rel}: not a regular file (a symbolic link or a special file)")
                else:
                    self._files.append(rel)

    def files(self) -> list[str]:
        return sorted(self._files)

    def open(self, name: str) -> IO[bytes]:
        return (self.root / name).open("rb")


class _ZipTree(_TreeBase):
    def __init__(self, path: Path, data: bytes | None = None) -> None:
        self.label = f"release zip {path}"
        self.problems: list[str] = []
        self._archive = zipfile.ZipFile(io.BytesIO(data) if data is not None else path)
        self._members: dict[str, zipfile.ZipInfo] = {}
        infos = [i for i in self._archive.infolist() if not i.is_dir()]
        roots = {i.filename.split("/", 1)[0] for i in infos}
        if len(roots) > 1 or any("/" not in i.filename for i in infos):
            self.problems.append(
                f"the zip must hold exactly one top folder (the version); found {', '.join(sorted(roots))}"
            )
        for info in infos:
            rel = info.filename.partition("/")[2]
            problem = path_problem(rel)
            if problem is not None:
                self.problems.append(f"{info.filename}: {problem}")
            elif rel in self._members:
                self.problems.append(f"{rel}: appears twice in the zip")
            else:
                self._members[rel] = info

    def files(self) -> list[str]:
        return sorted(self._members)

    def open(self, name: str) -> IO[bytes]:
        return self._archive.open(self._members[name])

    def close(self) -> None:
        self._archive.close()


def _open_tree(path: Path, zip_data: bytes | None = None) -> _DirTree | _ZipTree:
    if zip_data is None and path.is_dir():
        return _DirTree(path)
    if zip_data is None and not path.exists():
        raise FormatError(f"{path}: no release folder or zip here")
    try:
        return _ZipTree(path, zip_data)
    # A damaged central directory surfaces as BadZipFile, but also as EOFError, ValueError, struct.error...
    except Exception as exc:  # noqa: BLE001 - whatever the zip module trips over, the zip is unusable
        if zip_data is not None or path.suffix == ".zip":
            raise ReleaseIntegrityError(
                f"release zip {path} is damaged or truncated ({exc}); it must not be used. "
                "Get an intact copy of this release."
            ) from exc
        raise FormatError(f"{path}: neither a release folder nor a release zip") from exc


def _read_all(tree: _Tree, name: str) -> bytes:
    with tree.open(name) as stream:
        return stream.read()


def _integrity_problems(tree: _Tree, manifest_sha256: str | None = None) -> tuple[list[str], dict[str, str]]:
    """Compare the tree with its MANIFEST, and the MANIFEST with ``manifest_sha256`` when one is given.

    Returns the problems and the digests of the readable files.
    """
    problems = list(tree.problems)
    files = tree.files()
    if MANIFEST_NAME not in files:
        problems.append(f"{MANIFEST_NAME}: missing, so nothing can be checked")
        return problems, {}
    try:
        raw = _read_all(tree, MANIFEST_NAME)
        if manifest_sha256 is not None and _sha256(raw) != manifest_sha256:
            # Listed first: when the manifest itself was rewritten, none of its checksums can be trusted.
            problems.insert(0, (
                f"{MANIFEST_NAME}: its SHA-256 {_sha256(raw)[:12]}… differs from the {manifest_sha256[:12]}… "
                "recorded when the release was cut: the manifest was rewritten, so none of its checksums can "
                "be trusted"
            ))
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{MANIFEST_NAME}: unreadable (not UTF-8 text)")
        return problems, {}
    except Exception as exc:  # noqa: BLE001 - any read failure (zlib.error included) means a damaged file
        problems.append(f"{MANIFEST_NAME}: unreadable ({exc})")
        return problems, {}
    expected, manifest_problems = parse_manifest(text)
    problems += manifest_problems
    actual: dict[str, str] = {}
    unreadable: set[str] = set()
    for name in files:
        if name == MANIFEST_NAME:
            continue
        try:
            with tree.open(name) as stream:
                actual[name] = sha256_stream(stream)
        except Exception as exc:  # noqa: BLE001 - a CRC or inflate error of a zip member is a damaged file
            problems.append(f"{name}: unreadable ({exc})")
            unreadable.add(name)
    problems += compare_manifest({k: v for k, v in expected.items() if k not in unreadable}, actual)
    if RELEASE_JSON not in actual and RELEASE_JSON not in unreadable and RELEASE_JSON not in expected:
        problems.append(f"{RELEASE_JSON}: missing; every release has one")
    return problems, actual


def _data_problems(release: Release, digests: Mapping[str, str]) -> list[str]:
    problems = []
    for ds in release.datasets:
        found = digests.get(ds.data_file)
        if found is None:
            problems.append(f"{ds.data_file}: data file of dataset {ds.name!r} is missing")
        elif found != ds.data_sha256:
            problems.append(
                f"{ds.data_file}: SHA-256 {found[:12]}… differs from the data_sha256 {ds.data_sha256[:12]}… "
                f"that {RELEASE_JSON} records for dataset {ds.name!r}"
            )
        for file in ds.files:
            found = digests.get(file.path)
            if found is None:
                problems.append(f"{file.path}: file {file.name!r} of dataset {ds.name!r} is missing")
            elif found != file.sha256:
                problems.append(
                    f"{file.path}: SHA-256 {found[:12]}… differs from the sha256 {file.sha256[:12]}… that "
                    f"{RELEASE_JSON} records for file {file.name!r} of dataset {ds.name!r}"
                )
    return problems


def _integrity_error(label: str, problems: list[str]) -> ReleaseIntegrityError:
    shown = problems[:_MAX_PROBLEMS_SHOWN]
    more = len(problems) - len(shown)
    lines = [f"{label} was modified after it was cut and must not be used:"]
    lines += [f"- {p}" for p in shown]
    if more > 0:
        lines.append(f"- and {more} more")
    lines.append("Get an intact copy of this release, or cut a new version.")
    return ReleaseIntegrityError("\n".join(lines))


def read_release(path: Path, *, manifest_sha256: str | None = None, zip_data: bytes | None = None) -> Release:
    """Read a release from its folder or its zip, after checking every file.

    The checks run in this order: ``MANIFEST`` against ``manifest_sha256`` when given, every file against
    ``MANIFEST`` (missing, unlisted or altered files, an unreadable manifest), then ``release.json`` (its
    ``format_version`` first), then each dataset's data file against its ``data_sha256``.

    Args:
        path: ``<dest_root>/<version>`` or ``<dest_root>/<version>.zip``.
        manifest_sha256: the SHA-256 of ``MANIFEST`` recorded when the release was cut. Without it, a
            release whose files *and* manifest were rewritten consistently cannot be told from an intact one.
        zip_data: the bytes of the zip, when the caller already holds them (``path`` then only names it in
            messages); what is checked is exactly what the caller will hand out.

    Returns:
        The release document.

    Raises:
        ReleaseIntegrityError: the release was modified after it was cut; the message names every file.
        UnsupportedFormatVersionError: ``release.json`` declares a format this forkpaths cannot read.
        FormatError: no release at ``path``, or ``release.json`` does not fit the schema.
    """
    path = Path(path)
    with _open_tree(path, zip_data) as tree:
        problems, digests = _integrity_problems(tree, manifest_sha256)
        if problems:
            raise _integrity_error(tree.label, problems)
        release = parse_release_json(_read_all(tree, RELEASE_JSON), source=f"{tree.label}: {RELEASE_JSON}")
        problems = _data_problems(release, digests)
        if problems:
            raise _integrity_error(tree.label, problems)
    return release


def verify_release(path: Path, *, manifest_sha256: str | None = None, zip_data: bytes | None = None) -> list[str]:
    """Check a release folder or zip like :func:`read_release` does (same arguments), without raising.

    Returns:
        One sentence per problem, each naming the file concerned; an empty list means the release is intact
        and readable.
    """
    path = Path(path)
    try:
        tree = _open_tree(path, zip_data)
    except FormatError as exc:
        return [str(exc)]
    with tree:
        problems, digests = _integrity_problems(tree, manifest_sha256)
        if RELEASE_JSON in digests:
            try:
                release = parse_release_json(_read_all(tree, RELEASE_JSON), source=RELEASE_JSON)
            except FormatError as exc:
                problems.append(str(exc))
            else:
                problems += _data_problems(release, digests)
    return problems


def release_data_path(release_dir: Path, dataset: str | DatasetRelease) -> Path:
    """Return the path of a dataset's data table inside an unpacked release folder.

    This does not verify the release; call :func:`read_release` first.

    Args:
        release_dir: ``<dest_root>/<version>``.
        dataset: the dataset's name (looked up in ``release.json``) or its :class:`DatasetRelease`.

    Raises:
        FormatError: ``release_dir`` is not a release folder (a zip must be unpacked first), the dataset is
            not in the release, or its ``data_file`` would leave the folder.
    """
    release_dir = Path(release_dir)
    if not release_dir.is_dir():
        raise FormatError(
            f"{release_dir}: not a release folder; data paths exist in an unpacked release only"
        )
    if isinstance(dataset, DatasetRelease):
        name, data_file = dataset.name, dataset.data_file
    else:
        try:
            raw = (release_dir / RELEASE_JSON).read_bytes()
        except FileNotFoundError as exc:
            raise FormatError(f"{release_dir}: no {RELEASE_JSON}; not a release folder") from exc
        release = parse_release_json(raw, source=str(release_dir / RELEASE_JSON))
        by_name = {ds.name: ds for ds in release.datasets}
        if dataset not in by_name:
            known = ", ".join(sorted(by_name)) or "none"
            raise FormatError(f"release {release.version}: no dataset {dataset!r} (it has: {known})")
        name, data_file = dataset, by_name[dataset].data_file
    problem = path_problem(data_file)
    if problem is not None:
        raise FormatError(f"{release_dir}: dataset {name!r}: data_file {data_file!r}: {problem}")
    return release_dir / data_file
