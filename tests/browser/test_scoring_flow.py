"""An evaluator uploads BLADE's multi-run example in a real browser, scores it with the offline judge, opens the
leaderboard, drills into one analysis, overrides a match and sees the score change."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import session_scope
from curation.services import releases as rel
from tests.browser.helpers import click, idle, metric, release_hurricane, shot, sign_in

pytestmark = pytest.mark.browser


def test_evaluator_scores_drills_down_and_overrides(browser, live_app, shots: Path, shared_blade: Path):
    engine, curator = release_hurricane(live_app, shared_blade)
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    try:
        sign_in(page, live_app.url, "evie")
        page.get_by_text("No succeeded run on release 1.0.0").wait_for()
        page.get_by_role("link", name="Scoring runs").click()
        idle(page)
        page.locator('input[type="file"]').first.set_input_files(str(shared_blade / "examples" / "multirun_analyses.json"))
        page.get_by_text(re.compile(r"alyses\.json")).first.wait_for()
        page.get_by_label("Agent", exact=True).fill("ReAct agent")
        page.get_by_label("Language model", exact=True).fill("gpt-4o")
        shot(page, shots / "01-upload.png")
        page.get_by_role("button", name="Score").filter(visible=True).click()
        page.get_by_text(re.compile(r"Run 1 queued")).wait_for(timeout=60_000)
        page.get_by_text("Run 1 succeeded").wait_for(timeout=120_000)  # the fragment refreshes the status
        shot(page, shots / "02-run-succeeded.png")

        page.get_by_role("link", name="Leaderboard").click()
        idle(page)
        page.get_by_text("F1 per decision type").first.wait_for(timeout=60_000)
        shot(page, shots / "03-leaderboard.png")
        shot(page, shots / "04-leaderboard-charts.png", page.get_by_text("Weighted score (red").first)
        click(page, "Open run details")
        page.get_by_text("The agent's code").wait_for(timeout=60_000)
        before = metric(page, "F1 variables")
        shot(page, shots / "05-drilldown.png", page.get_by_text("The agent's code"))
        credit = page.get_by_text("Ground-truth units it matched")  # below the converter's units
        credit.wait_for()
        shot(page, shots / "05b-converter.png", credit)
        shot(page, shots / "06-matches.png", page.get_by_text("Override a match"))

        item = page.get_by_label("Item", exact=True)  # the override form's selectbox
        item.click()
        page.get_by_role("option").filter(has_text="✔").first.click()
        page.get_by_label("Reason (kept with the run)", exact=True).fill("The agent's variable is a different concept")
        click(page, "Flip this match")
        page.get_by_text("Override saved").wait_for(timeout=60_000)
        # the figures are redrawn by the rerun after the flash: wait for the recomputed one, then read it
        expect(page.locator('[data-testid="stMetric"]').filter(has_text="F1 variables").first).to_contain_text(
            "by overrides", timeout=60_000)
        idle(page)
        after = metric(page, "F1 variables")
        shot(page, shots / "07-after-override.png")
        assert after != before, (before, after)
        assert "by overrides" in page.locator('[data-testid="stMetric"]').filter(has_text="F1 variables").inner_text()
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise


def test_stale_runs_comparison_and_judge_validation(browser, live_app, shots: Path, shared_blade: Path):
    from sqlmodel import select

    from curation.models import ConceptualVariable
    from curation.services.scoring import execute_run, register_run

    cfg = live_app.settings
    engine, curator = release_hurricane(live_app, shared_blade)
    data = (shared_blade / "examples" / "multirun_analyses.json").read_bytes()
    for agent, mode in (("ReAct", "default"), ("CodeAct", "blade")):
        with session_scope(engine) as s:
            run = register_run(session=s, actor=curator, release_version="1.0.0", files=[("m.json", data)],
                               agent=agent, model_name="gpt-4o", mode=mode, artifacts=cfg.artifact_store(), max_bytes=cfg.max_submission_bytes)
        execute_run(engine, run.id, artifacts=cfg.artifact_store())
    with session_scope(engine) as s:
        var = s.exec(select(ConceptualVariable).order_by(ConceptualVariable.id)).first()
        var.concept += " (reworded)"
        s.add(var)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.1.0", notes="", artifacts=cfg.artifact_store(),
                        store=cfg.datasets_store)
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    try:
        sign_in(page, live_app.url, "cleo", open_page="Leaderboard")
        page.get_by_text("No succeeded run on release 1.1.0").wait_for()
        page.get_by_text("Include runs on older releases").click()
        idle(page)
        page.get_by_text("hurricane changed in release 1.1.0").first.wait_for()
        page.get_by_text("F1 per decision type").first.wait_for(timeout=60_000)
        idle(page)
        page.wait_for_timeout(1000)
        shot(page, shots / "01-stale-runs.png")
        shot(page, shots / "02-stale-chart.png", page.get_by_role("button", name="⬇ CSV"))

        page.get_by_role("link", name="Compare runs").click()
        idle(page)
        page.get_by_text("F1(A) − F1(B) with paired bootstrap").first.wait_for(timeout=60_000)
        idle(page)
        page.wait_for_timeout(1000)
        shot(page, shots / "03-compare.png")

        page.get_by_role("link", name="Judge validation").click()
        idle(page)
        click(page, "Add to queue")
        page.get_by_text("20 decision(s) added").wait_for()
        for n, answer in enumerate(("✔ They match", "✔ They match", "✘ They do not match", "✔ They match"), 1):
            page.get_by_role("button", name=answer, exact=True).first.click()
            page.get_by_text(f"{n} labelled, {20 - n} waiting").wait_for()
            idle(page)
        page.get_by_text("4 labelled, 16 waiting").wait_for()
        page.wait_for_timeout(1000)
        shot(page, shots / "04-judge-validation.png", page.get_by_text("agreement, κ").first)
        page.get_by_role("link", name="Scoring runs").click()
        idle(page)
        page.get_by_role("button", name=re.compile(r"Re-score on release 1\.1\.0")).click()
        page.get_by_text(re.compile(r"re-scored on release 1\.1\.0")).wait_for(timeout=60_000)
        page.get_by_text(re.compile(r"Run 3 succeeded")).wait_for(timeout=120_000)
        shot(page, shots / "05-rescored.png")
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
