"""No run stays "running" forever: a scorer killed mid-run (kill -9) leaves its run to the next forkpaths command,
worker or page, which marks it ``interrupted``; it can be cancelled and re-scored. Runs are claimed atomically."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import make_engine, session_scope
from curation.errors import ScoringError
from curation.models import RunStatus, ScoringRun
from curation.services import scoring as sc
from curation.services.run_lifecycle import claim_run, executor_alive, this_executor
from curation.settings import PROJECT_ROOT
from tests.cli_runner import run_cli, run_cli_process
from tests.curation.dead_scorer import claim_from_processes, claim_in_a_process_that_dies
from tests.curation.scoring_world import make_world


@pytest.fixture
def world(engine, tmp_path, shared_blade):
    return make_world(engine, tmp_path, shared_blade)


def _get(w, run_id):
    with session_scope(w.engine) as s:
        return s.get(ScoringRun, run_id)


def test_a_run_whose_scorer_was_killed_is_interrupted_cancellable_and_rescored(world):
    run = world.register()
    claim_in_a_process_that_dies(world.engine, run.id)
    held = _get(world, run.id)
    assert held.status == RunStatus.RUNNING.value and held.executor.split("/")[0] == this_executor().split("/")[0]
    assert held.executor != this_executor()
    # what a worker does when it finds a run already held: nothing (the claim is not taken twice)
    assert sc.execute_run(world.engine, run.id, artifacts=world.artifacts).status == RunStatus.RUNNING.value
    with session_scope(world.engine) as s:
        assert sc.interrupt_dead_runs(session=s) == [run.id]
    ended = _get(world, run.id)
    assert ended.status == RunStatus.INTERRUPTED.value and ended.finished_at is not None
    assert f"pid {held.executor.split('/')[1]}" in ended.message and f"runs rescore {run.id}" in ended.message
    with session_scope(world.engine) as s:
        assert sc.interrupt_dead_runs(session=s) == []  # once
    again = None
    with session_scope(world.engine) as s:
        again = sc.rescore_run(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts, max_bytes=5_000_000)
    assert again.release_version == "1.0.0" and again.rescore_of_id == run.id
    done = sc.execute_run(world.engine, again.id, artifacts=world.artifacts)
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    with session_scope(world.engine) as s:
        cancelled = sc.cancel_run(session=s, actor=world.evaluator, run_id=run.id)
    assert cancelled.status == RunStatus.CANCELLED.value


def test_cancel_ends_a_running_run_whose_scorer_died_at_once(world):
    run = world.register()
    claim_in_a_process_that_dies(world.engine, run.id)
    with session_scope(world.engine) as s:  # nobody swept yet: the run still reads "running"
        ended = sc.cancel_run(session=s, actor=world.evaluator, run_id=run.id)
    assert ended.status == RunStatus.CANCELLED.value and "process scoring it stopped" in ended.message
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="already cancelled"):
        sc.cancel_run(session=s, actor=world.evaluator, run_id=run.id)


def test_a_live_scorer_is_not_interrupted_and_a_running_run_cannot_be_rescored(world):
    run = world.register()
    assert claim_run(world.engine, run.id).executor == this_executor()  # this very process holds it
    with session_scope(world.engine) as s:
        assert sc.interrupt_dead_runs(session=s) == []
        with pytest.raises(ScoringError, match="still running"):
            sc.rescore_run(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts, max_bytes=5_000_000)
    with session_scope(world.engine) as s:  # a live scorer gets the flag and stops after its analysis
        assert sc.cancel_run(session=s, actor=world.evaluator, run_id=run.id).status == RunStatus.RUNNING.value


def test_a_scorer_on_another_host_is_dead_once_its_heartbeat_lapses():
    from datetime import timedelta

    from curation.models import utcnow
    from curation.services.run_lifecycle import LEASE_S

    now = utcnow()
    assert executor_alive("elsewhere/123/456", now - timedelta(seconds=LEASE_S / 2), now)
    assert not executor_alive("elsewhere/123/456", now - timedelta(seconds=LEASE_S + 1), now)
    assert not executor_alive("", None, now)
    assert executor_alive(this_executor(), None, now)  # on this host the process itself is asked


def test_two_processes_claiming_the_same_runs_get_each_once(world):
    ids = [world.register(agent=f"a{i}").id for i in range(8)]
    first, second = claim_from_processes(world.engine, ids)
    assert first | second == set(ids) and not first & second  # every run claimed, none by both
    with session_scope(world.engine) as s:
        assert [r.attempts for r in s.exec(select(ScoringRun))] == [1] * 8


# ------------------------------------------------------------------------------------ a real `forkpaths score`


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, FORKPATHS_DATA_DIR=str(tmp_path / "data"), FORKPATHS_LOAD_STARTER_DATASETS="false",
               FORKPATHS_ADMIN_PASSWORD="admin password 1")
    env.pop("FORKPATHS_DATABASE_URL", None)
    return env


def _cli(tmp_path: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """In this process (tests/cli_runner.py); ``process``: the real command."""
    return (run_cli_process if process else run_cli)(args, env=_env(tmp_path), cwd=PROJECT_ROOT)


def _slow_submission(shared_blade: Path, path: Path, n: int = 3, sleep_s: float = 2.0) -> Path:
    """Three of the example's analyses, each of whose transforms first sleeps (so a kill lands mid-run)."""
    data = json.loads((shared_blade / "examples" / "multirun_analyses.json").read_text())
    keep = dict(list(data["analyses"].items())[:n])
    for a in keep.values():
        a["transform_code"] = a["transform_code"].replace(
            "-> pd.DataFrame:\n", f"-> pd.DataFrame:\n    __import__('time').sleep({sleep_s})\n", 1)
    data["analyses"], data["n"] = keep, n
    path.write_text(json.dumps(data))
    return path


def test_forkpaths_score_killed_mid_run_is_marked_interrupted_by_the_next_command(tmp_path, shared_blade):
    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    sub = _slow_submission(shared_blade, tmp_path / "slow.json")
    proc = subprocess.Popen([sys.executable, "-m", "curation.cli", "score", "--release", "1.0.0", "--submission",
                             str(sub), "--out", str(tmp_path / "r.json")], cwd=PROJECT_ROOT, env=_env(tmp_path),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    engine = make_engine(f"sqlite:///{tmp_path / 'data' / 'forkpaths.db'}")
    try:
        deadline = time.monotonic() + 240  # a bound on waiting for the state, not an assertion about speed
        while time.monotonic() < deadline:  # wait until it has scored one analysis of three
            with session_scope(engine) as s:
                run = s.exec(select(ScoringRun)).first()
            if run is not None and run.progress_done >= 1:
                break
            assert proc.poll() is None, "forkpaths score ended before it could be killed"
            time.sleep(0.2)
        assert run is not None and run.status == RunStatus.RUNNING.value and run.progress_done < 3
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        with session_scope(engine) as s:  # killed: nothing ended it
            assert s.get(ScoringRun, run.id).status == RunStatus.RUNNING.value
    finally:
        if proc.poll() is None:
            proc.kill()
        engine.dispose()
    listed = json.loads(_cli(tmp_path, "runs", "list", "--json", process=True).stdout)  # the next command, any one
    assert [(r["id"], r["status"]) for r in listed] == [(run.id, "interrupted")]
    assert f"pid {proc.pid} " in listed[0]["message"] and "no scores were kept" in listed[0]["message"]
    again = _cli(tmp_path, "runs", "rescore", str(run.id), "--out", str(tmp_path / "again.json"))
    assert again.returncode == 0, again.stderr
    assert f"run {run.id} re-scored on release 1.0.0" in again.stderr and (tmp_path / "again.json").is_file()
    listed = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)
    assert [(r["status"], r["rescore_of_id"]) for r in listed] == [("succeeded", run.id), ("interrupted", None)]


def test_a_scorer_whose_run_was_taken_over_stops_and_writes_nothing(world):
    run = world.register()

    def taken_over_at_third(done, total, stage):
        if done == 3:  # another worker took the run over (it presumed this one dead)
            with session_scope(world.engine) as s:
                r = s.get(ScoringRun, run.id)
                r.executor, r.progress_done = "elsewhere/1/1", 0
                s.add(r)

    ended = sc.execute_run(world.engine, run.id, artifacts=world.artifacts,
                           on_progress=taken_over_at_third)
    assert ended.status == RunStatus.RUNNING.value and ended.executor == "elsewhere/1/1"
    assert ended.progress_done == 0 and ended.result_path is None and ended.scores is None


def test_a_run_this_worker_holds_but_no_longer_scores_is_taken_up_again(world):
    from curation.services.run_lifecycle import take_over_run_if_dead

    run = world.register()
    claim_run(world.engine, run.id)  # claimed here, then its scoring broke off without ending the run
    take_over_run_if_dead(world.engine, run.id)
    again = _get(world, run.id)
    assert again.status == RunStatus.QUEUED.value and "another worker takes it up" in again.message
    done = sc.execute_run(world.engine, run.id, artifacts=world.artifacts)
    assert done.status == RunStatus.SUCCEEDED.value and done.attempts == 2
