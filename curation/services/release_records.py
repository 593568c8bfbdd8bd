"""Release records as the database holds them: the list, one release's record, and what an actor is blind to.

Nothing here reads a release's files, so this imports no data library (no pandas, no task kinds): ``forkpaths
release list`` starts at once. :mod:`curation.services.releases` re-exports these for everything else.
"""

from __future__ import annotations

from sqlmodel import Session, select

from curation.errors import NotFoundError
from curation.models import ReleaseRecord, Role, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import blind_datasets, summary_holding


def semver_key(v: str) -> tuple[int, ...]:
    """A release version's sort key ("1.10.0" after "1.9.0")."""
    return tuple(int(x) for x in v.split("."))


def release_record(*, session: Session, version: str) -> ReleaseRecord:
    """The record of release ``version``, with no role check (services check their actor first).

    Raises:
        NotFoundError: no such release (the sentence lists the known ones).
    """
    row = session.exec(select(ReleaseRecord).where(ReleaseRecord.version == version)).first()
    if row is None:
        known = ", ".join(r.version for r in session.exec(select(ReleaseRecord)).all()) or "none yet"
        raise NotFoundError(f"There is no release {version} (releases: {known}).")
    return row


def _withheld(session: Session, actor: User, record: ReleaseRecord) -> dict[str, str]:
    """The datasets of ``record`` whose stage-1 work ``actor`` is blind to, with the reason for each: only
    datasets that hold recorded work in this release (one released with its data alone hides nothing)."""
    return blind_datasets(session=session, actor=actor, names=record.summary, holding=summary_holding(record.summary))


@judges_actor
def list_release_records(*, session: Session, actor: User) -> list[ReleaseRecord]:
    """Every cut release, newest version first: curators and admins."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    rows = session.exec(select(ReleaseRecord)).all()
    return sorted(rows, key=lambda r: semver_key(r.version), reverse=True)


@judges_actor
def get_release(*, session: Session, actor: User, version: str) -> ReleaseRecord:
    """The record of release ``version`` (its metadata and counts): curators and admins."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    return release_record(session=session, version=version)


@judges_actor
def withheld_in_release(*, session: Session, actor: User, version: str) -> dict[str, str]:
    """The datasets of release ``version`` whose stage-1 work ``actor`` may not see yet, each with why.

    Such a release cannot be downloaded or exported by them, and comparing it leaves those datasets out.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    return _withheld(session, actor, release_record(session=session, version=version))
