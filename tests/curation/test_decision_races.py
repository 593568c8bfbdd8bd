"""Every decision that can race is one conditional write: two people deciding the same thing at the same moment
(threads released by a barrier, each with its own transaction, on SQLite and PostgreSQL) give one winner; the
other is told who decided first and what to do, and nothing of the winner's is overwritten."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from sqlmodel import select

from curation.db import session_scope
from curation.errors import DecidedElsewhere
from curation.models import Consensus, HypothesisTask, Role, Stage
from curation.services.mcq_store import mcq_by_id
from tests import factories as f
from tests.curation.hypothesis_world import build
from tests.curation.test_hypothesis_curation import _stage, _two_submitted, _vote
from tests.curation.test_mcqs import _generate, judged  # noqa: F401 - judged is a fixture


def race(engine: Any, *actions: Callable[[Any], Any]) -> list[Any]:
    """Run each action in its own thread and transaction, all released at once; what each returned or raised."""
    barrier = threading.Barrier(len(actions))
    out: list[Any] = [None] * len(actions)

    def run(i: int, action: Callable[[Any], Any]) -> None:
        barrier.wait()
        try:
            with session_scope(engine) as s:
                out[i] = action(s)
        except Exception as exc:  # noqa: BLE001 - the test asserts which, and a crash is a failure there
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i, a)) for i, a in enumerate(actions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def _one_winner(results: list[Any], error: type[Exception]) -> tuple[int, Exception]:
    lost = [(i, r) for i, r in enumerate(results) if isinstance(r, Exception)]
    assert len(lost) == 1, f"expected one loser, got {[type(r).__name__ for r in results]}"
    (i, exc), = lost
    assert isinstance(exc, error), exc
    return 1 - i, exc


def test_two_curators_deciding_one_gold_at_once(engine, store, tmp_path):
    from curation.services.hypotheses import decide_gold

    w = build(engine, store, tmp_path / "src")
    adm = f.user(engine, "cat", Role.CURATOR)
    a_id, b_id = _two_submitted(w)
    _vote(w, w.bob, "hypothesis", a_id, "yes", "clear slope")
    _vote(w, w.ana, "hypothesis", b_id, "yes", "fair too")
    _stage(w, Stage.CLOSED)
    q0 = w.tasks["q0"].id
    picks = {w.cur.username: a_id, adm.username: b_id}
    results = race(engine,
                   lambda s: decide_gold(session=s, actor=w.cur, task_id=q0, target_kind="hypothesis",
                                         target_id=a_id, note="cur's pick"),
                   lambda s: decide_gold(session=s, actor=adm, task_id=q0, target_kind="hypothesis",
                                         target_id=b_id, note="cat's pick"))
    won, exc = _one_winner(results, DecidedElsewhere)
    winner = [w.cur, adm][won]
    assert f"{winner.username} decided the gold hypothesis of the query" in str(exc)
    assert "Yours was not stored; reload the page" in str(exc)
    with session_scope(engine) as s:
        task = s.get(HypothesisTask, q0)
        prov = task.gold_provenance
        assert (prov["decided_by_id"], prov["candidate"]["target_id"], prov["note"]) == (
            winner.id, picks[winner.username], f"{winner.username}'s pick")
        assert {c.decided_by_id for c in s.exec(select(Consensus)).all()} == {winner.id}
        gold = s.exec(select(Consensus).where(Consensus.target_id == picks[winner.username])).one()
        assert "the gold hypothesis of this query" in gold.note


def test_two_curators_reviewing_one_mcq_at_once(judged):  # noqa: F811 - the fixture
    from curation.services.mcq_review import edit_mcq, review_mcq

    t, engine = judged, judged["engine"]
    cat = f.user(engine, "cat", Role.CURATOR)
    q = _generate(t, seed=2).mcqs[0]
    results = race(engine,
                   lambda s: review_mcq(session=s, actor=t["cur"], mcq_id=q["id"], decision="accepted",
                                        expected="pending"),
                   lambda s: review_mcq(session=s, actor=cat, mcq_id=q["id"], decision="rejected",
                                        note="too easy", expected="pending"))
    won, exc = _one_winner(results, DecidedElsewhere)
    winner, status = [(t["cur"], "accepted"), (cat, "rejected")][won]
    assert f"{winner.username} set this MCQ {status} at" in str(exc) and "after you saw it pending" in str(exc)
    assert "Nothing of yours was saved" in str(exc)
    with session_scope(engine) as s:
        row = mcq_by_id(session=s, mcq_id=q["id"]).review
        assert (row.status, row.reviewed_by_id, [h["by"] for h in row.history]) == (status, winner.id, [winner.id])
    texts = [o["text"] for o in q["options"]]
    key = texts[q["correct_index"]]
    results = race(engine,  # both saw it as the winner left it: an edit and a reset to pending
                   lambda s: edit_mcq(session=s, actor=t["cur"], mcq_id=q["id"], options=texts[::-1], key=key,
                                      note="reordered", expected=status),
                   lambda s: review_mcq(session=s, actor=cat, mcq_id=q["id"], decision="pending", expected=status))
    won, exc = _one_winner(results, DecidedElsewhere)
    with session_scope(engine) as s:
        row = mcq_by_id(session=s, mcq_id=q["id"]).review
        assert len(row.history) == 2 and row.status == ["edited", "pending"][won]


def test_two_curators_gating_one_check_at_once(engine, store, tmp_path, os_sandbox):
    from curation.models import CuratedCandidate
    from curation.services.programmatic import propose_artifact, propose_check, run_release_gate
    from curation.services.stages import set_stage
    from tests.curation.test_programmatic import FAST, GOOD
    from tests.curation.test_programmatic import _vote as vote
    from tests.curation.test_programmatic import team as make_team

    t = make_team.__wrapped__(engine, store, tmp_path)  # the fixture's body: two analysts, a curator, a task
    cat = f.user(engine, "cat", Role.CURATOR)
    with session_scope(engine) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.REVIEW)
    with session_scope(engine) as s:
        check = propose_check(session=s, actor=t["ana"], task_id=t["task_id"], fields=GOOD).id
        art = propose_artifact(session=s, actor=t["bob"], task_id=t["task_id"], path="clean.csv",
                               data=b"deaths,masfem\n10,2.5\n0,8.1\n").id
    vote(t, t["bob"], check, "check", "yes")
    vote(t, t["ana"], art, "artifact", "yes")
    results = race(engine, *(lambda s, who=who: run_release_gate(session=s, actor=who, item_id=check, limits=FAST)
                             for who in (t["cur"], cat)))
    won, exc = _one_winner(results, DecidedElsewhere)
    winner = [t["cur"], cat][won]
    assert f"{winner.username} ran the release gate of this check while yours ran" in str(exc)
    assert "released it; their evidence is kept and yours was not stored" in str(exc)
    with session_scope(engine) as s:
        gate = s.get(CuratedCandidate, check).gate
        assert gate["released"] and gate["by"] == winner.id


def test_two_facilitators_revising_one_outcome_at_once(engine, store):
    from curation.services.meetings import MeetingConflict, record_outcome, start_meeting
    from curation.services.stages import set_stage
    from tests.curation.test_meetings import split as make_split

    t = make_split.__wrapped__(engine, store)
    target = t["ids"]["ana"]["dv"]
    with session_scope(engine) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.CLOSED)
        mid = start_meeting(session=s, actor=t["cur"], dataset_id=t["ds"].id).id
    with session_scope(engine) as s:
        record_outcome(session=s, actor=t["cur"], meeting_id=mid, target_kind="variable", target_id=target,
                       outcome="contested", reason="first pass")
    results = race(engine, *(lambda s, who=who, out=out: record_outcome(
        session=s, actor=who, meeting_id=mid, target_kind="variable", target_id=target, outcome=out,
        reason=f"{who.username} revises", expected_revision=1)
        for who, out in ((t["cur"], "justifiable"), (t["adm"], "unjustifiable"))))
    won, exc = _one_winner(results, MeetingConflict)
    winner = [t["cur"], t["adm"]][won]
    assert "Nothing of yours was saved" in str(exc)
    with session_scope(engine) as s:
        from curation.models import MeetingOutcome

        (row,) = s.exec(select(MeetingOutcome)).all()
        assert (row.revision, row.reason) == (2, f"{winner.username} revises")
