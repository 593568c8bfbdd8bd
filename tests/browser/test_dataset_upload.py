"""The Datasets page's upload tabs in a real browser: clear messages on the CSV tab, a failed BLADE upload that
leaves an empty uploader behind, and a zip whose ground truth is imported right there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlmodel import func, select

from curation.db import make_engine, session_scope
from curation.models import Dataset, Transform
from tests import factories as f
from tests.browser.helpers import ADMIN_PASSWORD, click, idle, shot, sign_in, tab
from tests.browser.test_admin_tour import no_exception

pytestmark = pytest.mark.browser


def test_upload_tabs_explain_bad_files_and_import_ground_truth(browser, live_app, shots: Path, tmp_path: Path,
                                                               shared_blade: Path):
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    sign_in(page, live_app.url, "admin", ADMIN_PASSWORD, open_page="Datasets")

    # the CSV tab: registration's own message, with the line, not pandas' "Error tokenizing data"
    tab(page, "Add a CSV")
    broken = tmp_path / "broken.csv"
    broken.write_bytes(b'year,deaths\n1990,"10\n1991,3\n')
    csv_uploader = page.locator("[data-testid='stFileUploader']").filter(visible=True).first
    csv_uploader.locator("input[type=file]").set_input_files(str(broken))
    idle(page)
    message = page.get_by_text("the quoted value that starts on line 2 is never closed")
    message.wait_for()
    assert page.get_by_text("Error tokenizing").count() == 0
    shot(page, shots / "01-csv-tab-message.png", message)
    no_exception(page)

    # the BLADE tab: two info.json files are refused, and the uploader is empty for the next attempt
    tab(page, "Add a BLADE folder")
    folder = f.tiny_blade_folder(tmp_path / "upload", "storms_two")
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(folder / "info.json", other / "info.json")
    uploader = page.locator("[data-testid='stFileUploader']").filter(visible=True).first
    uploader.locator("input[type=file]").set_input_files([str(folder / "info.json"), str(other / "info.json"),
                                                          str(folder / "data.csv")])
    idle(page)
    assert uploader.locator("[data-testid='stFileChip']").count() == 3
    page.get_by_label("Name (optional for a .zip)", exact=True).fill("storms two")
    click(page, "Register dataset")
    refusal = page.get_by_text("Two uploaded files are called info.json")
    refusal.wait_for()
    uploader = page.locator("[data-testid='stFileUploader']").filter(visible=True).first
    assert uploader.locator("[data-testid='stFileChip']").count() == 0  # nothing mixes into the retry
    assert page.get_by_label("Name (optional for a .zip)", exact=True).input_value() == "storms two"
    shot(page, shots / "02-blade-two-info-json.png", refusal)
    no_exception(page)

    # a zipped BLADE folder with its ground truth: imported right there
    archive = shutil.make_archive(str(tmp_path / "hurricane"), "zip", shared_blade / "datasets", "hurricane")
    uploader.locator("input[type=file]").set_input_files(archive)
    idle(page)
    page.get_by_label("Name (optional for a .zip)", exact=True).fill("")
    click(page, "Register dataset")
    done = page.get_by_text("Its ground truth was imported")
    done.wait_for(timeout=120_000)
    shot(page, shots / "03-zip-with-ground-truth.png", done)
    no_exception(page)

    engine = make_engine(live_app.settings.resolved_database_url)
    with session_scope(engine) as s:
        assert [d.name for d in s.exec(select(Dataset)).all()] == ["hurricane"]
        assert s.exec(select(func.count()).select_from(Transform)).one() == 6
    engine.dispose()
