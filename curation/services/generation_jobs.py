"""What the LLM generations run as background jobs share, whatever they generate (BLADE alternatives,
DiscoveryBench hypotheses, programmatic candidates): the person a job runs as, and for the generations over a
dataset their start (planned first, in the transaction that records the job, so a refused one is never queued;
one per dataset at a time), their
outcome and the end of their summary."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from curation.db import transactions
from curation.errors import NotFoundError
from curation.models import BackgroundJob, Dataset, RunStatus, User
from curation.services.actor import judges_actor
from curation.services.background_jobs import JobOutcome, start_job

__all__ = ["generation_outcome", "job_requester", "problems_text", "start_dataset_generation"]


def job_requester(engine: Engine, job: BackgroundJob) -> User:
    """The person who asked for ``job`` (detached from the session): the job runs as them.

    In a transaction of its own: the job spans transactions and reads its requester before its first step.

    Raises:
        NotFoundError: that account no longer exists.
    """
    with transactions(engine)() as s:  # its own: the job spans transactions
        actor = s.get(User, job.requested_by_id) if job.requested_by_id is not None else None
        if actor is None:
            raise NotFoundError(f"Job {job.id}: the person who asked for it no longer exists.")
        s.expunge(actor)
    return actor


@judges_actor
def start_dataset_generation(*, session: Session, kind: str, actor: User, dataset_id: int,
                             plan: Callable[..., Sequence[Any]]) -> int:
    """Record a generation over a dataset as a queued job of ``kind`` after planning it with
    ``plan(session=, actor=, dataset_id=)`` (which raises what refuses it), in the caller's transaction: the checks
    and the job's row commit together. Returns the job's id."""
    planned = plan(session=session, actor=actor, dataset_id=dataset_id)
    dataset = session.get(Dataset, dataset_id)
    name = dataset.name if dataset else str(dataset_id)
    return start_job(session=session, kind=kind, params={"dataset_id": dataset_id}, scope=f"dataset:{dataset_id}",
                     requester=actor, total=len(planned), what=f"An LLM generation for '{name}'")


def generation_outcome(report: Any, summary: Callable[[dict[str, Any]], tuple[str, str]]) -> JobOutcome:
    """A generation job's outcome from its report (a dataclass with ``cancelled``), described by ``summary``."""
    result = asdict(report)
    status = RunStatus.CANCELLED.value if report.cancelled else RunStatus.SUCCEEDED.value
    return JobOutcome(status, summary(result)[1], result)


def problems_text(errors: Sequence[str], rejected: Sequence[str]) -> str:
    """The end of a generation's summary: its failed calls and rejected items, a dozen at most, one a line."""
    details = [*(f"failed: {e}" for e in errors), *(f"rejected: {x}" for x in rejected)]
    return "  \n" + "  \n".join(details[:12]) if details else ""
