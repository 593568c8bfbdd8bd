"""The leaderboard page with runs of every kind at once (AppTest): BLADE analyses uploaded, an agent run with its
cost (analyses) and one answering MCQs, the reproducibility of the analyses run (companion columns), and a
hypotheses run on a DiscoveryBench release. Each role that may see the page picks each release and each kind,
and the page draws each kind's table with no error; an analyst cannot open it."""

from __future__ import annotations

import json

import pytest

from curation.db import session_scope
from curation.models import RunStatus
from curation.services import agent_runs as ar
from curation.services import reproducibility as rp
from curation.services.background_jobs import execute_job
from curation.services.scoring import JudgeSettings, execute_run, register_run
from curation.settings import Settings
from evaluation.llm import LLMConfig
from tests.curation.hms_world import answers_file, cut_hypotheses_release, standard_script
from tests.curation.scoring_world import make_world
from tests.evaluation.repro_world import inspector_responder
from tests.llm_server import ScriptedLLM
from tests.ui.conftest import texts

ANALYSIS = {"cvars": {"ivs": [{"description": "femininity of the hurricane's name", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('alldeaths ~ masfem', data=df).fit()",
            "workflow": "Regress alldeaths on masfem by OLS; report the slope. [scenario: good]"}
_INSPECTOR = ("Rewrite an analysis", "State the conclusion", "Compare two analyses", "Grade an answer")


def _respond(req):
    system = req["messages"][0]["content"]
    if any(m in system for m in _INSPECTOR):
        return inspector_responder(req)
    return {"content": json.dumps(ANALYSIS), "usage": {"prompt_tokens": 1000, "completion_tokens": 200}}


@pytest.fixture
def every_kind(ui, shared_blade, tmp_path):
    return build_every_kind(ui.engine, ui.settings, shared_blade, tmp_path)


def build_every_kind(engine, app_settings, shared_blade, tmp_path):
    """Runs of every kind in the app's data folder (also used by tests/browser/test_leaderboard_every_kind.py)."""
    data = app_settings.resolved_data_dir
    world = make_world(engine, data, shared_blade)  # BLADE hurricane, release 1.0.0 with its MCQs
    assert world.releases == app_settings.releases_store and world.runs == app_settings.runs_store
    uploaded = world.score()
    assert uploaded.status == RunStatus.SUCCEEDED.value, uploaded.message
    settings = Settings(data_dir=data, llm_max_retries=0, llm_timeout_s=5, agent_prices={"scripted": (2.0, 8.0)})
    kinds = {"analyses": uploaded.id}
    mcq = {"content": '{"answer": "A", "rationale": "first"}', "usage": {"prompt_tokens": 100, "completion_tokens": 9}}
    with ScriptedLLM(responder=lambda _r: mcq) as other:
        with session_scope(engine) as s:
            run = ar.start_agent_run(session=s, actor=world.evaluator, release_version="1.0.0", model="scripted",
                                     base_url=other.url, strategy="oneshot", kind="mcq", artifacts=world.artifacts,
                                     prices={"scripted": (2.0, 8.0)}, agent="oneshot agent")  # one agent, two runs
        execute_job(engine, run.job_id, settings)
    with ScriptedLLM(responder=_respond) as llm:
        for kind in ("analyses",):
            with session_scope(engine) as s:
                run = ar.start_agent_run(session=s, actor=world.evaluator, release_version="1.0.0", model="scripted",
                                         base_url=llm.url, strategy="oneshot", kind=kind, workflow=kind == "analyses",
                                         artifacts=world.artifacts, prices={"scripted": (2.0, 8.0)},
                                         agent="oneshot agent")  # named as the MCQ run: its accuracy joins this row
            execute_job(engine, run.job_id, settings)
            with session_scope(engine) as s:
                done = ar.get_agent_run(session=s, actor=world.evaluator, run_id=run.id)
            assert done.status == RunStatus.SUCCEEDED.value and done.scoring_run_ids[0] > 0, done.message
            assert done.cost and done.cost > 0
            kinds[f"agent {kind}"] = done.scoring_run_ids[0]
        judges = JudgeSettings(llm=LLMConfig(base_url=llm.url, model="inspector-test", cache_dir=tmp_path / "llm",
                                             max_retries=0))
        with session_scope(engine) as s:
            reg = rp.reproduce_run(session=s, actor=world.evaluator, run_id=kinds["agent analyses"],
                                   artifacts=world.artifacts, max_bytes=5_000_000,
                                   judges=judges)
        repro = execute_run(engine, reg.id, artifacts=world.artifacts, judges=judges)
        assert repro.status == RunStatus.SUCCEEDED.value, repro.message
    cut_hypotheses_release(engine, world.releases, tmp_path)  # 2.0.0: DiscoveryBench tasks
    with ScriptedLLM(standard_script()) as server:
        judges = JudgeSettings(llm=LLMConfig(base_url=server.url, model="judge-model", cache_dir=tmp_path / "llm2",
                                             max_retries=0, backoff_s=0))
        with session_scope(engine) as s:
            run = register_run(session=s, actor=world.evaluator, release_version="2.0.0",
                               files=[("answers.json", answers_file())], agent="react", model_name="gpt-x",
                               judge="hms", kind="hypotheses", artifacts=world.artifacts,
                               max_bytes=5_000_000, judges=judges)
        hyp = execute_run(engine, run.id, artifacts=world.artifacts, judges=judges)
    assert hyp.status == RunStatus.SUCCEEDED.value, hyp.message
    return world


def _pick(at, label, value):
    next(sb for sb in at.selectbox if sb.label == label).set_value(value).run()
    assert not at.exception, (label, value, at.exception)


def test_every_role_sees_every_kind_on_the_leaderboard(ui, every_kind):
    world = every_kind
    seen, tables = {}, {}
    for user in (world.evaluator, world.curator, ui.admin):
        at = ui.app(user).run()
        at.switch_page("app_pages/leaderboard.py").run()
        assert not at.exception, at.exception
        kinds = next(sb for sb in at.selectbox if sb.label == "Kind of task").options
        for version in ("1.0.0", "2.0.0"):
            _pick(at, "Release", version)
            for kind in kinds:
                _pick(at, "Kind of task", kind)
                shown = texts(at)
                table = at.dataframe[0].value if at.dataframe else None
                seen[(user.username, version, kind)] = (list(table["run"]) if table is not None else [], shown)
                if table is not None:
                    tables[(user.username, version, kind)] = table
    ev = world.evaluator.username
    # analyses on 1.0.0: the uploaded run and the agent's, with its strategy, cost and reproducibility rate
    runs, shown = next(v for (u, ver, k), v in seen.items() if u == ev and ver == "1.0.0" and k.startswith("Analyses"))
    assert len(runs) == 2 and any("oneshot agent" in r for r in runs), runs
    assert "older ground truth" not in shown, shown  # 2.0.0 holds no BLADE dataset: nothing changed there
    # MCQ, hypotheses: one run each, on their release; nothing of the other release's kind
    # companions on the analyses table, on the agent's row: its MCQ accuracy (the mcq agent run) and the
    # reproducibility rate of its workflows (one reproducible of one), and its cost
    board = next(t for (u, ver, k), t in tables.items() if u == ev and ver == "1.0.0" and k.startswith("Analyses"))
    agent = board[board["run"].str.contains("oneshot agent")].iloc[0]
    assert agent["MCQ accuracy"] is not None and 0 <= agent["MCQ accuracy"] <= 1
    assert agent["cost"].startswith("$") and float(agent["cost"][1:]) > 0 and agent["strategy"].startswith("oneshot")
    repro_cols = [c for c in board.columns if "reproducib" in c.lower()]
    assert repro_cols and str(agent[repro_cols[0]]).startswith("1.00"), (list(board.columns), agent.to_dict())
    assert any(len(r) == 1 for (u, v, k), (r, _t) in seen.items() if u == ev and v == "2.0.0" and "ypothes" in k)
    assert all("No succeeded run on release 2.0.0" in t for (u, v, k), (r, t) in seen.items()
               if v == "2.0.0" and "ypothes" not in k)
    assert all("Pick another kind of task above" in t for (u, v, k), (r, t) in seen.items() if not r)
    for user in (world.curator, ui.admin):  # same tables for the other roles that may see it
        assert {k[1:]: v[0] for k, v in seen.items() if k[0] == user.username} == {
            k[1:]: v[0] for k, v in seen.items() if k[0] == ev}

    # an analyst cannot open it (checked here, on the same runs: building them is most of this file's time)
    at = ui.app(world.analyst).run()
    with pytest.raises(ValueError):
        at.switch_page("app_pages/leaderboard.py")
