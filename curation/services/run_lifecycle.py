"""A scoring run's lifecycle: who scores it (claimed atomically), whether that process is still alive, and
marking runs whose scorer died ``interrupted``.

A run being scored records its *executor*: ``host/pid/start`` (``start`` is the process's start time in clock
ticks since boot, read from ``/proc``, so a recycled pid is never mistaken for the scorer), and a heartbeat that a
background thread refreshes every :data:`HEARTBEAT_S` seconds while the run is scored. Another process can then
tell a dead scorer from a slow one:

- on the same host, at once: the recorded pid is gone, or belongs to a process started at another time;
- on another host (a worker on another machine): when the heartbeat is older than :data:`LEASE_S`.

No wall-clock guess about how long an analysis may take is involved: a scorer stuck in one long analysis keeps
beating.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Hashable
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from curation.db import session_scope
from curation.errors import NotFoundError
from curation.models import RunStatus, ScoringRun, utcnow

__all__ = ["HEARTBEAT_S", "LEASE_S", "Heartbeat", "beat", "claim_run", "executor_alive", "interrupt_dead_runs",
           "ScoringHere", "orphaned_here", "this_executor"]

log = logging.getLogger(__name__)

HEARTBEAT_S = 5.0
LEASE_S = 60.0  # twelve missed beats: a scorer on another host is presumed dead after this long


def _start_ticks(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat), or None if there is no such live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name may contain spaces and parentheses
    if fields and fields[0] in ("Z", "X"):  # a zombie is dead, only not yet reaped by its parent
        return None
    return fields[19] if len(fields) > 19 else "?"


@cache
def _host() -> str:
    return socket.gethostname()[:120]


_scoring_here: set[Hashable] = set()  # runs (ids) and jobs (("job", id)) this process is working on now (an orphan
# is held here but not in it)
_scoring_lock = threading.Lock()


class ScoringHere:
    """Marks a run (its id) or a background job (``("job", id)``) as worked on by this process for the duration of
    the block."""

    def __init__(self, run_id: Hashable) -> None:
        self.run_id = run_id

    def __enter__(self) -> None:
        with _scoring_lock:
            _scoring_here.add(self.run_id)

    def __exit__(self, *_exc: object) -> None:
        with _scoring_lock:
            _scoring_here.discard(self.run_id)


def orphaned_here(executor: str, run_id: Hashable) -> bool:
    """Held by this very process, which is not scoring it (its scoring ended without ending the run, e.g. the
    database went away while it wrote the outcome)."""
    with _scoring_lock:
        return executor == this_executor() and run_id not in _scoring_here


def this_executor() -> str:
    """This process's identity as recorded on the runs it scores."""
    pid = os.getpid()
    return f"{_host()}/{pid}/{_start_ticks(pid) or '?'}"


def executor_alive(executor: str, heartbeat_at: datetime | None, now: datetime) -> bool:
    """Whether the process recorded as ``executor`` may still be scoring (see the module's docstring)."""
    host, _, rest = executor.partition("/")
    pid_text, _, start = rest.partition("/")
    if host == _host() and pid_text.isdigit():
        if Path("/proc/self/stat").exists():
            actual = _start_ticks(int(pid_text))
            return actual is not None and (start in ("", "?") or actual == start)
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return heartbeat_at is not None and now - heartbeat_at <= timedelta(seconds=LEASE_S)


class Heartbeat:
    """Calls ``beat`` every :data:`HEARTBEAT_S` seconds in a daemon thread until stopped (a context manager).

    A failing beat (the database briefly away) is skipped: the next one tries again.
    """

    def __init__(self, beat: Callable[[], None], interval: float = HEARTBEAT_S) -> None:
        self._beat, self._interval = beat, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="forkpaths-heartbeat", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._beat()
            except Exception:  # noqa: BLE001 - a missed beat is retried at the next interval
                continue

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)


# ------------------------------------------------------------------------------------ a run's lifecycle


def claim_run(engine: Engine, run_id: int) -> ScoringRun:
    """Atomically take a queued run for this process: one conditional UPDATE, so of two processes claiming the
    same run exactly one gets it (a read-then-write let both start it). A queued run whose cancel was asked
    ends ``cancelled`` here. Returns the run as it stands after the attempt."""
    now = utcnow()
    with session_scope(engine) as s:
        claimed = s.connection().execute(
            update(ScoringRun).where(col(ScoringRun.id) == run_id, col(ScoringRun.status) == RunStatus.QUEUED.value,
                                     col(ScoringRun.cancel_requested).is_(False))
            .values(status=RunStatus.RUNNING.value, started_at=now, heartbeat_at=now, stage="starting",
                    executor=this_executor(), message="", attempts=col(ScoringRun.attempts) + 1))
        if claimed.rowcount != 1:
            s.connection().execute(
                update(ScoringRun).where(col(ScoringRun.id) == run_id,
                                         col(ScoringRun.status) == RunStatus.QUEUED.value,
                                         col(ScoringRun.cancel_requested).is_(True))
                .values(status=RunStatus.CANCELLED.value, finished_at=now, message="Cancelled before it started."))
    with session_scope(engine) as s:
        run = s.get(ScoringRun, run_id)
        if run is None:
            raise NotFoundError(f"There is no scoring run {run_id}.")
        return run


def beat(engine: Engine, run_id: int) -> None:
    """The heartbeat thread's write: only while this process still holds the run."""
    with session_scope(engine) as s:
        s.connection().execute(
            update(ScoringRun).where(col(ScoringRun.id) == run_id, col(ScoringRun.status) == RunStatus.RUNNING.value,
                                     col(ScoringRun.executor) == this_executor())
            .values(heartbeat_at=utcnow()))


def item_noun(kind: str) -> str:
    """What a run of ``kind`` counts, in the kind's own words ("analyses", "task folders", "queries")."""
    from evaluation.tasks import KINDS  # loads every kind: only when a message needs it

    found = KINDS.get(kind)
    return found.item_noun if found is not None else "items"


def _interrupt(run: ScoringRun, now: Any) -> None:
    beat = run.heartbeat_at or run.started_at or run.created_at
    host, _, rest = run.executor.partition("/")
    who = f"the process scoring it (pid {rest.split('/')[0]} on {host})" if host else "the process scoring it"
    run.status, run.finished_at = RunStatus.INTERRUPTED.value, now
    run.message = (f"Interrupted: {who} stopped after {run.progress_done} of {run.progress_total} {item_noun(run.kind)} "
                   f"(last sign of life {beat:%Y-%m-%d %H:%M:%S} UTC); no scores were kept. Re-score it "
                   f"(Runs page, or forkpaths runs rescore {run.id}).")


def interrupt_dead_runs(*, session: Session) -> list[int]:
    """Runs left ``running`` by a process that died are marked ``interrupted``, or queued again when they are a
    worker's job (the module's docstring says how a dead scorer is told from a slow one). Every forkpaths command,
    the app's start, the Runs page and the workers call it, so such a run does not stay "running"."""
    now = utcnow()
    ids = []
    for run in session.exec(select(ScoringRun).where(ScoringRun.status == RunStatus.RUNNING.value)).all():
        if executor_alive(run.executor, run.heartbeat_at, now):
            continue
        if run.job_id is not None:  # a worker's job: procrastinate retries it, and another worker takes it up
            run.status, run.progress_done, run.stage = RunStatus.QUEUED.value, 0, "queued again"
            run.message = f"Its worker ({run.executor or 'unknown'}) stopped; another worker takes it up."
        else:
            _interrupt(run, now)
        session.add(run)
        ids.append(run.id or 0)
    if ids:
        log.warning("scoring runs %s were left running by a process that stopped", ids)
    return ids
