"""Scoring runs as the database holds them: one run and the list, for evaluators, curators and admins.

Nothing here reads a run's files or scores anything, so this imports no data library and no task kind:
``forkpaths runs list`` starts at once. :mod:`curation.services.scoring` re-exports these.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from curation.errors import NotFoundError
from curation.models import Role, ScoringRun, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor

SCORING_ROLES = (Role.EVALUATOR, Role.CURATOR, Role.ADMIN)


@judges_actor
def get_run(*, session: Session, actor: User, run_id: int) -> ScoringRun:
    require_role(actor, *SCORING_ROLES)
    run = session.get(ScoringRun, run_id)
    if run is None:
        raise NotFoundError(f"There is no scoring run {run_id}.")
    return run


@judges_actor
def list_runs(*, session: Session, actor: User, release_version: str | None = None,
              kind: str | None = None) -> list[ScoringRun]:
    """Runs, newest first."""
    require_role(actor, *SCORING_ROLES)
    stmt = select(ScoringRun)
    if release_version:
        stmt = stmt.where(ScoringRun.release_version == release_version)
    if kind:
        stmt = stmt.where(ScoringRun.kind == kind)
    return list(session.exec(stmt.order_by(col(ScoringRun.id).desc())).all())
