"""An evaluator scores an agent's hypotheses in a real browser with the hms judge (the scripted OpenAI-compatible
server on 127.0.0.1 stands in for the LLM), reads the leaderboard, drills into one query (gold and predicted
decompositions side by side with the judge's explanations), judges its relationship and sees HMS change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import make_engine
from curation.models import Role
from tests import factories as f
from tests.browser.helpers import click, configured, idle, llm_env, metric, score_hypotheses, shot, sign_in
from tests.curation.hms_world import answers_file, cut_hypotheses_release, standard_script
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.browser


def test_evaluator_scores_hypotheses_drills_down_and_judges_a_facet(browser, live_app, tmp_path, shots: Path):
    with ScriptedLLM(standard_script()) as server, configured(live_app, llm_env(server.url)) as app:
        url, cfg = app.url, app.settings
        engine = make_engine(cfg.resolved_database_url)
        cut_hypotheses_release(engine, cfg.releases_store, tmp_path)
        f.user(engine, "evie", Role.EVALUATOR)
        answers = tmp_path / "agent-hypotheses.json"
        answers.write_bytes(answers_file())
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        sign_in(page, url, "evie", open_page="Scoring runs")
        score_hypotheses(page, answers, shots, "01-upload.png", "02-run-succeeded.png")

        page.get_by_role("link", name="Leaderboard").click()
        idle(page)
        page.get_by_label("Kind of task").click() if page.get_by_label("Kind of task").count() else None
        page.get_by_role("option", name=re.compile("Hypotheses")).click()
        idle(page)
        page.get_by_text("HMS per run").first.wait_for(timeout=60_000)
        shot(page, shots / "03-leaderboard.png")

        page.get_by_role("link", name="Run details").click()
        idle(page)
        expect(page.locator('[data-testid="stMetric"]').filter(has_text="HMS").first).to_be_visible()
        assert metric(page, "HMS") == "0.333"
        page.get_by_label("Query", exact=True).click()
        page.get_by_role("option", name="real/test/crops/metadata_0/q0").click()
        idle(page)
        page.get_by_text("Context matching").wait_for()
        shot(page, shots / "04-query.png", page.get_by_text("Gold", exact=True))
        shot(page, shots / "05-facets.png", page.get_by_text("Matched pairs: variables and relationship"))
        page.get_by_label("Facet", exact=True).click()
        page.get_by_role("option", name="relationship").click()
        idle(page)
        page.get_by_text("A · very similar (1)").click()
        page.get_by_label("Reason (kept with the run)").fill("rain helping crops is the same claim here")
        click(page, "Record my judgement")
        page.get_by_text(re.compile("Judgement saved")).wait_for(timeout=30_000)
        expect(page.locator('[data-testid="stMetric"]').filter(has_text="HMS").first).to_contain_text("0.458")
        shot(page, shots / "06-after-judgement.png")
