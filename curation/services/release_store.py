"""The releases folder as the database sees it: a release exists exactly when its record does.

A release's files are published (renamed into place) a moment before the transaction that records them
commits. A writer killed in between leaves a release folder that no record describes; such files are never
served (every service looks releases up by their record) and are moved to the quarantine, with a note, by
:func:`reconcile_release_store` (at every start) and by a later cut of the same version.

Telling a dead writer's folder from a live writer's relies on one lock: a cut holds an exclusive ``flock`` on
``<releases>/.writer.lock`` from before it writes until its transaction ends (commit or rollback), and the
operating system drops the lock when the process dies. Whoever holds the lock therefore knows that every
unrecorded release folder, and every ``.partial`` leftover, belongs to a writer that is gone.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from sqlmodel import Session, select

from curation.artifacts import ArtifactStore
from curation.errors import ReleaseError
from curation.models import ReleaseRecord, Role, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from exports.release_folder import SetAside, cleanup_partials, list_releases, list_set_aside, set_aside

__all__ = [
    "LOCK_NAME",
    "ReleaseStoreReport",
    "WriterLock",
    "acquire_writer_lock",
    "reconcile_release_store",
    "release_store_problems",
    "set_aside_unrecorded",
]

log = logging.getLogger(__name__)
LOCK_NAME = ".writer.lock"
UNRECORDED = ("Its files were published but no release record was ever committed for them (a cut that was "
              "killed, or whose transaction failed, after writing): they are not a release and are never served.")


class WriterLock:
    """An exclusive ``flock`` on ``<releases>/.writer.lock``, released by :meth:`release` or by process death."""

    def __init__(self, releases_root: Path) -> None:
        releases_root.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(releases_root / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)

    def try_acquire(self) -> bool:
        assert self._fd is not None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def acquire(self, wait_s: float) -> bool:
        """Wait up to ``wait_s`` seconds for the lock; False when another writer still holds it."""
        deadline = time.monotonic() + wait_s
        while not self.try_acquire():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __del__(self) -> None:  # a lock its holder forgot is dropped with it
        self.release()


@dataclass
class ReleaseStoreReport:
    """What :func:`reconcile_release_store` found and did.

    Attributes:
        removed_partials: ``.partial`` leftovers of interrupted writes that were deleted.
        set_aside: unrecorded release folders and zips moved to the quarantine now.
        missing: one sentence per recorded release whose folder or zip is gone.
        skipped: why nothing was checked (a cut was in progress), or None.
    """

    removed_partials: list[Path] = field(default_factory=list)
    set_aside: list[SetAside] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    skipped: str | None = None


def set_aside_unrecorded(*, session: Session, releases_root: Path,
                         versions: list[str] | None = None) -> list[SetAside]:
    """Move the files of unrecorded releases (all, or only ``versions``) to the quarantine.

    The caller must hold the :class:`WriterLock`, or a live writer's fresh release would be taken for dead.
    """
    # A connection of its own: it sees records committed since this session's transaction began (a writer
    # that held the lock just before us may have committed one), whatever the isolation level.
    with session.get_bind().engine.connect() as conn:
        rows = conn.execute(select(ReleaseRecord.version, ReleaseRecord.path)).all()
    recorded = {name for row in rows for name in row}
    moved = []
    for version in list_releases(releases_root):
        if (versions is not None and version not in versions) or version in recorded:
            continue
        for name in (version, f"{version}.zip"):
            if os.path.lexists(releases_root / name):
                moved.append(set_aside(releases_root, name, UNRECORDED))
    return moved


def _missing(session: Session, releases_root: Path) -> list[str]:
    problems = []
    for r in session.exec(select(ReleaseRecord)).all():
        for name in (r.path, f"{r.path}.zip"):
            if not (releases_root / name).exists():
                problems.append(f"Release {r.version} is recorded but {releases_root / name} is missing; it "
                                "cannot be read or downloaded until the file is restored.")
    return sorted(problems)


def reconcile_release_store(*, session: Session, artifacts: ArtifactStore) -> ReleaseStoreReport:
    """At start: delete ``.partial`` leftovers, set aside unrecorded release files, log what is missing.

    Does nothing (and says so) while a cut holds the writer lock: the next start checks again.
    """
    releases_root = artifacts.releases_root
    report = ReleaseStoreReport()
    if not releases_root.is_dir():
        return report
    try:
        lock = WriterLock(releases_root)
    except OSError as exc:  # a read-only releases folder must not keep the app from starting
        report.skipped = f"the releases folder {releases_root} could not be checked: {exc}"
        log.error("%s", report.skipped)
        return report
    try:
        if not lock.try_acquire():
            report.skipped = "a release is being cut right now; the releases folder is checked at the next start"
            log.info("releases folder %s not checked: %s", releases_root, report.skipped)
            return report
        # Under the lock no write is in progress, so every leftover is dead even if its pid was reused.
        report.removed_partials = cleanup_partials(releases_root, include_live=True)
        report.set_aside = set_aside_unrecorded(session=session, releases_root=releases_root)
        report.missing = _missing(session, releases_root)
    except OSError as exc:
        report.skipped = f"the releases folder {releases_root} could not be put in order: {exc}"
        log.error("%s", report.skipped)
    finally:
        lock.release()
    for problem in report.missing:
        log.error("%s", problem)
    return report


@judges_actor
def release_store_problems(*, session: Session, actor: User, artifacts: ArtifactStore) -> list[str]:
    """Curators and admins: one sentence per thing in the releases folder that needs a person's attention.

    Everything ever set aside (newest first, with where it is now and why) and every recorded release whose
    files are missing.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    releases_root = artifacts.releases_root
    problems = [
        f"**{s.name}** was set aside on {s.set_aside_at:%Y-%m-%d %H:%M} UTC. {s.reason} Kept in `{s.path}`."
        for s in list_set_aside(releases_root)
    ]
    return problems + _missing(session, releases_root)


def acquire_writer_lock(releases_root: Path, *, wait_s: float = 30.0) -> WriterLock:
    """Take the writer lock for a cut, or refuse when another cut holds it for longer than ``wait_s``."""
    lock = WriterLock(releases_root)
    if not lock.acquire(wait_s):
        lock.release()
        raise ReleaseError("Another release is being cut right now; try again when it is done.")
    return lock
