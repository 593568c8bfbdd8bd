"""One lifecycle for scoring runs and background jobs (curation.services.lifecycle): the same claim, heartbeat,
interruption and take-over, proved on both tables, on SQLite and on PostgreSQL, with real processes (one killed with
SIGKILL, several claiming at once)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import col

from curation.db import session_scope
from curation.models import BackgroundJob, RunStatus, ScoringRun, utcnow
from curation.services import lifecycle
from curation.services.background_jobs import claim_job, interrupt_dead_jobs, start_job, take_over_if_dead
from curation.services.lifecycle import Heartbeat, ScoringHere, this_executor
from curation.services.run_lifecycle import claim_run, interrupt_dead_runs, take_over_run_if_dead
from tests.curation.dead_scorer import PROJECT_ROOT

TABLES = {"run": ScoringRun, "job": BackgroundJob}


def _new(engine: Engine, which: str) -> int:
    """A queued row: a job through the service that records it; a run as registration leaves it (its provenance
    columns are not the lifecycle's business)."""
    if which == "job":
        with session_scope(engine) as s:
            return start_job(session=s, kind="llm_alternatives", params={}, scope=f"test:{time.monotonic_ns()}",
                             requester=None, total=4)
    with session_scope(engine) as s:
        run = ScoringRun(kind="analyses", agent="a", release_version="1.0.0", ground_truth_hash="0" * 64,
                         submission_sha256="0" * 64,
                         submission_files=[], evaluator_version="t", progress_total=4)
        s.add(run)
        s.flush()
        return int(run.id or 0)


def _get(engine: Engine, which: str, row_id: int) -> ScoringRun | BackgroundJob:
    with session_scope(engine) as s:
        row = s.get(TABLES[which], row_id)
        assert row is not None
        s.expunge(row)
        return row


def _claim(engine: Engine, which: str, row_id: int) -> ScoringRun | BackgroundJob:
    """Each table's own entry point, both of which go through lifecycle.claim."""
    return claim_run(engine, row_id) if which == "run" else claim_job(engine, row_id)


def _sweep(engine: Engine, which: str) -> list[int]:
    with session_scope(engine) as s:
        return interrupt_dead_runs(session=s) if which == "run" else interrupt_dead_jobs(session=s)


def _take_over(engine: Engine, which: str, row_id: int) -> None:
    (take_over_run_if_dead if which == "run" else take_over_if_dead)(engine, row_id)


def _url_and_schema(engine: Engine) -> tuple[str, str]:
    schema = ""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            schema = conn.exec_driver_sql("select current_schema()").scalar() or ""
    return engine.url.render_as_string(hide_password=False), schema


_CHILD = """
import os, signal, sys
from curation.db import make_engine
from curation.models import BackgroundJob, ScoringRun
from curation.services import lifecycle
url, schema, table, ids, die = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "die"
engine = make_engine(url, **({"connect_args": {"options": f"-csearch_path={schema}"}} if schema else {}))
table = {"run": ScoringRun, "job": BackgroundJob}[table]
sys.stdin.readline()  # start together
got = []
for i in [int(i) for i in ids.split(",")]:
    lifecycle.claim(engine, table, i, cancelled={"message": "cancelled"})
    with engine.connect() as conn:
        if conn.exec_driver_sql(f"select executor from {table.__tablename__} where id = {i}").scalar() \\
                == lifecycle.this_executor():
            got.append(i)
print(",".join(map(str, got)), flush=True)
if die:
    engine.dispose()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _claim_in_processes(engine: Engine, which: str, ids: list[int], n: int, *, die: bool) -> list[set[int]]:
    """``n`` processes each claim every row at once (and are killed with SIGKILL after, when ``die``)."""
    url, schema = _url_and_schema(engine)
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD, url, schema, which, ",".join(map(str, ids)),
                               "die" if die else "live"], cwd=PROJECT_ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
             for _ in range(n)]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == (-9 if die else 0), stderr
        out.append({int(i) for i in stdout.strip().split(",") if i})
    return out


@pytest.mark.parametrize("which", sorted(TABLES))
def test_of_processes_claiming_at_once_exactly_one_gets_each_row(engine, which):
    ids = [_new(engine, which) for _ in range(4)]
    got = _claim_in_processes(engine, which, ids, 2, die=False)
    assert sorted(i for g in got for i in g) == sorted(ids)  # each row claimed once, by one of them
    for row_id in ids:
        row = _get(engine, which, row_id)
        assert row.status == RunStatus.RUNNING.value and row.attempts == 1 and row.heartbeat_at is not None
    assert _claim(engine, which, ids[0]).executor != this_executor()  # held elsewhere: not taken from it


@pytest.mark.parametrize("which", sorted(TABLES))
def test_a_queued_row_whose_cancel_was_asked_ends_cancelled_when_claimed(engine, which):
    row_id = _new(engine, which)
    table = TABLES[which]
    with session_scope(engine) as s:
        s.connection().execute(update(table).where(col(table.id) == row_id).values(cancel_requested=True))
    row = _claim(engine, which, row_id)
    assert row.status == RunStatus.CANCELLED.value and row.executor == "" and row.finished_at is not None
    assert "Cancelled before it started" in row.message
    if which == "job":
        assert row.active_scope is None  # a new job may start in its scope


@pytest.mark.parametrize("which", sorted(TABLES))
def test_the_heartbeat_beats_only_while_this_process_holds_the_row(engine, which):
    row_id = _new(engine, which)
    table = TABLES[which]
    first = _claim(engine, which, row_id).heartbeat_at
    assert first is not None
    with Heartbeat(lambda: lifecycle.beat(engine, table, row_id), interval=0.05):
        deadline = time.monotonic() + 10
        while (_get(engine, which, row_id).heartbeat_at or first) <= first and time.monotonic() < deadline:
            time.sleep(0.05)
    beaten = _get(engine, which, row_id).heartbeat_at
    assert beaten is not None and beaten > first
    with session_scope(engine) as s:  # taken over by another worker
        s.connection().execute(update(table).where(col(table.id) == row_id).values(executor="elsewhere/1/1"))
    lifecycle.beat(engine, table, row_id)
    assert _get(engine, which, row_id).heartbeat_at == beaten


@pytest.mark.parametrize("which", sorted(TABLES))
def test_a_row_whose_worker_was_killed_is_interrupted_or_queued_again_for_a_queue_worker(engine, which):
    alone, queued = _new(engine, which), _new(engine, which)
    table = TABLES[which]
    with session_scope(engine) as s:  # the second is a queue worker's (procrastinate retries it)
        s.connection().execute(update(table).where(col(table.id) == queued).values(job_id=99))
    assert _claim_in_processes(engine, which, [alone, queued], 1, die=True) == [{alone, queued}]
    mine = _new(engine, which)
    _claim(engine, which, mine)  # this live process holds it: left alone
    assert sorted(_sweep(engine, which)) == sorted([alone, queued])
    ended = _get(engine, which, alone)
    assert ended.status == RunStatus.INTERRUPTED.value and ended.finished_at is not None
    assert ended.message.startswith("Interrupted: the process") and "pid" in ended.message
    again = _get(engine, which, queued)
    assert again.status == RunStatus.QUEUED.value and again.stage == "queued again"
    assert "another worker takes it up" in again.message
    assert _get(engine, which, mine).status == RunStatus.RUNNING.value
    assert _sweep(engine, which) == []  # once


@pytest.mark.parametrize("which", sorted(TABLES))
def test_a_retried_job_takes_over_a_dead_or_orphaned_row_but_not_a_live_one(engine, which):
    dead, live, orphan = (_new(engine, which) for _ in range(3))
    table = TABLES[which]
    key = live if which == "run" else ("job", live)
    _claim_in_processes(engine, which, [dead], 1, die=True)
    _take_over(engine, which, dead)
    row = _get(engine, which, dead)
    assert row.status == RunStatus.QUEUED.value and "another worker takes it up" in row.message
    taken = _claim(engine, which, dead)
    assert taken.executor == this_executor() and taken.attempts == 2
    _claim(engine, which, live)
    with ScoringHere(key):  # this process is working on it: not an orphan
        _take_over(engine, which, live)
        assert _get(engine, which, live).status == RunStatus.RUNNING.value
    with session_scope(engine) as s:  # another host, beating recently: alive as far as anyone can tell
        s.connection().execute(update(table).where(col(table.id) == live).values(
            executor="another-host/1/1", heartbeat_at=utcnow()))
    _take_over(engine, which, live)
    assert _get(engine, which, live).status == RunStatus.RUNNING.value
    with session_scope(engine) as s:  # ... until its lease lapses
        s.connection().execute(update(table).where(col(table.id) == live).values(
            heartbeat_at=utcnow() - timedelta(seconds=lifecycle.LEASE_S + 1)))
    _take_over(engine, which, live)
    assert _get(engine, which, live).status == RunStatus.QUEUED.value
    _claim(engine, which, orphan)  # claimed here, then its work broke off without ending the row
    _take_over(engine, which, orphan)
    assert _get(engine, which, orphan).status == RunStatus.QUEUED.value
