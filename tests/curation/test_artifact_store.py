"""The artifact store itself: git's layout, atomic writes (no half-written object is ever visible, racing writers of
the same content are harmless), verified reads (a damaged object is set aside, never served), releases as trees
materialised on demand."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from curation.artifacts import ArtifactStore
from curation.errors import ArtifactCorrupted, ArtifactMissing
from curation.settings import PROJECT_ROOT, Settings
from exports.manifest import render_manifest


def _store(tmp_path: Path) -> ArtifactStore:
    return ArtifactStore.at(tmp_path / "data", tmp_path / "shared")


def _objects(store: ArtifactStore) -> list[Path]:
    return sorted(p for p in store.objects.rglob("*") if p.is_file()) if store.objects.exists() else []


def test_settings_build_the_store_with_its_default_and_configured_folder(tmp_path):
    default = Settings(data_dir=tmp_path / "d").artifact_store()
    assert default.root == (tmp_path / "d" / "artifacts").resolve()
    assert default.releases_root == (tmp_path / "d" / "releases").resolve()
    assert default.cache_dir == (tmp_path / "d" / "cache").resolve()
    shared = Settings(data_dir=tmp_path / "d", artifact_dir=tmp_path / "mnt").artifact_store()
    assert shared.root == (tmp_path / "mnt").resolve() and shared.releases_root == default.releases_root


def test_put_and_get_by_content_in_gits_layout(tmp_path):
    store = _store(tmp_path)
    data = b"an agent's submission\n"
    sha = store.put_bytes(data)
    assert sha == hashlib.sha256(data).hexdigest()
    path = store.root / "objects" / sha[:2] / sha[2:]
    assert _objects(store) == [path] and path.read_bytes() == data
    assert not path.stat().st_mode & 0o222  # read-only
    assert store.get_bytes(sha, what="x") == data and store.has(sha)
    assert store.put_bytes(data) == sha and _objects(store) == [path]  # the same content is kept once
    src = tmp_path / "big.bin"
    src.write_bytes(os.urandom(3 * 2**20 + 17))
    assert store.put_file(src) == hashlib.sha256(src.read_bytes()).hexdigest()
    assert list((store.root / "tmp").iterdir()) == []


def test_a_missing_object_is_named_with_what_it_is_and_where_the_store_is(tmp_path):
    store = _store(tmp_path)
    sha = hashlib.sha256(b"never stored").hexdigest()
    with pytest.raises(ArtifactMissing) as err:
        store.get_bytes(sha, what="the submission a.json of run 12")
    assert str(err.value).startswith(f"The submission a.json of run 12 (sha256 {sha[:12]}…) is not in the artifact "
                                     f"store at {store.root}.")
    assert "FORKPATHS_ARTIFACT_DIR" in str(err.value)
    with pytest.raises(ArtifactMissing):
        store.get_bytes("../../etc/passwd", what="a hostile name")


def test_a_damaged_object_is_refused_set_aside_and_healed_by_storing_it_again(tmp_path):
    store = _store(tmp_path)
    data = b'{"answers": []}'
    sha = store.put_bytes(data)
    obj = store.object_path(sha)
    obj.chmod(0o644)
    obj.write_bytes(b'{"answers": [1]}')  # same name, other bytes: a disk fault or a hostile hand
    with pytest.raises(ArtifactCorrupted, match=rf"The result of run 3 \(sha256 {sha[:12]}…\) in the artifact store "
                       r"at .* is damaged: its bytes hash to [0-9a-f]{12}…, so it was not used"):
        store.get_bytes(sha, what="the result of run 3")
    assert not store.has(sha)  # never served again
    [aside] = (store.root / "damaged").iterdir()
    assert aside.name.startswith(sha) and aside.read_bytes() == b'{"answers": [1]}'
    assert store.put_bytes(data) == sha and store.get_bytes(sha, what="x") == data
    dest = tmp_path / "copy"
    obj = store.object_path(sha)
    obj.chmod(0o644)
    obj.write_bytes(b"x")
    with pytest.raises(ArtifactCorrupted):
        store.copy_to(sha, dest, what="a copy")
    assert not dest.exists()


def _put_many(root: str, data: bytes, n: int) -> set[str]:
    store = ArtifactStore(root=Path(root), releases_root=Path(root) / "r", cache_dir=Path(root) / "c")
    return {store.put_bytes(data) for _ in range(n)}


def test_concurrent_writers_of_the_same_content_are_harmless(tmp_path):
    store = _store(tmp_path)
    data = os.urandom(2 * 2**20)
    with ProcessPoolExecutor(4) as pool:
        names = set().union(*pool.map(_put_many, [str(store.root)] * 8, [data] * 8, [5] * 8))
    [sha] = names
    assert _objects(store) == [store.object_path(sha)] and store.get_bytes(sha, what="x") == data
    assert list((store.root / "tmp").iterdir()) == []


_WRITER = """
import sys
from pathlib import Path
from curation.artifacts import ArtifactStore
store = ArtifactStore.at(Path(sys.argv[1]), Path(sys.argv[2]))
print(store.put_file(Path(sys.argv[3])))
"""


def test_a_writer_killed_mid_object_leaves_no_visible_object(tmp_path):
    store = _store(tmp_path)
    fifo = tmp_path / "slow-source"
    os.mkfifo(fifo)
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path / "data"), str(store.root), str(fifo)],
                              cwd=PROJECT_ROOT)
    half = os.urandom(3 * 2**20)
    with fifo.open("wb") as feed:
        feed.write(half)  # the writer copies it into its temporary file...
        feed.flush()
        deadline = time.monotonic() + 60
        while not any(p.stat().st_size for p in (store.root / "tmp").glob("*")):
            assert time.monotonic() < deadline and writer.poll() is None
            time.sleep(0.05)
        writer.send_signal(signal.SIGKILL)  # ...and dies before the rest comes
        writer.wait(timeout=60)
    assert writer.returncode == -signal.SIGKILL
    assert _objects(store) == []  # nothing under objects/: a reader sees no half object
    assert not store.has(hashlib.sha256(half).hexdigest())
    assert [p.name.endswith(".part") for p in (store.root / "tmp").iterdir()] == [True]  # only the leftover


def _tree(folder: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    (folder / "MANIFEST").write_text(render_manifest({rel: hashlib.sha256(d).hexdigest() for rel, d in files.items()}))
    return folder


def test_a_release_is_its_files_plus_its_manifest_materialised_on_demand(tmp_path):
    store = _store(tmp_path)
    files = {"release.json": b'{"version": "1.0.0"}', "data/a/data.csv": b"x,y\n1,2\n", "README.md": b"# r\n"}
    folder = _tree(tmp_path / "published" / "1.0.0", files)
    sha = store.put_tree(folder)
    assert sha == hashlib.sha256((folder / "MANIFEST").read_bytes()).hexdigest()
    assert len(_objects(store)) == 4
    other = ArtifactStore.at(tmp_path / "worker-data", store.root)  # a second machine: its own cache
    copy = other.release_folder(sha, what="release 1.0.0")
    assert copy == tmp_path / "worker-data" / "cache" / "releases" / sha
    assert {p.relative_to(copy).as_posix(): p.read_bytes() for p in copy.rglob("*") if p.is_file()} == {
        **files, "MANIFEST": (folder / "MANIFEST").read_bytes()}
    assert other.release_folder(sha, what="release 1.0.0") == copy  # made once
    other.forget_release_folder(sha)
    assert not copy.exists() and other.release_folder(sha, what="release 1.0.0") == copy


def test_a_release_missing_a_file_is_never_half_materialised(tmp_path):
    store = _store(tmp_path)
    files = {"release.json": b"{}", "data/a/data.csv": b"x\n1\n"}
    sha = store.put_tree(_tree(tmp_path / "rel", files))
    store.object_path(hashlib.sha256(b"x\n1\n").hexdigest()).unlink()
    with pytest.raises(ArtifactMissing, match=r"The file data/a/data.csv of release 2.0.0 \(sha256 "):
        store.release_folder(sha, what="release 2.0.0")
    assert list(store.releases_cache.iterdir()) == []  # no folder, and no leftover


def test_a_folder_that_does_not_match_its_manifest_is_not_stored_as_a_tree(tmp_path):
    store = _store(tmp_path)
    folder = _tree(tmp_path / "rel", {"release.json": b"{}", "data.csv": b"1\n"})
    (folder / "data.csv").write_bytes(b"2\n")
    with pytest.raises(ValueError, match="data.csv does not match its MANIFEST line"):
        store.put_tree(folder)
    assert not store.has(hashlib.sha256((folder / "MANIFEST").read_bytes()).hexdigest())
