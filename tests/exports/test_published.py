"""A published release (folder + zip) read against the hashes recorded when it was cut, and the quarantine."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from exports.errors import FormatError, ReleaseIntegrityError
from exports.manifest import MANIFEST_NAME
from exports.native import read_release, write_release
from exports.published import read_published_release, release_zip_path
from exports.release_folder import QUARANTINE_DIR, list_releases, list_set_aside, set_aside
from tests.exports.test_native import _rewrite_manifest, build_release, data_files_in


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def published(tmp_path: Path) -> tuple[Path, str, str]:
    """Release 1.0.0 written to ``tmp_path/releases``: its folder, MANIFEST hash and zip hash as cut."""
    release = build_release()
    folder = write_release(release, data_files_in(tmp_path, release), tmp_path / "releases")
    return folder, _sha(folder / MANIFEST_NAME), _sha(release_zip_path(folder))


def test_an_intact_release_reads_with_or_without_a_zip_hash(published) -> None:
    folder, manifest, zip_hash = published
    for recorded in (zip_hash, None):
        result = read_published_release(folder, "1.0.0", manifest_sha256=manifest, zip_sha256=recorded)
        assert result.release == read_release(folder) and result.zip_sha256 == zip_hash
    data = release_zip_path(folder).read_bytes()
    assert read_published_release(folder, "1.0.0", manifest_sha256=manifest, zip_sha256=zip_hash,
                                  zip_data=data).zip_sha256 == zip_hash


def test_the_bytes_handed_in_are_what_is_checked(published) -> None:
    folder, manifest, zip_hash = published
    data = bytearray(release_zip_path(folder).read_bytes())
    data[len(data) // 2] ^= 0xFF  # the file on disk is intact; the bytes about to be served are not
    for recorded in (zip_hash, None):
        with pytest.raises(ReleaseIntegrityError):
            read_published_release(folder, "1.0.0", manifest_sha256=manifest, zip_sha256=recorded,
                                   zip_data=bytes(data))


def test_a_folder_with_a_consistently_rewritten_manifest_is_refused(published) -> None:
    folder, manifest, zip_hash = published
    (folder / "README.md").write_text("# a different card\n", encoding="utf-8")
    _rewrite_manifest(folder)
    assert read_release(folder).version == "1.0.0"  # the manifest alone is satisfied
    with pytest.raises(ReleaseIntegrityError, match=r"MANIFEST: its SHA-256 .* the manifest was rewritten"):
        read_published_release(folder, "1.0.0", manifest_sha256=manifest, zip_sha256=zip_hash)


def test_the_release_must_be_the_version_it_is_published_as(published, tmp_path: Path) -> None:
    folder, manifest, zip_hash = published
    swapped = folder.parent / "2.0.0"
    shutil.copytree(folder, swapped)
    shutil.copy2(release_zip_path(folder), release_zip_path(swapped))
    with pytest.raises(ReleaseIntegrityError, match="declares version 1.0.0, but this is release 2.0.0"):
        read_published_release(swapped, "2.0.0", manifest_sha256=manifest, zip_sha256=zip_hash)


def test_no_folder_is_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="no release folder or zip here"):
        read_published_release(tmp_path / "9.9.9", "9.9.9", manifest_sha256="0" * 64)


def test_set_aside_moves_files_out_of_sight_with_a_note(published) -> None:
    folder, _, _ = published
    root = folder.parent
    first = set_aside(root, "1.0.0", "a test said so")
    second = set_aside(root, "1.0.0.zip", "a test said so too")
    assert list_releases(root) == [] and first.path.parent == root / QUARANTINE_DIR
    assert read_release(first.path).version == "1.0.0"  # kept byte for byte
    note = json.loads(first.path.with_name(first.path.name + ".reason.json").read_text(encoding="utf-8"))
    assert note["reason"] == "a test said so" and note["name"] == "1.0.0"
    assert {(s.name, s.reason) for s in list_set_aside(root)} == {
        (first.name, first.reason), (second.name, second.reason)}
    shutil.copytree(first.path, root / "1.0.0")  # set aside again within the same second: no clash
    third = set_aside(root, "1.0.0", "again")
    assert third.path != first.path and third.path.exists() and first.path.exists()
    third.path.with_name(third.path.name + ".reason.json").unlink()
    assert any("note file is missing" in s.reason for s in list_set_aside(root))
    for bad in ("", "..", QUARANTINE_DIR, "a/b"):
        with pytest.raises(ValueError):
            set_aside(root, bad, "no")
    with pytest.raises(FileNotFoundError):
        set_aside(root, "3.0.0", "nothing there")
