"""Long jobs other than scoring runs (LLM alternative generation now, agent runs next), recorded in
:class:`curation.models.BackgroundJob`: what was asked, by whom, status, progress, the cancel flag and the result
summary all live in the database, so every page, every app process and every worker machine sees the same state,
and a cancel from the page reaches the job wherever it runs.

Where it runs: on PostgreSQL a procrastinate worker (``forkpaths worker``, task ``forkpaths.background_job`` in
:mod:`curation.services.jobs`); on SQLite a thread in the app's process (:class:`InProcessJobs`). Both call
:func:`execute_job`, which claims the job atomically, runs its kind's function under a heartbeat and records the
outcome. Claiming, the heartbeat, interruption and take-over are :mod:`curation.services.lifecycle`'s, shared
with scoring runs; where a job is handed to (the queue or these threads) is
:func:`curation.services.jobs.make_job_submitter`'s.

A kind of job is one of :func:`job_kinds`: those every task kind shares (:data:`KINDS`) and those the task kinds
bring (``TaskKind.jobs``), each a ``"module:function"`` imported when a job of that kind runs; its function gets
the engine, the job row, a :class:`JobControl` (progress, cancel) and the settings, and returns a
:class:`JobOutcome`.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

import sqlalchemy.exc
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from curation.db import transactions
from curation.errors import USER_ERRORS, JobError, NotFoundError
from curation.models import BackgroundJob, Role, RunStatus, User, utcnow
from curation.services import lifecycle
from curation.services.actor import hold_actor, judges_actor
from curation.services.lifecycle import Heartbeat, ScoringHere, held, this_executor

if TYPE_CHECKING:
    from curation.settings import Settings

__all__ = ["ACTIVE", "KINDS", "InProcessJobs", "JobControl", "JobOutcome", "JobSubmitter", "cancel_job",
           "claim_job", "dismiss_job", "execute_job", "interrupt_dead_jobs", "job_kind_of", "job_kinds", "latest_job", "start_job",
           "take_over_if_dead"]

log = logging.getLogger(__name__)

KINDS: dict[str, str] = {"agent_run": "curation.services.agent_runs:run_agent_job"}
"""The kinds of job every task kind shares; a task kind's own (its curation's LLM generation) it declares."""
ACTIVE = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)
_DB_AWAY = (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError)


@dataclass
class JobOutcome:
    status: str  # succeeded | failed | cancelled
    message: str
    result: dict[str, Any] = field(default_factory=dict)


class JobSubmitter(Protocol):
    def submit(self, job_id: int) -> Any: ...


def _key(job_id: int) -> tuple[str, int]:
    return ("job", job_id)


# ------------------------------------------------------------------------------------ asking, cancelling


def start_job(*, session: Session, kind: str, params: dict[str, Any], scope: str, requester: User | None,
              total: int = 0, what: str = "A job") -> int:
    """Record a queued job in the caller's transaction (the caller commits, then hands the id to a submitter:
    :func:`curation.services.jobs.make_job_submitter`). ``requester``, whom the job runs as, is judged again here
    and held until the commit (:func:`curation.services.actor.hold_actor`), so the permission a starter checked
    still holds when its job is written. One job per scope: a second one while the first is queued or running is
    refused with :class:`JobError` (the unique ``active_scope`` settles a race between two machines)."""
    if kind not in job_kinds():
        raise JobError(f"There is no kind of job called '{kind}' (known: {', '.join(sorted(job_kinds()))}).")
    if requester is not None:
        requester = hold_actor(session=session, actor=requester)
    busy = f"{what} is already running here; wait for it to end or cancel it."
    current = session.exec(select(BackgroundJob).where(BackgroundJob.active_scope == scope)).first()
    if current is not None:
        raise JobError(f"{busy} (job {current.id}, {current.status}, {current.progress_done} of "
                       f"{current.progress_total} done)")
    job = BackgroundJob(kind=kind, params=params, scope=scope, active_scope=scope,
                        requested_by_id=requester.id if requester is not None else None, progress_total=total,
                        stage="queued")
    session.add(job)
    try:
        session.flush()
    except sqlalchemy.exc.IntegrityError as exc:  # the caller's transaction rolls back with the error
        raise JobError(busy) from exc
    return int(job.id or 0)


def _may_change(actor: User, job: BackgroundJob) -> bool:
    return job.requested_by_id == actor.id or actor.role in (Role.CURATOR.value, Role.ADMIN.value)


def _get(session: Session, job_id: int) -> BackgroundJob:
    job = session.get(BackgroundJob, job_id)
    if job is None:
        raise NotFoundError(f"There is no job {job_id}.")
    return job


@judges_actor
def cancel_job(*, session: Session, actor: User, job_id: int) -> BackgroundJob:
    """Ask a job to stop. A queued job ends ``cancelled`` at once; a running one stops at its next step (it reads
    the flag from the database, wherever it runs) and keeps what it stored."""
    job = _get(session, job_id)
    if not _may_change(actor, job):
        raise JobError("Only the person who started this job, a curator or an admin can cancel it.")
    if job.status not in ACTIVE:
        raise JobError(f"Job {job_id} has already ended ({job.status}); there is nothing to cancel.")
    job.cancel_requested = True
    if job.status == RunStatus.QUEUED.value:
        job.status, job.finished_at, job.active_scope = RunStatus.CANCELLED.value, utcnow(), None
        job.message = "Cancelled before it started; nothing was stored."
    session.add(job)
    return job


@judges_actor
def dismiss_job(*, session: Session, actor: User, job_id: int) -> None:
    """The page no longer shows this ended job's summary."""
    job = _get(session, job_id)
    if not _may_change(actor, job):
        raise JobError("Only the person who started this job, a curator or an admin can dismiss its report.")
    if job.status in ACTIVE:
        raise JobError(f"Job {job_id} is still {job.status}; cancel it first.")
    job.dismissed_at = utcnow()
    session.add(job)


def latest_job(*, session: Session, kind: str, scope: str) -> BackgroundJob | None:
    return session.exec(select(BackgroundJob).where(BackgroundJob.kind == kind, BackgroundJob.scope == scope)
                        .order_by(col(BackgroundJob.id).desc())).first()


# ------------------------------------------------------------------------------------ lifecycle


def claim_job(engine: Engine, job_id: int) -> BackgroundJob:
    """Atomically take a queued job for this process (:func:`curation.services.lifecycle.claim`). A queued job
    whose cancel was asked ends ``cancelled`` here. Returns the job as it stands.
    In a transaction of its own, committed before the job's work starts: another worker sees the claim at
    once."""
    lifecycle.claim(engine, BackgroundJob, job_id, cancelled={
        "active_scope": None, "message": "Cancelled before it started; nothing was stored."})
    with transactions(engine)() as s:
        return _get(s, job_id)


class JobControl:
    """What a running job's function reports to (progress) and asks (was a cancel requested?), both through the
    database."""

    def __init__(self, engine: Engine, job_id: int,
                 on_progress: Callable[[int, int, str], None] | None = None) -> None:
        self.engine, self.job_id, self.on_progress = engine, job_id, on_progress
        self._cancel = False

    def progress(self, done: int, total: int, stage: str) -> None:
        if self.on_progress is not None:  # e.g. the CLI's progress bar
            self.on_progress(done, total, stage)
        with transactions(self.engine)() as s:
            s.connection().execute(update(BackgroundJob).where(*held(BackgroundJob, self.job_id)).values(
                progress_done=done, progress_total=total, stage=stage[:256], heartbeat_at=utcnow()))
            job = s.get(BackgroundJob, self.job_id)
            self._cancel = bool(job and job.cancel_requested)

    def cancelled(self) -> bool:
        """Whether a cancel was asked (read afresh from the database)."""
        with transactions(self.engine)() as s:
            job = s.get(BackgroundJob, self.job_id)
            self._cancel = bool(job and job.cancel_requested)
        return self._cancel


def _finish(engine: Engine, job_id: int, outcome: JobOutcome) -> None:
    with transactions(engine)() as s:
        s.connection().execute(update(BackgroundJob).where(*held(BackgroundJob, job_id)).values(
            status=outcome.status, message=outcome.message, result=outcome.result, finished_at=utcnow(),
            active_scope=None, stage="done" if outcome.status == RunStatus.SUCCEEDED.value else outcome.status))


def job_kinds() -> dict[str, str]:
    """Every kind of job → its ``"module:function"``: the shared ones, then those the task kinds bring (the task
    registry is imported here: every command's start-up sweeps dead jobs through this module, and the registry
    loads every kind)."""
    from evaluation import tasks as task_kinds

    return {**KINDS, **{job.name: job.runner for kind in task_kinds.KINDS.values() for job in kind.jobs}}


def job_kind_of(runner: str) -> str:
    """The name of the kind of job that ``runner`` (``"module:function"``) runs, as it is declared: by a task kind
    (``TaskKind.jobs``) or among the shared ones (:data:`KINDS`). A service that starts jobs takes its kind's name
    from here (``JOB_KIND = job_kind_of(f"{__name__}:run_...")``), so the name recorded is the one declared.

    Raises:
        LookupError: no kind of job, or more than one, is run by ``runner`` (a mistake in the declarations).
    """
    names = [name for name, declared in job_kinds().items() if declared == runner]
    if len(names) != 1:
        raise LookupError(f"{'No' if not names else 'More than one'} kind of background job is declared to run "
                          f"{runner} ({', '.join(names) or 'TaskKind.jobs or background_jobs.KINDS'}).")
    return names[0]


def _runner(kind: str) -> Callable[[Engine, BackgroundJob, JobControl, Settings], JobOutcome]:
    module, _, name = job_kinds()[kind].partition(":")
    fn: Callable[[Engine, BackgroundJob, JobControl, Settings], JobOutcome] = getattr(
        importlib.import_module(module), name)
    return fn


def execute_job(engine: Engine, job_id: int, settings: Settings,
                on_progress: Callable[[int, int, str], None] | None = None) -> BackgroundJob:
    """Claim the job and run it here (a worker's task, or the app's thread on SQLite). A job someone else holds
    is left alone. Errors written for people end the job ``failed`` with their sentence; the database going away
    propagates (the queue retries the job, which is then taken over from this process).
    It spans transactions: a job runs for minutes and stores each step in one of its own
    (:func:`curation.db.transactions`)."""
    job = claim_job(engine, job_id)
    if job.status != RunStatus.RUNNING.value or job.executor != this_executor():
        return job
    control = JobControl(engine, job_id, on_progress)
    with ScoringHere(_key(job_id)), Heartbeat(lambda: lifecycle.beat(engine, BackgroundJob, job_id)):
        try:
            outcome = _runner(job.kind)(engine, job, control, settings)
        except _DB_AWAY:
            raise
        except USER_ERRORS as exc:
            outcome = JobOutcome(RunStatus.FAILED.value, str(exc))
        except Exception as exc:  # noqa: BLE001 - recorded on the job; the worker goes on with the next
            log.exception("job %s (%s) failed", job_id, job.kind)
            outcome = JobOutcome(RunStatus.FAILED.value, f"It failed unexpectedly: {type(exc).__name__}: {exc}. "
                                 "The worker's log has the details.")
        _finish(engine, job_id, outcome)
    with transactions(engine)() as s:
        return _get(s, job_id)


def take_over_if_dead(engine: Engine, job_id: int) -> None:
    """A retried queue job: a job left ``running`` by a dead worker (or by this process, whose run of it broke
    off) goes back to ``queued`` so that this worker can claim it (what it stored before is kept).
    In a transaction of its own: a retried queue job calls it before any other."""
    lifecycle.take_over_if_dead(engine, BackgroundJob, job_id, key=_key(job_id))


def _interrupt(job: BackgroundJob, now: datetime) -> None:
    host, _, rest = job.executor.partition("/")
    who = f"the process running it (pid {rest.split('/')[0]} on {host})" if host else "the process running it"
    job.status, job.finished_at, job.active_scope = RunStatus.INTERRUPTED.value, now, None
    job.message = (f"Interrupted: {who} stopped after {job.progress_done} of {job.progress_total} steps; "
                   "what it stored before is kept. Start it again to do the rest.")


def interrupt_dead_jobs(*, session: Session) -> list[int]:
    """Jobs left ``running`` by a process that died: queued again when they are a queue worker's (procrastinate
    retries them), else ``interrupted`` with what was kept. Called by the app's executor, the page and workers."""
    return lifecycle.sweep_dead(session=session, table=BackgroundJob, interrupt=_interrupt)


# ------------------------------------------------------------------------------------ where jobs run


class InProcessJobs:
    """SQLite: jobs run in threads of the app's own process (no extra service). On start, jobs whose process
    died are marked ``interrupted`` and jobs still queued are run."""

    def __init__(self, engine: Engine, settings: Callable[[], Settings], max_workers: int = 2) -> None:
        self.engine, self.settings = engine, settings  # read when a job starts: the environment of that moment
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="forkpaths-jobs")
        self._futures: dict[int, Future[BackgroundJob]] = {}
        with transactions(engine)() as s:
            interrupt_dead_jobs(session=s)
            queued = [j.id for j in s.exec(select(BackgroundJob).where(
                BackgroundJob.status == RunStatus.QUEUED.value, col(BackgroundJob.job_id).is_(None)))]
        for job_id in queued:
            if job_id is not None:
                self.submit(job_id)

    def submit(self, job_id: int) -> Future[BackgroundJob]:
        current = self._futures.get(job_id)
        if current is not None and not current.done():
            return current
        future = self._pool.submit(lambda: execute_job(self.engine, job_id, self.settings()))
        self._futures[job_id] = future
        return future

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)
