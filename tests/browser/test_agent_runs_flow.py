"""An evaluator starts a ReAct agent run on the page against the scripted model on 127.0.0.1, watches it
progress, reads a transcript (tool call, observation, answer) and opens the scored run and the leaderboard."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import LiveApp, click, idle, release_hurricane, serving, shot, sign_in
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.browser

ANALYSIS = {"cvars": {"ivs": [{"description": "femininity of the storm's name", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]},
                      "controls": [{"description": "minimum pressure", "columns": ["min"], "is_moderator": False}]},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('alldeaths ~ masfem + min', data=df).fit()",
            "workflow": "Regress deaths on the femininity of the name, controlling for minimum pressure."}


def _respond(req):
    if req["messages"][-1]["role"] == "tool":  # it read the observation: answer
        return {"delay": 1.0, "content": json.dumps(ANALYSIS), "usage": {"prompt_tokens": 900, "completion_tokens": 200}}
    return {"delay": 1.0, "usage": {"prompt_tokens": 700, "completion_tokens": 40},
            "tool_calls": [{"name": "run_python", "arguments": {"code": "print(df[['masfem', 'alldeaths']].describe())"}}]}


@pytest.fixture
def live_app(tmp_path: Path) -> Iterator[LiveApp]:
    """A server of its own: on the worker's shared server this flow failed twice in the full suite (its agent run
    never showed its code within 60 s) while it passed alone; the cause is not yet found."""
    with serving(tmp_path) as app:
        yield app


def test_evaluator_runs_an_agent_follows_it_and_reads_a_transcript(browser, live_app, shots: Path, shared_blade: Path,
                                                                   os_sandbox):
    release_hurricane(live_app, shared_blade)
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    with ScriptedLLM(responder=_respond) as llm:
        try:
            sign_in(page, live_app.url, "evie", open_page="Agent runs")
            page.get_by_text("coverage@10 needs at least").wait_for()
            page.get_by_label("Model", exact=True).fill("scripted-7b")
            page.get_by_label("Endpoint (OpenAI-compatible base URL)", exact=True).fill(llm.url)
            page.get_by_text("react", exact=True).click()
            page.get_by_label("Runs per task", exact=True).fill("3")
            page.get_by_text("Also write a workflow", exact=True).click()
            shot(page, shots / "01-start-form.png")
            page.get_by_role("button", name="Start").filter(visible=True).click()
            page.get_by_text(re.compile(r"Agent run 1 started")).wait_for(timeout=60_000)
            # the fragment refreshes the run while it works: first task runs done, then the end
            progress = page.get_by_text(re.compile(r"running: [12] of 3 task runs done"))
            progress.wait_for(timeout=120_000)
            shot(page, shots / "02-progress.png", progress)
            page.get_by_text(re.compile(r"Agent run 1 succeeded")).wait_for(timeout=240_000)
            idle(page)
            expect(page.get_by_text(re.compile(r"succeeded\. 3 of 3 task runs answered\. Scored as run #1"))).to_be_visible()
            expect(page.get_by_text(re.compile(r"4,800 tokens in · 720 out"))).to_be_visible()
            expect(page.get_by_text(re.compile(r"running: \d"))).to_have_count(0)
            shot(page, shots / "03-succeeded.png", page.get_by_text(re.compile(r"Agent run 1 succeeded")))
            observation = page.get_by_text(re.compile(r"Observation")).first
            observation.wait_for(timeout=60_000)
            expect(page.get_by_text("print(df[['masfem', 'alldeaths']].describe())").first).to_be_visible()
            expect(page.locator("code").filter(has_text="count").first).to_be_visible()  # describe()'s output
            shot(page, shots / "04-transcript.png", observation)
            shot(page, shots / "05-transcript-answer.png", page.get_by_text(re.compile(r"Regress deaths")).first)
            click(page, "Open scored run #1")
            page.get_by_text("The agent's code").wait_for(timeout=60_000)
            shot(page, shots / "06-scored-run.png")
            page.get_by_role("link", name="Leaderboard").click()
            idle(page)
            page.get_by_text("F1 per decision type").first.wait_for(timeout=60_000)
            # the table is drawn on a canvas; its cells are mirrored in an accessible grid
            cells = page.locator('[role="gridcell"]')
            expect(cells.filter(has_text="#1 react agent #1 · scripted-7b")).to_have_count(1, timeout=30_000)
            expect(cells.filter(has_text="react + workflow")).to_have_count(1)
            shot(page, shots / "07-leaderboard.png")
        finally:
            page.close()
