"""Scoring runs on procrastinate's workers against the real PostgreSQL (each run scored once by one of two worker
processes; a worker killed with SIGKILL mid-run: the other finishes it; a cancel from the app reaches the worker),
and in the app's own process on SQLite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlmodel import select

from curation.db import session_scope
from curation.models import RunStatus, ScoringRun
from curation.services import scoring as sc
from curation.services.jobs import enqueue_run
from curation.services.run_lifecycle import this_executor
from curation.services.run_worker import RunWorker, make_submitter
from curation.settings import PROJECT_ROOT
from tests.conftest import PG_URL, _pg_schema_engine
from tests.curation.scoring_world import World, make_world

ENDED = {RunStatus.SUCCEEDED.value, RunStatus.FAILED.value, RunStatus.CANCELLED.value, RunStatus.INTERRUPTED.value}


@pytest.fixture
def pg_engine() -> Iterator[Engine]:
    yield from _pg_schema_engine()


@pytest.fixture
def pg_world(pg_engine, tmp_path, shared_blade) -> World:
    return make_world(pg_engine, tmp_path, shared_blade)


def _schema(engine: Engine) -> str:
    with engine.connect() as conn:
        return str(conn.execute(text("select current_schema()")).scalar())


class Workers:
    """`forkpaths worker` processes on the test's database schema and data folder."""

    def __init__(self, world: World) -> None:
        schema = _schema(world.engine)
        self.env = dict(os.environ, FORKPATHS_DATA_DIR=str(world.runs.parent),
                        FORKPATHS_DATABASE_URL=f"{PG_URL}?options=-csearch_path%3D{schema}",
                        FORKPATHS_LOAD_STARTER_DATASETS="false", FORKPATHS_ADMIN_PASSWORD="admin password 1")
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs = world.runs.parent

    def start(self, concurrency: int = 1) -> subprocess.Popen[bytes]:
        log = open(self.logs / f"worker-{len(self.procs)}.log", "wb")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen([sys.executable, "-m", "curation.cli", "worker", "--concurrency", str(concurrency)],
                                cwd=PROJECT_ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.procs.append(proc)
        return proc

    def output(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in sorted(self.logs.glob("worker-*.log")))

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture
def workers(pg_world) -> Iterator[Workers]:
    w = Workers(pg_world)
    try:
        yield w
    finally:
        w.stop()


def _runs(engine: Engine) -> list[ScoringRun]:
    with session_scope(engine) as s:
        return list(s.exec(select(ScoringRun).order_by(ScoringRun.id)).all())


def _wait_for(what: Callable[[], bool], workers: Workers, limit_s: float = 300) -> None:
    """Wait for a state (a bound on the wait, not an assertion about speed)."""
    deadline = time.monotonic() + limit_s
    while not what():
        assert time.monotonic() < deadline, f"the state never came; workers said:\n{workers.output()}"
        assert all(p.poll() is None for p in workers.procs if p.returncode != -9), workers.output()
        time.sleep(0.3)


def _slow_submission(shared_blade: Path, n: int = 3, sleep_s: float = 2.0) -> bytes:
    data = json.loads((shared_blade / "examples" / "multirun_analyses.json").read_text())
    keep = dict(list(data["analyses"].items())[:n])
    for a in keep.values():
        a["transform_code"] = a["transform_code"].replace(
            "-> pd.DataFrame:\n", f"-> pd.DataFrame:\n    __import__('time').sleep({sleep_s})\n", 1)
    data["analyses"], data["n"] = keep, n
    return json.dumps(data).encode()


@pytest.mark.postgres
def test_two_workers_score_each_queued_run_exactly_once(pg_world, workers):
    data = json.loads(pg_world.multirun)  # small runs (2 analyses each), so 20 of them stay cheap
    small = json.dumps(dict(data, n=2, analyses=dict(list(data["analyses"].items())[:2]))).encode()
    ids = [pg_world.register([("small.json", small)], agent=f"agent-{i}").id for i in range(20)]
    for run_id in ids:
        assert enqueue_run(pg_world.engine, run_id) is not None
    assert enqueue_run(pg_world.engine, ids[0]) is None  # queued once, however often it is asked
    workers.start()
    workers.start()
    _wait_for(lambda: all(r.status in ENDED for r in _runs(pg_world.engine)), workers)
    runs = _runs(pg_world.engine)
    assert [r.status for r in runs] == ["succeeded"] * 20, [r.message for r in runs]
    assert [r.attempts for r in runs] == [1] * 20  # each claimed once: no run was executed twice
    assert [r.progress_done for r in runs] == [2] * 20  # and each of its analyses counted once
    assert {r.executor.split("/")[1] for r in runs} <= {str(p.pid) for p in workers.procs}
    with pg_world.engine.connect() as conn:
        jobs = conn.execute(text("select status, attempts from procrastinate_jobs")).all()
    assert sorted(jobs) == [("succeeded", 1)] * 20  # procrastinate counts the attempt that ended it


@pytest.mark.postgres
def test_a_worker_killed_mid_run_leaves_the_run_to_the_other(pg_world, workers, shared_blade):
    run_id = pg_world.register([("slow.json", _slow_submission(shared_blade))], agent="slow").id
    enqueue_run(pg_world.engine, run_id)
    first = workers.start()

    def scoring_in_first() -> bool:
        run = _runs(pg_world.engine)[0]
        return run.status == "running" and run.executor.split("/")[1] == str(first.pid) and run.progress_done >= 1

    _wait_for(scoring_in_first, workers)
    second = workers.start()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    _wait_for(lambda: _runs(pg_world.engine)[0].status in ENDED, workers)
    run = _runs(pg_world.engine)[0]
    assert run.status == "succeeded", run.message
    assert run.executor.split("/")[1] == str(second.pid) and run.attempts == 2
    assert run.progress_done == run.progress_total == 3  # scored from the start, each analysis once


@pytest.mark.postgres
def test_a_cancel_from_the_app_reaches_the_worker(pg_world, workers, shared_blade):
    run_id = pg_world.register([("slow.json", _slow_submission(shared_blade, n=4))], agent="slow").id
    enqueue_run(pg_world.engine, run_id)
    worker = workers.start()
    _wait_for(lambda: _runs(pg_world.engine)[0].progress_done >= 1, workers)
    with session_scope(pg_world.engine) as s:  # what the Runs page's Cancel button calls
        asked = sc.cancel_run(session=s, actor=pg_world.evaluator, run_id=run_id)
    assert asked.status == "running" and asked.executor.split("/")[1] == str(worker.pid)
    _wait_for(lambda: _runs(pg_world.engine)[0].status in ENDED, workers)
    run = _runs(pg_world.engine)[0]
    assert run.status == "cancelled" and run.message.startswith("Cancelled after") and run.scores is None
    assert worker.poll() is None  # the worker goes on, ready for the next run


def test_on_sqlite_runs_are_scored_in_the_apps_own_process(sqlite_engine, tmp_path, shared_blade):
    world = make_world(sqlite_engine, tmp_path, shared_blade)
    submitter = make_submitter(world.engine, artifacts=world.artifacts,
                               judges=sc.JudgeSettings())
    assert isinstance(submitter, RunWorker)
    try:
        done = submitter.submit(world.register().id).result(timeout=300)
    finally:
        submitter.shutdown()
    assert done.status == "succeeded" and done.executor == this_executor() and done.job_id is None


@pytest.mark.postgres
def test_on_postgresql_the_app_hands_runs_to_the_queue(pg_world):
    submitter = make_submitter(pg_world.engine, artifacts=pg_world.artifacts,
                               judges=sc.JudgeSettings())
    run_id = pg_world.register().id
    job_id = submitter.submit(run_id)
    run = _runs(pg_world.engine)[0]
    assert run.status == "queued" and run.job_id == job_id is not None
    with pg_world.engine.connect() as conn:
        row = conn.execute(text("select status, args from procrastinate_jobs where id = :id"), {"id": job_id}).one()
    assert row == ("todo", {"run_id": run_id})


@pytest.mark.postgres
def test_score_enqueue_prints_the_run_and_runs_wait_follows_it_to_the_end(pg_world, workers, shared_blade):
    sub = shared_blade / "examples" / "multirun_analyses.json"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "curation.cli", *args], cwd=PROJECT_ROOT, env=workers.env,
                              capture_output=True, text=True, timeout=300)

    queued = cli("score", "--release", "1.0.0", "--submission", str(sub), "--agent", "cli-agent", "--enqueue",
                 "--as", pg_world.evaluator.username)
    assert queued.returncode == 0, queued.stderr
    run_id = int(queued.stdout.strip())
    assert f"runs wait {run_id}" in queued.stderr and _runs(pg_world.engine)[0].status == "queued"
    workers.start()
    out = pg_world.runs.parent / "waited.json"
    waited = cli("runs", "--as", pg_world.evaluator.username, "wait", str(run_id), "--out", str(out))
    assert waited.returncode == 0, waited.stderr
    assert f"run {run_id}: weighted" in waited.stdout and json.loads(out.read_text())["provenance"]
    assert _runs(pg_world.engine)[0].executor.split("/")[1] == str(workers.procs[0].pid)


def test_on_sqlite_enqueue_and_worker_say_what_they_need(tmp_path, shared_blade):
    from tests.cli_runner import forkpaths

    def cli(*args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
        return forkpaths(tmp_path, *args, cwd=PROJECT_ROOT, process=process)

    sub = shared_blade / "examples" / "multirun_analyses.json"
    refused = cli("score", "--release", "1.0.0", "--submission", str(sub), "--enqueue")
    assert refused.returncode == 2 and "--enqueue needs the database to be PostgreSQL" in refused.stderr
    worker = cli("worker", process=True)  # a worker is a process of its own
    assert worker.returncode == 2 and "needs no worker" in worker.stderr
    no_out = cli("score", "--release", "1.0.0", "--submission", str(sub))
    assert no_out.returncode == 2 and "--out is required" in no_out.stderr


@pytest.mark.postgres
def test_forkpaths_run_starts_a_worker_beside_the_app_on_postgresql(pg_world, workers):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = subprocess.Popen([sys.executable, "-m", "curation.cli", "run", "--port", str(port), "--address",
                            "127.0.0.1", "--no-install"], cwd=PROJECT_ROOT, env=workers.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    workers.procs.append(app)  # stopped (SIGTERM) with the workers

    def registered() -> int:
        with pg_world.engine.connect() as conn:
            return int(conn.execute(text("select count(*) from procrastinate_workers")).scalar() or 0)

    try:
        _wait_for(lambda: registered() == 1, workers)  # one worker, beating
        run_id = pg_world.register().id
        enqueue_run(pg_world.engine, run_id)
        _wait_for(lambda: _runs(pg_world.engine)[0].status in ENDED, workers)
        assert _runs(pg_world.engine)[0].status == "succeeded"
    finally:
        os.killpg(app.pid, signal.SIGTERM)
        app.wait(timeout=60)


def _terminate(app_name: str) -> int:
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            return len(conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                         "WHERE application_name = :n"), {"n": app_name}).all())
    finally:
        admin.dispose()


@pytest.mark.postgres
def test_the_database_going_away_mid_job_the_run_is_retried_and_ends_correctly(pg_world, workers, shared_blade):
    """The database going away for one worker (its connections, which it names forkpaths-worker/PID, terminated
    mid-run): the job fails cleanly, is retried when the database answers, and the run ends succeeded with each
    analysis counted once."""
    run_id = pg_world.register([("slow.json", _slow_submission(shared_blade, n=4, sleep_s=1.5))], agent="cut").id
    enqueue_run(pg_world.engine, run_id)
    worker = workers.start()
    _wait_for(lambda: _runs(pg_world.engine)[0].progress_done >= 1, workers)
    name = f"forkpaths-worker/{worker.pid}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        with pg_world.engine.connect() as holder:  # hold the run's row: the worker's next write waits on it
            holder.execute(text("select id from scoring_run where id = :id for update"), {"id": run_id})

            def worker_waits_on_the_row() -> bool:  # the job's own progress write, not its heartbeat thread's
                with admin.connect() as conn:  # (a missed beat is skipped; the job would go on on a new connection)
                    return bool(conn.execute(text(
                        "select count(*) from pg_stat_activity where application_name = :n and wait_event_type = "
                        "'Lock' and query ilike '%returning%cancel_requested%'"), {"n": name}).scalar())

            _wait_for(worker_waits_on_the_row, workers)
            assert _terminate(name) >= 1  # the database goes away in the middle of the worker's write
            holder.rollback()
    finally:
        admin.dispose()
    _wait_for(lambda: _runs(pg_world.engine)[0].status in ENDED, workers)
    run = _runs(pg_world.engine)[0]
    assert run.status == "succeeded", (run.message, workers.output())
    assert run.progress_done == run.progress_total == 4  # each analysis counted once, however often it was tried
    assert worker.poll() is None  # the worker itself survived and goes on
    with pg_world.engine.connect() as conn:
        jobs = conn.execute(text("select status, attempts from procrastinate_jobs")).all()
    assert jobs == [("succeeded", 2)], workers.output()  # the attempt cut short, then procrastinate's retry
    assert run.attempts == 2  # ... which took the run over from the failed attempt and scored it from the start


@pytest.mark.postgres
def test_a_worker_outlives_its_connections_being_cut_again_and_again(pg_world, workers):
    """Every connection of an idle worker terminated every 50 ms for 20 s: whichever of procrastinate's own queries
    is cut (its heartbeat, its fetch of the next job), the worker goes on and then scores a run. (procrastinate's
    loop ended on such a cut, and the worker with it: the cause of the test above staying unfinished under load.)"""
    worker = workers.start()
    name = f"forkpaths-worker/{worker.pid}"

    def listening() -> bool:  # idle in procrastinate's loop: its listener waits for new jobs (start-up is over)
        admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                return bool(conn.execute(text("select count(*) from pg_stat_activity where application_name = :n "
                                              "and query ilike 'listen%'"), {"n": name}).scalar())
        finally:
            admin.dispose()

    _wait_for(listening, workers)
    cuts, deadline = 0, time.monotonic() + 20
    while time.monotonic() < deadline:
        assert worker.poll() is None, f"the worker ended after {cuts} cuts:\n{workers.output()}"
        cuts += _terminate(name)
        time.sleep(0.05)
    assert cuts > 0
    data = json.loads(pg_world.multirun)
    small = json.dumps(dict(data, n=2, analyses=dict(list(data["analyses"].items())[:2]))).encode()
    enqueue_run(pg_world.engine, pg_world.register([("small.json", small)], agent="after-the-cuts").id)
    _wait_for(lambda: _runs(pg_world.engine)[0].status in ENDED, workers)
    assert _runs(pg_world.engine)[0].status == "succeeded", workers.output()
    assert worker.poll() is None
