"""The sanity check in a real browser: elapsed time while it runs, Cancel, then output and columns first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import make_engine
from tests import factories as f
from tests.browser.helpers import fill_text, idle, shot, sign_in, tab

pytestmark = pytest.mark.browser
CODE = "Code (pandas statements acting on `df`)"


def _elapsed(text: str) -> float:
    found = re.search(r"… (\d+\.\d) s", text)
    assert found is not None, text
    return float(found.group(1))


def test_a_long_check_counts_up_then_shows_output_and_can_be_cancelled(browser, live_app, shots: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    analyst = f.user(engine, "ana")
    f.dataset(engine, live_app.settings.datasets_store, assign=[analyst])
    engine.dispose()
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    try:
        sign_in(page, live_app.url, "ana", open_page="Annotate")
        tab(page, "Transforms")

        # a check that runs until cancelled: nothing can finish it while the test looks at the elapsed time
        fill_text(page, CODE, "import time\nprint('waiting')\ntime.sleep(120)", area=True)
        page.get_by_role("button", name="▶ Run sanity check").click()
        running = page.get_by_text(re.compile(r"Running the sanity check… \d+\.\d s")).first
        running.wait_for(timeout=60_000)
        first = _elapsed(running.inner_text())
        # the elapsed time counts up while the check runs: wait for a later reading, however slow the machine
        later = page.wait_for_function(  # the largest reading on the page once one is past the first, else wait
            """(first) => {
                 const seen = [...document.querySelectorAll('p, div, span')]
                   .map(e => /Running the sanity check… (\\d+\\.\\d) s/.exec(e.textContent))
                   .filter(m => m !== null).map(m => parseFloat(m[1]));
                 const most = Math.max(...seen);
                 return most > first ? most : null; }""", arg=first, timeout=60_000).json_value()
        assert later > first, (first, later)
        shot(page, shots / "01-check-running.png", running)
        page.get_by_role("button", name="Cancel", exact=True).click()
        page.get_by_text(re.compile("The check was cancelled after")).wait_for(timeout=60_000)
        idle(page)
        page.get_by_text("Cancelled: the code was stopped before it finished.").wait_for(timeout=60_000)
        shot(page, shots / "04-check-cancelled.png", page.get_by_text(re.compile("The check was cancelled")))

        # a check that finishes shows what the code printed, literally, and the columns it created
        fill_text(page, CODE, "df['wind_kmh'] = df['wind'] * 1.609\nprint('converted :x: $1$ **mph**')", area=True)
        page.get_by_role("button", name="▶ Run sanity check").click()
        page.get_by_text(re.compile("Sanity check passed")).wait_for(timeout=120_000)
        idle(page)
        # literal: no emoji, no LaTeX
        page.get_by_test_id("stCode").get_by_text("converted :x: $1$ **mph**").wait_for(timeout=60_000)
        expect(page.get_by_text(re.compile(r"Running the sanity check"))).to_have_count(0)
        shot(page, shots / "02-check-output.png", page.get_by_text("What the code printed"))
        shot(page, shots / "03-check-preview-created-first.png", page.get_by_test_id("stDataFrame").last)
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
