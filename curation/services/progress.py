"""Who has done what: per dataset and analyst for curators/admins; own rows plus team counts for analysts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func
from sqlmodel import Session, col, select

from curation.models import (
    Analysis,
    AnalysisStatus,
    ConceptualVariable,
    Dataset,
    DatasetAssignment,
    Role,
    StatModel,
    Transform,
    User,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor

__all__ = ["Progress", "ProgressRow", "TeamProgress", "progress_overview"]


class ProgressRow(BaseModel):
    dataset: str
    annotator: str
    status: str  # not started | draft | submitted
    variables: int = 0
    transforms: int = 0
    models: int = 0
    submitted_at: datetime | None = None

    @property
    def decisions(self) -> int:
        return self.variables + self.transforms + self.models


class TeamProgress(BaseModel):
    dataset: str
    analysts_assigned: int
    analyses_started: int
    analyses_submitted: int
    decisions_recorded: int


class Progress(BaseModel):
    rows: list[ProgressRow]
    team: list[TeamProgress]
    sees_everyone: bool


def _counts(session: Session, model: Any) -> dict[int, int]:
    stmt = select(model.analysis_id, func.count()).group_by(model.analysis_id)
    return {aid: n for aid, n in session.exec(stmt).all()}


@judges_actor
def progress_overview(*, session: Session, actor: User) -> Progress:
    """Progress of stage 1. Analysts get their own rows and anonymous team counts only."""
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    sees_everyone = actor.role in (Role.CURATOR.value, Role.ADMIN.value)
    # archived datasets are out of the annotation work, so out of its progress; so are datasets a kind imported with
    # their gold (they have no stages to curate)
    from curation.services.kind_import import imported_by

    datasets = {d.id: d for d in session.exec(select(Dataset).where(col(Dataset.archived_at).is_(None))).all()
                if imported_by(d) is None}
    users = {u.id: u for u in session.exec(select(User)).all()}
    assignments = session.exec(select(DatasetAssignment)).all()
    analyses = {(a.dataset_id, a.annotator_id): a for a in session.exec(select(Analysis)).all()}
    nv, nt, nm = _counts(session, ConceptualVariable), _counts(session, Transform), _counts(session, StatModel)

    visible_datasets = set(datasets) if sees_everyone else {
        a.dataset_id for a in assignments if a.user_id == actor.id
    }
    pairs = {p for p in {(a.dataset_id, a.user_id) for a in assignments} | set(analyses) if p[0] in datasets}
    rows: list[ProgressRow] = []
    team: dict[int, TeamProgress] = {}
    for ds_id, user_id in sorted(pairs, key=lambda p: (datasets[p[0]].name, users[p[1]].username)):
        if ds_id not in visible_datasets:
            continue
        analysis = analyses.get((ds_id, user_id))
        aid = analysis.id if analysis else None
        row = ProgressRow(
            dataset=datasets[ds_id].name,
            annotator=users[user_id].display_name or users[user_id].username,
            status=analysis.status if analysis else "not started",
            variables=nv.get(aid, 0) if aid else 0,
            transforms=nt.get(aid, 0) if aid else 0,
            models=nm.get(aid, 0) if aid else 0,
            submitted_at=analysis.submitted_at if analysis else None,
        )
        t = team.setdefault(
            ds_id, TeamProgress(dataset=row.dataset, analysts_assigned=0, analyses_started=0,
                                analyses_submitted=0, decisions_recorded=0)
        )
        if any(a.dataset_id == ds_id and a.user_id == user_id for a in assignments):
            t.analysts_assigned += 1
        if analysis:
            t.analyses_started += 1
            t.analyses_submitted += analysis.status == AnalysisStatus.SUBMITTED.value
            t.decisions_recorded += row.decisions
        if sees_everyone or user_id == actor.id:
            rows.append(row)
    return Progress(rows=rows, team=list(team.values()), sees_everyone=sees_everyone)
