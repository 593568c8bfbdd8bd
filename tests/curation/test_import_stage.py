"""A BLADE import with reviewed alternatives and votes arrives where BLADE's review ended: stage 2 closed.

Agreement, rule changes, MCQs and the consensus meeting then work on it at once, without re-opening stage 2,
and every place that shows the stage says "closed". A folder without votes stays in stage 1.
"""

from __future__ import annotations

import shutil

import pytest

from curation.db import session_scope
from curation.errors import StageError
from curation.models import Role, Stage
from curation.services.agreement import agreement_report
from curation.services.blade_import import import_blade
from curation.services.ground_truth import preview_rule, set_rule
from curation.services.mcq_generate import generate_mcqs
from curation.services.meetings import start_meeting
from curation.services.stages import STAGE_LABELS, get_review_settings, review_overview, set_stage
from tests import factories as f


@pytest.fixture
def hurricane(engine, store, shared_blade, tmp_path):
    admin = f.user(engine, "admin-i", Role.ADMIN)
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copytree(shared_blade / "datasets" / "hurricane", folder / "hurricane")
    shutil.copytree(shared_blade / "datasets" / "toy", folder / "toy")  # data alone: no votes
    with session_scope(engine) as s:
        reports = {r.dataset: r for r in import_blade(session=s, actor=admin, path=folder, store=store,
                                                       max_bytes=200 * 2**20)}
    assert reports["hurricane"].votes > 0 and reports["toy"].votes == 0
    with session_scope(engine) as s:
        ids = {d.name: d.id for d, _ in review_overview(session=s, actor=admin)}
    return engine, admin, ids


def test_an_import_with_votes_arrives_with_its_review_closed(hurricane):
    engine, admin, ids = hurricane
    with session_scope(engine) as s:
        stages = {d.name: STAGE_LABELS[r.stage] for d, r in review_overview(session=s, actor=admin)}
        review = get_review_settings(session=s, dataset_id=ids["hurricane"])
        assert review.closed_at is not None and review.closed_by_id == admin.id
    assert stages == {"hurricane": "Stage 2 closed", "toy": "Stage 1 · annotate (blind)"}


def test_agreement_rules_mcqs_and_meetings_work_without_reopening_stage_2(hurricane):
    engine, admin, ids = hurricane
    hid = ids["hurricane"]
    with session_scope(engine) as s:
        one = agreement_report(session=s, actor=admin, dataset_id=hid)
        assert one.datasets == ["hurricane"] and one.rows[0].ratings > 0  # BLADE's one voter: nothing to agree on
        assert agreement_report(session=s, actor=admin).datasets == ["hurricane"]  # every dataset past stage 1
    with session_scope(engine) as s:
        preview_rule(session=s, actor=admin, dataset_id=hid, rule="unanimous")
        assert set_rule(session=s, actor=admin, dataset_id=hid, rule="unanimous").rule.startswith("unanimous")
    with session_scope(engine) as s:
        assert generate_mcqs(session=s, actor=admin, dataset_id=hid).mcqs
    with session_scope(engine) as s:
        assert start_meeting(session=s, actor=admin, dataset_id=hid).id is not None
    with session_scope(engine) as s:
        assert get_review_settings(session=s, dataset_id=hid).stage == Stage.CLOSED.value  # never re-opened
        # The dataset without votes has nothing to agree on yet: it is in stage 1, and says so.
        with pytest.raises(StageError, match="still in stage 1"):
            agreement_report(session=s, actor=admin, dataset_id=ids["toy"])


def test_a_curator_can_reopen_the_imported_review_for_more_votes(hurricane):
    engine, admin, ids = hurricane
    with session_scope(engine) as s:
        assert set_stage(session=s, actor=admin, dataset_id=ids["hurricane"], stage=Stage.REVIEW).stage == "review"
