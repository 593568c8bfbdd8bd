"""Curated items in one shape (issue 27, point 3, "Done when: the migration test loses nothing").

A database is populated at revision 0031 (the head before the curated tables): users, a BLADE dataset with an
analysis, alternatives, MCQs and their reviews, a DiscoveryBench hypothesis task, programmatic tasks with
candidate checks and artifacts, votes on them, vote changes, consensus (gold) rows and a meeting's outcome. Then:

* upgrading moves every programmatic task and candidate onto ``curated_item`` / ``curated_candidate`` with every
  field kept and every id kept, and leaves every other row of every other table as it was;
* the services read the moved rows as before (statuses from votes, meetings and imports; what a release carries);
* downgrading gives back the database exactly as it was, table by table, row by row; and upgrading again gives
  the same moved rows;
* a downgrade that would lose another kind's curated items is refused, changing nothing.

On SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.engine import Engine

from curation.db import _alembic_config, make_engine, session_scope
from curation.models import (
    Alternative,
    Consensus,
    HypothesisTask,
    Meeting,
    MeetingOutcome,
    Role,
    UTCDateTime,
    Vote,
    VoteChange,
)
from exports.programmatic_part import PROGRAMMATIC_TASK_TYPES
from tests import factories as f
from tests.conftest import PG_URL, pg_unavailable_reason, unavailable

BEFORE, AFTER = "0031_dataset_parts", "0032_curated_items"
MOVED = {"programmatic_task": "curated_item", "programmatic_item": "curated_candidate"}


def _to(engine: Engine, revision: str, *, down: bool = False) -> None:
    with engine.begin() as conn:
        cfg = _alembic_config(engine)
        cfg.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(cfg, revision)


@contextmanager
def engine_at(backend: str, tmp_path: Path, revision: str) -> Iterator[Engine]:
    """An empty database (SQLite, or a fresh PostgreSQL schema) migrated up to ``revision`` only."""
    if backend == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'forkpaths.db'}")
        _to(engine, revision)
        yield engine
        engine.dispose()
        return
    reason = pg_unavailable_reason()
    if reason:
        unavailable("postgres", reason)
    admin = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    schema = f"fp_curated_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    engine = make_engine(PG_URL, connect_args={"options": f"-csearch_path={schema}"})
    try:
        _to(engine, revision)
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An empty database migrated up to 0031 only: the schema of the day before the curated tables."""
    with engine_at(request.param, tmp_path, BEFORE) as engine:
        yield engine


def _dump(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table (reflected from the database, not the models), by primary key."""
    meta = sa.MetaData()
    meta.reflect(bind=engine)
    out = {}
    with engine.connect() as conn:
        for name, table in meta.tables.items():
            if name == "alembic_version" or name.startswith("procrastinate_"):
                continue
            order = list(table.primary_key.columns) or list(table.columns)
            out[name] = [dict(r._mapping) for r in conn.execute(sa.select(table).order_by(*order))]
    return out


T0 = datetime(2026, 11, 1, 9, 30, 15, 123456, tzinfo=UTC)


def _populate(engine: Engine, store: Path) -> dict[str, Any]:
    """Rows in every table a curated kind touches, and in the per-kind tables that stay (at revision 0031)."""
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    cur, adm = f.user(engine, "cur", Role.CURATOR), f.user(engine, "adm", Role.ADMIN)
    blade = f.dataset(engine, store, assign=[ana, bob])
    other = f.dataset(engine, store, name="affairs")
    decisions = f.full_analysis(engine, ana, blade.id or 0, checked=False)
    dsid, otherid = blade.id or 0, other.id or 0
    check = {"task_type": PROGRAMMATIC_TASK_TYPES[0], "function": "Data Completeness", "metric": "no missing",
             "code": "def f(gt):\n    return True\n", "rule": None, "ground_truth": "clean.csv"}
    from curation.services.programmatic import code_hash

    art = {"path": "clean.csv", "sha256": "ab" * 32, "size": 12, "content_b64": "ZGVhdGhzCjEwCg=="}
    task_rows = [
        {"id": 3, "dataset_id": dsid, "key": "storms_clean", "prompt": "Clean the storms table. ünïcode ✓",
         "input_files": ["data.csv"], "data_source_type": "csv",
         "extra": {"input_map": {"data.csv": "data.csv"}, "last_generation": {"samples": 3, "agreed": {"a": 2}}},
         "created_at": T0, "created_by_id": cur.id},
        {"id": 7, "dataset_id": otherid, "key": "affairs_empty", "prompt": "p", "input_files": [],
         "data_source_type": "", "extra": {}, "created_at": T0 + timedelta(seconds=1), "created_by_id": None},
    ]
    item_rows = [
        {"id": "c" * 32, "task_id": 3, "dataset_id": dsid, "kind": "check", "source": "imported",
         "proposed_by_id": None, "seed_id": None, "payload": check,
         "gate": {"released": True, "code_hash": code_hash(check), "at": "2026-11-01T09:31:00"},
         "extra": {"imported_id": "c1", "provenance": {"from": "tree"}}, "position": 1, "created_at": T0},
        {"id": "a" * 32, "task_id": 3, "dataset_id": dsid, "kind": "artifact", "source": "imported",
         "proposed_by_id": None, "seed_id": None, "payload": art, "gate": None, "extra": {}, "position": 0,
         "created_at": T0},
        {"id": "e" * 32, "task_id": 3, "dataset_id": dsid, "kind": "check", "source": "peer",
         "proposed_by_id": ana.id, "seed_id": "c" * 32, "payload": {**check, "rule": "lambda x: x >= 0.8"},
         "gate": None, "extra": {}, "position": 2, "created_at": T0 + timedelta(minutes=5)},
        {"id": "f" * 32, "task_id": 3, "dataset_id": dsid, "kind": "artifact", "source": "agreement",
         "proposed_by_id": None, "seed_id": None, "payload": {**art, "path": "odd.csv"}, "gate": None,
         "extra": {"support": 2, "ok_samples": 3, "llm": {"model": "m"}}, "position": 3,
         "created_at": T0 + timedelta(minutes=6)},
    ]
    item_rows += [  # more than one batch of the migration's copy
        {"id": f"{n:032x}", "task_id": 7, "dataset_id": otherid, "kind": "artifact", "source": "agreement",
         "proposed_by_id": None, "seed_id": None, "payload": {**art, "path": f"out_{n}.csv"}, "gate": None,
         "extra": {"support": n}, "position": n, "created_at": T0 + timedelta(seconds=n)} for n in range(120)]
    with engine.begin() as conn:
        conn.execute(sa.table("programmatic_task", *(sa.column(c, t) for c, t in _TASK_TYPES.items())).insert(),
                     task_rows)
        conn.execute(sa.table("programmatic_item", *(sa.column(c, t) for c, t in _ITEM_TYPES.items())).insert(),
                     item_rows)
    with session_scope(engine) as s:
        alt = Alternative(dataset_id=dsid, kind="variable", source="peer", proposed_by_id=bob.id,
                          payload={"name": "wind", "kind": "iv"}, extra={"merged_into": None})
        s.add(alt)
        s.flush()
        s.execute(sa.table("mcq", *(sa.column(c, t) for c, t in MCQ_TYPES.items())).insert().values(
            id="q" * 32, dataset_id=dsid, kind="variable", mc_type="select_pos", concept="severity",
            options=[{"text": "deaths", "correct": True}, {"text": "name", "correct": False}], correct_index=0,
            extra={}, position=0, created_at=T0))
        s.execute(sa.table("mcq_review", *(sa.column(c, t) for c, t in REVIEW_TYPES.items())).insert().values(
            mcq_id="q" * 32, dataset_id=dsid, status="edited", note="", reviewed_by_id=cur.id, reviewed_at=T0,
            history=[{"status": "accepted"}]))
        s.add(HypothesisTask(dataset_id=otherid, key="real/test/affairs/metadata_0/q1", source="real", split="test",
                             metadata_k=0, qid=1, question="Does x raise y?", data_files=["affairs.csv"],
                             gold_hypothesis="x raises y", gold_source="metadata", status="gold",
                             relevant_cols=["x", "y"]))
        votes = [("prog_check", "e" * 32, ana, "justifiable", "yes"), ("prog_check", "e" * 32, bob, "justifiable", "no"),
                 ("prog_check", "e" * 32, bob, "is_faithful", "yes"),
                 ("prog_artifact", "f" * 32, ana, "is_correct", "no"), ("prog_artifact", "f" * 32, bob, "is_correct", None),
                 ("alternative", alt.id, ana, "justifiable", "unsure"),
                 ("variable", next(iter(decisions.values())), bob, "justifiable", "yes")]
        for pos, (kind, target, who, question, answer) in enumerate(votes):
            s.add(Vote(dataset_id=dsid, target_kind=kind, target_id=target, annotator_id=who.id or 0,
                       question=question, answer=answer, skipped_reason="" if answer else "cannot tell",
                       explanation=f"because {pos}", position=pos))
            s.add(VoteChange(dataset_id=dsid, target_kind=kind, target_id=target, annotator_id=who.id or 0,
                             question=question, before=None, after={"answer": answer}, changed_by_id=who.id))
        s.add(VoteChange(dataset_id=dsid, target_kind="prog_check", target_id="e" * 32, annotator_id=bob.id or 0,
                         question="justifiable", before={"answer": "yes"}, after={"answer": "no"},
                         changed_by_id=cur.id, note="corrected by a curator"))
        for target, kind in (("c" * 32, "prog_check"), ("a" * 32, "prog_artifact")):
            s.add(Consensus(dataset_id=dsid, target_kind=kind, target_id=target, status="justifiable",
                            rule="imported", note="imported with the task as accepted ground truth"))
        s.add(Consensus(dataset_id=dsid, target_kind="alternative", target_id=alt.id, status="split",
                        rule="majority", decided_by_id=cur.id, votes_snapshot=[{"annotator": 1, "answer": "yes"}]))
        meeting = Meeting(dataset_id=dsid, rule="majority", started_by_id=cur.id, attendance=[ana.id, bob.id],
                          agenda=[{"target_kind": "prog_artifact", "target_id": "f" * 32}])
        s.add(meeting)
        s.flush()
        s.add(MeetingOutcome(meeting_id=meeting.id or 0, dataset_id=dsid, target_kind="prog_artifact",
                             target_id="f" * 32, outcome="unjustifiable", reason="not what the task asks",
                             recorded_by_id=cur.id))
    return {"adm": adm, "dataset_id": dsid}


MCQ_TYPES = {"id": sa.String(), "dataset_id": sa.Integer(), "kind": sa.String(), "mc_type": sa.String(),
             "concept": sa.String(), "options": sa.JSON(), "correct_index": sa.Integer(), "extra": sa.JSON(),
             "position": sa.Integer(), "created_at": UTCDateTime()}  # the mcq table before 0033
REVIEW_TYPES = {"mcq_id": sa.String(), "dataset_id": sa.Integer(), "status": sa.String(), "note": sa.String(),
                "reviewed_by_id": sa.Integer(), "reviewed_at": UTCDateTime(), "history": sa.JSON()}
_TASK_TYPES = {"id": sa.Integer(), "dataset_id": sa.Integer(), "key": sa.String(), "prompt": sa.String(),
               "input_files": sa.JSON(), "data_source_type": sa.String(), "extra": sa.JSON(),
               "created_at": UTCDateTime(), "created_by_id": sa.Integer()}
_ITEM_TYPES = {"id": sa.String(), "task_id": sa.Integer(), "dataset_id": sa.Integer(), "kind": sa.String(),
               "source": sa.String(), "proposed_by_id": sa.Integer(), "seed_id": sa.String(), "payload": sa.JSON(),
               "gate": sa.JSON(), "extra": sa.JSON(), "position": sa.Integer(),
               "created_at": UTCDateTime()}


def _moved(before: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """What the curated tables must hold after the upgrade: every programmatic row, field for field."""
    items = [{"id": t["id"], "dataset_id": t["dataset_id"], "kind": "programmatic", "key": t["key"], "status": "",
              "payload": {"prompt": t["prompt"], "input_files": t["input_files"],
                          "data_source_type": t["data_source_type"], "extra": t["extra"]},
              "created_at": t["created_at"], "created_by_id": t["created_by_id"]}
             for t in before["programmatic_task"]]
    candidates = [{"id": i["id"], "item_id": i["task_id"], "dataset_id": i["dataset_id"], "kind": "programmatic",
                   "role": i["kind"], "source": i["source"], "proposed_by_id": i["proposed_by_id"],
                   "seed_id": i["seed_id"], "payload": i["payload"], "gate": i["gate"], "extra": i["extra"],
                   "position": i["position"], "created_at": i["created_at"]}
                  for i in before["programmatic_item"]]
    return {"curated_item": items, "curated_candidate": candidates}


def test_moving_programmatic_tasks_onto_the_curated_tables_loses_nothing(old_engine: Engine, tmp_path: Path):
    from curation.services.curated import add_item
    from curation.services.programmatic import list_programmatic_tasks, release_programmatic_tasks
    from curation.services.votes import resolve_item

    made = _populate(old_engine, tmp_path / "store")
    before = _dump(old_engine)
    assert len(before["programmatic_task"]) == 2 and len(before["programmatic_item"]) == 124
    assert {"vote", "vote_change", "consensus", "meeting_outcome", "mcq", "mcq_review", "alternative",
            "hypothesis_task", "conceptualvariable", "transform", "analysis"} <= {t for t, rows in before.items() if rows}

    _to(old_engine, AFTER)
    after = _dump(old_engine)
    assert not set(MOVED) & set(after)  # the per-kind tables are gone
    expected = {t: rows for t, rows in before.items() if t not in MOVED} | _moved(before)
    assert sorted(after) == sorted(expected)
    for table in sorted(expected):
        assert after[table] == expected[table], table

    # the services read the moved rows as they read the old ones
    with session_scope(old_engine) as s:
        views = {v.task.key: v for v in list_programmatic_tasks(session=s, actor=made["adm"])}
        assert sorted(views) == ["affairs_empty", "storms_clean"]
        storms = views["storms_clean"]
        assert storms.task.prompt == "Clean the storms table. ünïcode ✓" and storms.task.input_files == ["data.csv"]
        assert storms.task.extra["last_generation"]["samples"] == 3
        assert {c.item.id: (c.status, c.released) for c in storms.checks} == {
            "c" * 32: ("justifiable", True),  # imported as gold, gated for its code
            "e" * 32: ("contested", False)}  # its two votes (yes, no) still count
        assert {a.item.id: a.status for a in storms.artifacts} == {"a" * 32: "justifiable",
                                                                   "f" * 32: "unjustifiable"}  # the meeting's
        shipped = release_programmatic_tasks(session=s, dataset_id=made["dataset_id"])
        assert [(t.key, [c.id for c in t.checks], [a.path for a in t.artifacts]) for t in shipped] == [
            ("storms_clean", ["c" * 32], ["clean.csv"])]
        assert shipped[0].checks[0].provenance == {"source": "imported", "seed_id": None, "imported_id": "c1",
                                                   "provenance": {"from": "tree"}}
        assert resolve_item(session=s, target_kind="prog_check", target_id="e" * 32).dataset_id == made["dataset_id"]  # votes still find it
        # new items get new ids (PostgreSQL's sequence continues after the copied ones)
        new = add_item(session=s, kind="programmatic", dataset_id=made["dataset_id"], key="later",
                       payload={"prompt": "later"})
        assert new.id == 8
        s.rollback()

    # down and up again: exactly the database it was, then exactly the moved one
    _to(old_engine, BEFORE, down=True)
    assert _dump(old_engine) == before
    _to(old_engine, AFTER)
    assert _dump(old_engine) == after


def test_a_downgrade_that_would_lose_another_kinds_items_is_refused(old_engine: Engine, tmp_path: Path):
    made = _populate(old_engine, tmp_path / "store")
    _to(old_engine, AFTER)
    with old_engine.begin() as conn:  # what a kind added after this migration would hold
        conn.execute(sa.text("INSERT INTO curated_item (dataset_id, kind, key, status, payload, created_at) "
                             "VALUES (:d, 'toy', 'q1', '', '{}', :t)"), {"d": made["dataset_id"], "t": T0})
    moved = _dump(old_engine)
    with pytest.raises(RuntimeError, match=r"curated tables hold items of kinds that had no table before it "
                                           r"\(1 toy\); they would be lost\. Nothing was changed\."):
        _to(old_engine, BEFORE, down=True)
    assert _dump(old_engine) == moved
