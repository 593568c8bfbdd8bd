"""Stage-2 votes: each decision-item kind's review questions, one current vote per (item, analyst, question),
history.

The questions are the item kinds' own (:attr:`evaluation.tasks.ItemKind.questions`, asked of the registry): BLADE's
keep the keys the BLADE import already uses, so votes cast here export to BLADE's ``annotate_*`` rows unchanged.
Every kind ends with the overall verdict ``justifiable`` (yes = justifiable, no = unjustifiable; a reason is
required for unjustifiable); a question may be skipped when an earlier one is answered No.

Each vote is saved the moment it is cast, in its own transaction; a changed vote keeps its history in
``vote_change`` (who, what, when, before → after). Two tabs of one analyst casting the same vote at once is
normal use: the unique (item, analyst, question) key plus a savepoint make the second an update, never a
duplicate.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel, col, select
from sqlmodel.main import default_registry

from curation.errors import NotFoundError, VoteError
from curation.models import (
    Alternative,
    Analysis,
    AnalysisStatus,
    CuratedCandidate,
    Role,
    User,
    Vote,
    VoteChange,
    utcnow,
)
from curation.services.actor import judges_actor
from curation.services.stages import lock_for_review_write, require_reviewer, require_voter
from evaluation.tasks import VERDICT, VOTE_ANSWERS, UnknownKind, VoteQuestion, item_kind, item_kinds

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

ANSWERS = VOTE_ANSWERS
#: one question about a decision item (declared by the item kind)
Question = VoteQuestion


class _Questions(Mapping[str, tuple[VoteQuestion, ...]]):
    """Decision-item kind → its review questions, as the registered kinds declare them now (a kind registered
    later, e.g. in a test, is seen too)."""

    def __getitem__(self, name: str) -> tuple[VoteQuestion, ...]:
        try:
            return item_kind(name).questions
        except UnknownKind:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return (i.name for i in item_kinds())

    def __len__(self) -> int:
        return len(item_kinds())


QUESTIONS: Mapping[str, tuple[VoteQuestion, ...]] = _Questions()


def skipped_reason(first_key: str) -> str:
    """The reason a conditional question was not asked (the BLADE import writes the same words)."""
    return f"not asked: {first_key} was No"


@dataclass(frozen=True)
class ResolvedItem:
    target_kind: str  # a decision-item kind (a stage-1 row), "alternative", or a kind's candidate target
    target_id: str
    kind: str  # the decision-item kind
    dataset_id: int
    proposer_id: int | None
    merged_into: str | None = None


def _table(name: str) -> type[SQLModel]:
    found = next((m.class_ for m in default_registry.mappers if m.class_.__tablename__ == name), None)
    if found is None:
        raise LookupError(f"No table is called {name!r}.")
    return found


class _Stage1Rows(Mapping[str, type[SQLModel]]):
    """Decision-item kind → the table of the stage-1 rows analysts write for it (its ``stage1_table``)."""

    def _kinds(self) -> dict[str, str]:
        return {i.name: i.stage1_table for i in item_kinds() if i.stage1_table}

    def __getitem__(self, name: str) -> type[SQLModel]:
        return _table(self._kinds()[name])

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds())

    def __len__(self) -> int:
        return len(self._kinds())


#: The stage-1 rows a vote can be about, by the vote's target kind (also the item's kind): each belongs to an
#: analyst's :class:`Analysis` and can be voted on once that analysis is submitted.
STAGE1_ROWS: Mapping[str, type[SQLModel]] = _Stage1Rows()


def resolve_item(*, session: Session, target_kind: str, target_id: str) -> ResolvedItem:
    """The item a vote is about: a submitted stage-1 row (:data:`STAGE1_ROWS`), an alternative, or a curated
    candidate of an item kind that declares a ``candidate_target``."""
    if target_kind == "alternative":
        alt = session.get(Alternative, target_id)
        if alt is None:
            raise NotFoundError(f"There is no alternative {target_id}.")
        return ResolvedItem("alternative", alt.id, alt.kind, alt.dataset_id, alt.proposed_by_id,
                            (alt.extra or {}).get("merged_into"))
    spec = next((i for i in item_kinds() if i.candidate_target == target_kind), None)
    if spec is not None:
        item = session.get(CuratedCandidate, target_id)
        if item is None or item.role != spec.name:
            raise NotFoundError(f"There is no candidate {spec.name} {target_id}.")
        return ResolvedItem(target_kind, item.id, item.role, item.dataset_id, item.proposed_by_id,
                            (item.extra or {}).get("merged_into"))
    model: Any = STAGE1_ROWS.get(target_kind)
    if model is None:
        known = ", ".join(i.name for i in item_kinds() if i.stage1_table or i.candidate_target)
        raise VoteError(f"Votes are on alternatives and on the items analysts and curators propose ({known}), "
                        f"not on '{target_kind}'.")
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


def reason_needed(item_kind_name: str) -> str:
    """The sentence for a "no" verdict without a reason, in the item kind's own words (a BLADE variable or
    transform is a decision; a hypothesis, a check or a ground-truth artifact says what its "no" means)."""
    try:
        what = item_kind(item_kind_name).unjustifiable
    except UnknownKind:
        what = "this decision is unjustifiable"
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
