"""The leaderboard in a real browser with runs of every kind at once (uploaded BLADE analyses, an agent run with
its cost, MCQ accuracy and reproducibility as companion columns, a hypotheses run on a DiscoveryBench release):
screenshots of each kind's table for a person to look at, and no error on the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.db import make_engine
from tests.browser.helpers import idle, shot, sign_in
from tests.browser.test_hypothesis_flow import pick
from tests.ui.test_leaderboard_every_kind import build_every_kind

pytestmark = pytest.mark.browser


def test_leaderboard_with_every_kind(browser, live_app, shots: Path, shared_blade, tmp_path):
    engine = make_engine(live_app.settings.resolved_database_url)
    build_every_kind(engine, live_app.settings, shared_blade, tmp_path)
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    sign_in(page, live_app.url, "eva-s", open_page="Leaderboard")
    try:
        page.get_by_text("No succeeded run on release 2.0.0 yet of this kind (Analyses)").wait_for(timeout=60_000)
        shot(page, shots / "00-newest-release-analyses.png")
        pick(page, "Release", "1.0.0")
        page.get_by_text("oneshot agent").first.wait_for(state="attached", timeout=60_000)  # a grid cell
        idle(page)
        shot(page, shots / "01-analyses-1.0.0.png")
        pick(page, "Release", "2.0.0")
        pick(page, "Kind of task", "Hypotheses")
        page.get_by_text("HMS per run").first.wait_for(state="attached", timeout=60_000)
        idle(page)
        shot(page, shots / "02-hypotheses-2.0.0.png")
        assert page.locator("[data-testid='stException']").count() == 0
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-3000:])
        raise
    engine.dispose()
