"""A curator generates MCQs from judged votes in a real browser, sees one as a taker would with its provenance,
accepts one and fixes another whose key was edited outside the options."""

from __future__ import annotations

from pathlib import Path

import pytest

from curation.db import make_engine, session_scope
from curation.models import Role, Stage
from curation.services.alternatives import store_alternative
from curation.services.annotation import submit_analysis
from curation.services.datasets import assign_analysts
from curation.services.mcq_store import dataset_mcqs
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from tests import factories as f
from tests.browser.helpers import click, idle, shot, sign_in

pytestmark = pytest.mark.browser


def test_curator_generates_and_reviews_mcqs(browser, live_app, shots: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    cur = f.user(engine, "cleo", Role.CURATOR)
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    admin = f.user(engine, "root", Role.ADMIN)
    ds = f.dataset(engine, live_app.settings.datasets_store)
    with session_scope(engine) as s:
        assign_analysts(session=s, actor=admin, dataset_id=ds.id, user_ids=[ana.id, bob.id])
    ids = {u.username: f.full_analysis(engine, u, ds.id) for u in (ana, bob)}
    for u in (ana, bob):
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
        bad = store_alternative(session=s, dataset_id=ds.id, kind="transform", source="llm", proposed_by_id=None,
                                seed_id=ids["ana"]["dv"], payload={
                                    "concept": "deaths", "variable_type": "DV", "rationale": "a product",
                                    "code": "df['deaths_bad'] = df['deaths'] * df['masfem']",
                                    "output_col": "deaths_bad", "parent_ids": []}, extra={}).alternative.id
        for voter, kind, target, answer in [(bob, "variable", ids["ana"]["dv"], "yes"),
                                            (bob, "transform", ids["ana"]["transform"], "yes"),
                                            (ana, "alternative", bad, "no"), (bob, "alternative", bad, "no")]:
            cast_vote(session=s, actor=voter, target_kind=kind, target_id=target, question="justifiable",
                      answer=answer, explanation="" if answer == "yes" else "mixes in the name's femininity")
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.CLOSED)

    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    sign_in(page, live_app.url, "cleo", open_page="MCQs")
    try:
        click(page, "Generate MCQs")
        page.get_by_text("2 MCQs generated with seed 0").wait_for(timeout=30_000)
        idle(page)
        shot(page, shots / "01-generated.png")
        page.get_by_text("Key and provenance").first.click()
        idle(page)
        page.get_by_text("🔑 key").first.wait_for()
        shot(page, shots / "02-provenance.png", page.get_by_role("button", name="Accept").first)
        page.get_by_role("button", name="Accept").first.click()
        idle(page)
        page.get_by_text("MCQ 1 accepted.").wait_for(timeout=30_000)
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-3000:])
        raise
    with session_scope(engine) as s:
        stored = dataset_mcqs(session=s, dataset_id=None)
        assert [q.status for q in stored if q.review is not None] == ["accepted"]
        assert len(stored) == 2
    assert page.locator("[data-testid='stException']").count() == 0
    engine.dispose()
