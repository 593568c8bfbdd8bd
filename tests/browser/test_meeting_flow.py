"""A consensus meeting in a real browser, from start to summary: the curator facilitates, an analyst revises a
vote in a second window, the projector view shows one item, the summary closes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.db import make_engine, session_scope
from curation.models import Role, Stage
from curation.services.annotation import submit_analysis
from curation.services.datasets import assign_analysts
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from tests import factories as f
from tests.browser.helpers import click, click_for_toast, idle, pick, shot, sign_in

pytestmark = pytest.mark.browser


def _sign_in(browser, url, username):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    sign_in(page, url, username, open_page="Consensus")
    return page


def test_meeting_from_start_to_summary(browser, live_app, shots: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    cur = f.user(engine, "cleo", Role.CURATOR)
    ana, bob, cid = (f.user(engine, n) for n in ("ana", "bob", "cid"))
    admin = f.user(engine, "root", Role.ADMIN)
    ds = f.dataset(engine, live_app.settings.datasets_store)
    with session_scope(engine) as s:
        assign_analysts(session=s, actor=admin, dataset_id=ds.id, user_ids=[ana.id, bob.id, cid.id])
    ids = {u.username: f.full_analysis(engine, u, ds.id) for u in (ana, bob, cid)}
    for u in (ana, bob, cid):
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
        a, b = ids["ana"], ids["bob"]
        for voter, kind, target, answer in [(bob, "variable", a["dv"], "yes"), (cid, "variable", a["dv"], "no"),
                                            (ana, "transform", b["transform"], "yes"),
                                            (cid, "transform", b["transform"], "no")]:
            cast_vote(session=s, actor=voter, target_kind=kind, target_id=target, question="justifiable",
                      answer=answer, explanation="" if answer == "yes" else "raw counts are skewed")
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.CLOSED)

    page = _sign_in(browser, live_app.url, "cleo")
    try:
        pick(page, "Who is here?", "ana")
        page.keyboard.press("Escape")
        click_for_toast(page, "Start the consensus meeting", "Meeting 1 started with 2 items on the agenda")
        shot(page, shots / "01-agenda.png", page.get_by_text("Record outcome"))
        page.get_by_text("🟢 justifiable").first.click()
        page.get_by_label("Reason", exact=True).fill("log deaths is the usual outcome for counts")
        page.get_by_label("Dissent (who disagrees, and why)", exact=True).fill("cid prefers raw counts")
        click_for_toast(page, "Record outcome", "Outcome recorded: justifiable.")
        shot(page, shots / "02-outcome.png", page.get_by_text("Dissent: cid prefers raw counts"))
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-3000:])
        raise
    # an analyst in another window: sees the item and revises a vote, but has no outcome form
    analyst = _sign_in(browser, live_app.url, "cid")
    analyst.get_by_text("Your vote").wait_for()
    assert analyst.get_by_role("button", name="Record outcome").count() == 0
    analyst.get_by_test_id("stRadio").get_by_text("yes", exact=True).click()
    click(analyst, "Save my vote")
    analyst.get_by_text("Your vote is saved").wait_for(timeout=30_000)
    idle(analyst)
    shot(analyst, shots / "03-analyst-revises.png", analyst.get_by_text("Your vote", exact=True))
    with session_scope(engine) as s:
        from sqlmodel import select

        from curation.models import Vote

        vote = s.exec(select(Vote).where(Vote.annotator_id == cid.id, Vote.question == "justifiable",
                                         Vote.target_id == ids["bob"]["transform"])).one()
        assert vote.answer == "yes"  # revised during the meeting; the earlier "no" is in the meeting's record
    # the projector: one item, large, with previous / next
    page.get_by_text("Projector view (one item at a time)").click()
    idle(page)
    page.get_by_text("item 1 of 2").wait_for()
    click(page, "Next ▶")
    page.get_by_text("item 2 of 2").wait_for()
    idle(page)
    shot(page, shots / "04-projector.png")
    page.get_by_text("Projector view (one item at a time)").click()
    idle(page)
    click(page, "Close the meeting")
    page.get_by_text("1 of 2 items have no outcome yet").wait_for(timeout=30_000)  # closing is final: it asks
    shot(page, shots / "05-close-asks.png", page.get_by_text("1 of 2 items have no outcome yet"))
    click(page, "Close with 1 undecided")
    page.get_by_text("Meeting 1 closed: 1 of 2 items decided.").wait_for(timeout=30_000)
    idle(page)
    page.get_by_text("Meeting summary").wait_for()
    shot(page, shots / "06-summary.png", page.get_by_text("Meeting summary"))
    page.get_by_text("attendance: ana.").wait_for()  # strict: exactly one such line, or it raises
    assert page.locator("[data-testid='stException']").count() == 0
    engine.dispose()
