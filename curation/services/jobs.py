"""Long jobs (scoring runs, and background jobs: LLM alternative generation, ...) on procrastinate where the database is PostgreSQL; in the app's process on SQLite.

procrastinate is a distributed task queue that keeps its jobs in PostgreSQL (tables and functions applied by
migration 0013_h_queue), so a team that runs PostgreSQL runs no broker: ``forkpaths worker`` on any machine that
reaches the database and mounts the artifact store (:mod:`curation.artifacts`) takes jobs, claimed atomically by procrastinate (``SELECT … FOR UPDATE
SKIP LOCKED``). What each job does is the same function as on SQLite, :func:`curation.services.scoring.execute_run`,
which keeps status, progress and the cancel flag in the run's own row, so a cancel from the page reaches a job on
any machine.

A worker killed with ``kill -9`` stops beating (procrastinate's worker heartbeat, and the run's own
:mod:`curation.services.run_lifecycle` heartbeat); every live worker looks for such stalled jobs every
:data:`STALLED_CHECK_S` seconds and retries them, and the retried job takes the run over from the dead worker and
scores it from the start (no partial result is kept, so no item counts twice).

A run of several dataset files fans out (:mod:`curation.services.fanout`): its job coordinates, ``score_part``
helper jobs let idle workers score its other parts, and the result is combined in the files' order. When the
database goes away mid-job, the job raises (``sqlalchemy.exc.OperationalError``) instead of recording a failure
it could not write, and procrastinate retries it once the database answers; the retry takes the run over.
Workers name their connections ``forkpaths-worker/PID`` (``application_name``, seen in ``pg_stat_activity``).

On SQLite, :class:`curation.services.run_worker.RunWorker` (a thread pool in the app) runs the same function.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import col

from curation.db import transactions
from curation.models import RunStatus, ScoringRun
from curation.services.lifecycle import this_executor

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    import procrastinate

    from curation.artifacts import ArtifactStore
    from curation.services.background_jobs import JobSubmitter
    from curation.services.scoring import JudgeSettings, ScoringLimits
    from curation.settings import Settings

__all__ = ["JOB_MODULES", "JOB_TASK", "QUEUE", "RunHeldElsewhere", "RunSubmitter", "StallTimes", "defer_part_jobs",
           "enqueue_job", "enqueue_run", "is_postgres", "make_job_submitter", "procrastinate_app", "queue_submitter",
           "run_queue_worker", "warm_up"]

log = logging.getLogger(__name__)

QUEUE = "forkpaths"
SCORE_TASK = "forkpaths.score_run"
JOB_TASK = "forkpaths.background_job"  # any BackgroundJob (LLM alternative generation, ...): background_jobs.py
PART_TASK = "forkpaths.score_part"  # a helper of a fanned-out run: scores its queued parts (see .fanout)
WORKER_HEARTBEAT_S = 2.0  # procrastinate's worker heartbeat
STALLED_AFTER_S = 10.0  # a worker silent this long is presumed dead: its jobs are retried
STALLED_CHECK_S = 3.0
RETRY_WAIT_S = 15  # a job that failed for a reason that passes (the database away, its run held elsewhere) waits
# this long before its retry (``FORKPATHS_WORKER_RETRY_WAIT_S``); a fanned-out run's helper job a third of it


class RunHeldElsewhere(Exception):
    """A retried job found its run held by a scorer that may still be alive: retried later (by procrastinate)."""


class RunSubmitter(Protocol):
    def submit(self, run_id: int) -> Any: ...


def is_postgres(engine: Engine) -> bool:
    """Opens no transaction."""
    return engine.dialect.name == "postgresql"


def _connection_kwargs(engine: Engine) -> dict[str, Any]:
    """psycopg's conninfo for the engine's database, with the engine's search_path (a schema of its own, as the
    tests use, or one set in the URL), so procrastinate's tables sit beside forkpaths' own."""
    url = engine.url.set(drivername="postgresql")
    with engine.connect() as conn:
        path = str(conn.exec_driver_sql("SHOW search_path").scalar() or "")
    kwargs: dict[str, Any] = {"conninfo": url.render_as_string(hide_password=False)}
    if path and path.replace(" ", "") != '"$user",public':
        kwargs["kwargs"] = {"options": "-csearch_path=" + path.replace(" ", "")}
    return kwargs


def procrastinate_app(engine: Engine, retry_wait_s: int = RETRY_WAIT_S) -> procrastinate.App:
    """The queue's app for the engine's database, with forkpaths' tasks; ``retry_wait_s``: how long a failed job
    that is retried waits (the worker's, which retries jobs, reads it from the settings).
    The queue opens its own connections and transactions (procrastinate's), outside forkpaths' sessions."""
    import procrastinate
    import sqlalchemy.exc

    conn = _connection_kwargs(engine)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(**conn, min_size=1, max_size=4))
    app.task(name=SCORE_TASK, queue=QUEUE, pass_context=True,
             retry=procrastinate.RetryStrategy(max_attempts=20, wait=retry_wait_s, retry_exceptions={
                 RunHeldElsewhere, sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError}))(_score_run_task)
    app.task(name=JOB_TASK, queue=QUEUE, pass_context=True,
             retry=procrastinate.RetryStrategy(max_attempts=20, wait=retry_wait_s, retry_exceptions={
                 RunHeldElsewhere, sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError}))(
        _background_job_task)
    app.task(name=PART_TASK, queue=QUEUE, pass_context=True,
             retry=procrastinate.RetryStrategy(max_attempts=5, wait=max(1, retry_wait_s // 3), retry_exceptions={
                 sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError}))(_score_part_task)
    return app


# ------------------------------------------------------------------------------------ submitting


def enqueue_run(engine: Engine, run_id: int) -> int | None:
    """Put a registered run on the queue (PostgreSQL); returns procrastinate's job id (None: already queued).
    In a transaction of its own, after the one that registered the run committed (a worker must find it)."""
    import procrastinate.exceptions

    app = procrastinate_app(engine)
    with app.open():
        try:
            job_id = app.configure_task(SCORE_TASK, queueing_lock=f"run-{run_id}").defer(run_id=run_id)
        except procrastinate.exceptions.AlreadyEnqueued:
            return None
    with transactions(engine)() as s:
        s.connection().execute(update(ScoringRun).where(col(ScoringRun.id) == run_id).values(job_id=job_id))
    return job_id


def enqueue_job(engine: Engine, job_id: int) -> int | None:
    """Put a recorded background job on the queue (PostgreSQL); returns procrastinate's job id (None: already
    queued).
    In a transaction of its own, after the one that recorded the job committed (a worker must find it)."""
    import procrastinate.exceptions

    from curation.models import BackgroundJob

    app = procrastinate_app(engine)
    with app.open():
        try:
            queue_id = app.configure_task(JOB_TASK, queueing_lock=f"job-{job_id}").defer(job_id=job_id)
        except procrastinate.exceptions.AlreadyEnqueued:
            return None
    with transactions(engine)() as s:
        s.connection().execute(update(BackgroundJob).where(col(BackgroundJob.id) == job_id)
                               .values(job_id=queue_id))
    return queue_id


@dataclass
class _QueueSubmitter:
    engine: Engine

    def submit(self, run_id: int) -> int | None:
        return enqueue_run(self.engine, run_id)


def queue_submitter(engine: Engine) -> RunSubmitter:
    """What the app hands a registered run to on PostgreSQL: the queue (workers score it).
    Called after the transaction that registered a run commits; what it submits opens its own transactions."""
    return _QueueSubmitter(engine)


@dataclass
class _QueueJobs:
    engine: Engine

    def submit(self, job_id: int) -> int | None:
        return enqueue_job(self.engine, job_id)


def make_job_submitter(engine: Engine, settings: Callable[[], Settings]) -> JobSubmitter:
    """Where a recorded background job goes: procrastinate's workers on PostgreSQL, the app's threads on SQLite
    (:class:`curation.services.background_jobs.InProcessJobs`).
    Called after the transaction that recorded a job commits; the job opens its own transactions."""
    from curation.services.background_jobs import InProcessJobs

    if is_postgres(engine):
        return _QueueJobs(engine)
    return InProcessJobs(engine, settings)


# ------------------------------------------------------------------------------------ the job


def defer_part_jobs(engine: Engine, run_id: int, n: int) -> None:
    """Ask for ``n`` helper jobs on a fanned-out run: idle workers take them and score its parts.
    In the queue's own transaction (procrastinate), after the run's parts were committed."""
    if n <= 0:
        return
    app = procrastinate_app(engine)
    with app.open():
        task = app.configure_task(PART_TASK)
        for _ in range(n):
            task.defer(run_id=run_id)


def _score_run_task(context: Any, run_id: int) -> str:
    from curation.services.run_lifecycle import take_over_run_if_dead
    from curation.services.scoring import execute_run

    extra = context.additional_context
    engine: Engine = extra["engine"]
    take_over_run_if_dead(engine, run_id)
    fan_out = None if extra.get("no_fan_out") else (lambda rid, n: defer_part_jobs(engine, rid, n))
    run = execute_run(engine, run_id, artifacts=extra["artifacts"],
                      judges=extra["judges"], limits=extra["limits"], fan_out=fan_out, raise_when_database_lost=True)
    if run.status == RunStatus.RUNNING.value and run.executor != this_executor():
        raise RunHeldElsewhere(f"run {run_id} is held by {run.executor}, whose heartbeat has not lapsed yet")
    return run.status


def _background_job_task(context: Any, job_id: int) -> str:
    from curation.services.background_jobs import execute_job, take_over_if_dead
    from curation.settings import Settings

    extra = context.additional_context
    engine: Engine = extra["engine"]
    take_over_if_dead(engine, job_id)
    job = execute_job(engine, job_id, extra.get("settings") or Settings())
    if job.status == RunStatus.RUNNING.value and job.executor != this_executor():
        raise RunHeldElsewhere(f"job {job_id} is held by {job.executor}, whose heartbeat has not lapsed yet")
    return job.status


def _score_part_task(context: Any, run_id: int) -> int:
    from curation.services.scoring import score_parts

    extra = context.additional_context
    return score_parts(extra["engine"], run_id, artifacts=extra["artifacts"],
                       judges=extra["judges"], limits=extra["limits"])


# ------------------------------------------------------------------------------------ the worker

#: What a scoring job imports on first use (the services, the task kinds, the engine, patsy for model formulas):
#: a worker imports them at its start, so its first run is not the one that pays for them.
JOB_MODULES = ("curation.services.scoring", "curation.services.fanout", "curation.services.background_jobs",
               "evaluation.tasks", "evaluation.transform_credit", "evaluation.groundtruth.convert",
               "evaluation.sandbox.batch", "evaluation.judges.offline", "patsy")


def warm_up() -> None:
    """Import :data:`JOB_MODULES` now (``forkpaths worker`` at its start, while the sandbox starts too), then
    set what is loaded aside from the garbage collector (:func:`gc.freeze`): the modules' hundreds of thousands
    of objects live as long as the worker, and each full collection walked them all again (a tenth of a second,
    every few runs)."""
    import gc
    import importlib

    for name in JOB_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # a job that needs it says so when it runs
            log.warning("the worker could not import %s ahead of its jobs", name, exc_info=True)
    gc.collect()
    gc.freeze()


@dataclass(frozen=True)
class StallTimes:
    """How fast a dead worker is noticed: ``after`` seconds without a heartbeat (``FORKPATHS_WORKER_STALLED_AFTER_S``);
    workers beat five times and look for stalled jobs three times within that."""

    after: float = STALLED_AFTER_S

    @property
    def heartbeat(self) -> float:
        return min(WORKER_HEARTBEAT_S, self.after / 5)

    @property
    def check(self) -> float:
        return min(STALLED_CHECK_S, self.after / 3)


async def _retry_stalled(app: procrastinate.App, engine: Engine, stall: StallTimes) -> None:
    """Retry the jobs of workers that stopped beating (a ``kill -9``, a lost machine)."""
    from curation.services.run_lifecycle import interrupt_dead_runs

    while True:
        await asyncio.sleep(stall.check)
        try:
            for job in await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stall.after,
                                                              queue=QUEUE):
                log.warning("job %s (%s) was held by a worker that stopped; retrying it", job.id, job.task_kwargs)
                await app.job_manager.retry_job(job)

            def sweep() -> None:
                from curation.services.background_jobs import interrupt_dead_jobs

                with transactions(engine)() as s:
                    interrupt_dead_runs(session=s)
                    interrupt_dead_jobs(session=s)

            await asyncio.to_thread(sweep)
        except Exception:  # noqa: BLE001 - the database away for a moment: the next round tries again
            log.exception("looking for stalled jobs failed; trying again")


def run_queue_worker(engine: Engine, *, artifacts: ArtifactStore, judges: JudgeSettings,
                     limits: ScoringLimits | None = None, concurrency: int = 1,
                     settings: Settings | None = None) -> None:
    """``forkpaths worker``: take jobs until stopped (SIGINT/SIGTERM end it after the jobs it holds).
    It spans transactions: each job it takes opens its own."""
    app = procrastinate_app(engine, settings.worker_retry_wait_s if settings is not None else RETRY_WAIT_S)
    stall = StallTimes(settings.worker_stalled_after_s) if settings is not None else StallTimes()

    async def main() -> None:
        async with app.open_async():
            watcher = asyncio.create_task(_retry_stalled(app, engine, stall))
            try:
                await _work_until_stopped(lambda: app.run_worker_async(
                    queues=[QUEUE], concurrency=concurrency, update_heartbeat_interval=stall.heartbeat,
                    stalled_worker_timeout=stall.after, name=this_executor(), install_signal_handlers=False,
                    additional_context={"engine": engine, "artifacts": artifacts,
                                        "judges": judges, "limits": limits,
                                        "settings": settings}), pause_s=stall.heartbeat)
            finally:
                watcher.cancel()

    asyncio.run(main())


async def _work_until_stopped(work: Callable[[], Coroutine[Any, Any, None]], *, pause_s: float) -> None:
    """Run procrastinate's worker loop (``work``) until SIGINT or SIGTERM, which stop it after the jobs it holds
    (a second signal acts as if none were handled). procrastinate's loop ends by itself when one of its own queries
    loses its connection (its heartbeat or its fetch of the next job, at the moment the database drops the
    worker's connections): it is started again, so that the worker outlives the database going away for a moment;
    the jobs the ended loop held are retried as stalled ones."""
    import signal

    import procrastinate.exceptions

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def asked_to_stop() -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, asked_to_stop)
    stopping = asyncio.create_task(stop.wait())
    try:
        while True:
            worker = asyncio.create_task(work())
            await asyncio.wait({worker, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                worker.cancel()  # procrastinate stops taking jobs and waits for the ones it holds
                with contextlib.suppress(asyncio.CancelledError):
                    await worker
                return
            try:
                worker.result()
                log.warning("the worker's queue loop ended by itself (see above); starting it again")
            except procrastinate.exceptions.ConnectorException:
                log.warning("the worker's queue loop lost the database; starting it again", exc_info=True)
            await asyncio.wait({stopping}, timeout=pause_s)
            if stop.is_set():
                return
    finally:
        stopping.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
