"""Stage 2 in the services: stages and blinding, review settings, votes with their history, the queue."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import BlindingViolation, NotFoundError, PermissionDenied, StageError, VoteError
from curation.models import ProposerDisplay, Role, Stage, Vote, VoteChange
from curation.services.accounts import set_user_active
from curation.services.analyses.review_queue import filter_items, review_queue
from curation.services.annotation import submit_analysis
from curation.services.stages import dataset_stages, get_review_settings, set_review_settings, set_stage
from curation.services.votes import cast_vote, skipped_reason, vote_history
from tests import factories as f


@pytest.fixture
def team(engine, store):
    """Two analysts who submitted, one who did not, a curator and an admin on one dataset."""
    ana, bob, cid = f.user(engine, "ana"), f.user(engine, "bob"), f.user(engine, "cid")
    cur = f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[ana, bob, cid])
    ids = {}
    for u in (ana, bob):
        ids[u.username] = f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    f.full_analysis(engine, cid, ds.id)  # a draft: cid has not submitted
    return {"ana": ana, "bob": bob, "cid": cid, "cur": cur, "ds": ds, "ids": ids, "engine": engine}


def _open(t):
    with session_scope(t["engine"]) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.REVIEW)


def _vote(t, actor, target_id, question, answer, explanation="", kind="variable"):
    with session_scope(t["engine"]) as s:
        return cast_vote(session=s, actor=actor, target_kind=kind, target_id=target_id, question=question,
                         answer=answer, explanation=explanation)


def _votes(t, actor=None):
    with session_scope(t["engine"]) as s:
        stmt = select(Vote)
        if actor is not None:
            stmt = stmt.where(Vote.annotator_id == actor.id)
        return {(v.target_id, v.question): v for v in s.exec(stmt).all()}


def test_stages_move_forward_and_are_for_curators(team):
    t, eng = team, team["engine"]
    with session_scope(eng) as s:
        assert get_review_settings(session=s, dataset_id=t["ds"].id).stage == Stage.ANNOTATE.value
        with pytest.raises(PermissionDenied):
            set_stage(session=s, actor=t["ana"], dataset_id=t["ds"].id, stage=Stage.REVIEW)
    with session_scope(eng) as s, pytest.raises(StageError, match="cannot go from"):
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.CLOSED)
    _open(t)
    with session_scope(eng) as s:
        assert dataset_stages(session=s) == {t["ds"].id: "review"}
        with pytest.raises(StageError, match="already"):
            set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.REVIEW)
    with session_scope(eng) as s:
        row = set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.CLOSED)
        assert row.closed_by_id == t["cur"].id and row.closed_at is not None


def test_stage_two_needs_a_submitted_analysis(engine, store):
    cur = f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store)
    with session_scope(engine) as s, pytest.raises(StageError, match="no analyst has submitted"):
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)


def test_review_is_blind_until_own_submission_and_stage_two(team):
    t, eng = team, team["engine"]
    with session_scope(eng) as s, pytest.raises(StageError, match="still in stage 1"):
        review_queue(session=s, actor=t["ana"], dataset_id=t["ds"].id)
    _open(t)
    with session_scope(eng) as s, pytest.raises(BlindingViolation):
        review_queue(session=s, actor=t["cid"], dataset_id=t["ds"].id)
    with pytest.raises(BlindingViolation):
        _vote(t, t["cid"], t["ids"]["ana"]["iv"], "can_derive_from_data", "yes")
    with session_scope(eng) as s:
        q = review_queue(session=s, actor=t["ana"], dataset_id=t["ds"].id)
        assert q.can_vote
        # cid's draft is never shown; ana's own and bob's submitted decisions (2 variables + 1 transform each)
        assert len(q.items) == 6
        assert sum(i.own for i in q.items) == 3
        cq = review_queue(session=s, actor=t["cur"], dataset_id=t["ds"].id)
        assert not cq.can_vote and len(cq.items) == 6  # curators look, they did not annotate


def test_source_blind_by_default_and_settings(team):
    t, eng = team, team["engine"]
    _open(t)
    with session_scope(eng) as s:
        q = review_queue(session=s, actor=t["ana"], dataset_id=t["ds"].id)
        assert not q.source_visible
        assert all(i.source is None for i in q.items)
        assert {i.proposer for i in q.items} == {None, "you"}
    with session_scope(eng) as s, pytest.raises(StageError, match="make the source visible"):
        set_review_settings(session=s, actor=t["cur"], dataset_id=t["ds"].id,
                            proposer_display=ProposerDisplay.NAMED, source_visible=False)
    with session_scope(eng) as s:
        set_review_settings(session=s, actor=t["cur"], dataset_id=t["ds"].id,
                            proposer_display=ProposerDisplay.PSEUDONYMOUS, source_visible=True)
    with session_scope(eng) as s:
        q = review_queue(session=s, actor=t["ana"], dataset_id=t["ds"].id)
        assert {i.proposer for i in q.items if not i.own} == {f"A{t['bob'].id}"}
        assert {i.source for i in q.items} == {"peer"}
        set_review_settings(session=s, actor=t["cur"], dataset_id=t["ds"].id,
                            proposer_display=ProposerDisplay.NAMED, source_visible=True)
    with session_scope(eng) as s:
        q = review_queue(session=s, actor=t["ana"], dataset_id=t["ds"].id)
        assert {i.proposer for i in q.items if not i.own} == {"bob"}


def test_votes_questions_conditional_skip_and_verdict(team):
    t = team
    _open(t)
    dv = t["ids"]["bob"]["dv"]
    ana = t["ana"]
    with pytest.raises(VoteError, match="own proposal"):
        _vote(t, ana, t["ids"]["ana"]["dv"], "can_derive_from_data", "yes")
    with pytest.raises(VoteError, match="not a question about a variable"):
        _vote(t, ana, dv, "is_suited_to_cv", "yes")
    with pytest.raises(VoteError, match="not an answer"):
        _vote(t, ana, dv, "can_derive_from_data", "maybe")
    with pytest.raises(VoteError, match="unjustifiable"):
        _vote(t, ana, dv, "justifiable", "no", "  ")
    with pytest.raises(VoteError, match="not an answer"):
        _vote(t, ana, dv, "justifiable", "unsure")
    assert _votes(t) == {}  # nothing half-stored

    _vote(t, ana, dv, "is_reasonable", "yes")
    _vote(t, ana, dv, "can_derive_from_data", "no")
    votes = _votes(t, ana)
    assert votes[(dv, "can_derive_from_data")].answer == "no"
    skipped = votes[(dv, "is_reasonable")]
    assert skipped.answer is None and skipped.skipped_reason == skipped_reason("can_derive_from_data")
    with pytest.raises(VoteError, match="skipped because you answered No"):
        _vote(t, ana, dv, "is_reasonable", "yes")
    _vote(t, ana, dv, "can_derive_from_data", "unsure")
    assert (dv, "is_reasonable") not in _votes(t, ana)  # asked again
    _vote(t, ana, dv, "justifiable", "no", "the column cannot measure deaths")
    assert _votes(t, ana)[(dv, "justifiable")].explanation == "the column cannot measure deaths"

    tr = t["ids"]["bob"]["transform"]
    _vote(t, ana, tr, "is_suited_to_cv", "no", kind="transform")
    assert _votes(t, ana)[(tr, "is_steps_reasonable")].skipped_reason == skipped_reason("is_suited_to_cv")


def test_one_current_vote_with_history(team):
    t, eng = team, team["engine"]
    _open(t)
    dv, ana, bob = t["ids"]["bob"]["dv"], t["ana"], t["bob"]
    _vote(t, ana, dv, "can_derive_from_data", "yes")
    _vote(t, ana, dv, "can_derive_from_data", "yes")  # the same answer again: no change, no history
    _vote(t, ana, dv, "can_derive_from_data", "no")
    _vote(t, ana, dv, "can_derive_from_data", "yes")
    rows = [v for v in _votes(t).values() if v.target_id == dv and v.question == "can_derive_from_data"]
    assert len(rows) == 1 and rows[0].answer == "yes"
    with session_scope(eng) as s:
        mine = vote_history(session=s, actor=ana, target_kind="variable", target_id=dv)
        steps = [((c.before or {}).get("answer"), (c.after or {}).get("answer"), c.question) for c in mine]
        assert steps == [(None, "yes", "can_derive_from_data"), ("yes", "no", "can_derive_from_data"),
                         (None, None, "is_reasonable"), ("no", "yes", "can_derive_from_data"),
                         (None, None, "is_reasonable")]
        assert mine[2].after == {"answer": None, "skipped_reason": skipped_reason("can_derive_from_data"),
                                 "explanation": ""}
        assert mine[4].after is None  # the skipped vote was removed when the question applied again
        assert all(c.changed_by_id == ana.id and c.changed_at is not None for c in mine)
        assert vote_history(session=s, actor=bob, target_kind="variable", target_id=dv) == []
        assert len(vote_history(session=s, actor=t["cur"], target_kind="variable", target_id=dv)) == 5


def test_votes_refused_outside_stage_two_and_for_deactivated(team):
    t, eng = team, team["engine"]
    dv = t["ids"]["bob"]["dv"]
    with pytest.raises(StageError):
        _vote(t, t["ana"], dv, "can_derive_from_data", "yes")
    _open(t)
    with session_scope(eng) as s:
        admin = f.user(eng, "root", Role.ADMIN)
        set_user_active(session=s, actor=admin, user_id=t["ana"].id, active=False)
    with pytest.raises(PermissionDenied, match="deactivated"):
        _vote(t, t["ana"], dv, "can_derive_from_data", "yes")  # the stale session object still says active
    with session_scope(eng) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.CLOSED)
    with pytest.raises(StageError, match="closed"):
        _vote(t, t["bob"], t["ids"]["ana"]["dv"], "can_derive_from_data", "yes")
    with pytest.raises(NotFoundError):
        _vote(t, t["bob"], "nope", "can_derive_from_data", "yes")
    assert _votes(t) == {}
    with session_scope(eng) as s:
        assert s.exec(select(VoteChange)).all() == []


def test_queue_filters_and_my_votes(team):
    t, eng = team, team["engine"]
    _open(t)
    dv = t["ids"]["bob"]["dv"]
    for q, a in [("can_derive_from_data", "yes"), ("is_reasonable", "yes"), ("is_rationale_reasonable", "unsure"),
                 ("justifiable", "yes")]:
        _vote(t, t["ana"], dv, q, a)
    with session_scope(eng) as s:
        items = review_queue(session=s, actor=t["ana"], dataset_id=t["ds"].id).items
    done = next(i for i in items if i.target_id == dv)
    assert done.finished_by_me and done.voters == 1 and done.my_votes["is_rationale_reasonable"]["answer"] == "unsure"
    todo = filter_items(items, unvoted_only=True)
    assert dv not in {i.target_id for i in todo} and not any(i.own for i in todo) and len(todo) == 2
    assert {i.kind for i in filter_items(items, kind="transform")} == {"transform"}
    tr = next(i for i in items if i.target_id == t["ids"]["bob"]["transform"])
    assert tr.concept == "deaths" and tr.parents == ["raw data"] and tr.columns == ["log_deaths"]
    assert "np.log" in tr.code
    assert {i.label for i in items} == {f"#{n}" for n in range(1, 7)}


def test_a_curator_annotating_the_dataset_is_blind_to_its_review_until_submitting(team):
    """Whoever has an unsubmitted stage-1 analysis of a dataset sees no peer's work on it, whatever the role."""
    from curation.services.agreement import agreement_report
    from curation.services.datasets import assign_analysts

    t, eng = team, team["engine"]
    _open(t)
    admin = f.user(eng, "boss", Role.ADMIN)
    with session_scope(eng) as s:
        assign_analysts(session=s, actor=admin, dataset_id=t["ds"].id,
                        user_ids=[t["ana"].id, t["bob"].id, t["cid"].id, t["cur"].id])
    f.full_analysis(eng, t["cur"], t["ds"].id)  # the curator's own draft
    for see in (lambda s: review_queue(session=s, actor=t["cur"], dataset_id=t["ds"].id),
                lambda s: agreement_report(session=s, actor=t["cur"], dataset_id=t["ds"].id)):
        with session_scope(eng) as s, pytest.raises(BlindingViolation, match="unsubmitted stage-1 analysis"):
            see(s)
    with session_scope(eng) as s:
        submit_analysis(session=s, actor=t["cur"], dataset_id=t["ds"].id)
    with session_scope(eng) as s:
        queue = review_queue(session=s, actor=t["cur"], dataset_id=t["ds"].id)
    assert any(i.kind == "variable" and not i.own for i in queue.items)  # submitted: peers' work is visible
    with session_scope(eng) as s:  # an admin who does not annotate it looks freely
        assert review_queue(session=s, actor=admin, dataset_id=t["ds"].id).items


def test_a_curator_annotating_the_dataset_can_neither_generate_nor_see_its_mcqs(team):
    """Generated alternatives and MCQs show peers' decisions under other names: the same blinding applies."""
    from curation.services.analyses.llm_alternatives import plan_generation
    from curation.services.datasets import assign_analysts
    from curation.services.mcq_audit import audit_mcqs
    from curation.services.mcq_generate import generate_mcqs
    from curation.services.mcq_review import mcq_views

    t, eng = team, team["engine"]
    _open(t)
    admin = f.user(eng, "boss2", Role.ADMIN)
    with session_scope(eng) as s:
        assert plan_generation(session=s, actor=t["cur"], dataset_id=t["ds"].id)  # not annotating: allowed
        assign_analysts(session=s, actor=admin, dataset_id=t["ds"].id,
                        user_ids=[t["ana"].id, t["bob"].id, t["cid"].id, t["cur"].id])
    for refused in (plan_generation, mcq_views, audit_mcqs, generate_mcqs):
        with session_scope(eng) as s, pytest.raises(BlindingViolation, match="assigned to annotate"):
            refused(session=s, actor=t["cur"], dataset_id=t["ds"].id)
