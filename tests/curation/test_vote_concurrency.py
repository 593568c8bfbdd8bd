"""Stage-2 voting under load: 20 analysts voting at once, and one analyst's two tabs racing on the same votes."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func
from sqlmodel import select

from curation.db import session_scope
from curation.models import Role, Stage, Vote, VoteChange
from curation.services.analyses.review_queue import review_queue
from curation.services.annotation import submit_analysis
from curation.services.stages import set_stage
from curation.services.votes import QUESTIONS, cast_vote
from tests import factories as f

VOTERS, VOTES_EACH = 20, 200


def _stage_two(engine, store, n):
    analysts = [f.user(engine, f"v{i:02d}") for i in range(n)]
    ds = f.dataset(engine, store, assign=analysts)
    for a in analysts:
        f.full_analysis(engine, a, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=a, dataset_id=ds.id)
    cur = f.user(engine, "curator", Role.CURATOR)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
    return analysts, ds


def _plan(engine, actor, ds_id, limit):
    """(kind, id, question, answer) for the first ``limit`` votes this analyst can cast, never skipped ones."""
    with session_scope(engine) as s:
        items = [i for i in review_queue(session=s, actor=actor, dataset_id=ds_id).items if not i.own]
    plan = []
    for n, item in enumerate(items):
        for q in QUESTIONS[item.kind]:
            answer = "yes" if q.skipped_unless or q.key == "justifiable" else ("yes", "unsure")[n % 2]
            plan.append((item.target_kind, item.target_id, q.key, answer))
    return plan[:limit]


def test_twenty_voters_two_hundred_votes_each_none_lost_or_duplicated(engine, store):
    analysts, ds = _stage_two(engine, store, VOTERS)
    plans = {a.id: _plan(engine, a, ds.id, VOTES_EACH) for a in analysts}
    assert all(len(p) == VOTES_EACH for p in plans.values())
    start = threading.Barrier(VOTERS)

    def work(actor):
        start.wait()
        for kind, tid, question, answer in plans[actor.id]:
            with session_scope(engine) as s:
                cast_vote(session=s, actor=actor, target_kind=kind, target_id=tid, question=question, answer=answer)
        return actor.id

    with ThreadPoolExecutor(max_workers=VOTERS) as pool:
        assert sorted(pool.map(work, analysts)) == sorted(a.id for a in analysts)
    with session_scope(engine) as s:
        votes = s.exec(select(Vote)).all()
        assert len(votes) == VOTERS * VOTES_EACH
        got = {(v.annotator_id, v.target_kind, v.target_id, v.question): v.answer for v in votes}
        want = {(uid, k, t, q): a for uid, plan in plans.items() for k, t, q, a in plan}
        assert got == want  # none lost, none duplicated, none mixed up
        assert s.exec(select(func.count()).select_from(VoteChange)).one() == VOTERS * VOTES_EACH


def test_two_tabs_of_one_analyst_racing_on_the_same_votes(engine, store):
    (ana, bob), ds = _stage_two(engine, store, 2)
    plan = _plan(engine, ana, ds.id, 12)
    start = threading.Barrier(2)

    def tab(answer_for):
        start.wait()
        for kind, tid, question, _ in plan:
            with session_scope(engine) as s:
                cast_vote(session=s, actor=ana, target_kind=kind, target_id=tid, question=question,
                          answer=answer_for(question), explanation="tab")

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(tab, lambda q: "yes"),
                   pool.submit(tab, lambda q: "no" if q in ("is_rationale_reasonable", "justifiable") else "unsure")]
        for fut in futures:
            fut.result()
    with session_scope(engine) as s:
        votes = s.exec(select(Vote).where(Vote.annotator_id == ana.id)).all()
        keys = [(v.target_id, v.question) for v in votes]
        assert len(keys) == len(set(keys)) == len(plan)
        for v in votes:  # the history ends where the current vote is: no change was lost between the tabs
            changes = s.exec(select(VoteChange).where(VoteChange.target_id == v.target_id,
                                                      VoteChange.question == v.question)
                             .order_by(VoteChange.id)).all()
            assert changes[0].before is None
            assert changes[-1].after == {"answer": v.answer, "skipped_reason": "", "explanation": "tab"}
            assert all(a.after == b.before for a, b in zip(changes, changes[1:], strict=False))
