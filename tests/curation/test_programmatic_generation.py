"""LLM candidate generation for a programmatic task as a background job (issue 20, gap 1), against the scripted
chat-completions server and the real sandbox: in the app's process on SQLite (progress, one generation per task at
a time, the report, a cancel that stores nothing, an LLM answering garbage), and on PostgreSQL queued and run by a
real ``forkpaths worker`` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import select

from curation.db import session_scope
from curation.errors import JobError, PermissionDenied
from curation.models import BackgroundJob, CuratedCandidate, Role, RunStatus
from curation.services.background_jobs import InProcessJobs, cancel_job
from curation.services.jobs import make_job_submitter
from curation.services.programmatic import ProgrammaticError, import_programmatic_tasks
from curation.services.programmatic_generation import start_candidate_generation
from curation.settings import PROJECT_ROOT, Settings
from exports.programmatic_part import ProgrammaticTaskRelease
from tests import factories as f
from tests.conftest import PG_URL
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.usefixtures("os_sandbox")
CLEAN = "data cleaning & preprocessing"
KEEP = "import pandas as pd\npd.read_csv('data.csv').query('deaths > 0').to_csv('clean.csv', index=False)\n"
OTHER = "import pandas as pd\npd.read_csv('data.csv').to_csv('clean.csv', index=False)\n"
CHECKS = {"checks": [{"task_type": CLEAN, "function": "Data Completeness", "metric": "deaths above zero",
                      "code": "import pandas as pd\ndef f(gt):\n    return bool((pd.read_csv('clean.csv')"
                              "['deaths'] > 0).all())", "ground_truth": "clean.csv"}]}


def responder(request: dict) -> str:
    """Solutions 1 and 2 agree, solution 3 differs; then the checks."""
    prompt = request["messages"][-1]["content"]
    if "Candidate 3 of" in prompt:
        return json.dumps({"code": OTHER})
    if "Candidate" in prompt:
        return json.dumps({"code": KEEP})
    return json.dumps(CHECKS)


@pytest.fixture
def world(engine, tmp_path):
    data = tmp_path / "data"
    store = data / "datasets"
    store.mkdir(parents=True)
    cur, ana = f.user(engine, "cur", Role.CURATOR), f.user(engine, "ana")
    ds = f.dataset(engine, store, assign=[ana])
    with session_scope(engine) as s:
        (task,) = import_programmatic_tasks(session=s, actor=cur, dataset_id=ds.id, accept=False, tasks=[
            ProgrammaticTaskRelease(key="storms_clean", input_files=["data.csv"],
                                    prompt="Drop storms with no deaths count; write clean.csv.")])
    return {"engine": engine, "data": data, "store": store, "cur": cur, "ana": ana, "task_id": task.id}


def _settings(w: dict, url: str) -> Callable[[], Settings]:
    return lambda: Settings(data_dir=w["data"], database_url=None, load_starter_datasets=False,
                            llm_base_url=url, llm_model="scripted", admin_password="admin password 1")


def _items(w: dict) -> list[CuratedCandidate]:
    with session_scope(w["engine"]) as s:
        return list(s.exec(select(CuratedCandidate).where(CuratedCandidate.item_id == w["task_id"])).all())


def _job(w: dict, job_id: int) -> BackgroundJob:
    with session_scope(w["engine"]) as s:
        job = s.get(BackgroundJob, job_id)
        assert job is not None
        return job


def _wait(what: Callable[[], bool], why: Callable[[], str] = lambda: "", limit_s: float = 300) -> None:
    """Wait for a state (a bound on the wait, not an assertion about speed)."""
    deadline = time.monotonic() + limit_s
    while not what():
        assert time.monotonic() < deadline, f"the state never came. {why()}"
        time.sleep(0.2)


def _start(w: dict, actor=None, samples: int = 3) -> int:
    with session_scope(w["engine"]) as s:  # the checks and the job's row: one transaction, as the page does it
        return start_candidate_generation(session=s, actor=actor or w["cur"], task_id=w["task_id"],
                                          samples=samples, store=w["store"])


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_generation_runs_in_the_apps_process_with_progress_one_per_task(world):
    w = world
    with ScriptedLLM(responder) as server:
        server.script = [{"delay": 1.5, "content": json.dumps({"code": KEEP})}]  # the first answer is slow
        runner = make_job_submitter(w["engine"], _settings(w, server.url))
        assert isinstance(runner, InProcessJobs)
        with pytest.raises(PermissionDenied):  # checked before anything is queued
            _start(w, actor=w["ana"])
        with pytest.raises(ProgrammaticError, match="between 2 and 20 samples"):
            _start(w, samples=1)
        job_id = _start(w)
        future = runner.submit(job_id)
        _wait(lambda: _job(w, job_id).status == RunStatus.RUNNING.value)
        with pytest.raises(JobError, match="already running"):  # one generation per task at a time
            _start(w)
        job = future.result(timeout=300)
        runner.shutdown()
    assert job.status == RunStatus.SUCCEEDED.value, job.message
    assert job.progress_done == job.progress_total == 7 and job.active_scope is None  # 3 asked, 3 run, checks
    r = job.result
    assert (r["samples"], r["ran"], r["agreed"], r["artifacts"], r["checks"]) == (3, 3, {"clean.csv": 2}, 1, 1)
    assert [run["files"] for run in r["runs"]] == [["clean.csv"]] * 3 and r["solutions"][2] == OTHER
    assert "3 of 3 solutions ran in the sandbox; 1 artifact agreed and 1 check was proposed" in job.message
    items = _items(w)
    assert sorted((i.role, i.source) for i in items) == [("artifact", "agreement"), ("check", "llm")]
    art = next(i for i in items if i.role == "artifact")
    assert art.extra["support"] == 2 and art.extra["ok_samples"] == 3
    assert len(server.requests) == 4  # 3 solutions + the checks


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_a_cancel_stops_at_the_next_step_and_garbage_fails_the_job_storing_nothing(world):
    w = world
    with ScriptedLLM(responder) as server:
        server.script = [{"delay": 3, "content": json.dumps({"code": KEEP})}]
        runner = make_job_submitter(w["engine"], _settings(w, server.url))
        job_id = _start(w)
        future = runner.submit(job_id)
        _wait(lambda: _job(w, job_id).status == RunStatus.RUNNING.value)
        _wait(lambda: len(server.requests) == 1)  # the first solution is being asked (the model takes 3 s)
        with pytest.raises(JobError, match="Only the person"), session_scope(w["engine"]) as s:
            cancel_job(session=s, actor=w["ana"], job_id=job_id)
        with session_scope(w["engine"]) as s:
            cancel_job(session=s, actor=w["cur"], job_id=job_id)
        job = future.result(timeout=300)
        assert job.status == RunStatus.CANCELLED.value, job.message
        assert "Nothing was stored" in job.message and job.result["cancelled"] and _items(w) == []
        assert len(server.requests) == 1  # it stopped before asking the second solution
        # the LLM answers garbage for the checks: the job fails with the sentence, nothing is stored
        server.responder = lambda req: ("no idea, sorry" if "Ground-truth artifacts" in req["messages"][-1]["content"]
                                        else responder(req))
        job = runner.submit(_start(w, samples=2)).result(timeout=300)
        runner.shutdown()
    assert job.status == RunStatus.FAILED.value and _items(w) == []
    assert "JSON" in job.message or "answer" in job.message, job.message


@pytest.mark.postgres
@pytest.mark.parametrize("engine", ["postgres"], indirect=True)
def test_on_postgresql_a_worker_process_runs_the_generation(world, tmp_path):
    w = world
    engine = w["engine"]
    with engine.connect() as conn:
        schema = str(conn.execute(text("select current_schema()")).scalar())
    with ScriptedLLM(responder) as server:
        job_id = _start(w)
        assert make_job_submitter(engine, _settings(w, server.url)).submit(job_id) is not None
        env = dict(os.environ, FORKPATHS_DATA_DIR=str(w["data"]), FORKPATHS_LOAD_STARTER_DATASETS="false",
                   FORKPATHS_DATABASE_URL=f"{PG_URL}?options=-csearch_path%3D{schema}",
                   FORKPATHS_ADMIN_PASSWORD="admin password 1", FORKPATHS_LLM_BASE_URL=server.url,
                   FORKPATHS_LLM_MODEL="scripted")
        log_path: Path = tmp_path / "worker.log"
        with open(log_path, "wb") as log:
            worker = subprocess.Popen([sys.executable, "-m", "curation.cli", "worker"], cwd=PROJECT_ROOT, env=env,
                                      stdout=log, stderr=subprocess.STDOUT)
            try:
                _wait(lambda: _job(w, job_id).status not in ("queued", "running") or worker.poll() is not None,
                      lambda: log_path.read_text()[-3000:])
            finally:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    worker.kill()
    job = _job(w, job_id)
    assert job.status == RunStatus.SUCCEEDED.value, (job.message, log_path.read_text()[-3000:])
    assert job.executor.split("/")[1] == str(worker.pid)  # the worker ran it, not this process
    assert job.result["artifacts"] == 1 and job.result["checks"] == 1
    assert sorted(i.role for i in _items(w)) == ["artifact", "check"]


def test_checks_generate_runs_the_same_job_from_a_terminal(tmp_path, monkeypatch, capsys):
    """`forkpaths checks generate TASK --samples 2` on a starter task (SQLite, the job run in this process)."""
    from curation.cli import main

    head = "import pandas as pd\npd.read_csv('data.csv').head(3).to_csv('head.csv', index=False)\n"
    repo = Path(__file__).resolve().parents[2]
    with ScriptedLLM(lambda req: json.dumps({"code": head}) if "Candidate" in req["messages"][-1]["content"]
                     else json.dumps(CHECKS)) as server:
        monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
        monkeypatch.setenv("FORKPATHS_STARTER_DATASETS_DIR", str(repo / "datasets"))
        monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
        monkeypatch.setenv("FORKPATHS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("FORKPATHS_LLM_MODEL", "scripted")
        assert main(["checks", "generate", "nope"]) == 2
        assert "There is no programmatic task 'nope'" in capsys.readouterr().err
        assert main(["checks", "generate", "affairs_clean", "--samples", "2"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 solutions ran in the sandbox; 1 artifact agreed and 1 check was proposed" in out, out
