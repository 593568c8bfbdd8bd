"""Agent runs end to end on SQLite and PostgreSQL: a scripted model answers the hurricane release's BLADE task,
each finished run is scored automatically, transcripts, cost and the generated submission are kept; cancel and
resume keep the finished tasks; a re-run sends no request; faults give tasks a status and the run goes on."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import BlindingViolation, PermissionDenied, ScoringError
from curation.models import AgentRun, AgentTaskRun, Role, RunStatus, ScoringRun
from curation.services import agent_runs as ar
from curation.services import releases as rel
from curation.services.background_jobs import execute_job
from curation.services.leaderboard import leaderboard
from curation.settings import Settings
from tests.curation.scoring_world import make_world
from tests.llm_server import ScriptedLLM

ANALYSIS = {"cvars": {"ivs": [{"description": "femininity of the hurricane's name", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]},
                      "controls": [{"description": "minimum pressure", "columns": ["min"], "is_moderator": False}]},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('alldeaths ~ masfem + min', data=df).fit()"}


@pytest.fixture
def world(engine, tmp_path, shared_blade):
    return make_world(engine, tmp_path, shared_blade)


def _settings(tmp_path, **kw) -> Settings:
    return Settings(data_dir=tmp_path, llm_max_retries=kw.pop("retries", 0), llm_timeout_s=kw.pop("timeout", 5),
                    agent_prices={"scripted": (2.0, 8.0)}, **kw)


def _start(world, url, *, actor=None, **kw) -> AgentRun:
    with session_scope(world.engine) as s:
        return ar.start_agent_run(session=s, actor=actor or world.evaluator, release_version="1.0.0", model="scripted",
                                  base_url=url, strategy=kw.pop("strategy", "oneshot"),
                                  runs_per_task=kw.pop("runs", 2), artifacts=world.artifacts,
                                  prices={"scripted": (2.0, 8.0)}, **kw)


def _run(world, run: AgentRun, settings: Settings) -> AgentRun:
    execute_job(world.engine, run.job_id, settings)
    with session_scope(world.engine) as s:
        return ar.get_agent_run(session=s, actor=world.evaluator, run_id=run.id)


def test_an_agent_run_is_answered_stored_and_scored(world, tmp_path):
    settings = _settings(tmp_path)
    answer = {"content": json.dumps({**ANALYSIS, "workflow": "OLS of deaths on name femininity and pressure."}),
              "usage": {"prompt_tokens": 1000, "completion_tokens": 250}}
    with ScriptedLLM(responder=lambda _r: answer) as llm:
        run = _start(world, llm.url, runs=2, workflow=True, temperature=0.7, seed=5)
        done = _run(world, run, settings)
        assert done.status == RunStatus.SUCCEEDED.value, done.message
        assert [r["seed"] for r in llm.requests] == [5, 6] and {r["temperature"] for r in llm.requests} == {0.7}
        assert (done.tasks_done, done.prompt_tokens, done.completion_tokens) == (2, 2000, 500)
        assert done.cost == pytest.approx((2000 * 2.0 + 500 * 8.0) / 1e6)
        assert done.templates == {"oneshot": "agent-oneshot@1"} and "2 of 2 task runs answered" in done.message
        with session_scope(world.engine) as s:
            scored = s.get(ScoringRun, done.scoring_run_ids[0])
            assert scored.status == RunStatus.SUCCEEDED.value, scored.message
            assert (scored.agent_run_id, scored.kind, scored.source) == (run.id, "analyses", "agent")
            rows = ar.task_runs(session=s, actor=world.evaluator, run_id=run.id)
            assert [(r.task_key, r.replicate, r.status) for r in rows] == [("hurricane", 0, "answered"),
                                                                           ("hurricane", 1, "answered")]
            messages = ar.transcript(session=s, actor=world.evaluator, task_run_id=rows[0].id,
                                     artifacts=settings.artifact_store())
            assert [m["role"] for m in messages] == ["system", "user", "assistant"]
            assert "Research question" in messages[1]["content"] and "workflow" in messages[2]["content"]
            name, data, mime = ar.submission_download(session=s, actor=world.evaluator, run_id=run.id,
                                                      artifacts=settings.artifact_store())
            sub = json.loads(data)
            assert (name, mime, sub["dataset_name"], sub["n"]) == ("hurricane.json", "application/json", "hurricane", 2)
            assert sub["analyses"]["1"]["workflow"].startswith("OLS")
            board = leaderboard(session=s, actor=world.evaluator, release_version="1.0.0",
                                artifacts=world.artifacts)
            row = next(r for r in board if r["run"] == scored.id)
            assert (row["agent"], row["model"], row["strategy"]) == (f"oneshot agent #{run.id}", "scripted", "oneshot + workflow")
            assert row["cost"] == pytest.approx(done.cost)
        # the same run again: every call from the cache, no request sent
        sent = len(llm.requests)
        again = _run(world, _start(world, llm.url, runs=2, workflow=True, temperature=0.7, seed=5), settings)
        assert len(llm.requests) == sent and again.calls == 0 and again.cache_hits == 2
        assert again.status == RunStatus.SUCCEEDED.value


def test_cancel_keeps_finished_tasks_and_resume_does_the_rest(world, tmp_path):
    settings = _settings(tmp_path)
    holder: dict[str, int] = {}

    def respond(_req):
        if len(llm.requests) == 2:  # the second task run is under way: an evaluator cancels
            with session_scope(world.engine) as s:
                ar.cancel_agent_run(session=s, actor=world.evaluator, run_id=holder["id"])
        return json.dumps(ANALYSIS)

    with ScriptedLLM(responder=respond) as llm:
        run = _start(world, llm.url, runs=4)
        holder["id"] = run.id
        stopped = _run(world, run, settings)
        assert stopped.status == RunStatus.CANCELLED.value and stopped.tasks_done == 2
        assert "they are kept" in stopped.message and stopped.scoring_run_ids == []
        with session_scope(world.engine) as s:
            ar.resume_agent_run(session=s, actor=world.evaluator, run_id=run.id)
            with pytest.raises(ScoringError, match="nothing to resume"):
                ar.resume_agent_run(session=s, actor=world.evaluator, run_id=run.id)
        with session_scope(world.engine) as s:
            job_id = s.get(AgentRun, run.id).job_id
        execute_job(world.engine, job_id, settings)
        assert len(llm.requests) == 4  # only the two missing task runs were asked
    with session_scope(world.engine) as s:
        done = s.get(AgentRun, run.id)
        assert done.status == RunStatus.SUCCEEDED.value and done.tasks_done == 4
        assert len(s.exec(select(AgentTaskRun).where(AgentTaskRun.agent_run_id == run.id)).all()) == 4


def test_cancel_reaches_a_react_task_under_way_even_a_running_tool_call(world, tmp_path, os_sandbox):
    """The evaluator cancels while the agent's code runs (a two-minute sleep): the step is killed, the half-done
    task is not stored, and resume asks it again from the start (its first turn from the cache)."""
    import threading
    import time

    settings = _settings(tmp_path)
    holder: dict[str, int] = {}

    def cancel() -> None:
        with session_scope(world.engine) as s:
            ar.cancel_agent_run(session=s, actor=world.evaluator, run_id=holder["id"])

    def respond(req):
        if req["messages"][-1]["role"] == "tool":
            return json.dumps(ANALYSIS)
        if not holder.get("timer"):
            holder["timer"] = 1
            threading.Timer(2.0, cancel).start()  # while the code below runs
        return {"tool_calls": [{"name": "run_python", "arguments": {"code": "import time\ntime.sleep(120)"}}]}

    with ScriptedLLM(responder=respond) as llm:
        run = _start(world, llm.url, runs=1, strategy="react",
                     settings=ar.AgentSettings(step_timeout_s=300))
        holder["id"] = run.id
        started = time.monotonic()
        stopped = _run(world, run, settings)
        assert time.monotonic() - started < 90  # the sleep was killed, not waited for (a bound, not a speed goal)
        assert stopped.status == RunStatus.CANCELLED.value and stopped.tasks_done == 0, stopped.message
        assert "Cancelled during" in stopped.message and len(llm.requests) == 1
        with session_scope(world.engine) as s:
            assert s.exec(select(AgentTaskRun).where(AgentTaskRun.agent_run_id == run.id)).all() == []
            job_id = ar.resume_agent_run(session=s, actor=world.evaluator, run_id=run.id).job_id
        holder["timer"] = 1  # no cancel this time: the sleep is cut by a short step limit instead
        with session_scope(world.engine) as s:
            agent = s.get(AgentRun, run.id)
            agent.settings = {**agent.settings, "step_timeout_s": 1.0}
            s.add(agent)
        execute_job(world.engine, job_id, settings)
        assert len(llm.requests) == 2
    with session_scope(world.engine) as s:
        done = s.get(AgentRun, run.id)
        assert done.status == RunStatus.SUCCEEDED.value and done.tasks_done == 1, done.message
        assert (done.cache_hits, done.calls) == (1, 1)  # its first turn replayed from the cache; then asked


def test_faults_give_tasks_a_status_and_the_run_goes_on(world, tmp_path):
    settings = _settings(tmp_path)
    with ScriptedLLM() as llm:
        llm.script = [{"content": "not json at all"}, {"content": "still not json"},  # run 0: invalid answer
                      {"status": 429},  # run 1: rate-limited (no retries here): endpoint error
                      {"raw": "<html><body>502</body></html>", "content_type": "text/html"},  # run 2: HTML page
                      {"content": json.dumps(ANALYSIS)}]  # run 3: answers
        done = _run(world, _start(world, llm.url, runs=4), settings)
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    assert "1 of 4 task runs answered (2 endpoint error, 1 invalid answer)" in done.message
    with session_scope(world.engine) as s:
        rows = ar.task_runs(session=s, actor=world.evaluator, run_id=done.id)
        assert [r.status for r in rows] == ["invalid_answer", "endpoint_error", "endpoint_error", "answered"]
        assert "HTTP 429" in rows[1].message and "HTML page" in rows[2].message
        name, data, _ = ar.submission_download(session=s, actor=world.evaluator, run_id=done.id,
                                               artifacts=settings.artifact_store())
        analyses = json.loads(data)["analyses"]
        assert analyses["0"][0] == 2 and "invalid_answer" in analyses["0"][1] and "cvars" in analyses["3"]
        assert s.get(ScoringRun, done.scoring_run_ids[0]).status == RunStatus.SUCCEEDED.value


def test_an_endpoint_that_is_down_fails_the_run_with_a_sentence_and_scores_nothing(world, tmp_path):
    done = _run(world, _start(world, ScriptedLLM.down_url(), runs=1), _settings(tmp_path))
    assert done.status == RunStatus.FAILED.value
    assert "No task got a usable answer" in done.message and "cannot connect" in done.message
    assert done.scoring_run_ids == []


def test_roles_choices_and_blinding_are_checked_before_anything_is_stored(world):
    with pytest.raises(PermissionDenied):
        _start(world, "http://127.0.0.1:1/v1", actor=world.analyst)
    for kw, words in [({"strategy": "plan"}, "Unknown strategy"), ({"runs": 0}, "between 1 and"),
                      ({"only": ["nope"]}, "no BLADE analyses task for nope"),
                      ({"temperature": 3.0}, "temperature"), ({"kind": "poems"}, "cannot answer"),
                      ({"agent": "bad\x1bname"}, "printable text")]:
        with pytest.raises(ScoringError, match=words):
            _start(world, "http://127.0.0.1:1/v1", **kw)
    with pytest.raises(ScoringError, match="not an http"):
        _start(world, "ftp://x")
    with session_scope(world.engine) as s:
        assert s.exec(select(AgentRun)).all() == []
    _ = BlindingViolation  # blinding: an analyst of the dataset cannot start runs at all (role check above)


_WORK_THEN_DIE = """
import sys
from curation.db import make_engine
from curation.services.background_jobs import execute_job
from curation.settings import Settings
url, schema, job_id, data_dir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
engine = make_engine(url, **({"connect_args": {"options": f"-csearch_path={schema}"}} if schema else {}))
execute_job(engine, job_id, Settings(data_dir=data_dir, llm_max_retries=0))
"""


def test_a_crash_keeps_the_finished_tasks_and_resume_does_the_rest(world, tmp_path):
    """The process running the job is killed with SIGKILL while the model answers its third task run."""
    import os
    import signal
    import subprocess
    import sys

    from curation.services.background_jobs import interrupt_dead_jobs
    from tests.curation.dead_scorer import PROJECT_ROOT

    child: dict[str, subprocess.Popen] = {}

    def respond(_req):
        if len(llm.requests) == 3:
            os.kill(child["p"].pid, signal.SIGKILL)
        return json.dumps(ANALYSIS)

    with ScriptedLLM(responder=respond) as llm:
        run = _start(world, llm.url, runs=4)
        url = world.engine.url.render_as_string(hide_password=False)
        schema = ""
        if world.engine.dialect.name == "postgresql":
            with world.engine.connect() as conn:
                schema = conn.exec_driver_sql("select current_schema()").scalar() or ""
        child["p"] = subprocess.Popen([sys.executable, "-c", _WORK_THEN_DIE, url, schema, str(run.job_id),
                                       str(tmp_path)], cwd=PROJECT_ROOT, env=dict(os.environ))
        assert child["p"].wait(timeout=120) == -9
        with session_scope(world.engine) as s:
            interrupt_dead_jobs(session=s)
        with session_scope(world.engine) as s:
            crashed = ar.get_agent_run(session=s, actor=world.evaluator, run_id=run.id)
            assert crashed.status == RunStatus.INTERRUPTED.value and crashed.tasks_done == 2, crashed.message
            assert "stopped after 2 of 4" in crashed.message
            resumed = ar.resume_agent_run(session=s, actor=world.evaluator, run_id=run.id)
            job_id = resumed.job_id
        execute_job(world.engine, job_id, _settings(tmp_path))
        # the two stored task runs were kept; the third (cut off) and the fourth were asked
        assert len(llm.requests) == 5
    with session_scope(world.engine) as s:
        done = s.get(AgentRun, run.id)
        assert done.status == RunStatus.SUCCEEDED.value and done.tasks_done == 4, done.message
        assert sorted(r.replicate for r in s.exec(select(AgentTaskRun).where(
            AgentTaskRun.agent_run_id == run.id)).all()) == [0, 1, 2, 3]


def test_mcqs_are_asked_through_the_same_machinery(world, tmp_path):
    from curation.models import ReleaseRecord

    with session_scope(world.engine) as s:
        record = s.exec(select(ReleaseRecord)).first()
        assert record is not None
    with ScriptedLLM(responder=lambda _r: '{"answer": "A", "rationale": "first"}') as llm:
        done = _run(world, _start(world, llm.url, runs=1, kind="mcq"), _settings(tmp_path))
        asked = len(llm.requests)
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    assert asked == done.tasks_total > 0
    with session_scope(world.engine) as s:
        scored = s.get(ScoringRun, done.scoring_run_ids[0])
        assert scored.kind == "mcq" and scored.status == RunStatus.SUCCEEDED.value, scored.message
        assert scored.scores["mcq"]["accuracy"] is not None


def test_an_unnamed_mcq_run_adds_its_accuracy_to_no_other_agent_s_row(world, tmp_path):
    """Issue 27: an MCQ agent run's accuracy landed on the row of another agent run with the default name and the
    same model. Unnamed runs are now each their own agent; naming two runs alike joins them on purpose."""
    analysis = json.dumps({**ANALYSIS, "workflow": "OLS of deaths on femininity and pressure"})
    with ScriptedLLM(responder=lambda r: '{"answer": "A", "rationale": "first"}' if "<one of " in json.dumps(r)
                     else analysis) as llm:
        analyses = _run(world, _start(world, llm.url, runs=1, workflow=True), _settings(tmp_path))
        mcq = _run(world, _start(world, llm.url, runs=1, kind="mcq"), _settings(tmp_path))
        named = _run(world, _start(world, llm.url, runs=1, kind="mcq", agent=analyses.agent), _settings(tmp_path))
    assert RunStatus.SUCCEEDED.value == analyses.status == mcq.status == named.status
    assert analyses.agent != mcq.agent and mcq.agent == f"oneshot agent #{mcq.id}"
    with session_scope(world.engine) as s:
        before = {r["run"]: r for r in leaderboard(session=s, actor=world.evaluator, release_version="1.0.0",
                                                   artifacts=world.artifacts)}
    row = before[analyses.scoring_run_ids[0]]
    with session_scope(world.engine) as s:
        named_run = s.get(ScoringRun, named.scoring_run_ids[0])
        assert named_run.agent == analyses.agent
        assert row["mcq_accuracy"] == named_run.scores["mcq"]["accuracy"]
        # without the named run, the unnamed MCQ run's accuracy would sit nowhere: no row has its agent
        assert all(r["agent"] != mcq.agent for r in before.values())


def test_an_mcq_run_without_one_valid_answer_fails_and_is_not_scored(world, tmp_path):
    """Issue 29 point 6: every answer without a valid letter used to be "succeeded. 0 of N task runs answered",
    in green, and scored; now the run failed, says why, and scores nothing."""
    with ScriptedLLM(responder=lambda _r: "I would rather not pick a letter.") as llm:
        done = _run(world, _start(world, llm.url, runs=1, kind="mcq"), _settings(tmp_path))
    assert done.status == RunStatus.FAILED.value, done.message
    assert done.message.startswith("No task got a usable answer, so nothing was scored: 0 of ")
    assert "invalid answer" in done.message and done.scoring_run_ids == []


@pytest.mark.postgres
def test_a_queued_agent_run_is_answered_and_scored_by_a_worker_process(tmp_path, shared_blade):
    """PostgreSQL: the run goes on procrastinate's queue and a `forkpaths worker` process (not this one) runs it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from sqlalchemy import text

    from curation.services.background_jobs import make_job_submitter
    from tests.conftest import PG_URL, _pg_schema_engine
    from tests.curation.dead_scorer import PROJECT_ROOT

    gen = _pg_schema_engine()
    engine = next(gen)
    try:
        world = make_world(engine, tmp_path, shared_blade)
        with engine.connect() as conn:
            schema = str(conn.execute(text("select current_schema()")).scalar())
        with ScriptedLLM(responder=lambda _r: json.dumps(ANALYSIS)) as llm:
            run = _start(world, llm.url, runs=2)
            assert make_job_submitter(engine, lambda: _settings(tmp_path)).submit(run.job_id) is not None
            env = dict(os.environ, FORKPATHS_DATA_DIR=str(tmp_path), FORKPATHS_LOAD_STARTER_DATASETS="false",
                       FORKPATHS_DATABASE_URL=f"{PG_URL}?options=-csearch_path%3D{schema}",
                       FORKPATHS_ADMIN_PASSWORD="admin password 1")
            log = open(tmp_path / "worker.log", "wb")  # noqa: SIM115 - closed below
            worker = subprocess.Popen([sys.executable, "-m", "curation.cli", "worker"], cwd=PROJECT_ROOT, env=env,
                                      stdout=log, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 300
                while True:  # a bound on the wait, not a speed assertion
                    with session_scope(engine) as s:
                        current = ar.get_agent_run(session=s, actor=world.evaluator, run_id=run.id)
                    if current.status not in ar.ACTIVE or worker.poll() is not None:
                        break
                    assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
                    time.sleep(0.5)
            finally:
                worker.send_signal(signal.SIGTERM)
                try:
                    worker.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    worker.kill()
                log.close()
        assert current.status == RunStatus.SUCCEEDED.value, (current.message,
                                                              (tmp_path / "worker.log").read_text()[-3000:])
        with session_scope(engine) as s:
            assert s.get(ScoringRun, current.scoring_run_ids[0]).status == RunStatus.SUCCEEDED.value
            from curation.models import BackgroundJob
            assert s.get(BackgroundJob, current.job_id).executor.split("/")[1] == str(worker.pid)
    finally:
        next(gen, None)


def _worldbank_tree(shared, root):
    """One real folder of the shared DiscoveryBench in its tree, with its rows of the answer key (the gold)."""
    import shutil

    shutil.copytree(shared / "real" / "test" / "worldbank_education_gdp", root / "real" / "test" /
                    "worldbank_education_gdp")
    lines = (shared / "answer_key_real.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (root / "answer_key_real.csv").write_text(lines[0] + "".join(x for x in lines[1:]
                                                                 if x.startswith("worldbank_education_gdp,")))
    return root


def test_a_discoverybench_task_is_answered_with_the_hypotheses_submission(engine, tmp_path, shared_discoverybench,
                                                                          os_sandbox):
    """A DiscoveryBench folder imported and released: a ReAct agent reads the task's own data file in the sandbox
    and answers; the run's submission is the hypotheses format, and the run is scored by the hypotheses kind (its
    own judge, hms, through the configured endpoint) against the released gold."""
    from curation.services.discoverybench_import import import_discoverybench
    from curation.services.scoring import get_run, stored_result
    from evaluation.tasks.hypotheses import read_result
    from tests import factories as f
    from tests.evaluation.hms_script import HMSScript, step_of, sub

    store = tmp_path / "data" / "datasets"
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=_worldbank_tree(shared_discoverybench, tmp_path / "db"),
                              store=store, max_bytes=200 * 2**20)
    curator = f.user(engine, "cura-h", Role.CURATOR)
    evaluator = f.user(engine, "eva-h", Role.EVALUATOR)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="",
                        artifacts=_settings(tmp_path / "data").artifact_store(), store=store)
    key = "real/test/worldbank_education_gdp/metadata_0/q0"
    reply = {"hypothesis": "Education spending goes with GDP growth in most regions.",
             "workflow": "Group by region, correlate spending with growth."}
    gold = "Increase in education expenditure generates a positive impact on per capita GDP in developing countries"
    judge = HMSScript(decompositions={
        gold: [sub("g", "developing countries", ["education expenditure", "per capita GDP"], "positive")],
        reply["hypothesis"]: [sub("p", "most regions", ["education spending", "GDP growth"], "goes with")]},
        pair_contexts={"P0|G0": True}, variables={"P0|G0": [[1, 1], [2, 2]]}, relationships={"P0|G0": "B"})

    def respond(req):
        if step_of(req["messages"][-1]["content"]) != "unknown":  # the hms judge asks (same endpoint)
            return judge(req)
        if req["messages"][-1]["role"] == "tool":
            return json.dumps(reply)
        return {"tool_calls": [{"name": "run_python", "arguments": {"code": "print(list(df.columns)[:5], len(df))"}}]}

    with ScriptedLLM(responder=respond) as llm:
        settings = _settings(tmp_path / "data", llm_base_url=llm.url, llm_model="judge-model")
        assert settings.releases_store == tmp_path / "data" / "releases"
        with session_scope(engine) as s:
            run = ar.start_agent_run(session=s, actor=evaluator, release_version="1.0.0", model="scripted",
                                     base_url=llm.url, strategy="react", kind="hypotheses", only=[key],
                                     artifacts=settings.artifact_store())
        execute_job(engine, run.job_id, settings)
        prompt = llm.requests[0]["messages"][1]["content"]
        observation = llm.requests[1]["messages"][-1]["content"]
    assert "education" in prompt.lower() and "worldbank_education_gdp.csv" in prompt
    import re  # the task's table was loaded as df: its first columns and its row count were printed
    assert "Traceback" not in observation and re.fullmatch(r"\[('[^']*', ){4}'[^']*'\] [1-9]\d*", observation.strip())
    with session_scope(engine) as s:
        done = ar.get_agent_run(session=s, actor=evaluator, run_id=run.id)
        assert done.tasks_total == 1 and done.tasks_done == 1
        name, data, _ = ar.submission_download(session=s, actor=evaluator, run_id=run.id,
                                               artifacts=settings.artifact_store())
    assert name == "hypotheses-run0.json"
    assert json.loads(data) == {"format": "forkpaths-hypotheses", "format_version": "1.0",
                                "answers": [{"task": key, **reply}]}
    # scored by the hypotheses kind with its own judge: one scoring run, succeeded, HMS worked by hand
    assert done.status == RunStatus.SUCCEEDED.value and "not scored" not in done.message, done.message
    assert len(done.scoring_run_ids) == 1 and done.scoring_run_ids[0] > 0, done.message
    assert f"Scored as run #{done.scoring_run_ids[0]}." in done.message
    assert "decompose" in judge.seen
    with session_scope(engine) as s:
        scored = get_run(session=s, actor=evaluator, run_id=done.scoring_run_ids[0])
        assert (scored.kind, scored.status, scored.agent_run_id) == ("hypotheses", RunStatus.SUCCEEDED.value, run.id)
        assert scored.judge["name"] == "hms" and scored.judge["model"] == "judge-model"
        result = read_result(stored_result(scored, settings.artifact_store()))
    items = {i.task: i for i in result.items}
    assert key in items, list(items)
    # context matched, variables 2 of 2 (F1 1), relationship B (0.5): HMS = recall 1 x (1 x 0.5) = 0.5
    assert items[key].hms == 0.5


def test_an_agent_run_without_a_judge_for_its_kind_says_it_was_not_scored(engine, tmp_path, shared_discoverybench):
    """No LLM endpoint configured: the hypotheses run is stored and the run says, in words, why it was not scored
    (never "Scored as runs ." with no run)."""
    from curation.services.discoverybench_import import import_discoverybench
    from tests import factories as f

    store = tmp_path / "data" / "datasets"
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=shared_discoverybench / "real" / "test" /
                              "worldbank_education_gdp", store=store, max_bytes=200 * 2**20)
    curator = f.user(engine, "cura-n", Role.CURATOR)
    evaluator = f.user(engine, "eva-n", Role.EVALUATOR)
    settings = _settings(tmp_path / "data")
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=settings.artifact_store(),
                        store=store)
    key = "real/test/worldbank_education_gdp/metadata_0/q0"
    reply = json.dumps({"hypothesis": "h", "workflow": "w"})
    with ScriptedLLM(responder=lambda _r: reply) as llm:
        with session_scope(engine) as s:
            run = ar.start_agent_run(session=s, actor=evaluator, release_version="1.0.0", model="scripted",
                                     base_url=llm.url, strategy="oneshot", kind="hypotheses", only=[key],
                                     artifacts=settings.artifact_store())
        execute_job(engine, run.job_id, settings)
    with session_scope(engine) as s:
        done = ar.get_agent_run(session=s, actor=evaluator, run_id=run.id)
    assert "Scored as" not in done.message and "was not scored" in done.message, done.message
    assert "hms judge needs an endpoint" in done.message and "FORKPATHS_LLM_BASE_URL" in done.message
