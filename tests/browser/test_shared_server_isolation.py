"""Browser tests share one app server per worker (tests/browser/conftest.py ``app_server``): each test's data must
stay its own. A test that moves the shared server from one test's folder to another's, as the next test's set-up
does, and checks that the first folder's account, session and data are gone from the app."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import make_engine
from tests import factories as f
from tests.browser.helpers import ADMIN_PASSWORD, click, idle, sign_in

pytestmark = pytest.mark.browser


def test_the_next_tests_folder_shows_none_of_this_ones_data(browser, app_server, live_app, tmp_path: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    try:
        f.user(engine, "only-here")
    finally:
        engine.dispose()
    first = browser.new_context(viewport={"width": 1300, "height": 900})
    page = first.new_page()
    sign_in(page, live_app.url, "only-here")
    page.get_by_text("Signed in as").wait_for(timeout=60_000)
    idle(page)
    first.close()

    other = app_server.serve(tmp_path / "next-test")  # what the next test's live_app does
    assert other.settings.resolved_database_url != live_app.settings.resolved_database_url

    again = browser.new_context(viewport={"width": 1300, "height": 900})
    page = again.new_page()
    sign_in(page, other.url, "only-here")  # the account exists only in the first test's database
    expect(page.get_by_text("Wrong user name or password.")).to_be_visible(timeout=60_000)
    page.get_by_label("User name", exact=True).fill("admin")  # the next test's own first admin signs in
    page.get_by_label("Password", exact=True).fill(ADMIN_PASSWORD)
    click(page, "Sign in", exact=True)
    page.get_by_text("Signed in as").wait_for(timeout=60_000)
    again.close()
