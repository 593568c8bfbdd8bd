"""Curators review MCQs: see each as a taker would, accept, reject or edit it, with its provenance and audit.

An edit replaces the options and the key; the key must be one of the options (matched by text). Options whose
text is unchanged keep their provenance; new or changed ones are marked as written by the curator. Every
review action is kept in the review's history (who, what, when). Rejected MCQs stay in the database, visible
and reversible, but never go into a release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from curation.errors import CurationError, DecidedElsewhere, NotFoundError
from curation.models import Dataset, Role, User, utcnow
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import refuse_if_blind
from curation.services.mcq_audit import MCQS_BLIND, AuditFinding, audit_mcqs
from curation.services.mcq_store import (
    PENDING,
    MCQReviewRecord,
    StoredMCQ,
    dataset_mcqs,
    locked_mcq,
    mcq_by_id,
    save_mcq,
)
from curation.services.stages import lock_for_review_write

__all__ = ["MCQEditError", "MCQView", "edit_mcq", "mcq_views", "review_mcq", "taker_text"]

LETTERS = "ABCD"


class MCQEditError(CurationError):
    """An MCQ edit that would not make a valid question."""


@dataclass
class MCQView:
    mcq: StoredMCQ
    review: str  # pending | accepted | rejected | edited
    source: str  # generated | imported
    findings: list[AuditFinding] = field(default_factory=list)
    note: str = ""

    @property
    def id(self) -> str:
        return self.mcq.id


def taker_text(mcq: StoredMCQ, dataset: Dataset) -> str:
    """The question as BLADE puts it to a taker (blade-reference 5.1), options lettered A-D."""
    pick = "MOST" if mcq.mc_type == "select_pos" else "LEAST"
    if mcq.kind == "variable":
        head = (f"Given the research question and dataset, select the conceptual variable that is {pick} "
                "justifiable for the analysis.")
    else:
        head = (f"Given the research question and dataset, to operationalize the conceptual variable "
                f"*{mcq.concept.strip().lower()}*, select the transformation code that is {pick} justifiable.")
    return f"Research question: {dataset.research_question}\n\n{head}"


def _refuse_if_blind(session: Session, actor: User, mcq: StoredMCQ) -> None:
    dataset = session.get(Dataset, mcq.dataset_id)
    if dataset is not None:
        refuse_if_blind(session=session, actor=actor, dataset=dataset.name, what=MCQS_BLIND)


@judges_actor
def mcq_views(*, session: Session, actor: User, dataset_id: int, status: str | None = None) -> list[MCQView]:
    """Every MCQ of the dataset with its review state and audit findings (curators and admins)."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    if session.get(Dataset, dataset_id) is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    audit = audit_mcqs(session=session, actor=actor, dataset_id=dataset_id)
    findings: dict[str, list[AuditFinding]] = {}
    for f in audit.findings:
        findings.setdefault(f.mcq_id, []).append(f)
    views = []
    for q in dataset_mcqs(session=session, dataset_id=dataset_id):
        view = MCQView(q, q.status, "generated" if q.extra.get("source") == "generated" else "imported",
                       findings.get(q.id, []), q.review.note if q.review else "")
        if status is None or view.review == status:
            views.append(view)
    return views


def _elsewhere(session: Session, row: MCQReviewRecord, seen: str) -> DecidedElsewhere:
    who = session.get(User, row.reviewed_by_id) if row.reviewed_by_id else None
    name = (who.display_name or who.username) if who else "another curator"
    return DecidedElsewhere(
        f"{name} {'marked' if row.status == PENDING else 'set'} this MCQ {row.status} at {row.reviewed_at:%H:%M:%S} "
        f"UTC, after you saw it {seen}. Nothing of yours was saved: reload it, read their review, then review "
        "again if needed.")


def _get(session: Session, actor: User, mcq_id: str) -> StoredMCQ:
    mcq = mcq_by_id(session=session, mcq_id=mcq_id)
    if mcq is None:
        raise NotFoundError(f"There is no MCQ {mcq_id}.")
    _refuse_if_blind(session, actor, mcq)
    return mcq


def _locked(session: Session, mcq: StoredMCQ, expected: str | None) -> StoredMCQ:
    """The MCQ as it is now, read again and locked to the end of the transaction (SQLite: the database's write
    lock), its review checked against ``expected``, the review state the curator saw (None: any). Someone else's
    review since is a :class:`DecidedElsewhere`: of two curators reviewing one MCQ at once, one goes on."""
    lock_for_review_write(session=session, dataset_id=mcq.dataset_id)
    now = locked_mcq(session=session, mcq_id=mcq.id)
    if now is None:
        raise NotFoundError(f"There is no MCQ {mcq.id} any more: it was generated again since you saw it.")
    if expected is not None and now.status != expected:
        raise _elsewhere(session, now.review, expected) if now.review is not None else DecidedElsewhere(
            "This MCQ's review was reset since you saw it; reload it and review again.")
    return now


def _record(session: Session, mcq: StoredMCQ, actor: User, status: str, note: str,
            detail: dict[str, Any]) -> MCQReviewRecord:
    row = mcq.review or MCQReviewRecord(status=status)
    before = row.status if row.history else PENDING
    row.status, row.note, row.reviewed_by_id, row.reviewed_at = status, note.strip(), actor.id, utcnow()
    row.history = [*row.history, {"from": before, "to": status, "by": actor.id, "at": row.reviewed_at.isoformat(),
                                  "note": row.note, **detail}]
    mcq.review = row
    save_mcq(session=session, mcq=mcq)
    return row


@judges_actor
def review_mcq(*, session: Session, actor: User, mcq_id: str, decision: str, note: str = "",
               expected: str | None = None) -> MCQReviewRecord:
    """Accept or reject an MCQ (a reason is required to reject), or put it back to pending. ``expected``: the
    review state the curator saw (pending, accepted, rejected, edited); another curator's review since then is a
    :class:`DecidedElsewhere` and nothing is stored (None: no such check, for scripts)."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    if decision not in ("accepted", "rejected", "pending"):
        raise MCQEditError(f"'{decision}' is not a review decision; accept, reject or reset to pending.")
    if decision == "rejected" and not note.strip():
        raise MCQEditError("Say why this MCQ is rejected: the reason stays with it.")
    mcq = _locked(session, _get(session, actor, mcq_id), expected)
    return _record(session, mcq, actor, decision, note, {})


@judges_actor
def edit_mcq(*, session: Session, actor: User, mcq_id: str, options: list[str], key: str, note: str = "",
             mc_type: str | None = None, expected: str | None = None) -> MCQReviewRecord:
    """Replace an MCQ's options and key. The key must be one of the options; 2-4 distinct, non-empty options.
    ``expected``: the review state the curator saw, as for :func:`review_mcq`."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    mcq = _get(session, actor, mcq_id)
    texts = [o for o in (t.strip("\n") for t in options) if o.strip()]
    where = f"MCQ {mcq_id[:12]}"
    if not 2 <= len(texts) <= 4:
        raise MCQEditError(f"{where}: an MCQ has 2 to 4 non-empty options; this edit has {len(texts)}.")
    squashed = [" ".join(t.split()) for t in texts]
    if len(set(squashed)) != len(squashed):
        raise MCQEditError(f"{where}: two options are the same text; make each option different.")
    if " ".join(key.split()) not in squashed:
        raise MCQEditError(f"{where}: the key is not among the options; pick the key from the options you kept.")
    if mc_type is not None and mc_type not in ("select_pos", "select_neg"):
        raise MCQEditError(f"{where}: '{mc_type}' is not an MCQ type; use select_pos or select_neg.")
    mcq = _locked(session, mcq, expected)  # the options as they are now, read under the lock
    old = {" ".join(o.get("text", "").split()): o for o in mcq.options}
    before = {"options": [o.get("text", "") for o in mcq.options], "correct_index": mcq.correct_index,
              "mc_type": mcq.mc_type}
    new_options = []
    for text, sq in zip(texts, squashed, strict=True):
        kept = old.get(sq)
        if kept is not None:
            new_options.append(kept)
        else:
            new_options.append({"text": text, "rationale": "", "is_llm_generated": False, "source_kind": "unknown",
                                "source_ids": [], "negative_reason": "",
                                "extra": {"provenance": {"role": "", "why": f"written by curator A{actor.id}",
                                                         "items": []}}})
    correct = squashed.index(" ".join(key.split()))
    for i, option in enumerate(new_options):  # roles follow the new key; the origin of each option stays
        prov = dict((option.get("extra") or {}).get("provenance") or {})
        if not prov:  # imported without recorded provenance: left as it came (the key is correct_index)
            continue
        prov["role"] = "key" if i == correct else "distractor"
        new_options[i] = {**option, "extra": {**(option.get("extra") or {}), "provenance": prov}}
    mcq.options = new_options
    mcq.correct_index = correct
    mcq.mc_type = mc_type or mcq.mc_type
    mcq.extra = {**mcq.extra, "edited": True}
    return _record(session, mcq, actor, "edited", note, {"before": before})
