"""An admin's tour in a real browser: progress, registering a dataset by upload, users, account."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import make_engine, session_scope
from curation.models import Dataset
from tests import factories as f
from tests.browser.helpers import ADMIN_PASSWORD, click, idle, shot, sign_in, tab

pytestmark = pytest.mark.browser


def no_exception(page) -> None:
    assert page.locator("[data-testid='stException']").count() == 0


def test_admin_registers_a_dataset_and_visits_every_page(browser, live_app, shots: Path, tmp_path: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    ana = f.user(engine, "ana")
    f.dataset(engine, live_app.settings.datasets_store, assign=[ana])
    f.full_analysis(engine, ana, 1)
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    sign_in(page, live_app.url, "admin", ADMIN_PASSWORD)
    page.get_by_text("Every analyst").wait_for()
    page.locator(".js-plotly-plot .bars").first.wait_for()
    page.wait_for_timeout(500)
    shot(page, shots / "01-progress.png")
    no_exception(page)

    page.get_by_role("link", name="Datasets").click()
    idle(page)
    tab(page, "Add a BLADE folder")
    folder = f.tiny_blade_folder(tmp_path / "upload", "uploaded")
    page.locator("input[type=file]").first.set_input_files([str(folder / "info.json"), str(folder / "data.csv")])
    idle(page)
    page.get_by_label("Name (optional for a .zip)", exact=True).fill("uploaded storms")
    click(page, "Register dataset")
    page.get_by_text("Registered 'uploaded_storms'").wait_for(timeout=60_000)  # slow under load
    shot(page, shots / "02-dataset-registered.png")
    no_exception(page)

    # a broken upload: a clear message, the app keeps working, nothing stored
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "info.json").write_text("{ not json")
    (bad / "data.csv").write_text("a,b\n1,2\n")
    page.locator("input[type=file]").first.set_input_files([str(bad / "info.json"), str(bad / "data.csv")])
    idle(page)
    page.get_by_label("Name (optional for a .zip)", exact=True).fill("broken")
    click(page, "Register dataset")
    page.get_by_text("is not valid JSON").wait_for()
    shot(page, shots / "03-bad-upload.png", page.get_by_text("is not valid JSON"))

    page.get_by_role("link", name="Users & assignments").click()
    idle(page)
    page.get_by_role("tab", name="Users").wait_for()
    shot(page, shots / "04-users.png")
    no_exception(page)
    tab(page, "Assign datasets")
    page.wait_for_timeout(500)
    shot(page, shots / "05-assign.png")

    page.get_by_role("link", name="Annotate").click()
    idle(page)
    page.get_by_text("You are not assigned to any dataset yet").wait_for()  # admins annotate only when assigned
    no_exception(page)
    page.get_by_role("link", name="Account").click()
    idle(page)
    shot(page, shots / "06-account.png")
    no_exception(page)

    with session_scope(engine) as s:
        names = sorted(d.name for d in s.exec(select(Dataset)).all())
    assert names == ["storms", "uploaded_storms"]
    engine.dispose()
