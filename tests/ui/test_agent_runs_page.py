"""The Agent runs page in AppTest, per role: who sees it, a start refused with a sentence (nothing stored), and a
finished run with its cost, tasks and transcript."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.models import AgentRun, Role
from curation.services import agent_runs as ar
from curation.services import releases as rel
from curation.services.background_jobs import execute_job
from curation.services.blade_import import import_blade
from tests import factories as f
from tests.llm_server import ScriptedLLM
from tests.ui.conftest import texts

ANALYSIS = {"cvars": {"ivs": [{"description": "name", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
            "transform_code": "def transform(df):\n    return df", "m_code": "def model(df):\n    return None"}


@pytest.fixture
def released(ui, shared_blade):
    s_ = ui.settings
    with session_scope(ui.engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "hurricane", store=s_.datasets_store,
                     max_bytes=200 * 2**20)
    with session_scope(ui.engine) as s:
        rel.cut_release(session=s, actor=ui.curator, version="1.0.0", notes="", artifacts=s_.artifact_store(),
                        store=s_.datasets_store)
    return f.user(ui.engine, "evie", Role.EVALUATOR)


def _open(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/agent_runs.py").run()
    assert not at.exception, at.exception
    return at


def test_who_sees_the_agent_runs_page(ui, released):
    for user in (released, ui.curator, ui.admin):
        at = _open(ui, user)
        assert "Agent runs" in at.title[0].value and "This page is for" not in texts(at)
    with pytest.raises(ValueError):
        ui.app(ui.analyst).run().switch_page("app_pages/agent_runs.py")


def test_a_bad_start_says_what_is_wrong_and_stores_nothing(ui, released):
    at = _open(ui, released)
    at.text_input(key="agent.base_url").input("localhost:11434")
    at.text_input(key="agent.model").input("llama")
    at.button[0].click().run()
    assert "is not an http(s) URL" in texts(at)
    with session_scope(ui.engine) as s:
        assert s.exec(select(AgentRun)).all() == []


def test_a_finished_run_shows_cost_tasks_and_transcript(ui, released):
    with ScriptedLLM(responder=lambda _r: {"content": json.dumps(ANALYSIS),
                                           "usage": {"prompt_tokens": 300, "completion_tokens": 30}}) as llm:
        with session_scope(ui.engine) as s:
            run = ar.start_agent_run(session=s, actor=released, release_version="1.0.0", model="scripted",
                                     base_url=llm.url, strategy="oneshot", runs_per_task=1,
                                     artifacts=ui.settings.artifact_store(), prices={"scripted": (1.0, 2.0)})
        execute_job(ui.engine, run.job_id, ui.settings)
    at = _open(ui, released)
    shown = texts(at)
    assert "Agent run 1 succeeded" in shown and "1 of 1 task runs answered" in shown
    assert "300 tokens in · 30 out · cost $0.0004" in shown
    assert any(sb.label == "Transcript of" for sb in at.selectbox)
    assert "Prompt" in shown and "Model" in shown


def test_a_run_says_how_it_ended_in_the_right_colour_with_its_agent_named(ui, released):
    """Issue 29 points 6 and 12: a run where some task runs got no usable answer is a warning, not a green
    success; a cancelled run is not a red error; the typed agent name is in the runs table and the picker."""
    with ScriptedLLM() as llm:
        llm.script = [{"content": "not json"}, {"content": "still not json"}, {"content": json.dumps(ANALYSIS)}]
        with session_scope(ui.engine) as s:
            partial = ar.start_agent_run(session=s, actor=released, release_version="1.0.0", model="scripted",
                                         base_url=llm.url, strategy="oneshot", runs_per_task=2, agent="Hurricane bot",
                                         artifacts=ui.settings.artifact_store(), prices={})
        execute_job(ui.engine, partial.job_id, ui.settings)
    with session_scope(ui.engine) as s:
        stopped = ar.start_agent_run(session=s, actor=released, release_version="1.0.0", model="scripted",
                                     base_url="http://127.0.0.1:9/v1", strategy="oneshot", runs_per_task=1,
                                     agent="Stopped bot", artifacts=ui.settings.artifact_store(), prices={})
    with session_scope(ui.engine) as s:
        ar.cancel_agent_run(session=s, actor=released, run_id=stopped.id)
    at = _open(ui, released)
    picker = next(sb for sb in at.selectbox if sb.label == "Agent run")
    assert list(at.dataframe[0].value["agent"]) == ["Stopped bot", "Hurricane bot"]
    assert any("Stopped bot" in str(o) for o in picker.options) and any("Hurricane bot" in str(o)
                                                                         for o in picker.options)
    picker.set_value(stopped.id).run()
    assert "was cancelled" in " ".join(i.value for i in at.info) and not at.error, [e.value for e in at.error]
    next(sb for sb in at.selectbox if sb.label == "Agent run").set_value(partial.id).run()
    assert not at.success and "1 of 2 task runs answered" in " ".join(w.value for w in at.warning)
