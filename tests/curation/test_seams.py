"""The pieces used together, as a user chains them: an agent run asked for workflows, then the reproducibility
of its scored run (service on SQLite and PostgreSQL, and ``forkpaths agent run --workflow`` then ``forkpaths
reproduce RUN`` in real processes); consensus gold decided in stage 3 reaching the release and the hypotheses
scoring; the leaderboard with runs of every kind at once."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from curation.db import session_scope
from curation.models import RunStatus, ScoringRun
from curation.services import agent_runs as ar
from curation.services import reproducibility as rp
from curation.services.background_jobs import execute_job
from curation.services.scoring import JudgeSettings, execute_run, stored_result, stored_submissions
from curation.settings import PROJECT_ROOT, Settings
from evaluation.llm import LLMConfig
from tests.cli_runner import forkpaths
from tests.curation.scoring_world import make_world
from tests.evaluation.repro_world import inspector_responder
from tests.factories import artifacts_for
from tests.llm_server import ScriptedLLM

ANALYSIS = {"cvars": {"ivs": [{"description": "femininity of the hurricane's name", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('alldeaths ~ masfem', data=df).fit()"}
WORKFLOWS = ["Regress alldeaths on masfem by OLS; report the slope. [scenario: good]",
             "Report the mean of the deaths. [scenario: differ]"]
_INSPECTOR = ("Rewrite an analysis", "State the conclusion", "Compare two analyses", "Grade an answer")


def _responder(seeds: list[int]):
    """One endpoint playing two parts: the agent (answers with an analysis and a workflow, the workflow by the
    request's seed, so each replicate gets its own) and the inspector (tests/evaluation/repro_world.py)."""

    def respond(req):
        if any(m in req["messages"][0]["content"] for m in _INSPECTOR):
            return inspector_responder(req)
        seeds.append(req.get("seed"))
        return json.dumps({**ANALYSIS, "workflow": WORKFLOWS[(req.get("seed") or 0) % 2]})

    return respond


def test_an_agent_run_with_workflows_is_then_checked_for_reproducibility(engine, tmp_path, shared_blade, os_sandbox):
    """Agent run --workflow on BLADE: its scored submission's analyses carry the workflows, and the
    reproducibility of that scored run judges exactly those items (one reproducible, one not)."""
    world = make_world(engine, tmp_path, shared_blade)
    seeds: list[int] = []
    with ScriptedLLM(responder=_responder(seeds)) as llm:
        settings = Settings(data_dir=tmp_path, llm_max_retries=0, llm_timeout_s=5)
        assert settings.releases_store == world.releases
        with session_scope(engine) as s:
            run = ar.start_agent_run(session=s, actor=world.evaluator, release_version="1.0.0", model="scripted",
                                     base_url=llm.url, strategy="oneshot", runs_per_task=2, workflow=True, seed=0,
                                     artifacts=world.artifacts)
        execute_job(engine, run.job_id, settings)
        with session_scope(engine) as s:
            done = ar.get_agent_run(session=s, actor=world.evaluator, run_id=run.id)
        assert done.status == RunStatus.SUCCEEDED.value and len(done.scoring_run_ids) == 1, done.message
        scored_id = done.scoring_run_ids[0]
        with session_scope(engine) as s:
            scored = s.get(ScoringRun, scored_id)
            assert scored is not None and scored.status == RunStatus.SUCCEEDED.value, scored.message
            files = stored_submissions(scored, settings.artifact_store())
        analyses = [a for _name, data in files for a in json.loads(data)["analyses"].values()]  # BLADE multi-run
        assert sorted(a["workflow"] for a in analyses) == sorted(WORKFLOWS)

        judges = JudgeSettings(llm=LLMConfig(base_url=llm.url, model="inspector-test", cache_dir=tmp_path / "llm",
                                             max_retries=0))
        with session_scope(engine) as s:
            reg = rp.reproduce_run(session=s, actor=world.evaluator, run_id=scored_id, artifacts=settings.artifact_store(), max_bytes=5_000_000, judges=judges)
            assert (reg.kind, reg.agent, reg.progress_total) == ("reproducibility", done.agent, 2)
        repro = execute_run(engine, reg.id, artifacts=settings.artifact_store(),
                            judges=judges)
    assert repro.status == RunStatus.SUCCEEDED.value, repro.message
    counts = repro.scores["reproducibility"]["counts"]
    assert counts == {"reproducible": 1, "not_reproducible": 1, "original_failed": 0, "inspector_failed": 0}
    with session_scope(engine) as s:
        items = rp.run_items(session=s, actor=world.evaluator, run_id=repro.id, artifacts=settings.artifact_store())
    assert sorted(i.workflow for i in items.items) == sorted(WORKFLOWS)


def _cli(tmp_path: Path, *args: str, process: bool = False, **env_extra: str) -> subprocess.CompletedProcess[str]:
    return forkpaths(tmp_path, *args, cwd=PROJECT_ROOT, process=process, FORKPATHS_LLM_MAX_RETRIES="0", **env_extra)


def test_agent_run_workflow_then_reproduce_from_the_terminal(tmp_path, shared_blade, os_sandbox):
    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    seeds: list[int] = []
    with ScriptedLLM(responder=_responder(seeds)) as llm:
        done = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "scripted", "--base-url", llm.url,
                    "--strategy", "oneshot", "--workflow", "--runs", "2", "--seed", "0")
        assert done.returncode == 0, done.stderr
        assert "Scored as run #1." in done.stdout, done.stdout
        got = _cli(tmp_path, "reproduce", "1", FORKPATHS_LLM_BASE_URL=llm.url, FORKPATHS_LLM_MODEL="inspector-cli",
                   process=True)  # the real command, once
    assert got.returncode == 0, got.stderr
    assert "the reproducibility of run 1 (2 workflow items; inspector inspector-cli)" in got.stderr
    runs = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)
    repro = next(r for r in runs if r["kind"] == "reproducibility")
    assert repro["status"] == "succeeded", repro
    assert repro["scores"]["reproducibility"]["counts"] == {"reproducible": 1, "not_reproducible": 1,
                                                             "original_failed": 0, "inspector_failed": 0}


@pytest.mark.parametrize("flag", ["--workflow"])
def test_agent_run_help_says_what_the_workflow_is_for(tmp_path, flag):
    out = _cli(tmp_path, "agent", "run", "--help").stdout
    assert flag in out and "reproduce" in out


def test_the_leaderboard_csv_holds_rows_with_and_without_companion_columns():
    """A run checked for reproducibility carries repro_rate and its CI; one not checked does not: the CSV (page
    download, `forkpaths runs export`) has every column, empty where a run has none (it raised before)."""
    import csv
    import io

    from curation.services.leaderboard import leaderboard_csv

    rows = [{"run": 1, "agent": "a", "weighted": 0.5},
            {"run": 2, "agent": "b", "weighted": 0.25, "repro_rate": 0.5, "repro_rate.low": 0.1,
             "repro_rate.high": 0.9}]
    got = list(csv.DictReader(io.StringIO(leaderboard_csv(rows))))
    assert list(got[0]) == ["run", "agent", "weighted", "repro_rate", "repro_rate.low", "repro_rate.high"]
    assert got[0]["repro_rate"] == "" and got[1]["repro_rate.high"] == "0.9"


def test_a_release_of_other_datasets_does_not_make_older_runs_stale(engine, tmp_path, shared_blade):
    """A BLADE run on 1.0.0, then a release 2.0.0 of DiscoveryBench tasks only: hurricane is not in 2.0.0, so it
    did not change there; the run is not labelled stale (it said 'hurricane changed in release 2.0.0'). A run whose
    dataset is released again with another ground truth still is."""
    from curation.services import leaderboard as lb
    from tests.curation.hms_world import cut_hypotheses_release

    world = make_world(engine, tmp_path, shared_blade)
    run = world.score()
    assert run.status == RunStatus.SUCCEEDED.value, run.message
    cut_hypotheses_release(engine, world.releases, tmp_path, version="2.0.0")
    with session_scope(engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0", artifacts=world.artifacts)
    assert [(r["run"], r["stale"]) for r in rows] == [(run.id, "")]
    world.change_ground_truth()
    world.cut("3.0.0")
    with session_scope(engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0", artifacts=world.artifacts)
    assert rows[0]["stale"].startswith("Scored on an older ground truth: hurricane changed in release 3.0.0")


def test_consensus_gold_of_stage_three_reaches_the_release_and_the_hypotheses_score(engine, store, tmp_path):
    """Stage 3 decides a gold hypothesis (context, variables, relationship as the analyst grounded them); the
    release cut by the service (its default parts hook) carries it, and scoring an answer against that release
    uses the curated decomposition as given (the judge decomposes the answer only)."""
    from curation.models import Stage
    from curation.services import releases as rel
    from curation.services.hypotheses import decide_gold
    from evaluation.tasks.hypotheses import read_result
    from tests.curation.hms_world import HMSWorld
    from tests.curation.hypothesis_world import build
    from tests.curation.test_hypothesis_curation import _stage, _two_submitted, _vote
    from tests.evaluation.hms_script import HMSScript, sub

    w = build(engine, store, tmp_path / "src")
    a_id, b_id = _two_submitted(w)
    _vote(w, w.bob, "hypothesis", a_id, "yes", "clear slope")
    _vote(w, w.ana, "hypothesis", b_id, "no", "the slope is clear")
    _stage(w, Stage.CLOSED)
    with session_scope(engine) as s:
        decide_gold(session=s, actor=w.cur, task_id=w.tasks["q0"].id, target_kind="hypothesis", target_id=a_id)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=w.cur, version="1.0.0", notes="", artifacts=artifacts_for(tmp_path / "releases"),
                        store=store)
    key = w.tasks["q0"].key
    predicted = "BMI goes up with age among adults."
    script = HMSScript(decompositions={predicted: [sub("p", "adults", ["age", "BMI"], "goes up")]},
                       pair_contexts={"P0|G0": True}, variables={"P0|G0": [[1, 1], [2, 2]]},
                       relationships={"P0|G0": "A"})
    answers = {"format": "forkpaths-hypotheses", "format_version": "1.0",
               "answers": [{"task": key, "hypothesis": predicted, "workflow": "OLS"}]}
    evaluator = f_user(engine)
    with ScriptedLLM(script) as server:
        hw = HMSWorld(engine=engine, releases=tmp_path / "releases", runs=tmp_path / "runs", server=server,
                      cache=tmp_path / "llm", curator=w.cur, evaluator=evaluator, evaluator2=w.cur, analyst=w.ana,
                      script=script)
        run = hw.score(json.dumps(answers).encode(), version="1.0.0")
    assert run.status == RunStatus.SUCCEEDED.value, run.message
    item = {i.task: i for i in read_result(stored_result(run, hw.artifacts)).items}[key]
    assert item.gold_hypothesis == "In US adults, BMI rises with age."
    assert item.gold is not None and item.gold.source == "given"
    (g,) = item.gold.sub_hypo
    assert (g.context, g.variables) == ("US adults surveyed", ["age", "bmi"]) and g.relations.startswith("positive")
    assert "decompose" in script.seen and item.hms == 1.0


def f_user(engine):
    from curation.models import Role
    from tests import factories as f

    return f.user(engine, "eva-gold", Role.EVALUATOR)
