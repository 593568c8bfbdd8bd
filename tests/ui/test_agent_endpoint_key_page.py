"""The Agent runs page sends the server's LLM key (a canary here) to no endpoint an evaluator types: a run started
from the page's form at a listener on 127.0.0.1 reaches it without the key; the server's own endpoint gets it."""

from __future__ import annotations

import json
import time

from sqlmodel import select

from curation.db import session_scope
from curation.models import AgentRun
from tests.llm_server import ScriptedLLM
from tests.ui.test_agent_runs_page import ANALYSIS, _open, released  # noqa: F401 - released is a fixture

CANARY = "sk-canary-page-0451"


def _finished(engine, timeout: float = 60.0) -> AgentRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with session_scope(engine) as s:
            run = s.exec(select(AgentRun)).first()
            if run is not None and run.status not in ("queued", "running"):
                return run
        time.sleep(0.2)
    raise AssertionError("the agent run started on the page did not finish within a minute")


def test_a_run_started_on_the_page_sends_the_server_key_only_to_the_server(ui, released, monkeypatch):  # noqa: F811
    answer = {"content": json.dumps(ANALYSIS)}
    with ScriptedLLM(responder=lambda _r: answer) as server, ScriptedLLM(responder=lambda _r: answer) as typed:
        monkeypatch.setenv("FORKPATHS_LLM_BASE_URL", server.url)
        monkeypatch.setenv("FORKPATHS_LLM_MODEL", "judge")
        monkeypatch.setenv("FORKPATHS_LLM_API_KEY", CANARY)
        monkeypatch.setenv("FORKPATHS_LLM_MAX_RETRIES", "0")
        at = _open(ui, released)
        assert at.text_input(key="agent.base_url").value == server.url  # the page offers the server's endpoint
        at.text_input(key="agent.base_url").input(typed.url)
        at.text_input(key="agent.model").input("scripted")
        at.button[0].click().run()
        assert not at.exception, at.exception
        run = _finished(ui.engine)
        assert run.base_url == typed.url and run.status == "succeeded", run.message
        assert typed.authorizations and not any(a and CANARY in a for a in typed.authorizations)
        assert not server.authorizations
