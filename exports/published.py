"""A published release: its folder *and* its zip, checked against the hashes recorded when it was cut.

:func:`exports.native.read_release` checks one folder or one zip against the ``MANIFEST`` inside it. A
published release is two copies of the same files (``<dest_root>/<version>/`` and ``<dest_root>/<version>.zip``),
and the reader holds, from somewhere the files' editor cannot reach (forkpaths' database), the SHA-256 of the
``MANIFEST`` as cut and, for releases cut since it is recorded, the SHA-256 of the zip. Both copies are read
with every member checked against their ``MANIFEST``, both manifests against the recorded hash, and the zip's
bytes against the recorded zip hash. Two copies whose manifests hash the same hold the same files.

A zip hash is recorded only after every member of that zip was checked (when the release is cut, or on the
first full check of a release cut before zip hashes were recorded), so a zip whose bytes still match it is
not unpacked again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from exports.errors import ReleaseIntegrityError
from exports.manifest import sha256_file
from exports.native import read_release, verify_release
from exports.schema import Release

__all__ = ["PublishedRelease", "read_published_release", "release_zip_path"]


@dataclass(frozen=True)
class PublishedRelease:
    """A published release whose folder and zip were both verified.

    Attributes:
        release: the release document.
        folder: ``<dest_root>/<version>``.
        zip_path: ``<dest_root>/<version>.zip``.
        zip_sha256: the SHA-256 of the zip's bytes as verified (for the caller to record when it had none).
    """

    release: Release
    folder: Path
    zip_path: Path
    zip_sha256: str


def release_zip_path(folder: Path) -> Path:
    """The zip published next to a release folder: ``<dest_root>/<version>.zip``."""
    folder = Path(folder)
    return folder.parent / f"{folder.name}.zip"


def _refuse(label: str, problems: list[str]) -> ReleaseIntegrityError:
    lines = [f"{label} was modified after it was cut and must not be used:", *(f"- {p}" for p in problems)]
    lines.append("Get an intact copy of this release, or cut a new version.")
    return ReleaseIntegrityError("\n".join(lines))


def read_published_release(
    folder: Path,
    version: str,
    *,
    manifest_sha256: str,
    zip_sha256: str | None = None,
    zip_data: bytes | None = None,
) -> PublishedRelease:
    """Read a published release after checking its folder and its zip.

    Args:
        folder: ``<dest_root>/<version>``; the zip is :func:`release_zip_path` of it.
        version: the version the release must declare.
        manifest_sha256: the SHA-256 of ``MANIFEST`` recorded when the release was cut.
        zip_sha256: the SHA-256 of the zip recorded when the release was cut, if one was recorded.
        zip_data: the zip's bytes when the caller already read them to hand them out: exactly these bytes are
            checked.

    Returns:
        The verified release, with the zip's SHA-256.

    Raises:
        ReleaseIntegrityError: a file of either copy was added, removed or altered, a manifest was
            rewritten, the zip's bytes changed or the zip is missing or damaged; the message names each.
        FormatError: no release folder at ``folder``, or a ``release.json`` that cannot be read.
    """
    folder = Path(folder)
    zip_path = release_zip_path(folder)
    release = read_release(folder, manifest_sha256=manifest_sha256)
    if release.version != version:
        raise _refuse(f"release folder {folder}", [
            f"release.json declares version {release.version}, but this is release {version}"
        ])
    if zip_data is None and not zip_path.is_file():
        raise _refuse(f"release {version}", [f"{zip_path.name}: the zip is missing"])
    digest = hashlib.sha256(zip_data).hexdigest() if zip_data is not None else sha256_file(zip_path)
    if zip_sha256 is not None and digest != zip_sha256:
        # Name the altered members when the zip can still be read; a change outside the members (headers,
        # comment) is caught by the zip's own hash alone.
        details = verify_release(zip_path, manifest_sha256=manifest_sha256, zip_data=zip_data)
        raise _refuse(f"release zip {zip_path}", [
            f"{zip_path.name}: its SHA-256 {digest[:12]}… differs from the {zip_sha256[:12]}… recorded when the "
            "release was cut", *details,
        ])
    if zip_sha256 is not None:
        # The very bytes whose members were all checked when the hash was recorded: nothing more to learn.
        return PublishedRelease(release=release, folder=folder, zip_path=zip_path, zip_sha256=digest)
    zipped = read_release(zip_path, manifest_sha256=manifest_sha256, zip_data=zip_data)
    if zipped.version != version:
        raise _refuse(f"release zip {zip_path}", [
            f"release.json declares version {zipped.version}, but this is release {version}"
        ])
    return PublishedRelease(release=release, folder=folder, zip_path=zip_path, zip_sha256=digest)
