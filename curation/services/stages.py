"""Stages per dataset (stage 1 annotate → stage 2 review → closed), review settings, and who may review.

Blinding is enforced here: an analyst reviews a dataset only after submitting their own stage-1 analysis of
it, and only while the curator has stage 2 open. Curators and admins may look at the review queue of any
dataset in stage 2 or later; they vote only if they, too, submitted a stage-1 analysis of it.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlmodel import Session, select

from curation.errors import BlindingViolation, NotFoundError, PermissionDenied, StageError
from curation.models import (
    Analysis,
    AnalysisStatus,
    Dataset,
    DatasetReview,
    ProposerDisplay,
    Role,
    Stage,
    User,
    utcnow,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import refuse_if_blind
from curation.services.datasets import list_datasets

__all__ = [
    "STAGE_LABELS",
    "dataset_stages",
    "get_review_settings",
    "has_submitted",
    "lock_for_review_write",
    "require_reviewer",
    "require_voter",
    "review_overview",
    "set_review_settings",
    "set_stage",
]

STAGE_LABELS = {
    Stage.ANNOTATE.value: "Stage 1 · annotate (blind)",
    Stage.REVIEW.value: "Stage 2 · review",
    Stage.CLOSED.value: "Stage 2 closed",
}
_NEXT = {
    Stage.ANNOTATE.value: {Stage.REVIEW.value},
    Stage.REVIEW.value: {Stage.CLOSED.value},
    Stage.CLOSED.value: {Stage.REVIEW.value},  # re-open: a curator may let late votes in
}


def _dataset(session: Session, dataset_id: int) -> Dataset:
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    return dataset


def get_review_settings(*, session: Session, dataset_id: int) -> DatasetReview:
    """The dataset's stage and review settings (an unsaved default row while it is in stage 1)."""
    row = session.get(DatasetReview, dataset_id)
    return row if row is not None else DatasetReview(dataset_id=dataset_id)


def dataset_stages(*, session: Session) -> dict[int, str]:
    """Stage of every dataset that has left stage 1 (others are in stage 1)."""
    return {r.dataset_id: r.stage for r in session.exec(select(DatasetReview)).all()}


def _stored(session: Session, dataset_id: int) -> DatasetReview:
    row = session.get(DatasetReview, dataset_id)
    if row is None:
        row = DatasetReview(dataset_id=dataset_id)
        session.add(row)
    return row


def _submitted_count(session: Session, dataset_id: int) -> int:
    return len(session.exec(select(Analysis.id).where(
        Analysis.dataset_id == dataset_id, Analysis.status == AnalysisStatus.SUBMITTED.value)).all())


@judges_actor
def set_stage(*, session: Session, actor: User, dataset_id: int, stage: Stage) -> DatasetReview:
    """Move a dataset to ``stage`` (curators and admins): open stage 2, close it, or re-open it."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = _dataset(session, dataset_id)
    row = _stored(session, dataset_id)
    target = Stage(stage).value
    if target == row.stage:
        raise StageError(f"'{dataset.name}' is already in {STAGE_LABELS[target]}.")
    if target not in _NEXT[row.stage]:
        raise StageError(f"'{dataset.name}' cannot go from {STAGE_LABELS[row.stage]} to {STAGE_LABELS[target]}.")
    if target == Stage.REVIEW.value and _submitted_count(session, dataset_id) == 0:
        raise StageError(f"Stage 2 of '{dataset.name}' cannot open: no analyst has submitted a stage-1 analysis.")
    now = utcnow()
    if target == Stage.REVIEW.value:
        row.opened_at, row.opened_by_id, row.closed_at, row.closed_by_id = now, actor.id, None, None
    else:
        row.closed_at, row.closed_by_id = now, actor.id
    row.stage = target
    row.updated_at = now
    session.add(row)
    session.flush()
    return row


@judges_actor
def set_review_settings(
    *, session: Session, actor: User, dataset_id: int, proposer_display: ProposerDisplay, source_visible: bool
) -> DatasetReview:
    """Choose what reviewers see about an item's origin (curators and admins).

    Named proposers need a visible source: an LLM item has no name, so names would give the source away.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = _dataset(session, dataset_id)
    display = ProposerDisplay(proposer_display).value
    if display == ProposerDisplay.NAMED.value and not source_visible:
        raise StageError(
            f"'{dataset.name}': named proposers would show which items the LLM wrote (they have no name); "
            "make the source visible as well, or keep proposers pseudonymous.")
    row = _stored(session, dataset_id)
    row.proposer_display, row.source_visible, row.updated_at = display, bool(source_visible), utcnow()
    session.add(row)
    session.flush()
    return row


def has_submitted(*, session: Session, dataset_id: int, user_id: int) -> bool:
    return session.exec(select(Analysis.id).where(
        Analysis.dataset_id == dataset_id, Analysis.annotator_id == user_id,
        Analysis.status == AnalysisStatus.SUBMITTED.value)).first() is not None


def _fresh(session: Session, actor: User) -> User:
    """The actor as stored now: a session that outlived a deactivation is refused."""
    user = session.get(User, actor.id) if actor.id is not None else None
    if user is None:
        raise PermissionDenied(f"The account '{actor.username}' no longer exists.")
    return user


@judges_actor
def require_reviewer(*, session: Session, actor: User, dataset_id: int) -> tuple[Dataset, DatasetReview, bool]:
    """May ``actor`` see the review of this dataset? Returns (dataset, settings, may vote)."""
    user = _fresh(session, actor)
    require_role(user, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    dataset = _dataset(session, dataset_id)
    review = get_review_settings(session=session, dataset_id=dataset_id)
    submitted = has_submitted(session=session, dataset_id=dataset_id, user_id=user.id or 0)
    if review.stage == Stage.ANNOTATE.value:
        raise StageError(f"'{dataset.name}' is still in stage 1; the curator opens stage 2 (review).")
    if user.role == Role.ANALYST.value and not submitted:
        raise BlindingViolation(
            f"Submit your own stage-1 analysis of '{dataset.name}' first: reviewing shows peers' decisions.")
    if not submitted:  # a curator or admin who annotates this dataset is one more annotator of it: blind too
        refuse_if_blind(session=session, actor=user, dataset=dataset.name,
                        what="Reviewing shows peers' decisions.")
    return dataset, review, submitted and review.stage == Stage.REVIEW.value


@judges_actor
def require_voter(*, session: Session, actor: User, dataset_id: int) -> tuple[Dataset, DatasetReview]:
    """Refuse unless ``actor`` may vote on this dataset now (stage 2 open, own stage 1 submitted, active)."""
    dataset, review, may_vote = require_reviewer(session=session, actor=actor, dataset_id=dataset_id)
    if review.stage != Stage.REVIEW.value:
        raise StageError(f"Stage 2 of '{dataset.name}' is closed; votes can no longer change.")
    if not may_vote:
        raise BlindingViolation(
            f"Only analysts who submitted a stage-1 analysis of '{dataset.name}' vote on it.")
    return dataset, review


def lock_for_review_write(*, session: Session, dataset_id: int) -> None:
    """Serialise writers of one dataset's review where the backend needs it.

    SQLite's Python driver starts the transaction at the first write, so a read-then-write would race; a
    no-op write first takes the database's write lock (waiting up to the busy timeout) and makes the reads
    that follow consistent. PostgreSQL locks rows instead (``SELECT ... FOR UPDATE`` on the vote), so voters
    on different items never wait for each other.
    """
    bind = session.get_bind()
    if bind.dialect.name == "sqlite":
        session.execute(text("UPDATE dataset_review SET stage = stage WHERE dataset_id = :d"), {"d": dataset_id})


@judges_actor
def review_overview(*, session: Session, actor: User) -> list[tuple[Dataset, DatasetReview]]:
    """The datasets the actor works on (analysts: assigned ones; curators and admins: all), with their stage; a
    dataset a kind imported with its gold (forkpaths import-<kind>) has no stages and is not listed."""
    from curation.services.kind_import import imported_by

    stages = {r.dataset_id: r for r in session.exec(select(DatasetReview)).all()}
    return [(d, stages.get(d.id or 0) or DatasetReview(dataset_id=d.id or 0))
            for d in list_datasets(session=session, actor=_fresh(session, actor))
            if imported_by(d) is None]  # a kind's imported datasets have no stages to curate
