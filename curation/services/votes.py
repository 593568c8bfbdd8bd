"""Stage-2 votes: BLADE's review questions per kind, one current vote per (item, analyst, question), history.

Questions (blade-reference 1.5.5, 1.5.6) keep the keys the BLADE import already uses, so votes cast here
export to BLADE's ``annotate_*`` rows unchanged:

* variables: ``can_derive_from_data`` → ``is_reasonable`` (skipped when the first is No) →
  ``is_rationale_reasonable``;
* transforms: ``is_suited_to_cv`` → ``is_steps_reasonable`` (skipped when the first is No) →
  ``is_rationale_reasonable``;
* both: the overall verdict ``justifiable`` (yes = justifiable, no = unjustifiable; a reason is required
  for unjustifiable).

Each vote is saved the moment it is cast, in its own transaction; a changed vote keeps its history in
``vote_change`` (who, what, when, before → after). Two tabs of one analyst casting the same vote at once is
normal use: the unique (item, analyst, question) key plus a savepoint make the second an update, never a
duplicate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, col, select

from curation.errors import NotFoundError, VoteError
from curation.models import (
    Alternative,
    Analysis,
    AnalysisStatus,
    ConceptualVariable,
    HypothesisProposal,
    Role,
    Transform,
    User,
    Vote,
    VoteChange,
    utcnow,
)
from curation.services.actor import judges_actor
from curation.services.stages import lock_for_review_write, require_reviewer, require_voter
from evaluation.tasks.hypotheses import HYPOTHESIS

__all__ = [
    "ANSWERS",
    "QUESTIONS",
    "STAGE1_ROWS",
    "VERDICT",
    "Question",
    "ResolvedItem",
    "cast_vote",
    "reason_needed",
    "resolve_item",
    "vote_history",
]

ANSWERS = ("yes", "no", "unsure")
VERDICT = "justifiable"


@dataclass(frozen=True)
class Question:
    key: str
    text: str
    help: str = ""
    skipped_unless: str | None = None  # the question whose "no" skips this one
    answers: tuple[str, ...] = ANSWERS


_VERDICT_Q = Question(VERDICT, "Overall: is this decision justifiable?",
                      "Justifiable: a reasonable expert could make it. Unjustifiable needs a reason.",
                      answers=("yes", "no"))
QUESTIONS: dict[str, tuple[Question, ...]] = {
    "variable": (
        Question("can_derive_from_data", "Can this variable be derived from the data?",
                 "Can it be operationalised with the columns of this dataset?"),
        Question("is_reasonable", "Is it a reasonable variable to include in the analysis?",
                 skipped_unless="can_derive_from_data"),
        Question("is_rationale_reasonable", "Is the rationale sound?"),
        _VERDICT_Q,
    ),
    "transform": (
        Question("is_suited_to_cv", "Does this transform operationalise the conceptual variable?"),
        Question("is_steps_reasonable", "Are the steps sound?", skipped_unless="is_suited_to_cv"),
        Question("is_rationale_reasonable", "Is the rationale sound?"),
        _VERDICT_Q,
    ),
    # programmatic tasks (issue 20): a candidate check and a candidate ground-truth artifact
    "check": (
        Question("is_faithful", "Does the check test what the task asks for?"),
        Question("is_code_correct", "Is the check's code correct (it reads the right files, no false alarms)?"),
        Question(VERDICT, "Overall: should this check be part of the ground truth?",
                 "Yes: a correct output passes it and a wrong one can fail it. No needs a reason.",
                 answers=("yes", "no")),
    ),
    "artifact": (
        Question("is_correct", "Is this the correct output for the task?"),
        Question(VERDICT, "Overall: should this artifact be the ground truth?",
                 "Yes: the checks may compare agents' outputs with it. No needs a reason.", answers=("yes", "no")),
    ),
    # a DiscoveryBench hypothesis (a stage-1 one or an LLM's): one verdict, with the reason
    "hypothesis": (
        Question(VERDICT, "Is this hypothesis justifiable from the data?",
                 "Justifiable: the variables exist or can be derived, the relationship follows from the workflow "
                 "and its output, and it answers the query. Unjustifiable needs a reason.",
                 answers=("yes", "no")),
    ),
}


def skipped_reason(first_key: str) -> str:
    """The reason a conditional question was not asked (the BLADE import writes the same words)."""
    return f"not asked: {first_key} was No"


@dataclass(frozen=True)
class ResolvedItem:
    target_kind: str  # variable | transform | alternative
    target_id: str
    kind: str  # variable | transform
    dataset_id: int
    proposer_id: int | None
    merged_into: str | None = None


#: The stage-1 rows a vote can be about, by the vote's target kind (also the item's kind): each belongs to an
#: analyst's :class:`Analysis` and can be voted on once that analysis is submitted.
STAGE1_ROWS: dict[str, type[SQLModel]] = {"variable": ConceptualVariable, "transform": Transform,
                                          HYPOTHESIS.name: HypothesisProposal}


def resolve_item(*, session: Session, target_kind: str, target_id: str) -> ResolvedItem:
    """The item a vote is about: a submitted stage-1 row (:data:`STAGE1_ROWS`), an alternative, or a programmatic
    task's candidate."""
    if target_kind == "alternative":
        alt = session.get(Alternative, target_id)
        if alt is None:
            raise NotFoundError(f"There is no alternative {target_id}.")
        return ResolvedItem("alternative", alt.id, alt.kind, alt.dataset_id, alt.proposed_by_id,
                            (alt.extra or {}).get("merged_into"))
    if target_kind in ("prog_check", "prog_artifact"):
        from curation.models import CuratedCandidate

        item = session.get(CuratedCandidate, target_id)
        if item is None or f"prog_{item.role}" != target_kind:
            raise NotFoundError(f"There is no candidate {target_kind.removeprefix('prog_')} {target_id}.")
        return ResolvedItem(target_kind, item.id, item.role, item.dataset_id, item.proposed_by_id,
                            (item.extra or {}).get("merged_into"))
    model: Any = STAGE1_ROWS.get(target_kind)
    if model is None:
        raise VoteError(f"Votes are on variables, transforms, hypotheses or alternatives, not on '{target_kind}'.")
    row = session.get(model, target_id)
    analysis = session.get(Analysis, row.analysis_id) if row is not None else None
    if row is None or analysis is None or analysis.status != AnalysisStatus.SUBMITTED.value:
        raise NotFoundError(f"There is no submitted {target_kind} {target_id} to review.")
    return ResolvedItem(target_kind, row.id, target_kind, analysis.dataset_id, analysis.annotator_id)


def _state(vote: Vote | None) -> dict[str, Any] | None:
    if vote is None:
        return None
    return {"answer": vote.answer, "skipped_reason": vote.skipped_reason, "explanation": vote.explanation}


def _current(session: Session, item: ResolvedItem, annotator_id: int, question: str) -> Vote | None:
    stmt = select(Vote).where(Vote.target_kind == item.target_kind, Vote.target_id == item.target_id,
                              Vote.annotator_id == annotator_id, Vote.question == question)
    return session.exec(stmt.with_for_update()).first()


@judges_actor
def write_vote(*, session: Session, item: ResolvedItem, actor: User, question: str, answer: str | None,
               skipped: str = "", explanation: str = "", note: str = "") -> Vote | None:
    """Set (or with ``answer`` and ``skipped`` both empty, remove) one current vote of ``actor`` on ``item``
    and record the change (its history row), with no stage or meeting check: the writers of votes
    (:func:`cast_vote`, a meeting's live vote) make theirs first."""
    uid = actor.id or 0
    vote = _current(session, item, uid, question)
    remove = answer is None and not skipped
    if vote is None and not remove:
        try:
            with session.begin_nested():  # a second tab may insert the same key at this moment
                fresh = Vote(dataset_id=item.dataset_id, target_kind=item.target_kind, target_id=item.target_id,
                             annotator_id=uid, question=question, answer=answer, skipped_reason=skipped,
                             explanation=explanation)
                session.add(fresh)
                session.flush()
            session.add(VoteChange(dataset_id=item.dataset_id, target_kind=item.target_kind,
                                   target_id=item.target_id, annotator_id=uid, question=question, before=None,
                                   after=_state(fresh), changed_by_id=uid, note=note))
            return fresh
        except IntegrityError:
            vote = _current(session, item, uid, question)
            if vote is None:  # pragma: no cover - the row that clashed is gone again
                raise
    if vote is None:
        return None
    before = _state(vote)
    if remove:
        session.delete(vote)
        after = None
    else:
        vote.answer, vote.skipped_reason, vote.explanation = answer, skipped, explanation
        after = _state(vote)
        if after == before:
            return vote
        vote.created_at = utcnow()
        session.add(vote)
    session.add(VoteChange(dataset_id=item.dataset_id, target_kind=item.target_kind, target_id=item.target_id,
                           annotator_id=uid, question=question, before=before, after=after, changed_by_id=uid,
                           note=note))
    session.flush()
    return vote


def reason_needed(item_kind: str) -> str:
    """The sentence for a "no" verdict without a reason, in the item's own words: a BLADE variable or transform is
    a decision; a hypothesis, a check or a ground-truth artifact is not."""
    what = {"hypothesis": "this hypothesis is unjustifiable",
            "check": "this check should not be part of the ground truth",
            "artifact": "this artifact should not be the ground truth"}.get(item_kind, "this decision is unjustifiable")
    return f"Say why {what}: the reason is what makes the vote useful."


@judges_actor
def cast_vote(
    *,
    session: Session,
    actor: User,
    target_kind: str,
    target_id: str,
    question: str,
    answer: str,
    explanation: str = "",
) -> Vote:
    """Record the actor's answer to one question about one item, saved at once; returns the current vote.

    Raises:
        StageError: the dataset is not in stage 2.
        BlindingViolation / PermissionDenied: the actor has not submitted stage 1, or is deactivated.
        VoteError: own proposal, unknown question or answer, a skipped question, a missing reason.
    """
    item = resolve_item(session=session, target_kind=target_kind, target_id=target_id)
    lock_for_review_write(session=session, dataset_id=item.dataset_id)
    require_voter(session=session, actor=actor, dataset_id=item.dataset_id)
    if item.merged_into:
        raise VoteError(f"This alternative was merged into {item.merged_into[:8]}; vote on that item instead.")
    if item.proposer_id is not None and item.proposer_id == actor.id:
        raise VoteError("This is your own proposal; peers judge it, you cannot vote on it.")
    questions = {q.key: q for q in QUESTIONS[item.kind]}
    q = questions.get(question)
    if q is None:
        raise VoteError(f"'{question}' is not a question about a {item.kind}; the questions are {list(questions)}.")
    answer = (answer or "").strip().lower()
    if answer not in q.answers:
        raise VoteError(f"'{answer}' is not an answer to '{q.text}'; choose one of {list(q.answers)}.")
    explanation = (explanation or "").strip()
    if question == VERDICT and answer == "no" and not explanation:
        raise VoteError(reason_needed(item.kind))
    if q.skipped_unless:
        first = _current(session, item, actor.id or 0, q.skipped_unless)
        if first is not None and first.answer == "no":
            raise VoteError(f"'{q.text}' is skipped because you answered No to "
                            f"'{questions[q.skipped_unless].text}'; change that answer first.")
    vote = write_vote(session=session, item=item, actor=actor, question=question, answer=answer,
                      explanation=explanation)
    assert vote is not None
    for dep in (d for d in questions.values() if d.skipped_unless == question):
        if answer == "no":
            write_vote(session=session, item=item, actor=actor, question=dep.key, answer=None,
                       skipped=skipped_reason(question), note=f"skipped: {question} answered No")
        else:
            current = _current(session, item, actor.id or 0, dep.key)
            if current is not None and current.answer is None:  # asked again: the skip no longer holds
                write_vote(session=session, item=item, actor=actor, question=dep.key, answer=None,
                           note=f"asked again: {question} changed")
    session.flush()
    return vote


@judges_actor
def vote_history(*, session: Session, actor: User, target_kind: str, target_id: str) -> list[VoteChange]:
    """Changes of the votes on one item, oldest first: analysts see their own, curators and admins all."""
    item = resolve_item(session=session, target_kind=target_kind, target_id=target_id)
    require_reviewer(session=session, actor=actor, dataset_id=item.dataset_id)
    stmt = select(VoteChange).where(VoteChange.target_kind == item.target_kind,
                                    VoteChange.target_id == item.target_id)
    if actor.role == Role.ANALYST.value:
        stmt = stmt.where(VoteChange.annotator_id == actor.id)
    return list(session.exec(stmt.order_by(col(VoteChange.changed_at), col(VoteChange.id))).all())
