"""A curator releases imported DiscoveryBench folders in a real browser, sees what the release holds per kind of
dataset and downloads it in DiscoveryBench's layout."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import make_engine, session_scope
from curation.models import Role
from curation.services.discoverybench_import import import_discoverybench
from tests import factories as f
from tests.browser.helpers import click, idle, shot, sign_in, tab
from tests.exports.test_release_hypotheses import ANSWER_KEY, make_tree

pytestmark = pytest.mark.browser


def test_curator_releases_and_downloads_discoverybench(browser, live_app, shots: Path, tmp_path: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    f.user(engine, "dora", Role.CURATOR)
    f.dataset(engine, live_app.settings.datasets_store)
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=make_tree(tmp_path / "tree"),
                              store=live_app.settings.datasets_store, max_bytes=2**26)
    page = browser.new_page(viewport={"width": 1400, "height": 1200}, accept_downloads=True)
    sign_in(page, live_app.url, "dora", open_page="Releases")
    tab(page, "Cut a release")
    page.get_by_text("Also release the datasets without ground truth yet (storms)").click()
    click(page, "Cut release")
    try:
        page.get_by_text("Release 1.0.0 cut: 4 datasets").first.wait_for(timeout=60_000)
        idle(page)
        tab(page, "Releases")
        page.get_by_text(re.compile(r"^Hypothesis tasks: 3 datasets")).wait_for(timeout=60_000)
        expect(page.get_by_role("button", name="Prepare DiscoveryBench layout (.zip)")).to_be_visible(timeout=60_000)
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-3000:])
        raise
    page.get_by_text(re.compile(r"^Nothing curated yet: 1 dataset")).wait_for()  # storms: its data alone
    page.get_by_text(re.compile(r"Leaves out storms \(named in NOT_EXPORTED\.md\)")).wait_for()
    shot(page, shots / "01-release-contents.png")
    click(page, "Prepare DiscoveryBench layout (.zip)")
    button = page.get_by_role("button", name="Download forkpaths-1.0.0-discoverybench.zip")
    button.wait_for(timeout=60_000)
    with page.expect_download() as info:
        button.click()
    target = tmp_path / "db.zip"
    info.value.save_as(target)
    with zipfile.ZipFile(target) as zf:
        names = set(zf.namelist())
        assert zf.read("1.0.0-discoverybench/answer_key_real.csv") == ANSWER_KEY
        assert zf.read("1.0.0-discoverybench/real/test/bmi/metadata_0.json") == (
            tmp_path / "tree/real/test/bmi/metadata_0.json").read_bytes()
    assert "1.0.0-discoverybench/NOT_EXPORTED.md" in names
    shot(page, shots / "02-downloaded.png")
    assert page.locator("[data-testid='stException']").count() == 0
    engine.dispose()
