"""A curator cuts two releases in a real browser, compares them and downloads both layouts."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import make_engine
from curation.models import Role
from tests import factories as f
from tests.browser.helpers import click, idle, shot, sign_in, tab

pytestmark = pytest.mark.browser


def test_curator_cuts_compares_and_downloads(browser, live_app, shots: Path, tmp_path: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    f.user(engine, "cleo", Role.CURATOR)
    f.dataset(engine, live_app.settings.datasets_store)
    page = browser.new_page(viewport={"width": 1400, "height": 1100}, accept_downloads=True)
    sign_in(page, live_app.url, "cleo", open_page="Releases")
    page.get_by_text("No releases yet").wait_for()
    tab(page, "Cut a release")
    notes = page.get_by_label("Release notes", exact=True)
    notes.fill("first public cut")
    page.get_by_text("Also release the datasets without ground truth yet (storms)").click()  # nothing has any yet
    click(page, "Cut release")
    try:
        page.get_by_text("Release 1.0.0 cut").first.wait_for(timeout=60_000)
        # the state the next step needs, waited for rather than assumed: one notes box (it keeps its place
        # through reruns), emptied for the next release, and the version moved on
        expect(notes).to_have_count(1, timeout=60_000)
        expect(notes).to_have_value("", timeout=60_000)
        expect(page.get_by_label("Version (MAJOR.MINOR.PATCH)", exact=True)).to_have_value("1.0.1", timeout=60_000)
        idle(page)
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-3000:])
        raise
    notes.fill("second cut")
    page.get_by_text("Also release the datasets without ground truth yet (storms)").click()
    click(page, "Cut release")
    page.get_by_text("Release 1.0.1 cut").first.wait_for(timeout=60_000)
    expect(notes).to_have_value("", timeout=60_000)
    idle(page)
    tab(page, "Releases")
    expect(page.get_by_role("button", name="Prepare BLADE layout (.zip)")).to_be_visible(timeout=60_000)
    shot(page, shots / "01-releases.png")
    click(page, "Prepare BLADE layout (.zip)")
    button = page.get_by_role("button", name=re.compile(r"Download forkpaths-1\.0\.[01]-blade\.zip"))
    button.wait_for(timeout=60_000)
    version = re.search(r"1\.0\.[01]", button.inner_text()).group(0)
    with page.expect_download() as info:
        button.click()
    target = tmp_path / "blade.zip"
    info.value.save_as(target)
    with zipfile.ZipFile(target) as zf:
        names = set(zf.namelist())
    assert {f"{version}-blade/storms/info.json", f"{version}-blade/storms/data.csv"} <= names
    # a download asks for no rerun: the button stays for a second download, and nothing races the next gesture
    idle(page)
    expect(button).to_be_visible()
    tab(page, "Compare")
    compare = page.get_by_role("tabpanel", name="Compare")  # the release just cut shows its changelog above too
    compare.get_by_text("Changelog of release 1.0.1").wait_for(timeout=60_000)
    shot(page, shots / "02-compare.png", compare.get_by_text("Changelog of release 1.0.1"))
    assert page.locator("[data-testid='stException']").count() == 0
    engine.dispose()
