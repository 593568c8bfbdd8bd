"""MCQs in the generic curated tables (issue 27, point 3; "Done when: the migration test loses nothing").

A database is populated at revision 0032 (the generic tables hold a programmatic task; MCQs still have their own
two tables): imported and generated MCQs of both kinds (variable, transform) and both types, on two datasets,
more than one batch of the migration's copy; reviews accepted, rejected, edited (with the edit's before in the
history) and reset to pending; one generated MCQ never reviewed; a cut release's record. Then:

* upgrading moves every MCQ and review onto ``curated_item`` with every field kept (ids kept as keys, new item ids
  after the programmatic one) and leaves every other row of every other table as it was;
* the services read the moved rows as before: review states and notes, what a release carries of each dataset
  (imported ones as they came, reviewed generated ones with their review, never a rejected or unreviewed one), the
  count of generated MCQs awaiting review, the datasets holding work; a review on a moved MCQ still meets a
  concurrent one, and a new MCQ gets a new item id;
* downgrading gives back the database exactly as it was, table by table, row by row; upgrading again gives the
  same moved rows.

On SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

from curation.db import session_scope
from curation.errors import DecidedElsewhere
from curation.models import Dataset, ReleaseRecord, Role
from tests import factories as f
from tests.curation.test_curated_migration import MCQ_TYPES, REVIEW_TYPES, T0, _dump, _to, engine_at

BEFORE, AFTER = "0032_curated_items", "0033_mcq_curated"
MOVED = ("mcq", "mcq_review")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An empty database migrated up to 0032 only: the schema of the day before MCQs moved."""
    with engine_at(request.param, tmp_path, BEFORE) as engine:
        yield engine


def _option(text: str, role: str, **more: Any) -> dict[str, Any]:
    return {"text": text, "rationale": "", "is_llm_generated": False, "source_kind": "variable", "source_ids": [],
            "negative_reason": "", "extra": {"provenance": {"role": role, "why": "w", "items": []}}, **more}


def _mcq(qid: str, dsid: int, position: int, *, kind: str = "variable", mc_type: str = "select_pos",
         source: str = "generated", at: datetime = T0, **more: Any) -> dict[str, Any]:
    row = {"id": qid, "dataset_id": dsid, "kind": kind, "mc_type": mc_type, "concept": "",
           "options": [_option("deaths", "key"), _option("name ünïcode ✓", "distractor")], "correct_index": 0,
           "extra": {"source": source, "seed": 2} if source == "generated" else {"blade": {"qid": qid}},
           "position": position, "created_at": at}
    return row | more


def _populate(engine: Engine, store: Path) -> dict[str, Any]:
    ana, cur, cat = f.user(engine, "ana"), f.user(engine, "cur", Role.CURATOR), f.user(engine, "cat", Role.CURATOR)
    storms, affairs = f.dataset(engine, store, assign=[ana]), f.dataset(engine, store, name="affairs")
    s_id, a_id = storms.id or 0, affairs.id or 0
    transform = {"kind": "transform", "concept": "Severity ", "options": [
        _option("df['d'] = df['deaths']", "key", source_kind="transform", source_ids=["t" * 32]),
        _option("df['d'] = 0", "distractor", source_kind="alternative", negative_reason="voted_unjustifiable"),
        _option("df['d'] = df['name']", "distractor", negative_reason="wrong_variable")]}
    mcqs = [
        _mcq("storms:cvar:0", s_id, 0, source="imported"),  # BLADE's own ids: not hex
        _mcq("storms:tr:1", s_id, 1, source="imported", mc_type="select_neg", correct_index=2, **transform),
        _mcq("a" * 32, s_id, 2),  # accepted
        _mcq("b" * 32, s_id, 3, mc_type="select_neg", **transform),  # rejected
        _mcq("c" * 32, s_id, 4, extra={"source": "generated", "seed": 2, "edited": True}),  # edited after accepting
        _mcq("d" * 32, s_id, 5, at=T0 + timedelta(seconds=1)),  # reset to pending
        _mcq("e" * 32, s_id, 5),  # never reviewed (same position: ordered by age)
        _mcq("Z" * 32, s_id, 6, source="imported", correct_index=1),  # upper case sorts first by code point
    ]
    mcqs += [_mcq(f"{n:032x}", a_id, n, at=T0 + timedelta(microseconds=n)) for n in range(230)]  # > one batch
    at = [T0 + timedelta(minutes=n, microseconds=7) for n in range(6)]

    def step(src: str, to: str, by: int | None, when: datetime, note: str = "", **more: Any) -> dict[str, Any]:
        return {"from": src, "to": to, "by": by, "at": when.isoformat(), "note": note, **more}

    before = {"options": ["deaths", "name"], "correct_index": 0, "mc_type": "select_pos"}
    reviews = [
        {"mcq_id": "a" * 32, "dataset_id": s_id, "status": "accepted", "note": "clear", "reviewed_by_id": cur.id,
         "reviewed_at": at[0], "history": [step("pending", "accepted", cur.id, at[0], "clear")]},
        {"mcq_id": "b" * 32, "dataset_id": s_id, "status": "rejected", "note": "too easy", "reviewed_by_id": cat.id,
         "reviewed_at": at[1], "history": [step("pending", "rejected", cat.id, at[1], "too easy")]},
        {"mcq_id": "c" * 32, "dataset_id": s_id, "status": "edited", "note": "harder", "reviewed_by_id": cur.id,
         "reviewed_at": at[3], "history": [step("pending", "accepted", cat.id, at[2]),
                                           step("accepted", "edited", cur.id, at[3], "harder", before=before)]},
        {"mcq_id": "d" * 32, "dataset_id": s_id, "status": "pending", "note": "", "reviewed_by_id": cat.id,
         "reviewed_at": at[5], "history": [step("pending", "accepted", cur.id, at[4]),
                                           step("accepted", "pending", cat.id, at[5])]},
        {"mcq_id": "00" * 16, "dataset_id": a_id, "status": "accepted", "note": "", "reviewed_by_id": None,
         "reviewed_at": at[0].replace(microsecond=0), "history": []},  # an account gone, a time without µs
    ]
    with engine.begin() as conn:
        conn.execute(sa.table("mcq", *(sa.column(c, t) for c, t in MCQ_TYPES.items())).insert(), mcqs)
        conn.execute(sa.table("mcq_review", *(sa.column(c, t) for c, t in REVIEW_TYPES.items())).insert(), reviews)
        conn.execute(sa.text("INSERT INTO curated_item (dataset_id, kind, key, status, payload, created_at) "
                             "VALUES (:d, 'programmatic', 'storms_clean', '', :p, :t)"),
                     {"d": s_id, "p": '{"prompt": "p", "input_files": [], "data_source_type": "", "extra": {}}',
                      "t": T0})
    with session_scope(engine) as s:
        s.add(ReleaseRecord(version="1.0.0", format_version="2.0", path="1.0.0", manifest_sha256="f" * 64,
                            created_by_id=cur.id, summary={"storms": {"MCQs": 4}, "affairs": {"MCQs": 1}}))
    return {"cur": cur, "cat": cat, "storms": s_id, "affairs": a_id}


def _aware(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def _moved(before: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """What ``curated_item`` must hold after the upgrade: the rows it held, then every MCQ (by id, code point
    order) with its review, field for field."""
    reviews = {r["mcq_id"]: r for r in before["mcq_review"]}
    first = max(i["id"] for i in before["curated_item"]) + 1
    moved = []
    for n, q in enumerate(sorted(before["mcq"], key=lambda q: q["id"])):
        r = reviews.get(q["id"])
        payload = {k: q[k] for k in ("kind", "mc_type", "concept", "options", "correct_index", "extra", "position")}
        payload["review"] = None if r is None else {
            "note": r["note"], "reviewed_by_id": r["reviewed_by_id"],
            "reviewed_at": _aware(r["reviewed_at"]).isoformat(), "history": r["history"]}
        moved.append({"id": first + n, "dataset_id": q["dataset_id"], "kind": "mcq", "key": q["id"],
                      "status": r["status"] if r else "pending", "payload": payload, "created_at": q["created_at"],
                      "created_by_id": None})
    return before["curated_item"] + moved


def _released(before: dict[str, list[dict[str, Any]]], dsid: int, who: Any) -> list[dict[str, Any]]:
    """What a release carried of a dataset's MCQs before the move (the rule of the code that read the two tables):
    in order of position, age and id; generated ones only when reviewed and not pending, never rejected ones;
    a reviewed one with its review."""
    reviews = {r["mcq_id"]: r for r in before["mcq_review"]}
    out = []
    for q in sorted((q for q in before["mcq"] if q["dataset_id"] == dsid),
                    key=lambda q: (q["position"], _aware(q["created_at"]), q["id"])):
        r, extra = reviews.get(q["id"]), dict(q["extra"])
        if extra.get("source") == "generated" and (r is None or r["status"] == "pending"):
            continue
        if r is not None:
            if r["status"] == "rejected":
                continue
            extra["review"] = {"status": r["status"], "note": r["note"], "by": who(r["reviewed_by_id"]),
                               "at": _aware(r["reviewed_at"]).isoformat()}
        out.append({"id": q["id"], "kind": q["kind"], "mc_type": q["mc_type"], "concept": q["concept"],
                    "options": q["options"], "correct_index": q["correct_index"], "extra": extra})
    return out


def _who(user_id: int | None) -> str | None:
    return None if user_id is None else f"A{user_id}"


def test_moving_mcqs_and_their_reviews_onto_the_curated_tables_loses_nothing(old_engine: Engine, tmp_path: Path):
    from curation.services.blinding import datasets_holding_work
    from curation.services.mcq_review import mcq_views, review_mcq
    from curation.services.mcq_store import add_mcq, unreviewed_mcqs
    from curation.services.release_data import kind_parts

    made = _populate(old_engine, tmp_path / "store")
    before = _dump(old_engine)
    assert (len(before["mcq"]), len(before["mcq_review"]), len(before["curated_item"])) == (238, 5, 1)
    assert before["release"] and before["dataset"]

    _to(old_engine, AFTER)
    after = _dump(old_engine)
    assert not set(MOVED) & set(after)  # the MCQ tables are gone
    expected = {t: rows for t, rows in before.items() if t not in MOVED} | {"curated_item": _moved(before)}
    assert sorted(after) == sorted(expected)
    for table in sorted(expected):
        assert after[table] == expected[table], table

    # the services read the moved rows as they read the old ones
    storms, affairs = made["storms"], made["affairs"]
    with session_scope(old_engine) as s:
        views = mcq_views(session=s, actor=made["cur"], dataset_id=storms)
        assert [(v.id, v.review, v.source, v.note) for v in views] == [
            ("storms:cvar:0", "pending", "imported", ""), ("storms:tr:1", "pending", "imported", ""),
            ("a" * 32, "accepted", "generated", "clear"), ("b" * 32, "rejected", "generated", "too easy"),
            ("c" * 32, "edited", "generated", "harder"), ("e" * 32, "pending", "generated", ""),
            ("d" * 32, "pending", "generated", ""), ("Z" * 32, "pending", "imported", "")]
        assert views[1].mcq.concept == "Severity " and views[1].mcq.correct_index == 2
        assert views[4].mcq.review.history[1]["before"]["options"] == ["deaths", "name"]
        for dsid in (storms, affairs):
            dataset = s.get(Dataset, dsid)
            part = kind_parts(session=s, dataset=dataset, who=_who).get("mcq", {"items": []})
            assert part["items"] == _released(before, dsid, _who), dataset.name
        assert [q["id"] for q in kind_parts(session=s, dataset=s.get(Dataset, storms), who=_who)["mcq"]["items"]] \
            == ["storms:cvar:0", "storms:tr:1", "a" * 32, "c" * 32, "Z" * 32]
        assert unreviewed_mcqs(session=s, dataset_id=storms) == 2 and unreviewed_mcqs(session=s, dataset_id=affairs) \
            == 229
        assert datasets_holding_work(session=s, dataset_ids=[storms, affairs]) == {storms, affairs}
        # a review on a moved MCQ goes on from its history, and still meets another curator's since
        with pytest.raises(DecidedElsewhere, match="cat marked this MCQ pending at"):
            review_mcq(session=s, actor=made["cur"], mcq_id="d" * 32, decision="accepted", expected="accepted")
        row = review_mcq(session=s, actor=made["cur"], mcq_id="d" * 32, decision="accepted", expected="pending")
        assert [h["to"] for h in row.history] == ["accepted", "pending", "accepted"]
        new = add_mcq(session=s, dataset_id=storms, mcq_id="later", position=9,
                      question={"kind": "variable", "mc_type": "select_pos", "options": [{"text": "x"}]})
        assert new.id == max(i["id"] for i in after["curated_item"]) + 1  # PostgreSQL's sequence goes on
        s.rollback()

    # down and up again: exactly the database it was, then exactly the moved one
    _to(old_engine, BEFORE, down=True)
    assert _dump(old_engine) == before
    _to(old_engine, AFTER)
    assert _dump(old_engine) == after


def test_a_review_filed_under_another_dataset_stops_the_upgrade(old_engine: Engine, tmp_path: Path):
    made = _populate(old_engine, tmp_path / "store")
    with old_engine.begin() as conn:
        conn.execute(sa.text("UPDATE mcq_review SET dataset_id = :d WHERE mcq_id = :q"),
                     {"d": made["affairs"], "q": "a" * 32})
    before = _dump(old_engine)
    with pytest.raises(RuntimeError, match=r"Cannot upgrade to 0033_mcq_curated: 1 MCQ review\(s\) belong to another "
                                           r"dataset than their MCQ \(first: a{32}\); .*Nothing was changed\."):
        _to(old_engine, AFTER)
    assert _dump(old_engine) == before
