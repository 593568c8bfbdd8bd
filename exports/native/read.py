"""Reading a release, from its folder or its zip: every file is checked against ``MANIFEST`` (and the
manifest against its recorded SHA-256) before the document is parsed and the data files are matched to it.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import IO, Protocol, Self

from exports.errors import FormatError, ReleaseIntegrityError
from exports.manifest import MANIFEST_NAME, compare_manifest, parse_manifest, path_problem, sha256_stream
from exports.native.document import RELEASE_JSON, parse_release_json
from exports.schema import DatasetRelease, Release

__all__ = ["read_release", "release_data_path", "verify_release"]

_MAX_PROBLEMS_SHOWN = 20


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
        found = hashlib.sha256(raw).hexdigest()
        if manifest_sha256 is not None and found != manifest_sha256:
            # Listed first: when the manifest itself was rewritten, none of its checksums can be trusted.
            problems.insert(0, (
                f"{MANIFEST_NAME}: its SHA-256 {found[:12]}… differs from the {manifest_sha256[:12]}… "
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
