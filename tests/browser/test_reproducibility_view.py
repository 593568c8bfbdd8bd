"""An evaluator opens a reproducibility run in a real browser: the leaderboard's reproducibility columns, the
items, one item side by side (both codes, both outputs, both conclusions, the inspector's reasoning), an
override that changes the rate, and an inspector verdict labelled blind for the judge-validation card.

The run is scored before the browser opens, by the services with the scripted inspector on 127.0.0.1 (the app
itself has no LLM configured: viewing needs none)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import session_scope
from curation.models import RunStatus
from curation.services.reproducibility import reproduce_run
from curation.services.scoring import JudgeSettings, execute_run, register_run
from evaluation.llm import LLMConfig
from tests.browser.helpers import click, idle, metric, release_hurricane, shot, sign_in
from tests.curation.test_reproducibility_runs import _submission
from tests.evaluation.repro_world import inspector_responder
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.browser


def test_side_by_side_override_and_validation(browser, live_app, shots: Path, shared_blade: Path, tmp_path,
                                              os_sandbox):
    cfg = live_app.settings
    engine, curator = release_hurricane(live_app, shared_blade)
    with session_scope(engine) as s:
        run = register_run(session=s, actor=curator, release_version="1.0.0",
                           files=[("hurricane.json", _submission())], agent="ReAct agent", model_name="gpt-4o",
                           artifacts=cfg.artifact_store(),
                           max_bytes=cfg.max_submission_bytes)
    analyses = execute_run(engine, run.id, artifacts=cfg.artifact_store())
    assert analyses.status == RunStatus.SUCCEEDED.value, analyses.message
    with ScriptedLLM(inspector_responder) as llm:
        judges = JudgeSettings(llm=LLMConfig(base_url=llm.url, model="inspector-test", cache_dir=tmp_path / "llm",
                                             max_retries=0))
        with session_scope(engine) as s:
            reg = reproduce_run(session=s, actor=curator, run_id=analyses.id, artifacts=cfg.artifact_store(), max_bytes=cfg.max_submission_bytes, judges=judges)
        repro = execute_run(engine, reg.id, artifacts=cfg.artifact_store(),
                            judges=judges)
    assert repro.status == RunStatus.SUCCEEDED.value, repro.message

    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    try:
        sign_in(page, live_app.url, "evie", open_page="Leaderboard")
        table = page.locator('[data-testid="stDataFrame"]').first
        table.wait_for(timeout=60_000)
        page.wait_for_timeout(800)
        shot(page, shots / "01-leaderboard.png")

        page.get_by_role("link", name="Run details").click()
        idle(page)
        page.get_by_text("Reproducibility rate").first.wait_for(timeout=60_000)
        assert metric(page, "Reproducibility rate").startswith("0.50")
        shot(page, shots / "02-figures-and-items.png")
        side = page.get_by_text("Inspector, from the workflow alone")
        side.wait_for()
        # the first item (the reproducible one): both codes and outputs side by side
        expect(page.get_by_text("Original analysis", exact=True)).to_be_visible()
        expect(page.get_by_text(re.compile(r"slope -?\d"))).to_be_visible()
        expect(page.get_by_text("OLS Regression Results").first).to_be_attached()
        shot(page, shots / "03-side-by-side.png", side)
        shot(page, shots / "04-comparison.png", page.get_by_text("The inspector's comparison"))

        # pick the garbage item and override its outcome
        idle(page)
        page.get_by_label("Item", exact=True).click()
        page.keyboard.type("hurricane/2")  # the selectbox filters its options as one types
        page.get_by_role("option").filter(has_text="hurricane/2").first.click(timeout=60_000)
        idle(page)
        page.locator('[data-testid="stAlert"]').filter(has_text="did not write usable code").wait_for()
        shot(page, shots / "05-inspector-failed.png", page.get_by_text("Override this outcome"))
        page.get_by_label("New outcome", exact=True).click()
        page.get_by_role("option").filter(has_text="not reproducible").click()
        page.get_by_label("Reason (kept with the run)", exact=True).fill("The workflow is too vague to redo.")
        click(page, "Save the override")
        page.get_by_text("Override saved").wait_for(timeout=60_000)
        expect(page.locator('[data-testid="stMetric"]').filter(has_text="Reproducibility rate").first
               ).to_contain_text("by overrides", timeout=60_000)
        idle(page)
        assert metric(page, "Reproducibility rate").startswith("0.33")
        shot(page, shots / "06-after-override.png")

        # validate the inspector: queue its verdicts, label one blind, see the card
        page.get_by_text("Validate the inspector against experts").click()
        idle(page)
        click(page, "Add this run's verdicts to the queue")
        page.get_by_text("2 verdict(s) added").wait_for(timeout=30_000)
        click(page, "✔ Same")
        page.get_by_text(re.compile(r"inspector-test judge, reproducibility verdicts")).wait_for(timeout=30_000)
        # two verdicts queued, one labelled: one waits (the rerun briefly shows the old queue beside the new one)
        waiting = page.get_by_text("1 verdict waiting for a label.", exact=True)
        waiting.wait_for(timeout=30_000)
        shot(page, shots / "07-validation.png", waiting)
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
