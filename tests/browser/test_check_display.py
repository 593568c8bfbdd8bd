"""The sanity check in a real browser: elapsed time while it runs, Cancel, then output and columns first."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from curation.db import make_engine
from tests import factories as f
from tests.browser.test_annotate_flow import PASSWORD, click, fill_text, idle, shot, tab

pytestmark = pytest.mark.browser
CODE = "Code (pandas statements acting on `df`)"


def test_a_long_check_counts_up_then_shows_output_and_can_be_cancelled(browser, live_app, shots: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    analyst = f.user(engine, "ana")
    f.dataset(engine, live_app.settings.datasets_store, assign=[analyst])
    engine.dispose()
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    try:
        page.goto(live_app.url)
        page.get_by_label("User name", exact=True).fill("ana")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        click(page, "Sign in")
        page.get_by_role("link", name="Annotate").click()
        idle(page)
        tab(page, "Transforms")

        fill_text(page, CODE, "import time\ntime.sleep(6)\ndf['wind_kmh'] = df['wind'] * 1.609\n"
                              "print('converted :x: $1$ **mph**')", area=True)
        page.get_by_role("button", name="▶ Run sanity check").click()
        running = page.get_by_text(re.compile(r"Running the sanity check… \d+\.\d s"))
        running.wait_for(timeout=30_000)
        first = float(re.search(r"… (\d+\.\d) s", running.inner_text()).group(1))
        page.wait_for_timeout(1500)
        later = float(re.search(r"… (\d+\.\d) s", running.inner_text()).group(1))
        assert later > first  # the elapsed time counts up while the check runs
        shot(page, shots / "01-check-running.png", running)

        page.get_by_text(re.compile("Sanity check passed")).wait_for(timeout=60_000)
        idle(page)
        page.get_by_test_id("stCode").get_by_text("converted :x: $1$ **mph**").wait_for()  # literal: no emoji, no LaTeX
        shot(page, shots / "02-check-output.png", page.get_by_text("What the code printed"))
        shot(page, shots / "03-check-preview-created-first.png", page.get_by_test_id("stDataFrame").last)

        fill_text(page, CODE, "import time\nprint('waiting')\ntime.sleep(120)", area=True)
        page.get_by_role("button", name="▶ Run sanity check").click()
        page.get_by_text(re.compile(r"Running the sanity check… \d+\.\d s")).wait_for(timeout=30_000)
        page.get_by_role("button", name="Cancel").click()
        page.get_by_text(re.compile("The check was cancelled after")).wait_for(timeout=30_000)
        idle(page)
        page.get_by_text("Cancelled: the code was stopped before it finished.").wait_for()
        shot(page, shots / "04-check-cancelled.png", page.get_by_text(re.compile("The check was cancelled")))
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
