"""The artifact store: releases, submissions and results, each kept once under the SHA-256 of its bytes.

One folder (``FORKPATHS_ARTIFACT_DIR``, by default ``<data_dir>/artifacts``) that every machine scoring runs
mounts (a network filesystem or a bucket mounted as a folder). Its layout is git's and ccache's::

    <artifact dir>/
      objects/ab/cdef…    one file per content, named by its SHA-256 (2 hex digits, then the other 62)
      tmp/                objects being written (a writer's temporary file, renamed into objects/ when whole)
      damaged/            objects found not to match their name, set aside (never served)

An object is written to ``tmp/`` on the same filesystem, flushed to disk (``fsync``), and renamed into place,
so a reader never sees half an object; two writers of the same content write the same bytes under the same
name, so racing them is harmless. Every read hashes what it read and refuses an object whose bytes do not
match its name (it is set aside, so that writing the same content again heals the store).

A release (a folder of files) is stored as its files plus its ``MANIFEST`` (one ``<sha256>  <path>`` line per
file, :mod:`exports.manifest`), which is the release's tree object: a release is addressed by the SHA-256 of
its ``MANIFEST``, the hash recorded when it was cut. The manifest object is written after every file it lists,
so a manifest in the store means the whole release is. :meth:`ArtifactStore.release_folder` materialises a
release for reading into this machine's cache (``<data_dir>/cache/releases/<manifest sha256>/``), checking
every file as it is copied.

A scoring job therefore needs only ids and hashes: the run's row records the hashes of its submission files,
of its release and, once scored, of its result.

The published release folders (``<data_dir>/releases/<version>/`` and their zips: what users download and
export, and what the writer lock guards) stay where they are; the store object carries their location so that
the services take one object built once from the settings at the edge (CLI, app, worker).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from curation.errors import ArtifactCorrupted, ArtifactMissing
from exports.manifest import MANIFEST_NAME, parse_manifest

__all__ = ["ArtifactStore", "is_sha256", "write_atomic"]

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
_SHA = re.compile(r"[0-9a-f]{64}")


def is_sha256(text: str) -> bool:
    """Whether ``text`` is 64 lowercase hex digits (the only names objects have)."""
    return bool(_SHA.fullmatch(text))


def _short(sha: str) -> str:
    return f"{sha[:12]}…"


def _capital(what: str) -> str:
    return what[:1].upper() + what[1:]


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (temporary file beside it, fsync, rename): for the files a
    job writes by path as it goes (:attr:`ArtifactStore.runs`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fsync_dir(path: Path) -> None:
    """Make a rename in ``path`` durable (best effort: some filesystems refuse to open a folder)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@dataclass(frozen=True)
class ArtifactStore:
    """Where forkpaths keeps what scoring reads and writes, built once from the settings at the edge.

    Attributes:
        root: the shared, content-addressed folder (``objects/``, ``tmp/``, ``damaged/``).
        releases_root: this installation's published release folders and zips (``<data_dir>/releases``).
        cache_dir: this machine's cache (materialised releases, ground-truth states): ``<data_dir>/cache``.
    """

    root: Path
    releases_root: Path
    cache_dir: Path

    @classmethod
    def at(cls, data_dir: Path, artifact_dir: Path | None = None) -> ArtifactStore:
        """The store of data folder ``data_dir`` (its artifacts in ``artifact_dir``, by default inside it)."""
        data_dir = Path(data_dir)
        return cls(root=Path(artifact_dir) if artifact_dir is not None else data_dir / "artifacts",
                   releases_root=data_dir / "releases", cache_dir=data_dir / "cache")

    # -------------------------------------------------------------------------------- places

    @property
    def objects(self) -> Path:
        return self.root / "objects"

    @property
    def runs(self) -> Path:
        """Files a job writes as it goes, by path, beside the objects so every machine sees them (an agent run's
        transcripts and generated submissions): ``<artifact dir>/runs/``."""
        return self.root / "runs"

    @property
    def gt_cache(self) -> Path:
        """Where built ground-truth states are cached on this machine (keyed by their own hashes)."""
        return self.cache_dir / "groundtruth"

    @property
    def releases_cache(self) -> Path:
        return self.cache_dir / "releases"

    def object_path(self, sha: str) -> Path:
        """Where the object ``sha`` is (or would be) kept: ``objects/ab/cdef…``."""
        if not is_sha256(sha):
            raise ValueError(f"not a SHA-256 hex digest: {sha!r}")
        return self.objects / sha[:2] / sha[2:]

    def has(self, sha: str) -> bool:
        """Whether an object named ``sha`` is present (not whether it is intact: reading checks that)."""
        return is_sha256(sha) and self.object_path(sha).is_file()

    # -------------------------------------------------------------------------------- writing

    @contextlib.contextmanager
    def _temporary(self, directory: Path) -> Iterator[tuple[IO[bytes], Path]]:
        directory.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{os.getpid()}-", suffix=".part", dir=directory)
        tmp = Path(name)
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh, tmp
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def _install(self, tmp: Path, sha: str, size: int) -> None:
        """Rename a whole, flushed temporary file into ``objects/`` (or drop it when the object is there)."""
        final = self.object_path(sha)
        try:
            if final.is_file() and final.stat().st_size == size:
                tmp.unlink(missing_ok=True)  # the same content is already there (another writer, or earlier)
                return
            final.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(tmp, 0o444)  # objects never change
            os.replace(tmp, final)  # atomic; a racing writer of the same content renames the same bytes
            _fsync_dir(final.parent)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def put_bytes(self, data: bytes) -> str:
        """Store ``data``; returns its SHA-256 (its name in the store)."""
        sha = hashlib.sha256(data).hexdigest()
        final = self.object_path(sha)
        if final.is_file() and final.stat().st_size == len(data):
            return sha
        with self._temporary(self.root / "tmp") as (fh, tmp):
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        self._install(tmp, sha, len(data))
        return sha

    def put_file(self, path: Path) -> str:
        """Store the file at ``path`` (copied in chunks while hashed); returns its SHA-256."""
        digest = hashlib.sha256()
        size = 0
        with self._temporary(self.root / "tmp") as (fh, tmp):
            with Path(path).open("rb") as src:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    fh.write(chunk)
                    size += len(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        sha = digest.hexdigest()
        self._install(tmp, sha, size)
        return sha

    def put_tree(self, folder: Path) -> str:
        """Store a folder that holds a ``MANIFEST`` (a release): every file it lists, then the manifest itself.

        Returns:
            The SHA-256 of the ``MANIFEST``: the folder's address in the store.

        Raises:
            ValueError: the manifest is unreadable, or a listed file is missing or does not match its line (the
                folder is not what its manifest says; nothing of it is addressable, since the manifest is not
                stored).
        """
        folder = Path(folder)
        manifest = (folder / MANIFEST_NAME).read_bytes()
        digests, problems = parse_manifest(manifest.decode("utf-8", errors="replace"))
        if problems:
            raise ValueError(f"{folder / MANIFEST_NAME}: " + "; ".join(problems))
        for rel, expected in sorted(digests.items()):
            try:
                got = self.put_file(folder / rel)
            except FileNotFoundError as exc:
                raise ValueError(f"{folder}: {rel} is listed in its MANIFEST but missing") from exc
            if got != expected:
                raise ValueError(f"{folder}: {rel} does not match its MANIFEST line (sha256 {_short(got)} instead "
                                 f"of {_short(expected)})")
        return self.put_bytes(manifest)  # last: a manifest in the store means its whole tree is

    # -------------------------------------------------------------------------------- reading

    def _missing(self, sha: str, what: str) -> ArtifactMissing:
        return ArtifactMissing(
            f"{_capital(what)} (sha256 {_short(sha)}) is not in the artifact store at {self.root}. On a worker "
            "machine, mount the shared artifact folder and point FORKPATHS_ARTIFACT_DIR at it.")

    def _damaged(self, sha: str, what: str, actual: str) -> ArtifactCorrupted:
        aside = self._set_aside(sha)
        where = f"; it was moved to {aside}" if aside else ""
        return ArtifactCorrupted(
            f"{_capital(what)} (sha256 {_short(sha)}) in the artifact store at {self.root} is damaged: its bytes "
            f"hash to {_short(actual)}, so it was not used{where}. Storing the same content again (registering "
            "the submission again, or re-cutting from an intact copy) repairs it.")

    def _set_aside(self, sha: str) -> Path | None:
        """Move a damaged object out of ``objects/`` (so it is never served, and writing it again heals)."""
        target = self.root / "damaged" / f"{sha}.{time.strftime('%Y%m%dT%H%M%S')}.{os.getpid()}"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.object_path(sha), target)
        except OSError as exc:
            log.error("damaged object %s could not be set aside: %s", sha, exc)
            return None
        return target

    def _open(self, sha: str, what: str) -> IO[bytes]:
        if not is_sha256(sha):
            raise self._missing(sha if sha else "0" * 12, what)
        try:
            return self.object_path(sha).open("rb")
        except FileNotFoundError as exc:
            raise self._missing(sha, what) from exc
        except OSError as exc:
            raise ArtifactMissing(f"{_capital(what)} (sha256 {_short(sha)}) could not be read from the artifact "
                                  f"store at {self.root}: {exc.strerror or exc}.") from exc

    def get_bytes(self, sha: str, *, what: str) -> bytes:
        """The bytes of object ``sha``, checked against their name.

        Args:
            sha: the object's SHA-256.
            what: what it is, for the sentence of a failure ("the submission a.json of run 12").

        Raises:
            ArtifactMissing: there is no such object ("… is not in the artifact store at …").
            ArtifactCorrupted: its bytes do not match its name (it is set aside, never returned).
        """
        with self._open(sha, what) as fh:
            data = fh.read()
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha:
            raise self._damaged(sha, what, actual)
        return data

    def check(self, sha: str, *, what: str) -> None:
        """Read object ``sha`` in chunks and check it against its name (ArtifactMissing / ArtifactCorrupted)."""
        digest = hashlib.sha256()
        with self._open(sha, what) as src:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
        if digest.hexdigest() != sha:
            raise self._damaged(sha, what, digest.hexdigest())

    def copy_to(self, sha: str, dest: Path, *, what: str) -> None:
        """Copy object ``sha`` to ``dest`` in chunks, checking it on the way (``dest`` is removed when it fails)."""
        digest = hashlib.sha256()
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            with self._open(sha, what) as src, dest.open("wb") as out:
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
            if digest.hexdigest() != sha:
                raise self._damaged(sha, what, digest.hexdigest())
        except BaseException:
            dest.unlink(missing_ok=True)
            raise

    def release_folder(self, manifest_sha: str, *, what: str) -> Path:
        """A folder holding the release whose ``MANIFEST`` hashes to ``manifest_sha``, materialised from the
        store into this machine's cache on first use (every file checked as it is copied; the folder appears
        whole, by one rename, or not at all).

        The caller reads it with the manifest hash (:func:`exports.native.read_release`), which checks it
        again; a cached copy that no longer matches is dropped with :meth:`forget_release_folder`.

        Raises:
            ArtifactMissing / ArtifactCorrupted: the manifest or one of its files, naming which.
        """
        final = self.releases_cache / manifest_sha
        if (final / MANIFEST_NAME).is_file():
            return final
        manifest = self.get_bytes(manifest_sha, what=f"the MANIFEST of {what}")
        digests, problems = parse_manifest(manifest.decode("utf-8", errors="replace"))
        if problems:  # cannot happen for a manifest that hashes to a recorded cut's; say so if it does
            raise ArtifactCorrupted(f"The MANIFEST of {what} (sha256 {_short(manifest_sha)}) cannot be read: "
                                  + "; ".join(problems))
        self.releases_cache.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{manifest_sha[:12]}-", dir=self.releases_cache))
        try:
            for rel, sha in sorted(digests.items()):
                self.copy_to(sha, tmp / rel, what=f"the file {rel} of {what}")
            (tmp / MANIFEST_NAME).write_bytes(manifest)
            try:
                os.rename(tmp, final)
            except OSError:
                if not (final / MANIFEST_NAME).is_file():  # not a racing materialiser that won: a real failure
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        log.info("materialised %s (%s files) in %s", what, len(digests), final)
        return final

    def verify_objects(self) -> tuple[int, list[str]]:
        """Check every object against its name (``forkpaths artifacts check``): damaged ones are set aside.

        Returns:
            How many objects were checked, and one sentence per damaged one.
        """
        checked, damaged = 0, []
        if not self.objects.is_dir():
            return 0, []
        for prefix in sorted(self.objects.iterdir()):
            for obj in sorted(prefix.iterdir()) if prefix.is_dir() else []:
                sha = prefix.name + obj.name
                if not is_sha256(sha):
                    continue
                checked += 1
                try:
                    self.check(sha, what=f"object {sha[:12]}…")
                except ArtifactCorrupted as exc:
                    damaged.append(str(exc))
                except ArtifactMissing:
                    pass  # removed meanwhile (set aside by a reader)
        return checked, damaged

    def forget_release_folder(self, manifest_sha: str) -> None:
        """Drop this machine's materialised copy of a release (it is made again from the store when needed)."""
        final = self.releases_cache / manifest_sha
        if final.exists():
            aside = self.releases_cache / f".{manifest_sha[:12]}-stale-{os.getpid()}-{time.monotonic_ns()}"
            with contextlib.suppress(OSError):
                os.rename(final, aside)
            shutil.rmtree(aside, ignore_errors=True)
