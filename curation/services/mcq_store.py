"""Where the MCQ kind keeps its questions: curated items (:mod:`curation.models.curated`), one per MCQ.

The mapping (migration ``0033_mcq_curated`` moved the ``mcq`` and ``mcq_review`` tables onto it, nothing lost):

* the item's ``key`` is the MCQ's id (unique within the kind, as the id was in its table): releases, answers
  files, scored runs and review histories name MCQs by it, so it never changes;
* the item's ``status`` is its review state, ``pending | accepted | rejected | edited`` (``pending`` also when no
  curator ever reviewed it): the one thing queries filter on (a release counts the generated MCQs still pending);
* its ``dataset_id`` and ``created_at`` are the MCQ's;
* everything else is payload, an :class:`evaluation.tasks.mcq.MCQPayload` (the MCQ kind's model, checked on every
  write): the question (its kind, type, concept, options, key and extra), its ``position`` among its dataset's
  MCQs (an order only ever read with all of the dataset's MCQs, so sorted here, not by the database), and its
  ``review`` (the last reviewer, when, the note, and the history of every review action; None when never
  reviewed). A review is never a candidate: a curator judges the question itself and an edit replaces it.

Reading goes through :class:`StoredMCQ` (the question's fields, its review, and its row); writing through
:func:`add_mcq` and :func:`save_mcq`. The kind's release part is built here too (:data:`CURATION`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, select

from curation.models import CuratedItem, Dataset
from curation.services.curated import add_item, item_by_key, items_of, set_item_payload
from curation.services.kind_curation import KindCuration
from exports.mcq_part import MCQ as ReleaseMCQ
from exports.mcq_part import MCQPart

__all__ = [
    "CURATION",
    "KIND",
    "PENDING",
    "MCQReviewRecord",
    "StoredMCQ",
    "add_mcq",
    "dataset_mcqs",
    "locked_mcq",
    "mcq_by_id",
    "mcq_release_part",
    "save_mcq",
    "unreviewed_mcqs",
]

KIND = MCQPart.kind
PENDING = "pending"
QUESTION_FIELDS = ("kind", "mc_type", "concept", "options", "correct_index", "extra")


@dataclass
class MCQReviewRecord:
    """A curator's review of one MCQ: its state (accepted, rejected, edited, or reset to pending), the last
    reviewer and when, their note, and every review action (who, what, when)."""

    status: str
    note: str = ""
    reviewed_by_id: int | None = None
    reviewed_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class StoredMCQ:
    """An MCQ as stored: its question, its place, its review (None: never reviewed), and its curated item."""

    id: str
    dataset_id: int
    kind: str
    mc_type: str
    concept: str
    options: list[dict[str, Any]]
    correct_index: int
    extra: dict[str, Any]
    position: int
    created_at: datetime
    review: MCQReviewRecord | None
    row: CuratedItem = field(repr=False, compare=False)

    @property
    def status(self) -> str:
        """Its review state: pending (never reviewed, or reset), accepted, rejected or edited."""
        return self.review.status if self.review is not None else PENDING

    @classmethod
    def of(cls, row: CuratedItem) -> StoredMCQ:
        p = row.payload
        r = p.get("review")
        review = None if r is None else MCQReviewRecord(
            status=row.status, note=r.get("note", ""), reviewed_by_id=r.get("reviewed_by_id"),
            reviewed_at=_aware(datetime.fromisoformat(r["reviewed_at"])), history=list(r.get("history") or []))
        return cls(id=row.key, dataset_id=row.dataset_id, kind=p["kind"], mc_type=p["mc_type"],
                   concept=p.get("concept", ""), options=[dict(o) for o in p.get("options") or []],
                   correct_index=p.get("correct_index", 0), extra=dict(p.get("extra") or {}),
                   position=p.get("position", 0), created_at=row.created_at, review=review, row=row)

    def payload(self) -> dict[str, Any]:
        review = None if self.review is None else {
            "note": self.review.note, "reviewed_by_id": self.review.reviewed_by_id,
            "reviewed_at": self.review.reviewed_at.isoformat(), "history": self.review.history}
        return {"kind": self.kind, "mc_type": self.mc_type, "concept": self.concept, "options": self.options,
                "correct_index": self.correct_index, "extra": self.extra, "position": self.position,
                "review": review}


def _aware(at: datetime) -> datetime:
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _order(questions: Iterable[StoredMCQ]) -> list[StoredMCQ]:
    return sorted(questions, key=lambda q: (q.position, q.created_at, q.id))


def dataset_mcqs(*, session: Session, dataset_id: int | None) -> list[StoredMCQ]:
    """The dataset's MCQs (None: every dataset's) in their order (position, then age, then id)."""
    return _order(StoredMCQ.of(r) for r in items_of(session=session, kind=KIND, dataset_id=dataset_id))


def mcq_by_id(*, session: Session, mcq_id: str) -> StoredMCQ | None:
    row = item_by_key(session=session, kind=KIND, key=mcq_id)
    return StoredMCQ.of(row) if row is not None else None


def locked_mcq(*, session: Session, mcq_id: str) -> StoredMCQ | None:
    """The MCQ as it is now, its row locked to the end of the transaction (PostgreSQL; SQLite: the caller holds
    the database's write lock): what a review reads before it writes."""
    row = session.exec(select(CuratedItem).where(CuratedItem.kind == KIND, CuratedItem.key == mcq_id)
                       .with_for_update().execution_options(populate_existing=True)).first()
    return StoredMCQ.of(row) if row is not None else None


def add_mcq(*, session: Session, dataset_id: int, mcq_id: str, question: Mapping[str, Any],
            position: int) -> CuratedItem:
    """Store a new, unreviewed MCQ (``question``: its kind, mc_type, concept, options, correct_index and extra).

    Raises:
        CuratedPayloadError: the question does not fit :class:`evaluation.tasks.mcq.MCQPayload`.
    """
    payload = {k: question[k] for k in QUESTION_FIELDS if k in question} | {"position": position, "review": None}
    return add_item(session=session, kind=KIND, dataset_id=dataset_id, key=mcq_id, payload=payload, status=PENDING)


def save_mcq(*, session: Session, mcq: StoredMCQ) -> StoredMCQ:
    """Write back an MCQ's question and review (checked by the kind's model), flushed."""
    set_item_payload(session=session, item=mcq.row, payload=mcq.payload())
    mcq.row.status = mcq.status
    session.flush()
    return mcq


def _generated(q: StoredMCQ) -> bool:
    return q.extra.get("source") == "generated"


def unreviewed_mcqs(*, session: Session, dataset_id: int) -> int:
    """Generated MCQs no curator has accepted, edited or rejected yet: left out of releases until reviewed
    (imported MCQs, such as BLADE's, are released as they came)."""
    return sum(1 for q in dataset_mcqs(session=session, dataset_id=dataset_id)
               if _generated(q) and q.status == PENDING)


def mcq_release_part(*, session: Session, dataset: Dataset, who: Any) -> MCQPart:
    """The dataset's MCQs in a release being cut: imported ones as they came, generated ones once a curator
    accepted or edited them, never a rejected one; a reviewed one carries its review (by a pseudonym)."""
    questions: list[ReleaseMCQ] = []
    for q in dataset_mcqs(session=session, dataset_id=dataset.id or 0):
        review = q.review
        extra = dict(q.extra)
        if _generated(q) and (review is None or review.status == PENDING):
            continue  # generated and not (or no longer) reviewed: no curator vouches for it
        if review is not None:
            if review.status == "rejected":
                continue  # a curator rejected it: never released
            extra["review"] = {"status": review.status, "note": review.note, "by": who(review.reviewed_by_id),
                               "at": review.reviewed_at.isoformat()}
        questions.append(ReleaseMCQ(id=q.id, kind=q.kind, mc_type=q.mc_type, concept=q.concept,  # type: ignore[arg-type]
                                    options=q.options, correct_index=q.correct_index, extra=extra))  # type: ignore[arg-type]
    return MCQPart(items=questions)


CURATION = KindCuration(release_part=mcq_release_part)
