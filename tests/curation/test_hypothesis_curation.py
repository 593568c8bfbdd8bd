"""Curating DiscoveryBench hypothesis tasks through stages 1-3 (issue 17 point 2), on SQLite and PostgreSQL:
blind stage-1 hypotheses with supporting code run in the real sandbox, bad input refused with nothing stored,
stage-2 votes on peers' and the LLM's hypotheses (scripted endpoint on 127.0.0.1) with agreement, and the
stage-3 gold decided by the rule or a meeting, with provenance, in the task and in the release."""

from __future__ import annotations

import json

import pytest
from sqlmodel import func, select

from curation.db import session_scope
from curation.errors import (
    BlindingViolation,
    DecisionValidationError,
    NotFoundError,
    PermissionDenied,
    StageError,
    SubmittedAnalysisLocked,
    VoteError,
)
from curation.models import Alternative, Consensus, HypothesisProposal, HypothesisTask, Role, Stage
from curation.services.agreement import agreement_report
from curation.services.analyses.review_queue import review_queue
from curation.services.background_jobs import execute_job
from curation.services.hypotheses import (
    HypothesisInput,
    HypothesisVariableInput,
    check_hypothesis_code,
    decide_gold,
    delete_hypothesis,
    gold_board,
    hypothesis_release_parts,
    hypothesis_review,
    own_hypotheses,
    save_hypothesis,
    submit_hypotheses,
)
from curation.services.hypotheses.llm import generate_hypotheses, start_hypothesis_generation
from curation.services.meetings import close_meeting, record_outcome, revise_vote, start_meeting
from curation.services.release_data import dataset_release
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from curation.settings import Settings
from evaluation.llm import LLMConfig
from evaluation.sandbox import SandboxLimits
from exports.hypotheses_part import HypothesesPart
from tests import factories as f
from tests.curation.hypothesis_world import CODE, HypothesisWorld, build
from tests.llm_server import ScriptedLLM

LIMITS = SandboxLimits(timeout_s=60, memory_mb=2048)


@pytest.fixture
def world(engine, store, tmp_path) -> HypothesisWorld:
    return build(engine, store, tmp_path / "src")


def _input(**kw) -> HypothesisInput:  # type: ignore[no-untyped-def]
    base = dict(hypothesis="In US adults, BMI rises with age.", context="US adults surveyed",
                variables=[HypothesisVariableInput(name="age", column="AGE"),
                           HypothesisVariableInput(name="bmi", column="BMI")],
                relationship="positive: about 0.1 kg/m2 per year", workflow="Regress BMI on AGE with OLS.")
    return HypothesisInput(**{**base, **kw})


def _save(w, actor, task="q0", data=None, check=None):  # type: ignore[no-untyped-def]
    with session_scope(w.engine) as s:
        return save_hypothesis(session=s, actor=actor, task_id=w.tasks[task].id, data=data or _input(), check=check)


def _check(w, actor, code, task="q0"):  # type: ignore[no-untyped-def]
    with session_scope(w.engine) as s:
        return check_hypothesis_code(session=s, actor=actor, task_id=w.tasks[task].id, code=code, store=w.store,
                                     limits=LIMITS)


def _count(w, model) -> int:  # type: ignore[no-untyped-def]
    with session_scope(w.engine) as s:
        return int(s.exec(select(func.count()).select_from(model)).one())


def _stage(w, stage):  # type: ignore[no-untyped-def]
    with session_scope(w.engine) as s:
        set_stage(session=s, actor=w.cur, dataset_id=w.dataset.id, stage=stage)


def _submit(w, actor):  # type: ignore[no-untyped-def]
    with session_scope(w.engine) as s:
        submit_hypotheses(session=s, actor=actor, dataset_id=w.dataset.id)


def _vote(w, actor, kind, tid, answer, why=""):  # type: ignore[no-untyped-def]
    with session_scope(w.engine) as s:
        return cast_vote(session=s, actor=actor, target_kind=kind, target_id=tid, question="justifiable",
                         answer=answer, explanation=why)


def test_supporting_code_that_only_prints_is_kept(world, os_sandbox):
    """Supporting code is code whose output is kept: a table it prints supports the hypothesis, no model needed
    (issue 29 point 2); code that stops with an error is still refused, in one sentence."""
    w = world
    code = "print(df.groupby(pd.qcut(df['AGE'], 4))['BMI'].mean())"
    check = _check(w, w.ana, code)
    assert check["ok"] and check["error"] is None, check
    assert "BMI" in check["stdout"] and "]" in check["stdout"]  # the printed table, one row per quartile
    assert "model" not in check["stdout"]  # a warning it printed names "the supporting code", not a model
    failed = _check(w, w.ana, "x = 1\nprint(df['NOPE'])")
    assert not failed["ok"] and failed["error"].startswith("Line 2 of the supporting code raised KeyError"), failed
    saved = _save(w, w.ana, data=_input(code=code), check=check)
    with session_scope(w.engine) as s:
        assert s.get(HypothesisProposal, saved.id).check["stdout"] == check["stdout"]


def test_stage_one_keeps_the_sandbox_output_and_refuses_bad_input(world, os_sandbox):
    w = world
    check = _check(w, w.ana, CODE)
    assert check["ok"], check
    assert "0.1" in check["stdout"] and "OLS Regression Results" in (check["summary"] or "")
    assert check["data_file"] == "survey.csv"
    saved = _save(w, w.ana, data=_input(code=CODE), check=check)
    with session_scope(w.engine) as s:
        row = s.get(HypothesisProposal, saved.id)
        assert row.check["stdout"] == check["stdout"] and row.code == CODE
        assert row.variables[0] == {"name": "age", "column": "AGE", "derived": "", "description": ""}

    bad = [
        (_input(hypothesis="  "), "the hypothesis is empty"),
        (_input(variables=[HypothesisVariableInput(name="weight", column="WEIGHT")]),
         "'WEIGHT' is not a column of the data dictionary of survey.csv"),
        (_input(variables=[HypothesisVariableInput(name="bmi", column="bmi")]), "did you mean 'BMI'"),
        (_input(variables=[HypothesisVariableInput(name="obese")]), "variable 1 ('obese'): ground it"),
        (_input(relationship=""), "the relationship is empty"),
        (_input(workflow=""), "the workflow is empty"),
        (_input(code="x = 1"), "run the supporting code first"),
    ]
    for data, message in bad:
        with pytest.raises(DecisionValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
            _save(w, w.bob, data=data)
    failing = "df['NOPE'].mean()"
    failed = _check(w, w.bob, failing)
    assert not failed["ok"] and "NOPE" in failed["error"]
    with pytest.raises(DecisionValidationError, match="the supporting code stops with an error") as refused:
        _save(w, w.bob, data=_input(code=failing), check=failed)
    assert ".." not in str(refused.value)
    with pytest.raises(DecisionValidationError, match="run the supporting code first"):  # a check of other code
        _save(w, w.bob, data=_input(code=failing), check=check)
    assert _count(w, HypothesisProposal) == 1  # nothing of bob's was stored
    # a derived variable is grounded by how it is derived
    _save(w, w.bob, task="q1", data=_input(variables=[
        HypothesisVariableInput(name="obese", derived="BMI >= 30"), HypothesisVariableInput(name="smoker",
                                                                                           column="SMOKER")]))
    # the query that came with its gold is not curated
    with pytest.raises(DecisionValidationError, match="already has its gold hypothesis"):
        _save(w, w.ana, task="q2")


def test_stage_one_is_blind_and_submitting_locks(world):
    w = world
    _save(w, w.ana)
    _save(w, w.bob, data=_input(hypothesis="BMI does not depend on age."))
    with session_scope(w.engine) as s:
        mine = own_hypotheses(session=s, actor=w.ana, dataset_id=w.dataset.id)
        assert [h.hypothesis for h in mine.by_task.values()] == ["In US adults, BMI rises with age."]
        assert not mine.submitted
        with pytest.raises(PermissionDenied, match="not assigned"):
            own_hypotheses(session=s, actor=w.cur, dataset_id=w.dataset.id)
    with pytest.raises(DecisionValidationError, match="at least one query"), session_scope(w.engine) as s:
        delete_hypothesis(session=s, actor=w.ana, task_id=w.tasks["q0"].id)
        submit_hypotheses(session=s, actor=w.ana, dataset_id=w.dataset.id)
    _submit(w, w.ana)  # the failed attempt stored nothing: the hypothesis is still there
    with pytest.raises(SubmittedAnalysisLocked):
        _save(w, w.ana, task="q1")
    _stage(w, Stage.REVIEW)
    with session_scope(w.engine) as s:  # bob has not submitted: blind to ana's hypothesis
        with pytest.raises(BlindingViolation):
            hypothesis_review(session=s, actor=w.bob, dataset_id=w.dataset.id)
        review = hypothesis_review(session=s, actor=w.ana, dataset_id=w.dataset.id)
    assert [(i.hypothesis, i.own) for i in review.items] == [("In US adults, BMI rises with age.", True)]


def _two_submitted(w):  # type: ignore[no-untyped-def]
    a = _save(w, w.ana)
    b = _save(w, w.bob, data=_input(hypothesis="BMI does not depend on age.", relationship="none"))
    _submit(w, w.ana)
    _submit(w, w.bob)
    _stage(w, Stage.REVIEW)
    return a.id, b.id


LLM_ANSWER = {"hypotheses": [
    {"hypothesis": "Smokers have a lower BMI.", "context": "US adults", "relationship": "negative",
     "variables": [{"name": "smoking", "column": "SMOKER"}, {"name": "bmi", "column": "BMI"}],
     "workflow": "Compare mean BMI by SMOKER."},
    {"hypothesis": "Height drives BMI.", "context": "US adults", "relationship": "positive",
     "variables": [{"name": "height", "column": "HEIGHT"}]},
]}


def test_stage_two_votes_on_peers_and_llm_hypotheses_with_agreement(world, tmp_path):
    w = world
    a_id, b_id = _two_submitted(w)
    with ScriptedLLM(lambda _req: json.dumps(LLM_ANSWER)) as server:
        config = LLMConfig(base_url=server.url, model="scripted-1", cache_dir=tmp_path / "cache", backoff_s=0.01)
        with pytest.raises(PermissionDenied):
            generate_hypotheses(session_scope=lambda: session_scope(w.engine), actor=w.ana,
                                dataset_id=w.dataset.id, config=config)
        report = generate_hypotheses(session_scope=lambda: session_scope(w.engine), actor=w.cur,
                                     dataset_id=w.dataset.id, config=config)
        assert report.calls == 2 and report.created == 2  # one good hypothesis per query to curate (q0, q1)
        assert any("'HEIGHT' is not a column" in r for r in report.rejected)
        again = generate_hypotheses(session_scope=lambda: session_scope(w.engine), actor=w.cur,
                                    dataset_id=w.dataset.id, config=config)
        assert (again.cached, again.created, again.already_stored) == (2, 0, 2)
        assert len(server.requests) == 2  # the re-run sent nothing
        prompt = server.requests[0]["messages"][-1]["content"]
        assert "How does BMI relate to age?" in prompt and "Body mass index" in prompt
    with session_scope(w.engine) as s:
        alts = list(s.exec(select(Alternative)).all())
        assert {a.kind for a in alts} == {"hypothesis"} and all(a.llm["model"] == "scripted-1" for a in alts)
        assert review_queue(session=s, actor=w.ana, dataset_id=w.dataset.id).items == []  # not BLADE items
        review = hypothesis_review(session=s, actor=w.ana, dataset_id=w.dataset.id)
    q0 = next(t for t in review.tasks if t.task.qid == 0)
    assert {i.target_id for i in q0.items} == {a_id, b_id, *(a.id for a in alts if a.payload["task_id"] == q0.task.id)}
    assert all(i.source is None for i in review.items)  # source-blind by default
    llm_q0 = next(i for i in q0.items if i.target_kind == "alternative")
    with pytest.raises(VoteError, match="own proposal"):
        _vote(w, w.ana, "hypothesis", a_id, "yes")
    with pytest.raises(VoteError, match="Say why"):
        _vote(w, w.ana, "hypothesis", b_id, "no")
    _vote(w, w.ana, "hypothesis", b_id, "no", "the regression shows a clear slope")
    _vote(w, w.bob, "hypothesis", a_id, "yes", "the slope is positive")
    _vote(w, w.ana, "alternative", llm_q0.target_id, "no", "SMOKER does not answer an age question")
    _vote(w, w.bob, "alternative", llm_q0.target_id, "yes")
    with session_scope(w.engine) as s:
        report = agreement_report(session=s, actor=w.cur, dataset_id=w.dataset.id)
        mine = hypothesis_review(session=s, actor=w.ana, dataset_id=w.dataset.id)
    assert report.voters == 2
    assert {r.group for r in report.rows if r.scope == "kind"} == {"hypothesis"}
    assert [s.target_id for s in report.split] == [llm_q0.target_id]
    assert next(i for i in mine.items if i.target_id == b_id).my_vote == {
        "answer": "no", "explanation": "the regression shows a clear slope"}


def test_stage_three_gold_from_the_rule_and_a_meeting_with_provenance(world):
    w = world
    a_id, b_id = _two_submitted(w)
    _vote(w, w.bob, "hypothesis", a_id, "yes", "clear slope")
    _vote(w, w.ana, "hypothesis", b_id, "no", "the slope is clear")
    q0 = w.tasks["q0"].id
    with pytest.raises(StageError, match="Close stage 2"), session_scope(w.engine) as s:
        decide_gold(session=s, actor=w.cur, task_id=q0, target_kind="hypothesis", target_id=a_id)
    _stage(w, Stage.CLOSED)
    with session_scope(w.engine) as s:
        with pytest.raises(PermissionDenied):
            decide_gold(session=s, actor=w.ana, task_id=q0, target_kind="hypothesis", target_id=a_id)
        with pytest.raises(DecisionValidationError, match="unjustifiable"):
            decide_gold(session=s, actor=w.cur, task_id=q0, target_kind="hypothesis", target_id=b_id)
        board = gold_board(session=s, actor=w.cur, dataset_id=w.dataset.id)
    (tg,) = board.tasks
    assert tg.suggested is not None and tg.suggested.target_id == a_id
    with session_scope(w.engine) as s:
        decide_gold(session=s, actor=w.cur, task_id=q0, target_kind="hypothesis", target_id=a_id, note="clear")
    with session_scope(w.engine) as s:
        task = s.get(HypothesisTask, q0)
        assert (task.status, task.gold_source, task.gold_hypothesis) == (
            "gold", "consensus", "In US adults, BMI rises with age.")
        assert task.gold_variables == ["age", "bmi"] and task.gold_context == "US adults surveyed"
        assert task.gold_relationship.startswith("positive") and task.gold_workflow.startswith("Regress")
        prov = task.gold_provenance
        assert prov["rule"] == "blade@1" and prov["tally"] == {"justifiable": 1, "unjustifiable": 0, "unsure": 0}
        assert prov["candidate"] == {"target_kind": "hypothesis", "target_id": a_id, "source": "decision"}
        assert prov["decided_by_id"] == w.cur.id and prov["meeting"] is None
        frozen = {c.target_id: c.status for c in s.exec(select(Consensus)).all()}
        assert frozen == {a_id: "justifiable", b_id: "unjustifiable"}
        with pytest.raises(DecisionValidationError, match="already has its gold"):
            decide_gold(session=s, actor=w.cur, task_id=q0, target_kind="hypothesis", target_id=a_id)
        parts = hypothesis_release_parts(session=s, dataset_id=w.dataset.id)
        release = dataset_release(session=s, dataset=s.get(type(w.dataset),
                                                           w.dataset.id))  # the kind's curation
    candidates, gold = parts[w.tasks["q0"].key]
    assert {c.id for c in candidates} == {a_id, b_id} and {c.author for c in candidates} == {
        f"A{w.ana.id}", f"A{w.bob.id}"}
    assert gold is not None and gold.source == "consensus" and gold.candidate_id == a_id
    assert gold.provenance["decided_by"] == f"A{w.cur.id}" and "decided_by_id" not in gold.provenance
    assert parts[w.tasks["q2"].key][1].source == "metadata"  # imported gold, as imported
    assert parts[w.tasks["q1"].key] == ([], None)
    assert {(v.target_kind, v.target_id) for v in release.votes} == {("hypothesis", a_id), ("hypothesis", b_id)}
    records = {c.target_id: c for c in release.consensus if c.target_kind == "hypothesis"}
    assert records[a_id].status == "justifiable" and records[a_id].decided_by == f"A{w.cur.id}"
    assert "gold hypothesis of this query" in records[a_id].note
    # what a cut release carries (the default hook of cut_release): candidates and the consensus gold per task
    released = {t.key: t for t in HypothesesPart.of(release).tasks}
    q0 = released[w.tasks["q0"].key]
    assert q0.gold is not None and q0.gold.source == "consensus" and q0.gold.candidate_id == a_id
    assert q0.gold.provenance["decided_by"] == f"A{w.cur.id}" and {c.id for c in q0.candidates} == {a_id, b_id}
    assert released[w.tasks["q2"].key].gold.source == "metadata" and released[w.tasks["q1"].key].gold is None
    assert {a.id for a in release.annotators} >= {f"A{w.ana.id}", f"A{w.bob.id}", f"A{w.cur.id}"}


def test_a_contested_hypothesis_goes_to_the_meeting_whose_outcome_makes_it_gold(world):
    w = world
    a_id, _ = _two_submitted(w)
    carl = w.cur  # the curator facilitates
    _vote(w, w.bob, "hypothesis", a_id, "no", "age alone is confounded")
    _stage(w, Stage.CLOSED)
    with pytest.raises(DecisionValidationError, match="unjustifiable"), session_scope(w.engine) as s:
        decide_gold(session=s, actor=carl, task_id=w.tasks["q0"].id, target_kind="hypothesis", target_id=a_id)
    # blade@1: one "no" of one voter is unjustifiable; a stricter look at the meeting
    with session_scope(w.engine) as s:
        from curation.services.ground_truth import set_rule

        set_rule(session=s, actor=carl, dataset_id=w.dataset.id, rule="unanimous@1")  # 1 voter: contested
    with session_scope(w.engine) as s:
        meeting = start_meeting(session=s, actor=carl, dataset_id=w.dataset.id,
                                attendee_ids=[w.ana.id, w.bob.id])
        assert [(a["target_kind"], a["target_id"]) for a in meeting.agenda] == [("hypothesis", a_id)]
    # a vote revised at the meeting asks for its reason in the hypothesis' words, not a "decision"'s
    with pytest.raises(VoteError, match="Say why this hypothesis is unjustifiable"), session_scope(w.engine) as s:
        revise_vote(session=s, actor=w.bob, meeting_id=meeting.id, target_kind="hypothesis", target_id=a_id,
                    question="justifiable", answer="no", explanation="")
    with session_scope(w.engine) as s:
        record_outcome(session=s, actor=carl, meeting_id=meeting.id, target_kind="hypothesis", target_id=a_id,
                       outcome="justifiable", reason="the age slope holds with controls", dissent="bob")
    with pytest.raises(StageError, match="meeting .* is open"), session_scope(w.engine) as s:
        decide_gold(session=s, actor=carl, task_id=w.tasks["q0"].id, target_kind="hypothesis", target_id=a_id)
    with session_scope(w.engine) as s:
        close_meeting(session=s, actor=carl, meeting_id=meeting.id)
    with session_scope(w.engine) as s:
        task = decide_gold(session=s, actor=carl, task_id=w.tasks["q0"].id, target_kind="hypothesis",
                           target_id=a_id)
        assert task.gold_provenance["basis"] == "meeting"
        assert task.gold_provenance["meeting"]["meeting_id"] == meeting.id
        assert task.gold_provenance["rule"] == "unanimous@1"


def test_unknown_items_and_roles(world):
    w = world
    eve = f.user(w.engine, "eve", Role.EVALUATOR)
    carl = f.user(w.engine, "carl")  # an analyst not assigned to the dataset
    for actor in (eve, carl, w.cur):
        with pytest.raises(PermissionDenied), session_scope(w.engine) as s:
            save_hypothesis(session=s, actor=actor, task_id=w.tasks["q0"].id, data=_input())
    with pytest.raises(PermissionDenied), session_scope(w.engine) as s:
        gold_board(session=s, actor=w.ana, dataset_id=w.dataset.id)
    with session_scope(w.engine) as s:
        with pytest.raises(NotFoundError):
            save_hypothesis(session=s, actor=w.ana, task_id=99999, data=_input())
        with pytest.raises(NotFoundError):
            cast_vote(session=s, actor=w.ana, target_kind="hypothesis", target_id="nope", question="justifiable",
                      answer="yes")
        with pytest.raises(StageError, match="stage 1"):
            hypothesis_review(session=s, actor=w.cur, dataset_id=w.dataset.id)


def test_generation_runs_as_a_background_job(world, tmp_path):
    w = world
    _two_submitted(w)
    with ScriptedLLM(lambda _req: json.dumps(LLM_ANSWER)) as server:
        settings = Settings(data_dir=tmp_path / "data", database_url=None, load_starter_datasets=False,
                            llm_base_url=server.url, llm_model="scripted", admin_password="admin password 1")
        with pytest.raises(PermissionDenied), session_scope(w.engine) as s:
            start_hypothesis_generation(session=s, actor=w.ana, dataset_id=w.dataset.id)
        with session_scope(w.engine) as s:
            job_id = start_hypothesis_generation(session=s, actor=w.cur, dataset_id=w.dataset.id)
        job = execute_job(w.engine, job_id, settings)
    assert job.status == "succeeded", job.message
    assert "2 LLM hypotheses stored" in job.message and "'HEIGHT' is not a column" in job.message
    assert _count(w, Alternative) == 2
