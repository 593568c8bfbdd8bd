"""The app's background scorer: a small thread pool that runs :func:`curation.services.scoring.execute_run`
outside any page's script, so leaving or reloading the page does not stop a run.

Threads rather than processes: the expensive parts (agent code) already run in the sandbox's own subprocesses,
the rest is judging and numpy. Status, progress and cancellation live in the database, so every page (and every
app process on PostgreSQL) sees the same state. On start the worker marks runs whose scorer died as
``interrupted`` and picks up runs still queued.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor

from sqlalchemy.engine import Engine
from sqlmodel import select

from curation.artifacts import ArtifactStore
from curation.db import transactions
from curation.models import RunStatus, ScoringRun
from curation.services.jobs import RunSubmitter, is_postgres, queue_submitter
from curation.services.run_lifecycle import interrupt_dead_runs
from curation.services.scoring import JudgeSettings, ScoringLimits, execute_run

__all__ = ["RunWorker", "make_submitter"]

log = logging.getLogger(__name__)


class RunWorker:
    def __init__(self, engine: Engine, *, artifacts: ArtifactStore, judges: JudgeSettings,
                 max_workers: int = 1, limits: ScoringLimits | None = None) -> None:
        self.engine, self.limits = engine, limits
        self.artifacts, self.judges = artifacts, judges
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="forkpaths-scoring")
        self._futures: dict[int, Future[ScoringRun]] = {}
        with transactions(engine)() as s:
            interrupted = interrupt_dead_runs(session=s)
            queued = [r.id for r in s.exec(select(ScoringRun).where(ScoringRun.status == RunStatus.QUEUED.value))]
        if interrupted:
            log.warning("scoring runs %s were left running by a process that stopped; marked interrupted",
                        interrupted)
        for run_id in queued:
            if run_id is not None:
                self.submit(run_id)

    def submit(self, run_id: int) -> Future[ScoringRun]:
        """Queue a registered run (idempotent: a run already queued here is not queued twice)."""
        current = self._futures.get(run_id)
        if current is not None and not current.done():
            return current
        future = self._pool.submit(execute_run, self.engine, run_id, artifacts=self.artifacts,
                                   judges=self.judges, limits=self.limits)
        self._futures[run_id] = future
        return future

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)


def make_submitter(engine: Engine, *, artifacts: ArtifactStore, judges: JudgeSettings,
                   limits: ScoringLimits | None = None) -> RunSubmitter:
    """Where the app hands a registered run: the queue's workers on PostgreSQL (``forkpaths worker``, one started
    by ``forkpaths run``), this thread pool on SQLite. Both run :func:`execute_run`.
    Called after the transaction that registered a run commits; scoring it opens its own transactions."""
    if is_postgres(engine):
        return queue_submitter(engine)
    return RunWorker(engine, artifacts=artifacts, judges=judges, limits=limits)
