"""An admin who annotates a dataset opens the Releases page in a real browser before submitting: peers' work
on it is left out of the comparison, downloads are refused with the reason, and release files without a record
(found when the app started) are reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import make_engine, session_scope
from curation.models import Role, User
from curation.services.annotation import submit_analysis
from curation.services.releases import cut_release
from tests import factories as f
from tests.browser.helpers import ADMIN_PASSWORD, idle, shot, sign_in, tab

pytestmark = pytest.mark.browser


def test_an_assigned_admin_sees_the_compare_view_blinded(browser, live_app, shots: Path):
    settings = live_app.settings
    engine = make_engine(settings.resolved_database_url)
    with session_scope(engine) as s:
        admin = s.exec(select(User).where(User.username == "admin")).one()
    curator, ana = f.user(engine, "cleo", Role.CURATOR), f.user(engine, "ana")
    ds = f.dataset(engine, settings.datasets_store, assign=[ana, admin])

    def cut(version: str) -> None:
        with session_scope(engine) as s:
            cut_release(session=s, actor=curator, version=version, notes=f"cut {version}",
                        artifacts=settings.artifact_store(), store=settings.datasets_store, include_empty=True)

    cut("1.0.0")
    f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
    cut("1.0.1")
    root = settings.releases_store
    shutil.copytree(root / "1.0.1", root / "1.0.2")  # a writer killed after publishing, before recording

    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    # the app starts here: it sets 1.0.2 aside
    sign_in(page, live_app.url, "admin", ADMIN_PASSWORD, open_page="Releases")
    page.get_by_text("problem(s) in the releases folder").click()
    page.get_by_text("1.0.2 was set aside").wait_for()
    idle(page)
    page.get_by_text("Download release").wait_for()
    shot(page, shots / "01-list-blinded.png")
    assert page.get_by_role("button", name="Prepare forkpaths layout (.zip)").is_disabled()
    assert not (root / "1.0.2").exists()
    tab(page, "Compare")
    idle(page)
    page.get_by_text("is left out of this comparison").wait_for()
    shot(page, shots / "02-compare-blinded.png", page.get_by_text("Changelog of release 1.0.1").first)
    assert page.get_by_text("femininity of name").count() == 0

    f.full_analysis(engine, admin, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=admin, dataset_id=ds.id)
    tab(page, "Releases")  # switching tabs reruns the page with fresh data
    idle(page)
    tab(page, "Compare")
    idle(page)
    # the Releases tab holds the same changelog in a folded expander: the Compare tab's is the visible one
    page.get_by_text("femininity of name").filter(visible=True).first.wait_for()
    shot(page, shots / "03-compare-after-submitting.png",
         page.get_by_text("Changelog of release 1.0.1").filter(visible=True).first)
    assert page.locator("[data-testid='stException']").count() == 0
    engine.dispose()
