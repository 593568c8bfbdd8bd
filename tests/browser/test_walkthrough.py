"""What the walkthrough found, in Chromium: the evaluator's start page has its own address, a reload keeps
half-typed forms, and Review's filters and Run details' figures fit at 1024 px."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import make_engine, session_scope
from curation.models import Role, Stage
from curation.services import releases as rel
from curation.services.annotation import submit_analysis
from curation.services.blade_import import import_blade
from curation.services.scoring import execute_run, register_run
from curation.services.stages import set_stage
from tests import factories as f
from tests.browser.helpers import click, idle, shot, sign_in, sign_out, tab

pytestmark = pytest.mark.browser
# The texts under ``root`` (itself included) that do not fit their box: the box scrolls or hides what overflows
# (an ellipsis, a button cut at the edge of its group).
CLIPPED = """(root) => [root, ...root.querySelectorAll('*')]
  .filter(e => (e.innerText || '').trim() && e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible')
  .map(e => e.innerText.trim())"""


def _cut(locator) -> list[str]:
    return locator.evaluate(CLIPPED)


def _kept(page, engine, username: str, name: str, field: str, value: str) -> None:
    """Wait until the server keeps ``value`` in the user's draft ``name`` (what a reload will bring back)."""
    from sqlmodel import select

    from curation.models import FormDraft, User

    for _ in range(300):
        with session_scope(engine) as s:
            user = s.exec(select(User).where(User.username == username)).one()
            row = s.get(FormDraft, (user.id, name))
            if row is not None and row.data.get(field) == value:
                return
        page.wait_for_timeout(200)
    raise AssertionError(f"the draft {name} of {username} never held {field}={value!r}")


def _sign_in(page, url: str, username: str, landing: str) -> None:
    sign_in(page, url, username)
    page.get_by_role("heading", name=re.compile(landing)).wait_for(timeout=60_000)
    idle(page)


def test_evaluator_pages_have_addresses_and_run_details_fit_at_1024(browser, live_app, shots: Path, shared_blade):
    s_ = live_app.settings
    engine = make_engine(s_.resolved_database_url)
    evaluator = f.user(engine, "evie", Role.EVALUATOR)
    curator = f.user(engine, "cura", Role.CURATOR)
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "hurricane", store=s_.datasets_store,
                     max_bytes=s_.max_upload_bytes)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=s_.artifact_store(),
                        store=s_.datasets_store)
    with session_scope(engine) as s:
        run = register_run(session=s, actor=evaluator, release_version="1.0.0", agent="react", model_name="gpt-x",
                           files=[("multi.json", (shared_blade / "examples" / "multirun_analyses.json").read_bytes())],
                           artifacts=s_.artifact_store(),
                           max_bytes=s_.max_submission_bytes)
    assert execute_run(engine, run.id, artifacts=s_.artifact_store()).status == "succeeded"
    engine.dispose()
    page = browser.new_page(viewport={"width": 1024, "height": 900})
    try:
        _sign_in(page, live_app.url, "evie", "Leaderboard")  # the start page at the app's root
        # the menu's Leaderboard has its own address, and that address opens it (a bookmark, a shared link)
        page.get_by_role("link", name="Leaderboard").click()
        page.wait_for_url(re.compile(r"/leaderboard$"))
        page.goto(f"{live_app.url}/leaderboard")
        page.get_by_role("heading", name=re.compile("Leaderboard")).wait_for(timeout=60_000)
        idle(page)
        assert page.get_by_text("Page not found").count() == 0
        for toggle in page.locator("[data-testid=stCheckbox]").all():  # the leaderboard's filters fit at 1024 px
            assert _cut(toggle) == [], f"clipped at 1024 px: {toggle.inner_text()}"
        shot(page, shots / "01-leaderboard-by-address.png")

        page.get_by_role("link", name="Run details").click()
        metrics = page.locator("[data-testid=stMetric]")
        expect(metrics).to_have_count(6, timeout=60_000)
        idle(page)
        shot(page, shots / "02-run-details-1024.png")
        for metric in metrics.all():
            assert _cut(metric) == [], f"a metric is clipped at 1024 px: {metric.inner_text()}"
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
    finally:
        page.close()


def test_review_filters_fit_at_1024(browser, live_app, shots: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    cura = f.user(engine, "cura", Role.CURATOR)
    ds = f.dataset(engine, live_app.settings.datasets_store, assign=[ana, bob])
    for u in (ana, bob):
        f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cura, dataset_id=ds.id, stage=Stage.REVIEW)
    engine.dispose()
    page = browser.new_page(viewport={"width": 1024, "height": 900})
    try:
        _sign_in(page, live_app.url, "ana", "Stage-1 progress")
        page.get_by_role("link", name="Review").click()
        group = page.locator("[data-testid=stButtonGroup]").first
        group.wait_for(timeout=60_000)
        idle(page)
        shot(page, shots / "01-review-1024.png")
        assert _cut(group) == [], "the Kind buttons are clipped at 1024 px"
        for answers in page.locator("[data-testid=stButtonGroup]").all()[1:]:  # the questions' answers
            answers.scroll_into_view_if_needed()
            assert _cut(answers) == [], f"answers clipped at 1024 px: {answers.inner_text()}"
        right = group.bounding_box()["x"] + group.bounding_box()["width"]
        for button in group.get_by_role("button").all():
            box = button.bounding_box()
            assert box is not None and box["x"] + box["width"] <= right + 1, f"'{button.inner_text()}' is cut"
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
    finally:
        page.close()


def test_a_reload_brings_back_a_half_typed_variable_and_release_notes(browser, live_app, shots: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    ana = f.user(engine, "ana")
    f.user(engine, "cura", Role.CURATOR)
    ds = f.dataset(engine, live_app.settings.datasets_store, assign=[ana])
    context = browser.new_context(viewport={"width": 1024, "height": 1000})
    page = context.new_page()
    try:
        _sign_in(page, live_app.url, "ana", "Stage-1 progress")
        page.get_by_role("link", name="Annotate").click()
        concept = page.get_by_label("Concept", exact=True).filter(visible=True)
        concept.wait_for(timeout=60_000)
        concept.fill("storm strength")
        rationale = page.get_by_label("Rationale", exact=True).filter(visible=True).first
        rationale.fill("stronger storms kill more")
        rationale.blur()  # what reaches the server: a field one has left
        _kept(page, engine, "ana", f"annotate.{ds.id}.var", "rationale", "stronger storms kill more")
        page.reload()
        expect(page.get_by_label("Concept", exact=True).filter(visible=True)).to_have_value("storm strength",
                                                                                           timeout=60_000)
        expect(page.get_by_label("Rationale", exact=True).filter(visible=True).first).to_have_value(
            "stronger storms kill more")
        shot(page, shots / "01-variable-after-reload.png")
        # saved, then Delete asks before anything is destroyed; its two answers fit at 1024 px
        page.get_by_label("Columns that operationalise it", exact=True).filter(visible=True).click()
        page.get_by_role("option", name=re.compile("wind")).first.click()
        page.keyboard.press("Escape")
        idle(page)
        why = page.get_by_label(re.compile("^Why")).filter(visible=True).first
        why.fill("wind measures strength")
        why.press("Enter")
        idle(page)
        click(page, "Save variable")
        page.get_by_text("Saved variable 'storm strength'").wait_for(timeout=60_000)
        page.get_by_role("button", name="Delete", exact=True).filter(visible=True).first.click()
        confirm = page.get_by_role("button", name="Yes, delete", exact=True)
        confirm.wait_for(timeout=60_000)
        idle(page)
        shot(page, shots / "02-delete-asks.png", confirm)
        for name in ("Yes, delete", "Keep it"):
            assert _cut(page.get_by_role("button", name=name, exact=True)) == [], f"'{name}' is clipped"
        click(page, "Keep it")
        page.get_by_role("button", name="Delete", exact=True).filter(visible=True).first.wait_for()
        sign_out(page)

        _sign_in(page, live_app.url, "cura", "Stage-1 progress")
        page.get_by_role("link", name="Releases").click()
        tab(page, "Cut a release")
        notes = page.get_by_label("Release notes", exact=True)
        notes.fill("storms: a first cut")
        notes.blur()
        _kept(page, engine, "cura", "releases.notes", "notes", "storms: a first cut")
        page.reload()
        tab(page, "Cut a release")
        expect(page.get_by_label("Release notes", exact=True)).to_have_value("storms: a first cut", timeout=60_000)
        shot(page, shots / "03-release-notes-after-reload.png")
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
    finally:
        context.close()
        engine.dispose()
