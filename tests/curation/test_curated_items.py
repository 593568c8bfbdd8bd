"""Curated items in one shape (issue 27, point 3): a kind that curates items declares the pydantic models of their
payloads (``TaskKind.curated``) and stores them in the generic tables with no table and no migration of its own;
a payload its model refuses is refused with a sentence naming the field, and nothing is stored."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict
from sqlmodel import select

from curation.db import session_scope
from curation.models import CuratedCandidate, CuratedItem
from curation.services.curated import (
    CuratedPayloadError,
    add_candidate,
    add_item,
    candidates_of,
    item_by_key,
    items_of,
    set_item_payload,
)
from evaluation.tasks import CuratedShape, LeaderboardSpec, TaskKind, registered
from evaluation.tasks.base import kind_problems
from tests import factories as f


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    choices: list[str]


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    choice: int
    why: str = ""


class Flag(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: Literal["ambiguous", "wrong"]


def _kind(name: str, shape: CuratedShape | None) -> TaskKind:
    """A kind defined here, as a new benchmark would be: it curates questions with answer and flag candidates."""
    return TaskKind(name=name, label="A quiz", item_noun="answers", leaderboard=LeaderboardSpec(role="ranked"),
                    check_files=lambda *a, **k: [], score=lambda ctx: None,  # type: ignore[arg-type,return-value]
                    leaderboard_values=lambda run, ds: None, summary_line=lambda scores: "", curated=shape)


QUIZ = _kind("quiz", CuratedShape(item=Question, candidates={"answer": Answer, "flag": Flag}))


def test_a_new_kind_curates_items_with_no_migration_and_its_models_guard_every_write(engine, store):
    ds = f.dataset(engine, store)
    with registered(QUIZ), session_scope(engine) as s:
        item = add_item(session=s, kind="quiz", dataset_id=ds.id or 0, key="q1",
                        payload={"text": "2 + 2?", "choices": ["3", "4"]})
        add_candidate(session=s, item=item, role="answer", source="peer", payload={"choice": 1}, position=1)
        add_candidate(session=s, item=item, role="flag", source="llm", payload={"reason": "ambiguous"})
    with registered(QUIZ), session_scope(engine) as s:
        item = item_by_key(session=s, kind="quiz", key="q1")
        assert item is not None and item.payload == {"text": "2 + 2?", "choices": ["3", "4"]}
        assert [i.key for i in items_of(session=s, kind="quiz", dataset_id=ds.id)] == ["q1"]
        rows = candidates_of(session=s, kind="quiz", item_id=item.id)
        assert [(c.role, c.payload, c.dataset_id, c.kind) for c in rows] == [
            ("flag", {"reason": "ambiguous"}, ds.id, "quiz"), ("answer", {"choice": 1, "why": ""}, ds.id, "quiz")]

        with pytest.raises(CuratedPayloadError, match=r"The payload of a quiz item was refused: field 'choices': "
                                                      r"Field required\. Nothing was stored\."):
            add_item(session=s, kind="quiz", dataset_id=ds.id or 0, key="q2", payload={"text": "?"})
        with pytest.raises(CuratedPayloadError, match=r"a quiz answer was refused: field 'choice': Input should be "
                                                      r"a valid integer"):
            add_candidate(session=s, item=item, role="answer", source="peer", payload={"choice": "four"})
        with pytest.raises(CuratedPayloadError, match=r"field 'reason': Input should be 'ambiguous' or 'wrong'"):
            add_candidate(session=s, item=item, role="flag", source="peer", payload={"reason": "boring"})
        with pytest.raises(CuratedPayloadError, match=r"field 'colour': Extra inputs are not permitted"):
            set_item_payload(session=s, item=item, payload={**item.payload, "colour": "red"})
        with pytest.raises(CuratedPayloadError, match=r"The quiz kind has no candidates of role 'hint' \(it has "
                                                      r"answer, flag\)\."):
            add_candidate(session=s, item=item, role="hint", source="peer", payload={})
        with pytest.raises(CuratedPayloadError, match=r"Unknown run kind 'nope'"):
            add_item(session=s, kind="nope", dataset_id=ds.id or 0, key="q3", payload={})
        s.flush()
    with session_scope(engine) as s:  # nothing refused was stored, and the item kept its payload
        assert len(s.exec(select(CuratedItem)).all()) == 1
        assert len(s.exec(select(CuratedCandidate)).all()) == 2
        assert s.exec(select(CuratedItem)).one().payload == {"text": "2 + 2?", "choices": ["3", "4"]}


def test_a_kind_that_keeps_no_curated_items_is_told_so(engine, store):
    ds = f.dataset(engine, store)
    with registered(_kind("quiet", None)), session_scope(engine) as s, \
            pytest.raises(CuratedPayloadError, match=r"The quiet kind keeps no curated items \(its TaskKind declares "
                                                     r"no `curated`\)\."):
        add_item(session=s, kind="quiet", dataset_id=ds.id or 0, key="k", payload={})


def test_the_programmatic_kinds_models_refuse_a_check_of_an_unknown_task_type():
    from curation.services.curated import valid_payload

    check = {"task_type": "data cleaning & preprocessing", "function": "f", "metric": "m", "code": "def f(gt): 1"}
    assert valid_payload("programmatic", check, role="check") == {**check, "rule": None, "ground_truth": ""}
    with pytest.raises(CuratedPayloadError, match=r"field 'task_type': Value error, 'cooking' is none of "
                                                  r"DataSciBench's six task types"):
        valid_payload("programmatic", {**check, "task_type": "cooking"}, role="check")
    with pytest.raises(CuratedPayloadError, match=r"a programmatic artifact was refused: field 'size'"):
        valid_payload("programmatic", {"path": "a.csv", "sha256": "0", "content_b64": ""}, role="artifact")


def test_a_curated_declaration_that_cannot_be_stored_is_refused_at_start():
    too_long = _kind("quiz", CuratedShape(item=Question, candidates={"a_role_far_too_long": Answer}))
    not_models = _kind("quiz", CuratedShape(item=dict, candidates={}))  # type: ignore[arg-type]
    assert kind_problems(too_long) == ["its curated candidate role 'a_role_far_too_long' must have 1 to 16 "
                                       "characters"]
    assert kind_problems(not_models) == ["its curated payloads are not all pydantic models"]
    assert kind_problems(QUIZ) == []
