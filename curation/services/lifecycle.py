"""The lifecycle of long work recorded in the database: scoring runs (:class:`curation.models.ScoringRun`) and
background jobs (:class:`curation.models.BackgroundJob`) share it, on the same columns (``status``,
``cancel_requested``, ``executor``, ``heartbeat_at``, ``started_at``, ``finished_at``, ``stage``, ``message``,
``attempts``, ``job_id``).

- **Claim**: one conditional UPDATE takes a queued row for this process (of two processes exactly one gets it; a
  read-then-write let both start it). A queued row whose cancel was asked ends ``cancelled`` instead.
- **Heartbeat**: while a row is worked on, a daemon thread refreshes ``heartbeat_at`` every :data:`HEARTBEAT_S`
  seconds, and every write of the work is conditional on this process still holding the row (:func:`held`).
- **Who is alive**: the *executor* is ``host/pid/start`` (``start`` is the process's start time in clock ticks
  since boot, read from ``/proc``, so a recycled pid is never mistaken for the worker). On the same host a dead
  worker is known at once (its pid is gone, or belongs to a process started at another time); on another host
  when its heartbeat is older than :data:`LEASE_S`. No wall-clock guess about how long the work may take is
  involved: a worker stuck in one long step keeps beating.
- **Interruption**: a row left ``running`` by a dead process is queued again when it is a queue worker's job
  (procrastinate retries it), else marked ``interrupted`` in its table's own words (:func:`sweep_dead`).
- **Take-over**: a retried queue job finds its row held by a dead worker (or by this process, whose work on it
  broke off) and puts it back to ``queued`` so that it can claim it (:func:`take_over_if_dead`).
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
from typing import Any, TypeVar

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from curation.db import transactions
from curation.models import BackgroundJob, RunStatus, ScoringRun, utcnow

__all__ = ["HEARTBEAT_S", "LEASE_S", "Heartbeat", "RunCancelled", "RunTakenOver", "ScoringHere", "beat", "claim",
           "executor_alive", "held", "orphaned_here", "requeue_message", "sweep_dead", "take_over_if_dead",
           "this_executor"]

log = logging.getLogger(__name__)

HEARTBEAT_S = 5.0
LEASE_S = 60.0  # twelve missed beats: a worker on another host is presumed dead after this long

Row = TypeVar("Row", ScoringRun, BackgroundJob)
"""A table with the lifecycle columns."""


class RunCancelled(Exception):
    """Raised inside a run when an evaluator asked to cancel it."""


class RunTakenOver(Exception):
    """Raised inside a run when another worker took it over (this one was presumed dead): stop, write nothing."""


# ------------------------------------------------------------------------------------ who is working on what


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


_working_here: set[Hashable] = set()  # runs (ids) and jobs (("job", id)) this process is working on now (an orphan
# is held here but not in it)
_working_lock = threading.Lock()


class ScoringHere:
    """Marks a run (its id) or a background job (``("job", id)``) as worked on by this process for the duration of
    the block."""

    def __init__(self, key: Hashable) -> None:
        self.key = key

    def __enter__(self) -> None:
        with _working_lock:
            _working_here.add(self.key)

    def __exit__(self, *_exc: object) -> None:
        with _working_lock:
            _working_here.discard(self.key)


def orphaned_here(executor: str, key: Hashable) -> bool:
    """Held by this very process, which is not working on it (its work ended without ending the row, e.g. the
    database went away while it wrote the outcome)."""
    with _working_lock:
        return executor == this_executor() and key not in _working_here


def this_executor() -> str:
    """This process's identity as recorded on the rows it works on."""
    pid = os.getpid()
    return f"{_host()}/{pid}/{_start_ticks(pid) or '?'}"


def executor_alive(executor: str, heartbeat_at: datetime | None, now: datetime) -> bool:
    """Whether the process recorded as ``executor`` may still be working (see the module's docstring)."""
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


# ------------------------------------------------------------------------------------ the row's lifecycle


def claim(engine: Engine, table: type[Row], row_id: int, *, cancelled: dict[str, Any]) -> None:
    """Atomically take the queued row for this process (its own transaction). A queued row whose cancel was asked
    ends ``cancelled`` with ``cancelled``'s values (its message, and whatever else its table clears) instead.
    Read the row afterwards to see who holds it."""
    now = utcnow()
    with transactions(engine)() as s:
        taken = s.connection().execute(
            update(table).where(col(table.id) == row_id, col(table.status) == RunStatus.QUEUED.value,
                                col(table.cancel_requested).is_(False))
            .values(status=RunStatus.RUNNING.value, started_at=now, heartbeat_at=now, stage="starting",
                    executor=this_executor(), message="", attempts=col(table.attempts) + 1))
        if taken.rowcount != 1:
            s.connection().execute(
                update(table).where(col(table.id) == row_id, col(table.status) == RunStatus.QUEUED.value,
                                    col(table.cancel_requested).is_(True))
                .values(status=RunStatus.CANCELLED.value, finished_at=now, **cancelled))


def held(table: type[Row], row_id: int) -> tuple[Any, ...]:
    """The WHERE clause of a write that only this process, while it holds the row, may make."""
    return (col(table.id) == row_id, col(table.status) == RunStatus.RUNNING.value,
            col(table.executor) == this_executor())


def beat(engine: Engine, table: type[Row], row_id: int) -> None:
    """The heartbeat thread's write: only while this process still holds the row.
    In a short transaction of its own, from the heartbeat thread (never in the work's)."""
    with transactions(engine)() as s:
        s.connection().execute(update(table).where(*held(table, row_id)).values(heartbeat_at=utcnow()))


def requeue_message(executor: str) -> str:
    return f"Its worker ({executor or 'unknown'}) stopped; another worker takes it up."


def take_over_if_dead(engine: Engine, table: type[Row], row_id: int, *, key: Hashable,
                      from_statuses: tuple[str, ...] = (RunStatus.RUNNING.value,),
                      reset: dict[str, Any] | None = None) -> bool:
    """A retried queue job: its row, left ``running`` by a dead worker (or by this process, whose work on it broke
    off), goes back to ``queued`` so that this worker can claim it. ``from_statuses`` other than ``running``
    (a run marked ``interrupted``) are taken over whoever held them. ``reset`` are further values to clear (a
    run's progress: it is scored again from the start). Returns whether it was put back.
    In a transaction of its own: a retried queue job calls it before any other."""
    with transactions(engine)() as s:
        row = s.get(table, row_id)
        if row is None or row.status not in from_statuses:
            return False
        dead = row.status != RunStatus.RUNNING.value or orphaned_here(row.executor, key) or (
            row.executor != this_executor() and not executor_alive(row.executor, row.heartbeat_at, utcnow()))
        if not dead:
            return False
        done = s.connection().execute(
            update(table).where(col(table.id) == row_id, col(table.status) == row.status,
                                col(table.executor) == row.executor)
            .values(status=RunStatus.QUEUED.value, stage="queued again", message=requeue_message(row.executor),
                    **(reset or {})))
        return bool(done.rowcount == 1)


def sweep_dead(*, session: Session, table: type[Row], interrupt: Callable[[Row, datetime], None],
               requeue: dict[str, Any] | None = None) -> list[int]:
    """Rows left ``running`` by a process that died: queued again when they are a queue worker's job
    (procrastinate retries them, with ``requeue``'s further values), else ended by ``interrupt(row, now)``, which
    says so in the table's own words. Returns their ids."""
    now = utcnow()
    ids = []
    for row in session.exec(select(table).where(col(table.status) == RunStatus.RUNNING.value)).all():
        if executor_alive(row.executor, row.heartbeat_at, now):
            continue
        if row.job_id is not None:
            row.status, row.stage, row.message = RunStatus.QUEUED.value, "queued again", requeue_message(row.executor)
            for name, value in (requeue or {}).items():
                setattr(row, name, value)
        else:
            interrupt(row, now)
        session.add(row)
        ids.append(row.id or 0)
    if ids:
        log.warning("%s rows %s were left running by a process that stopped", table.__tablename__, ids)
    return ids
