"""A release is one moment, and a closed meeting is closed: races on the real PostgreSQL, with real threads and
connections, forced into the interleaving that used to go wrong.

Each race holds one transaction of its own open (the "blocker") so that the service under test stops at a known
statement; the test then lets the other side commit, and releases the blocker. The interleaving is forced by
locks and waited for in ``pg_stat_activity`` (never by sleeping a fixed time), so each test fails on code that
reads without a snapshot or without the meeting's lock, every time.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from curation.db import make_engine, session_scope
from curation.errors import StageError
from curation.ground_truth import apply_rule, get_rule, verdicts_by_voter
from curation.models import Meeting, MeetingEvent, MeetingOutcome, Role, Stage, Vote
from curation.services import releases as rel
from curation.services.annotation import submit_analysis
from curation.services.meetings import close_meeting, record_outcome, revise_vote, start_meeting
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from tests import factories as f
from tests.conftest import PG_URL, _pg_schema_engine
from tests.factories import artifacts_for


@pytest.fixture
def pg() -> Iterator[Engine]:
    """A freshly migrated PostgreSQL schema (these races are about PostgreSQL's READ COMMITTED)."""
    yield from _pg_schema_engine()


@pytest.fixture
def team(pg: Engine, store: Path) -> dict[str, Any]:
    return _team(pg, store)


def _team(pg: Engine, store: Path) -> dict[str, Any]:
    """Three analysts who submitted, a curator and an admin; ana's dependent variable split 1–1 by bob and cid."""
    ana, bob, cid = (f.user(pg, n) for n in ("ana", "bob", "cid"))
    cur, adm = f.user(pg, "cur", Role.CURATOR), f.user(pg, "adm", Role.ADMIN)
    ds = f.dataset(pg, store, assign=[ana, bob, cid])
    ids = {}
    for u in (ana, bob, cid):
        ids[u.username] = f.full_analysis(pg, u, ds.id)
        with session_scope(pg) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(pg) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
    dv = ids["ana"]["dv"]
    with session_scope(pg) as s:
        cast_vote(session=s, actor=bob, target_kind="variable", target_id=dv, question="justifiable", answer="yes")
        cast_vote(session=s, actor=cid, target_kind="variable", target_id=dv, question="justifiable", answer="no",
                  explanation="cid disagrees")
        cast_vote(session=s, actor=ana, target_kind="variable", target_id=ids["bob"]["iv"], question="justifiable",
                  answer="yes")
    return {"engine": pg, "store": store, "ds": ds, "ana": ana, "bob": bob, "cid": cid, "cur": cur, "adm": adm,
            "dv": dv, "ids": ids}


class Named:
    """Engines whose connections carry an application name, to find them in ``pg_stat_activity``."""

    def __init__(self, engine: Engine) -> None:
        with engine.connect() as conn:
            self.schema = conn.execute(text("SHOW search_path")).scalar_one()
        self.tag = uuid.uuid4().hex[:8]
        self.engines: list[Engine] = []
        self.watcher = self.engine("watcher")

    def engine(self, name: str) -> Engine:
        eng = make_engine(PG_URL, connect_args={"options": f"-csearch_path={self.schema}",
                                                "application_name": self.app(name)})
        self.engines.append(eng)
        return eng

    def app(self, name: str) -> str:
        return f"fp-{self.tag}-{name}"

    def waiting(self, name: str) -> bool:
        """Whether the backend of ``name`` is waiting for a lock another backend holds."""
        with self.watcher.connect() as conn:
            return bool(conn.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = :app "
                "AND cardinality(pg_blocking_pids(pid)) > 0"), {"app": self.app(name)}).scalar_one())

    def wait_until(self, condition: Callable[[], bool], what: str, deadline_s: float = 60.0) -> None:
        """Wait for a state (polled); the deadline only keeps a broken run from hanging the suite."""
        end = time.monotonic() + deadline_s
        while not condition():
            if time.monotonic() > end:
                raise AssertionError(f"never reached: {what}")
            time.sleep(0.02)

    def dispose(self) -> None:
        for eng in self.engines:
            eng.dispose()


@pytest.fixture
def named(pg: Engine) -> Iterator[Named]:
    n = Named(pg)
    try:
        yield n
    finally:
        n.dispose()


def _blocked_or_done(named: Named, name: str, fut: Future[Any]) -> Callable[[], bool]:
    return lambda: fut.done() or named.waiting(name)


# ---------------------------------------------------------------------------------------------------------------
# A release is one moment


def _release_disagreements(root: Path, version: str) -> list[str]:
    """Items whose tally or status in release.json differs from what the release's own votes give."""
    doc = json.loads((root / version / "release.json").read_text(encoding="utf-8"))
    problems = []
    for ds in doc["datasets"]:
        kinds = {(i["target_kind"], i["target_id"]): "variable" for i in ds["consensus"]}
        kinds |= {("transform", t["id"]): "transform" for t in ds["transforms"]}
        kinds |= {("alternative", a["id"]): a["kind"] for a in ds["alternatives"]}
        for c in ds["consensus"]:
            if c["basis"] != "rule":
                continue
            key = (c["target_kind"], c["target_id"])
            rows = [(v["annotator"], v["question"], v["answer"]) for v in ds["votes"]
                    if (v["target_kind"], v["target_id"]) == key]
            result = apply_rule(get_rule(c["rule"]), list(verdicts_by_voter(kinds[key], rows).values()))
            tally = {"justifiable": result.justifiable, "unjustifiable": result.unjustifiable,
                     "unsure": result.unsure}
            if c["tally"] != tally or c["status"] != result.status:
                problems.append(f"{key}: release says {c['status']} {c['tally']}, its votes give "
                                f"{result.status} {tally}")
    return problems


@pytest.mark.postgres
def test_a_release_cut_while_analysts_vote_reads_one_moment(team, named, tmp_path):
    """The cut reads the votes, then (stopped here by a lock on the consensus table) a vote changes and commits,
    then the cut reads the tallies: they must be those of the votes it released."""
    pg, root = team["engine"], tmp_path / "releases"
    cutter = named.engine("cutter")
    blocker = pg.connect()
    tx = blocker.begin()
    blocker.execute(text("LOCK TABLE consensus IN ACCESS EXCLUSIVE MODE"))

    def cut() -> Any:
        with session_scope(cutter) as s:
            return rel.cut_release(session=s, actor=team["cur"], version="1.0.0", notes="",
                                   artifacts=artifacts_for(root), store=team["store"])

    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            fut = pool.submit(cut)
            named.wait_until(_blocked_or_done(named, "cutter", fut), "the cut waiting on the consensus table")
            with session_scope(pg) as s:  # cid changes her mind while the cut is under way
                cast_vote(session=s, actor=team["cid"], target_kind="variable", target_id=team["dv"],
                          question="justifiable", answer="yes")
        finally:
            tx.rollback()
            blocker.close()
        fut.result()
    assert _release_disagreements(root, "1.0.0") == []
    with session_scope(pg) as s:  # the vote itself was not lost: it is in the next release
        rel.cut_release(session=s, actor=team["cur"], version="1.0.1", notes="", artifacts=artifacts_for(root),
                        store=team["store"])
    assert _release_disagreements(root, "1.0.1") == []
    doc = json.loads((root / "1.0.1" / "release.json").read_text(encoding="utf-8"))
    (item,) = [c for c in doc["datasets"][0]["consensus"] if c["target_id"] == team["dv"]]
    assert item["tally"] == {"justifiable": 2, "unjustifiable": 0, "unsure": 0}


@pytest.mark.postgres
def test_a_cut_in_a_transaction_that_already_read_holds_the_votes_still(team, named, tmp_path):
    """A caller whose READ COMMITTED transaction began before the cut (it read something first) gets the same
    guarantee: the tables a release reads are locked in SHARE mode, so the vote waits for the cut to end."""
    pg, root = team["engine"], tmp_path / "releases"
    cutter, voter = named.engine("cutter"), named.engine("voter")
    blocker = pg.connect()
    tx = blocker.begin()
    blocker.execute(text("LOCK TABLE consensus IN ACCESS EXCLUSIVE MODE"))

    def cut() -> Any:
        with session_scope(cutter) as s:
            s.exec(select(Vote)).all()  # the transaction has begun, at READ COMMITTED
            return rel.cut_release(session=s, actor=team["cur"], version="1.0.0", notes="",
                                   artifacts=artifacts_for(root), store=team["store"])

    def vote() -> None:
        with session_scope(voter) as s:
            cast_vote(session=s, actor=team["cid"], target_kind="variable", target_id=team["dv"],
                      question="justifiable", answer="yes")

    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            cutting = pool.submit(cut)
            named.wait_until(_blocked_or_done(named, "cutter", cutting), "the cut waiting on the consensus table")
            voting = pool.submit(vote)
            named.wait_until(_blocked_or_done(named, "voter", voting), "the vote done or waiting for the cut")
        finally:
            tx.rollback()
            blocker.close()
        cutting.result()
        voting.result()
    assert _release_disagreements(root, "1.0.0") == []


@pytest.mark.postgres
def test_three_voters_and_twenty_cuts(team, tmp_path):
    """The issue's experiment, unforced: three analysts keep changing votes while twenty releases are cut."""
    _twenty_cuts(team, tmp_path)


def test_three_voters_and_twenty_cuts_on_sqlite(sqlite_engine, store, tmp_path):
    """The same on SQLite, where each SELECT outside a write transaction used to be a moment of its own."""
    _twenty_cuts(_team(sqlite_engine, store), tmp_path)


def _twenty_cuts(team: dict[str, Any], tmp_path: Path) -> None:
    pg, root = team["engine"], tmp_path / "releases"
    ids, stop = team["ids"], threading.Event()
    targets = [("variable", ids["ana"]["dv"], (team["bob"], team["cid"])),
               ("variable", ids["bob"]["iv"], (team["ana"], team["cid"])),
               ("variable", ids["cid"]["dv"], (team["ana"], team["bob"]))]

    def voter(n: int) -> int:
        flips = 0
        while not stop.is_set():
            kind, target, who = targets[(n + flips) % len(targets)]
            answer = "yes" if flips % 2 else "no"
            with session_scope(pg) as s:
                cast_vote(session=s, actor=who[n % 2], target_kind=kind, target_id=target, question="justifiable",
                          answer=answer, explanation="" if answer == "yes" else "changed my mind")
            flips += 1
        return flips

    with ThreadPoolExecutor(max_workers=3) as pool:
        voters = [pool.submit(voter, n) for n in range(3)]
        try:
            for n in range(20):
                with session_scope(pg) as s:
                    rel.cut_release(session=s, actor=team["cur"], version=f"1.0.{n}", notes="", artifacts=artifacts_for(root),
                                    store=team["store"])
        finally:
            stop.set()
        assert all(v.result() > 0 for v in voters)
    bad = {f"1.0.{n}": p for n in range(20) if (p := _release_disagreements(root, f"1.0.{n}"))}
    assert bad == {}


# ---------------------------------------------------------------------------------------------------------------
# A closed meeting is closed


def _meeting(team: dict[str, Any]) -> int:
    with session_scope(team["engine"]) as s:
        set_stage(session=s, actor=team["cur"], dataset_id=team["ds"].id, stage=Stage.CLOSED)
        meeting = start_meeting(session=s, actor=team["cur"], dataset_id=team["ds"].id)
        assert any(a["target_id"] == team["dv"] for a in meeting.agenda)
        return meeting.id or 0


def _race_close(team: dict[str, Any], named: Named, blocker: Session, action: Callable[[Engine], Any]) -> Any:
    """``action`` stops at a lock ``blocker`` holds; the meeting's close then runs; then the blocker lets go.

    Returns what ``action`` returned, or the StageError it raised.
    """
    actor_engine, closer = named.engine("actor"), named.engine("closer")
    mid = blocker.info["meeting_id"]

    def close() -> None:
        with session_scope(closer) as s:
            close_meeting(session=s, actor=team["adm"], meeting_id=mid)

    def act() -> Any:
        try:
            return action(actor_engine)
        except StageError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            acting = pool.submit(act)
            named.wait_until(_blocked_or_done(named, "actor", acting), "the action waiting on the blocker")
            closing = pool.submit(close)
            # Either the close commits now (it does not wait for the action), or it waits for the action's lock.
            named.wait_until(_blocked_or_done(named, "closer", closing), "the close done or waiting")
        finally:
            blocker.rollback()
            blocker.close()
        closing.result()
        return acting.result()


def _events(engine: Engine, mid: int) -> list[MeetingEvent]:
    with session_scope(engine) as s:
        return list(s.exec(select(MeetingEvent).where(MeetingEvent.meeting_id == mid)
                           .order_by(col(MeetingEvent.id))).all())


@pytest.mark.postgres
def test_no_outcome_is_recorded_after_the_meeting_closed(team, named):
    mid, pg = _meeting(team), team["engine"]
    blocker = Session(pg)  # holds the unique key of the item's first outcome: record_outcome waits on its insert
    blocker.info["meeting_id"] = mid
    blocker.add(MeetingOutcome(meeting_id=mid, dataset_id=team["ds"].id, target_kind="variable",
                               target_id=team["dv"], outcome="contested", reason="placeholder",
                               recorded_by_id=team["cur"].id))
    blocker.flush()

    def record(engine: Engine) -> Any:
        with session_scope(engine) as s:
            return record_outcome(session=s, actor=team["cur"], meeting_id=mid, target_kind="variable",
                                  target_id=team["dv"], outcome="justifiable", reason="we agreed")

    got = _race_close(team, named, blocker, record)
    events = _events(pg, mid)
    (closed,) = [e.id for e in events if e.action == "close"]
    late = [(e.action, e.detail) for e in events if e.action in ("outcome", "revise_outcome") and e.id > closed]
    assert late == []  # nothing entered the record of the meeting after its close
    with session_scope(pg) as s:
        outcomes = s.exec(select(MeetingOutcome).where(MeetingOutcome.meeting_id == mid)).all()
    if isinstance(got, StageError):
        assert "is closed" in str(got) and outcomes == []
    else:
        assert [o.reason for o in outcomes] == ["we agreed"]


def _votes_now(engine: Engine, meeting: Meeting) -> list[dict[str, Any]]:
    keys = {(a["target_kind"], a["target_id"]) for a in meeting.agenda}
    with session_scope(engine) as s:
        rows = s.exec(select(Vote).where(Vote.dataset_id == meeting.dataset_id).order_by(col(Vote.id))).all()
        return [{"target_kind": v.target_kind, "target_id": v.target_id, "annotator": f"A{v.annotator_id}",
                 "question": v.question, "answer": v.answer, "explanation": v.explanation}
                for v in rows if (v.target_kind, v.target_id) in keys]


@pytest.mark.postgres
def test_no_vote_is_revised_after_the_meeting_closed(team, named):
    mid, pg = _meeting(team), team["engine"]
    blocker = Session(pg)  # holds cid's vote row: revise_vote waits where it locks the vote to change it
    blocker.info["meeting_id"] = mid
    blocker.exec(select(Vote).where(Vote.annotator_id == team["cid"].id, Vote.target_id == team["dv"],
                                    Vote.question == "justifiable").with_for_update()).one()

    def revise(engine: Engine) -> Any:
        with session_scope(engine) as s:
            return revise_vote(session=s, actor=team["cid"], meeting_id=mid, target_kind="variable",
                               target_id=team["dv"], question="justifiable", answer="yes")

    got = _race_close(team, named, blocker, revise)
    with session_scope(pg) as s:
        meeting = s.get(Meeting, mid)
        assert meeting is not None and meeting.status == "closed"
    assert meeting.post_votes == _votes_now(pg, meeting)  # the votes at the close are the votes now
    events = _events(pg, mid)
    (closed,) = [e.id for e in events if e.action == "close"]
    assert [e.detail for e in events if e.action == "vote" and e.id > closed] == []
    if isinstance(got, StageError):
        assert "is closed" in str(got)
    else:
        cid_votes = [v for v in meeting.post_votes if v["annotator"] == f"A{team['cid'].id}"
                     and v["target_id"] == team["dv"] and v["question"] == "justifiable"]
        assert [v["answer"] for v in cid_votes] == ["yes"]
