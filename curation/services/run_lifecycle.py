"""A scoring run's lifecycle: the shared one of :mod:`curation.services.lifecycle` (claim, heartbeat, take-over,
who is alive) on :class:`curation.models.ScoringRun`, with what is a run's own: a run taken over is scored again
from the start, and an interrupted run says how far it got in its kind's words."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from curation.db import transactions
from curation.errors import NotFoundError
from curation.models import RunStatus, ScoringRun
from curation.services import lifecycle
from curation.services.lifecycle import (
    HEARTBEAT_S,
    LEASE_S,
    Heartbeat,
    ScoringHere,
    executor_alive,
    orphaned_here,
    this_executor,
)

__all__ = ["HEARTBEAT_S", "LEASE_S", "Heartbeat", "ScoringHere", "beat", "claim_run", "executor_alive",
           "interrupt_dead_runs", "orphaned_here", "take_over_run_if_dead", "this_executor"]


def claim_run(engine: Engine, run_id: int) -> ScoringRun:
    """Atomically take a queued run for this process (:func:`curation.services.lifecycle.claim`); a queued run
    whose cancel was asked ends ``cancelled`` here. Returns the run as it stands after the attempt.
    In a transaction of its own, committed before the run's work starts: another worker sees the claim at
    once."""
    lifecycle.claim(engine, ScoringRun, run_id, cancelled={"message": "Cancelled before it started."})
    with transactions(engine)() as s:
        run = s.get(ScoringRun, run_id)
        if run is None:
            raise NotFoundError(f"There is no scoring run {run_id}.")
        return run


def beat(engine: Engine, run_id: int) -> None:
    """The heartbeat thread's write: only while this process still holds the run.
    In a short transaction of its own, from the heartbeat thread (never in the run's)."""
    lifecycle.beat(engine, ScoringRun, run_id)


def take_over_run_if_dead(engine: Engine, run_id: int) -> None:
    """A run left ``running`` (or marked ``interrupted``) by a dead worker, or by this one when its scoring broke
    off (the database away while it wrote the outcome: the job is retried), goes back to ``queued`` for this
    job, to be scored from the start (no partial result is kept, so no item counts twice).
    In a transaction of its own: a retried queue job calls it before any other."""
    lifecycle.take_over_if_dead(engine, ScoringRun, run_id, key=run_id,
                                from_statuses=(RunStatus.RUNNING.value, RunStatus.INTERRUPTED.value),
                                reset={"progress_done": 0, "finished_at": None})


def _items_noun(kind: str) -> str:
    """A run's items in its kind's words ("analyses", "task folders", ...)."""
    from evaluation.tasks import UnknownKind, task_kind

    try:
        return str(task_kind(kind).item_noun)
    except UnknownKind:
        return "items"


def _interrupt(run: ScoringRun, now: datetime) -> None:
    beat = run.heartbeat_at or run.started_at or run.created_at
    host, _, rest = run.executor.partition("/")
    who = f"the process scoring it (pid {rest.split('/')[0]} on {host})" if host else "the process scoring it"
    run.status, run.finished_at = RunStatus.INTERRUPTED.value, now
    run.message = (f"Interrupted: {who} stopped after {run.progress_done} of {run.progress_total} "
                   f"{_items_noun(run.kind)} "
                   f"(last sign of life {beat:%Y-%m-%d %H:%M:%S} UTC); no scores were kept. Re-score it "
                   f"(Runs page, or forkpaths runs rescore {run.id}).")


def interrupt_dead_runs(*, session: Session) -> list[int]:
    """Runs left ``running`` by a process that died are marked ``interrupted``, or queued again when they are a
    worker's job. Every forkpaths command, the app's start, the Runs page and the workers call it, so such a run
    does not stay "running"."""
    return lifecycle.sweep_dead(session=session, table=ScoringRun, interrupt=_interrupt,
                                requeue={"progress_done": 0})
