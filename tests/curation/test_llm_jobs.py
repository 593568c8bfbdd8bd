"""LLM alternative generation as a background job, against the scripted chat-completions server: in the app's
process on SQLite (one per dataset at a time, cancel keeps what was stored, a dead executor is detected), and on
PostgreSQL queued and completed by a real ``forkpaths worker`` process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text, update
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from curation.db import make_engine, migrate, session_scope
from curation.errors import JobError, PermissionDenied
from curation.models import Alternative, BackgroundJob, Role, RunStatus, Stage
from curation.services.analyses.llm_alternatives import start_generation
from curation.services.annotation import submit_analysis
from curation.services.background_jobs import (
    InProcessJobs,
    cancel_job,
    interrupt_dead_jobs,
)
from curation.services.jobs import enqueue_job, make_job_submitter
from curation.services.stages import set_stage
from curation.settings import PROJECT_ROOT, Settings
from tests import factories as f
from tests.conftest import PG_URL, _pg_schema_engine
from tests.llm_server import ScriptedLLM

VARIABLES = {"variables": [
    {"variable_type": "Control", "concept": "storm strength", "columns": ["wind"], "rationale": "wind kills"}]}
TRANSFORMS = {"transforms": [
    {"code": "df['deaths_sqrt'] = np.sqrt(df['deaths'])", "output_col": "deaths_sqrt", "rationale": "less skew"}]}


def _start_generation(engine, **kwargs) -> int:
    """What the page does: the checks and the job's row in one transaction, committed before the job is handed on."""
    with session_scope(engine) as s:
        return start_generation(session=s, **kwargs)


def responder(request):
    prompt = request["messages"][-1]["content"]
    return json.dumps(VARIABLES if "conceptual variables (independent" in prompt else TRANSFORMS)


def _world(engine: Engine, data_dir: Path) -> dict:
    store = data_dir / "datasets"
    store.mkdir(parents=True)
    ana, cur = f.user(engine, "ana"), f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[ana])
    f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
    return {"engine": engine, "data_dir": data_dir, "ds": ds, "ana": ana, "cur": cur}


@pytest.fixture
def sqlite_world(tmp_path) -> Iterator[dict]:
    eng = make_engine(f"sqlite:///{tmp_path / 'forkpaths.db'}")
    migrate(eng)
    yield _world(eng, tmp_path / "data")
    eng.dispose()


def _settings(world: dict, url: str) -> Callable[[], Settings]:
    return lambda: Settings(data_dir=world["data_dir"], database_url=None, load_starter_datasets=False,
                            llm_base_url=url, llm_model="scripted", admin_password="admin password 1")


def _job(engine: Engine, job_id: int) -> BackgroundJob:
    with session_scope(engine) as s:
        job = s.get(BackgroundJob, job_id)
        assert job is not None
        return job


def _alts(engine: Engine) -> list[Alternative]:
    with session_scope(engine) as s:
        return list(s.exec(select(Alternative)).all())


def _wait(what: Callable[[], bool], why: Callable[[], str] = lambda: "", limit_s: float = 300) -> None:
    """Wait for a state (a bound on the wait, not an assertion about speed)."""
    deadline = time.monotonic() + limit_s
    while not what():
        assert time.monotonic() < deadline, f"the state never came. {why()}"
        time.sleep(0.2)


def test_generation_runs_in_process_on_sqlite_one_per_dataset(sqlite_world):
    w = sqlite_world
    with ScriptedLLM(responder) as server:
        server.script = [{"delay": 1.5, "content": json.dumps(VARIABLES)}]  # the first answer is slow
        runner = make_job_submitter(w["engine"], _settings(w, server.url))
        assert isinstance(runner, InProcessJobs)
        with pytest.raises(PermissionDenied):  # the checks come first: an analyst cannot ask for it
            _start_generation(w["engine"], actor=w["ana"], dataset_id=w["ds"].id)
        job_id = _start_generation(w["engine"], actor=w["cur"], dataset_id=w["ds"].id)
        future = runner.submit(job_id)
        with pytest.raises(JobError, match="already running"):  # a second click
            _start_generation(w["engine"], actor=w["cur"], dataset_id=w["ds"].id)
        job = future.result(timeout=300)
        runner.shutdown()
    assert job.status == RunStatus.SUCCEEDED.value, job.message
    assert job.progress_done == job.progress_total == 3 and job.active_scope is None
    assert job.result is not None and job.result["created"] == 3 and job.result["calls"] == 3
    assert "3 alternatives stored" in job.message
    assert len(_alts(w["engine"])) == 3
    assert job.params == {"dataset_id": w["ds"].id} and job.requested_by_id == w["cur"].id
    # it ended: a new generation may start (nothing new to store: answered from the cache)
    assert _start_generation(w["engine"], actor=w["cur"], dataset_id=w["ds"].id) > job_id


def test_cancel_stops_after_the_current_seed_and_keeps_what_was_stored(sqlite_world):
    w = sqlite_world
    with ScriptedLLM(responder) as server:
        # the second seed's answer waits until the test has asked to cancel
        runner = InProcessJobs(w["engine"], _settings(w, server.url))
        gate = {"open": False}

        def slow(request):
            while not gate["open"]:
                time.sleep(0.05)
            return responder(request)

        server.responder = slow
        server.script = [{"content": json.dumps(VARIABLES)}]
        job_id = _start_generation(w["engine"], actor=w["cur"], dataset_id=w["ds"].id)
        future = runner.submit(job_id)
        _wait(lambda: _job(w["engine"], job_id).progress_done >= 1)
        with session_scope(w["engine"]) as s:
            cancel_job(session=s, actor=w["cur"], job_id=job_id)
        gate["open"] = True
        job = future.result(timeout=300)
        runner.shutdown()
    assert job.status == RunStatus.CANCELLED.value, job.message
    assert job.result is not None and job.result["cancelled"] and job.result["seeds_done"] == 2
    kept = len(_alts(w["engine"]))
    assert kept == job.result["created"] == 2  # the variable seed and the first transform seed, whole
    assert f"Cancelled after 2 of 3 seeds; the {kept} alternatives stored before it stopped are kept" in job.message
    with session_scope(w["engine"]) as s, pytest.raises(JobError, match="already ended"):
        cancel_job(session=s, actor=w["cur"], job_id=job_id)


def test_a_queued_job_cancelled_never_runs_and_a_dead_executor_is_detected(sqlite_world):
    w = sqlite_world
    engine = w["engine"]
    job_id = _start_generation(engine, actor=w["cur"], dataset_id=w["ds"].id)
    with session_scope(engine) as s:
        cancel_job(session=s, actor=w["cur"], job_id=job_id)
    job = _job(engine, job_id)
    assert job.status == RunStatus.CANCELLED.value and "before it started" in job.message
    # a job left running by a process that died (a finished child's pid: gone)
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    job_id = _start_generation(engine, actor=w["cur"], dataset_id=w["ds"].id)
    with session_scope(engine) as s:
        s.connection().execute(update(BackgroundJob).where(col(BackgroundJob.id) == job_id).values(
            status=RunStatus.RUNNING.value, executor=f"{socket.gethostname()[:120]}/{proc.pid}/1", progress_done=1))
    with session_scope(engine) as s:
        assert interrupt_dead_jobs(session=s) == [job_id]
    job = _job(engine, job_id)
    assert job.status == RunStatus.INTERRUPTED.value and "after 1 of 3 steps" in job.message
    assert job.active_scope is None  # a new generation may start
    _start_generation(engine, actor=w["cur"], dataset_id=w["ds"].id)


# ------------------------------------------------------------------------------------ PostgreSQL


@pytest.fixture
def pg_world(tmp_path) -> Iterator[dict]:
    for eng in _pg_schema_engine():
        yield _world(eng, tmp_path / "data")


@pytest.mark.postgres
def test_generation_is_queued_cancelled_and_completed_by_a_worker_process(pg_world):
    """A worker process runs the queued generation; a cancel from here (another process, as the page would)
    reaches it and whole seeds are kept; a second generation completes and stores only what is missing."""
    w = pg_world
    engine = w["engine"]
    with engine.connect() as conn:
        schema = str(conn.execute(text("select current_schema()")).scalar())
    gate = threading.Event()

    def held(request):  # every answer after the first waits until the test lets it go
        gate.wait(timeout=120)
        return responder(request)

    with ScriptedLLM(held) as server:
        server.script = [{"content": json.dumps(VARIABLES)}]
        env = dict(os.environ, FORKPATHS_DATA_DIR=str(w["data_dir"]),
                   FORKPATHS_DATABASE_URL=f"{PG_URL}?options=-csearch_path%3D{schema}",
                   FORKPATHS_LOAD_STARTER_DATASETS="false", FORKPATHS_ADMIN_PASSWORD="admin password 1",
                   FORKPATHS_LLM_BASE_URL=server.url, FORKPATHS_LLM_MODEL="scripted")
        runner = make_job_submitter(engine, _settings(w, server.url))
        assert not isinstance(runner, InProcessJobs)  # PostgreSQL: the queue
        job_id = _start_generation(engine, actor=w["cur"], dataset_id=w["ds"].id)
        queue_id = runner.submit(job_id)
        assert queue_id is not None and enqueue_job(engine, job_id) is None  # queued once
        assert _job(engine, job_id).job_id == queue_id
        log = open(w["data_dir"] / "worker.log", "wb")  # noqa: SIM115 - closed below
        worker = subprocess.Popen([sys.executable, "-m", "curation.cli", "worker"], cwd=PROJECT_ROOT, env=env,
                                  stdout=log, stderr=subprocess.STDOUT)

        def said() -> str:
            return (w["data_dir"] / "worker.log").read_text(errors="replace")[-3000:]

        def ended(jid: int) -> Callable[[], bool]:
            return lambda: _job(engine, jid).status not in ("queued", "running") or worker.poll() is not None

        try:
            _wait(lambda: _job(engine, job_id).progress_done >= 1 or worker.poll() is not None, said)
            with session_scope(engine) as s:
                cancel_job(session=s, actor=w["cur"], job_id=job_id)
            gate.set()
            _wait(ended(job_id), said)
            cancelled = _job(engine, job_id)
            assert cancelled.status == RunStatus.CANCELLED.value, (cancelled.message, said())
            kept = len(_alts(engine))
            assert cancelled.result is not None and cancelled.result["created"] == kept == 2
            again = _start_generation(engine, actor=w["cur"], dataset_id=w["ds"].id)
            runner.submit(again)
            _wait(ended(again), said)
            job = _job(engine, again)
            assert job.status == RunStatus.SUCCEEDED.value, (job.message, said())
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
            log.close()
    assert {cancelled.executor.split("/")[1], job.executor.split("/")[1]} == {str(worker.pid)}  # not this process
    assert job.result is not None and job.result["created"] == 1 and job.result["already_stored"] == 2
    assert len(_alts(engine)) == 3
    assert len(server.requests) == 3  # the second generation sent only the seed the first never reached


@pytest.mark.postgres
def test_a_worker_killed_mid_generation_leaves_it_to_another_and_nothing_is_stored_twice(pg_world):
    w = pg_world
    engine = w["engine"]
    with engine.connect() as conn:
        schema = str(conn.execute(text("select current_schema()")).scalar())
    gate = threading.Event()

    def held(request):
        gate.wait(timeout=120)
        return responder(request)

    with ScriptedLLM(held) as server:
        server.script = [{"content": json.dumps(VARIABLES)}]
        env = dict(os.environ, FORKPATHS_DATA_DIR=str(w["data_dir"]),
                   FORKPATHS_DATABASE_URL=f"{PG_URL}?options=-csearch_path%3D{schema}",
                   FORKPATHS_LOAD_STARTER_DATASETS="false", FORKPATHS_ADMIN_PASSWORD="admin password 1",
                   FORKPATHS_LLM_BASE_URL=server.url, FORKPATHS_LLM_MODEL="scripted")
        job_id = _start_generation(engine, actor=w["cur"], dataset_id=w["ds"].id)
        enqueue_job(engine, job_id)
        procs: list[subprocess.Popen[bytes]] = []

        def start(n: int) -> subprocess.Popen[bytes]:
            log = open(w["data_dir"] / f"worker-{n}.log", "wb")  # noqa: SIM115 - closed with the process
            procs.append(subprocess.Popen([sys.executable, "-m", "curation.cli", "worker"], cwd=PROJECT_ROOT,
                                          env=env, stdout=log, stderr=subprocess.STDOUT))
            return procs[-1]

        def said() -> str:
            return "\n".join(p.read_text(errors="replace")[-2000:] for p in w["data_dir"].glob("worker-*.log"))

        try:
            first = start(0)
            _wait(lambda: _job(engine, job_id).progress_done >= 1, said)  # seed 1 stored, seed 2 asked
            assert len(_alts(engine)) == 1
            first.send_signal(signal.SIGKILL)
            first.wait()
            second = start(1)
            gate.set()
            _wait(lambda: _job(engine, job_id).status not in ("queued", "running") or second.poll() is not None,
                  said)
            job = _job(engine, job_id)
            assert job.status == RunStatus.SUCCEEDED.value, (job.message, said())
        finally:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
                    try:
                        p.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        p.kill()
    assert job.executor.split("/")[1] == str(second.pid) and job.attempts == 2
    assert job.result is not None and job.result["already_stored"] == 1 and job.result["created"] == 2
    assert len(_alts(engine)) == 3  # the seed stored before the kill counted once
