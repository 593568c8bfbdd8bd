"""Stage 3 in the services: a consensus meeting from start to summary, roles, concurrent facilitators,
votes revised during the meeting with pre- and post-meeting votes kept; expert coverage."""

from __future__ import annotations

import threading

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import PermissionDenied, StageError
from curation.models import MeetingEvent, MeetingOutcome, Role, Stage, VoteChange
from curation.services.alternatives import store_alternative
from curation.services.analyses.coverage import expert_coverage
from curation.services.annotation import submit_analysis
from curation.services.ground_truth import ground_truth
from curation.services.meetings import (
    MeetingConflict,
    close_meeting,
    meeting_agenda,
    meeting_summary,
    record_outcome,
    revise_vote,
    set_attendance,
    show_item,
    start_meeting,
)
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from tests import factories as f


@pytest.fixture
def split(engine, store):
    ana, bob, cid = (f.user(engine, n) for n in ("ana", "bob", "cid"))
    cur, adm = f.user(engine, "cur", Role.CURATOR), f.user(engine, "adm", Role.ADMIN)
    ds = f.dataset(engine, store, assign=[ana, bob, cid])
    ids = {}
    for u in (ana, bob, cid):
        ids[u.username] = f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
        alt = store_alternative(session=s, dataset_id=ds.id, kind="variable", source="llm", proposed_by_id=None, seed_id=None,
                                payload={"variable_type": "Control", "concept": "storm year", "interaction": False,
                                         "on": "", "rationale": "r", "columns": ["year"]}, extra={}).alternative.id

        def vote(voter, kind, target, answer):
            cast_vote(session=s, actor=voter, target_kind=kind, target_id=target, question="justifiable",
                      answer=answer, explanation="" if answer == "yes" else f"{voter.username} disagrees")

        vote(bob, "variable", ids["ana"]["dv"], "yes")
        vote(cid, "variable", ids["ana"]["dv"], "no")  # 1-1: most disagreement
        vote(bob, "transform", ids["ana"]["transform"], "no")
        vote(cid, "transform", ids["ana"]["transform"], "no")  # agreed: not on the agenda
        for voter, answer in ((ana, "yes"), (bob, "yes"), (cid, "no")):
            vote(voter, "alternative", alt, answer)  # 2-1 under BLADE's rule: contested, less disagreement
        vote(ana, "variable", ids["bob"]["iv"], "yes")
        vote(cid, "variable", ids["bob"]["iv"], "yes")  # agreed justifiable
    return {"engine": engine, "ds": ds, "ana": ana, "bob": bob, "cid": cid, "cur": cur, "adm": adm, "ids": ids,
            "alt": alt}


def test_a_meeting_from_start_to_summary(split):
    t, eng = split, split["engine"]
    dv, alt = t["ids"]["ana"]["dv"], t["alt"]
    with session_scope(eng) as s, pytest.raises(StageError, match="still in stage 2"):
        start_meeting(session=s, actor=t["cur"], dataset_id=t["ds"].id)
    with session_scope(eng) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.CLOSED)
    with session_scope(eng) as s, pytest.raises(PermissionDenied, match="Only the facilitator"):
        start_meeting(session=s, actor=t["ana"], dataset_id=t["ds"].id)
    with session_scope(eng) as s:
        meeting = start_meeting(session=s, actor=t["cur"], dataset_id=t["ds"].id, attendee_ids=[t["ana"].id])
        mid = meeting.id
        assert [a["target_id"] for a in meeting.agenda] == [dv, alt]  # most disagreement first
        assert meeting.agenda[0]["tally"] == {"justifiable": 1, "unjustifiable": 1, "unsure": 0}
    with session_scope(eng) as s, pytest.raises(StageError, match="already open"):
        start_meeting(session=s, actor=t["cur"], dataset_id=t["ds"].id)
    with session_scope(eng) as s:
        set_attendance(session=s, actor=t["cur"], meeting_id=mid, user_ids=[t["ana"].id, t["bob"].id, t["cid"].id])
        show_item(session=s, actor=t["cur"], meeting_id=mid, position=1)
        with pytest.raises(StageError, match="no item 3"):
            show_item(session=s, actor=t["cur"], meeting_id=mid, position=2)
    with session_scope(eng) as s:  # the projector's moves are audited like everything else
        (moved,) = s.exec(select(MeetingEvent).where(MeetingEvent.action == "show")).all()
        assert (moved.actor_id, moved.detail) == (t["cur"].id, {"before": 0, "after": 1})
    # cid is persuaded during the meeting; an analyst cannot record outcomes
    with session_scope(eng) as s:
        revise_vote(session=s, actor=t["cid"], meeting_id=mid, target_kind="alternative", target_id=alt,
                    question="justifiable", answer="yes")
        with pytest.raises(PermissionDenied, match="Only the facilitator"):
            record_outcome(session=s, actor=t["ana"], meeting_id=mid, target_kind="variable", target_id=dv,
                           outcome="justifiable", reason="we agree")
        with pytest.raises(StageError, match="not on the agenda"):
            revise_vote(session=s, actor=t["cid"], meeting_id=mid, target_kind="variable",
                        target_id=t["ids"]["bob"]["iv"], question="justifiable", answer="yes")
    with session_scope(eng) as s:
        with pytest.raises(StageError, match="reason"):
            record_outcome(session=s, actor=t["cur"], meeting_id=mid, target_kind="variable", target_id=dv,
                           outcome="justifiable", reason=" ")
        first = record_outcome(session=s, actor=t["cur"], meeting_id=mid, target_kind="variable", target_id=dv,
                               outcome="justifiable", reason="log deaths is the usual outcome",
                               dissent="cid keeps raw counts")
        assert first.revision == 1
    with session_scope(eng) as s, pytest.raises(MeetingConflict, match="cur recorded this item"):
        record_outcome(session=s, actor=t["adm"], meeting_id=mid, target_kind="variable", target_id=dv,
                       outcome="unjustifiable", reason="stale view", expected_revision=0)
    with session_scope(eng) as s:
        assert s.exec(select(MeetingOutcome)).one().outcome == "justifiable"  # no lost update
        record_outcome(session=s, actor=t["adm"], meeting_id=mid, target_kind="alternative", target_id=alt,
                       outcome="contested", reason="stays open: depends on the period studied")
        _, agenda = meeting_agenda(session=s, actor=t["ana"], meeting_id=mid)
        assert [a.revision for a in agenda] == [1, 1]
        assert agenda[1].item.result.justifiable == 3 and agenda[1].before["unjustifiable"] == 1
    with session_scope(eng) as s:
        items = {i.target_id: i for i in ground_truth(session=s, dataset_id=t["ds"].id)}
        assert items[dv].status == "justifiable" and items[dv].basis == "meeting"
        assert items[alt].status == "contested"  # the meeting's outcome wins over the unanimous revised votes
        close_meeting(session=s, actor=t["cur"], meeting_id=mid)
    with session_scope(eng) as s:
        with pytest.raises(StageError, match="closed"):
            record_outcome(session=s, actor=t["cur"], meeting_id=mid, target_kind="variable", target_id=dv,
                           outcome="unjustifiable", reason="late", expected_revision=1)
        with pytest.raises(StageError, match="closed"):
            revise_vote(session=s, actor=t["cid"], meeting_id=mid, target_kind="alternative", target_id=alt,
                        question="justifiable", answer="no", explanation="changed back")
        with pytest.raises(StageError, match="closed"):
            show_item(session=s, actor=t["cur"], meeting_id=mid, position=0)
        summary = meeting_summary(session=s, meeting_id=mid)
        change = s.exec(select(VoteChange).where(VoteChange.note == f"meeting {mid}")).one()
        assert change.before["answer"] == "no" and change.after["answer"] == "yes"
    assert summary["decided"] == 2 and summary["status"] == "closed"
    assert summary["attendance"] == [f"A{t[n].id}" for n in ("ana", "bob", "cid")]
    row = summary["items"][0]
    assert (row["outcome"], row["dissent"], row["recorded_by"]) == ("justifiable", "cid keeps raw counts",
                                                                    f"A{t['cur'].id}")
    cid = f"A{t['cid'].id}"

    def cid_on_alt(votes):
        return [v["answer"] for v in votes if v["annotator"] == cid and v["target_id"] == alt]

    assert cid_on_alt(summary["pre_votes"]) == ["no"] and cid_on_alt(summary["post_votes"]) == ["yes"]
    assert [e["action"] for e in summary["events"]] == ["start", "attendance", "show", "vote", "outcome", "outcome", "close"]
    assert all(e["by"] for e in summary["events"])
    from curation.models import Dataset
    from curation.services.release_data import dataset_release

    with session_scope(eng) as s:  # the release carries the meeting record and the outcome-based statuses
        release = dataset_release(session=s, dataset=s.get(Dataset, t["ds"].id))
    (record,) = release.meetings
    assert record.id == mid and record.decided == 2 and record.items[0]["reason"] == "log deaths is the usual outcome"
    status = {c.target_id: c for c in release.consensus}
    assert (status[dv].status, status[dv].basis) == ("justifiable", "meeting")
    assert (status[alt].status, status[alt].basis) == ("contested", "meeting")


def test_two_facilitators_recording_the_same_item_at_once(split):
    t, eng = split, split["engine"]
    with session_scope(eng) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.CLOSED)
        mid = start_meeting(session=s, actor=t["cur"], dataset_id=t["ds"].id).id
    barrier, results = threading.Barrier(2), {}

    def facilitate(actor, outcome):
        barrier.wait()
        try:
            with session_scope(eng) as s:
                record_outcome(session=s, actor=actor, meeting_id=mid, target_kind="variable",
                               target_id=t["ids"]["ana"]["dv"], outcome=outcome, reason=f"{actor.username} says so")
            results[actor.username] = "saved"
        except MeetingConflict as exc:
            results[actor.username] = str(exc)

    threads = [threading.Thread(target=facilitate, args=(t["cur"], "justifiable")),
               threading.Thread(target=facilitate, args=(t["adm"], "unjustifiable"))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(results.values(), key=len)[0] == "saved"
    (loser,) = [r for r in results.values() if r != "saved"]
    assert "recorded this item at" in loser and "Nothing of yours was saved" in loser
    with session_scope(eng) as s:
        (row,) = s.exec(select(MeetingOutcome)).all()
        winner = next(u for u, r in results.items() if r == "saved")
        assert row.reason == f"{winner} says so" and row.revision == 1


def test_expert_coverage(split):
    t, eng = split, split["engine"]
    with session_scope(eng) as s:  # an idea no analyst had in stage 1, voted justifiable by all three
        wind = store_alternative(session=s, dataset_id=t["ds"].id, kind="variable", source="llm", proposed_by_id=None,
                                 seed_id=None, payload={"variable_type": "Control", "concept": "wind speed",
                                                        "interaction": False, "on": "", "rationale": "r",
                                                        "columns": ["wind"]}, extra={}).alternative.id
        for voter in (t["ana"], t["bob"], t["cid"]):
            cast_vote(session=s, actor=voter, target_kind="alternative", target_id=wind, question="justifiable",
                      answer="yes")
    with session_scope(eng) as s:
        with pytest.raises(PermissionDenied):
            expert_coverage(session=s, actor=t["ana"], dataset_id=t["ds"].id)
        cov = expert_coverage(session=s, actor=t["cur"], dataset_id=t["ds"].id)
    # justifiable: femininity (bob's iv, voted), storm year is contested, deaths contested, transform unjustifiable
    assert cov.ideas == {"variable": 2, "transform": 0}
    rows = {(r.analyst, r.kind): (r.covered, r.total) for r in cov.rows}
    assert rows[("ana", "variable")] == (1, 2) and rows[("cid", "all")] == (1, 2)
    assert next(r for r in cov.rows if r.analyst == "bob" and r.kind == "variable").share == 0.5
    assert cov.union == {"variable": 1, "transform": 0}


def test_expert_coverage_counts_a_transform_by_what_it_computes(split):
    """An alternative computing an expert's column with other code is the idea that expert had in stage 1."""
    from curation.models import Transform
    from curation.services.alternatives import output_hashes

    t, eng = split, split["engine"]
    with session_scope(eng) as s:
        mine = s.get(Transform, t["ids"]["ana"]["transform"])
        (value_hash,) = output_hashes(mine)  # recorded by ana's stage-1 sanity check
        alt = store_alternative(session=s, dataset_id=t["ds"].id, kind="transform", source="llm", proposed_by_id=None,
                                seed_id=t["ids"]["ana"]["dv"], payload={
                                    "code": "df['ld'] = np.log1p(df['deaths'])", "output_col": "ld",
                                    "concept": "deaths", "variable_type": "DV", "rationale": "r", "parent_ids": []},
                                extra={"value_hash": value_hash}).alternative.id
        for voter in (t["ana"], t["bob"], t["cid"]):
            cast_vote(session=s, actor=voter, target_kind="alternative", target_id=alt, question="justifiable",
                      answer="yes")
    with session_scope(eng) as s:
        cov = expert_coverage(session=s, actor=t["cur"], dataset_id=t["ds"].id)
    assert cov.ideas["transform"] == 1 and cov.union["transform"] == 1
    rows = {(r.analyst, r.kind): (r.covered, r.total) for r in cov.rows}
    assert all(rows[(n, "transform")] == (1, 1) for n in ("ana", "bob", "cid"))  # each wrote log(deaths + 1)
