"""The stage-1 blinding rule, in one place, for every service that can show stage-1 work.

Whoever has a stage-1 analysis of a dataset to do and has not submitted it is blind to peers' stage-1 work on
that dataset, whatever their role: an admin or curator who annotates a dataset is one more annotator of it,
and seeing a peer's variables or model first would bias their own analysis. "Has an analysis to do" means
being assigned to the dataset or having started an analysis of it (an assignment removed after starting does
not end the blindness). Analysts additionally stay blind to every dataset they have not submitted, assigned
or not (they have no business with other datasets' stage-1 work before their own is in).

Submitting one's analysis ends the blindness for that dataset. A curator or admin who will not annotate a
dataset after all can also be unassigned (by an admin) before starting.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlmodel import Session, select

from curation.errors import BlindingViolation
from curation.models import Analysis, AnalysisStatus, Dataset, DatasetAssignment, Role, User
from curation.services.actor import judges_actor

__all__ = ["blind_datasets", "blinding_reason", "is_blind", "refuse_if_blind"]


def _states(session: Session, user_id: int) -> tuple[dict[int, str], set[int]]:
    analyses = session.exec(select(Analysis).where(Analysis.annotator_id == user_id)).all()
    assigned = session.exec(select(DatasetAssignment.dataset_id).where(DatasetAssignment.user_id == user_id)).all()
    return {a.dataset_id: a.status for a in analyses}, set(assigned)


def _blind(actor: User, dataset_id: int, status: dict[int, str], assigned: set[int]) -> bool:
    if status.get(dataset_id) == AnalysisStatus.SUBMITTED.value:
        return False
    if actor.role == Role.ANALYST.value:
        return True
    return dataset_id in status or dataset_id in assigned


def blinding_reason(dataset_name: str, *, started: bool, assigned: bool) -> str:
    """The sentence shown in place of peers' stage-1 work on ``dataset_name``."""
    if started:
        return (f"You have an unsubmitted stage-1 analysis of '{dataset_name}', so peers' stage-1 work on it "
                "stays hidden from you until you submit yours.")
    if assigned:
        return (f"You are assigned to annotate '{dataset_name}' and have not submitted your stage-1 analysis, "
                "so peers' stage-1 work on it stays hidden from you until you submit yours (or an admin "
                "removes the assignment).")
    return f"Peers' stage-1 work on '{dataset_name}' stays hidden from you until you submit your own analysis of it."


@judges_actor
def is_blind(*, session: Session, actor: User, dataset_id: int) -> bool:
    """True when ``actor`` must not see peers' stage-1 work on the dataset (see the module docstring)."""
    status, assigned = _states(session, actor.id or 0)
    return _blind(actor, dataset_id, status, assigned)


@judges_actor
def blind_datasets(*, session: Session, actor: User, names: Iterable[str]) -> dict[str, str]:
    """Which of the datasets called ``names`` ``actor`` is blind to, each with the sentence saying why.

    A name that no registered dataset has any more is not blind: nobody can annotate it.
    """
    wanted = sorted(set(names))
    if not wanted:
        return {}
    status, assigned = _states(session, actor.id or 0)
    rows = session.exec(select(Dataset).where(Dataset.name.in_(wanted))).all()  # type: ignore[attr-defined]
    return {
        d.name: blinding_reason(d.name, started=(d.id or 0) in status, assigned=(d.id or 0) in assigned)
        for d in sorted(rows, key=lambda d: d.name)
        if _blind(actor, d.id or 0, status, assigned)
    }


def refuse_if_blind(session: Session, actor: User, dataset: str, what: str = "") -> None:
    """Raise :class:`BlindingViolation` (why, then ``what`` was refused) when ``actor`` is blind to the stage-1
    work of the dataset called ``dataset``: for services that show that work, directly (the review queue) or
    under another name (MCQs, generated alternatives' seeds, ground truth in scoring, judge decisions)."""
    withheld = blind_datasets(session=session, actor=actor, names=[dataset])
    if withheld:
        raise BlindingViolation(" ".join([*withheld.values(), what]).strip())
