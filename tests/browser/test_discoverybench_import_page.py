"""The Datasets page's "Import DiscoveryBench" tab in a real browser (issue 29 point 1): a team uploads one real
test folder zipped with the benchmark's full answer key, and reads the report (the key's other rows ignored in
one line); the same zip again is skipped, not refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import make_engine, session_scope
from curation.models import HypothesisTask
from tests.browser.helpers import ADMIN_PASSWORD, click, idle, shot, sign_in, tab
from tests.browser.test_admin_tour import no_exception
from tests.browser.test_layout_1024 import CUT

pytestmark = pytest.mark.browser


def test_a_subset_with_the_full_answer_key_is_imported_from_the_page(browser, live_app, shots: Path, tmp_path: Path,
                                                                     shared_discoverybench: Path):
    tree = tmp_path / "subset"
    shutil.copytree(shared_discoverybench / "real" / "test" / "archaeology", tree / "real" / "test" / "archaeology")
    shutil.copy(shared_discoverybench / "answer_key_real.csv", tree / "answer_key_real.csv")
    archive = shutil.make_archive(str(tmp_path / "team"), "zip", tree)

    page = browser.new_page(viewport={"width": 1024, "height": 1000})
    sign_in(page, live_app.url, "admin", ADMIN_PASSWORD, open_page="Datasets")
    tab(page, "Import DiscoveryBench")
    form = page.locator("[data-testid='stForm']").filter(visible=True).first
    assert form.evaluate(CUT) == [], "a control of the import form is clipped at 1024 px"
    uploader = page.locator("[data-testid='stFileUploader']").filter(visible=True).first
    uploader.locator("input[type=file]").set_input_files(archive)
    idle(page)
    click(page, "Import")
    report = page.get_by_text("Read 1 DiscoveryBench folder and answer_key_real.csv.", exact=False)
    report.wait_for(timeout=120_000)
    assert "answer-key rows of" in report.inner_text() and "not in the tree" in report.inner_text()
    assert page.get_by_text("Registered 1 dataset with", exact=False).count() == 1
    assert page.get_by_text("matches no query", exact=False).count() == 0
    shot(page, shots / "01-subset-imported.png", report)
    no_exception(page)

    uploader = page.locator("[data-testid='stFileUploader']").filter(visible=True).first
    uploader.locator("input[type=file]").set_input_files(archive)
    idle(page)
    click(page, "Import")
    skipped = page.get_by_text("Already imported with the same content, skipped: 1 folder (real/test/archaeology)")
    skipped.wait_for(timeout=120_000)
    shot(page, shots / "02-same-zip-skipped.png", skipped)
    no_exception(page)

    engine = make_engine(live_app.settings.resolved_database_url)
    with session_scope(engine) as s:
        rows = s.exec(select(HypothesisTask)).all()
        assert rows and {r.gold_source for r in rows} == {"answer_key"}
    engine.dispose()
