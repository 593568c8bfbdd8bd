"""Curated items in one shape (issue 27, point 3): a kind that curates items declares the pydantic models of their
payloads (``TaskKind.curated``) and stores them in the generic tables with no table and no migration of its own;
a payload its model refuses is refused with a sentence naming the field, and nothing is stored."""

from __future__ import annotations

import dataclasses
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict
from sqlmodel import select

from curation.db import session_scope
from curation.errors import VoteError
from curation.models import CuratedCandidate, CuratedItem, Role, Stage
from curation.services.annotation import submit_analysis
from curation.services.curated import (
    CuratedPayloadError,
    add_candidate,
    add_item,
    candidates_of,
    item_by_key,
    items_of,
    set_item_payload,
)
from curation.services.stages import set_stage
from curation.services.votes import QUESTIONS, cast_vote, resolve_item
from evaluation.tasks import (
    VERDICT,
    CuratedShape,
    ItemKind,
    LeaderboardSpec,
    TaskKind,
    VoteQuestion,
    registered,
)
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


def test_analysts_vote_on_a_new_kinds_candidates_with_the_questions_it_declares(engine, store):
    """The votes ask the registry, not a list of kinds: a kind defined here declares the item kind of its
    candidates (the target its votes name, its questions, what its "no" means), and analysts vote on them."""
    answer = ItemKind("answer", candidate_target="quiz_answer", unjustifiable="this answer is not the key",
                      questions=(VoteQuestion("is_right", "Is this the right choice?"),
                                 VoteQuestion(VERDICT, "Overall: is this the key?", answers=("yes", "no"))))
    quiz = dataclasses.replace(QUIZ, item_kinds=(answer,))
    ana, bob, cur = f.user(engine, "ana"), f.user(engine, "bob"), f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[ana, bob])
    for u in (ana, bob):
        f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
    with registered(quiz):
        with session_scope(engine) as s:
            item = add_item(session=s, kind="quiz", dataset_id=ds.id or 0, key="q1",
                            payload={"text": "2 + 2?", "choices": ["3", "4"]})
            candidate = add_candidate(session=s, item=item, role="answer", source="peer", payload={"choice": 1},
                                      proposed_by_id=ana.id)
            s.flush()
            candidate_id = candidate.id
        assert [q.key for q in QUESTIONS["answer"]] == ["is_right", VERDICT]
        with session_scope(engine) as s:
            vote = cast_vote(session=s, actor=bob, target_kind="quiz_answer", target_id=candidate_id,
                             question="is_right", answer="yes")
            assert (vote.target_kind, vote.target_id, vote.answer) == ("quiz_answer", candidate_id, "yes")
        with pytest.raises(VoteError, match=r"Say why this answer is not the key"), session_scope(engine) as s:
            cast_vote(session=s, actor=bob, target_kind="quiz_answer", target_id=candidate_id, question=VERDICT,
                      answer="no")
        with pytest.raises(VoteError, match=r"'is_faithful' is not a question about"), session_scope(engine) as s:
            cast_vote(session=s, actor=bob, target_kind="quiz_answer", target_id=candidate_id,
                      question="is_faithful", answer="yes")
        with pytest.raises(VoteError, match=r"your own proposal"), session_scope(engine) as s:
            cast_vote(session=s, actor=ana, target_kind="quiz_answer", target_id=candidate_id,
                      question="is_right", answer="yes")
    assert "answer" not in QUESTIONS  # gone with its kind
    with pytest.raises(VoteError, match=r"not on 'quiz_answer'"), session_scope(engine) as s:
        resolve_item(session=s, target_kind="quiz_answer", target_id=candidate_id)


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
