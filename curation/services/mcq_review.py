"""Curators review MCQs: see each as a taker would, accept, reject or edit it, with its provenance and audit.

An edit replaces the options and the key; the key must be one of the options (matched by text). Options whose
text is unchanged keep their provenance; new or changed ones are marked as written by the curator. Every
review action is kept in the review's history (who, what, when). Rejected MCQs stay in the database, visible
and reversible, but never go into a release.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session, col, select

from curation.errors import CurationError, NotFoundError
from curation.models import MCQ, Dataset, MCQReview, Role, User, utcnow
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import refuse_if_blind
from curation.services.mcq_audit import MCQS_BLIND, AuditFinding, audit_mcqs

__all__ = ["MCQEditError", "MCQView", "edit_mcq", "mcq_views", "review_mcq", "taker_text"]

LETTERS = "ABCD"


class MCQEditError(CurationError):
    """An MCQ edit that would not make a valid question."""


@dataclass
class MCQView:
    mcq: MCQ
    review: str  # pending | accepted | rejected | edited
    source: str  # generated | imported
    findings: list[AuditFinding] = field(default_factory=list)
    note: str = ""

    @property
    def id(self) -> str:
        return self.mcq.id


def taker_text(mcq: MCQ, dataset: Dataset) -> str:
    """The question as BLADE puts it to a taker (blade-reference 5.1), options lettered A-D."""
    pick = "MOST" if mcq.mc_type == "select_pos" else "LEAST"
    if mcq.kind == "variable":
        head = (f"Given the research question and dataset, select the conceptual variable that is {pick} "
                "justifiable for the analysis.")
    else:
        head = (f"Given the research question and dataset, to operationalize the conceptual variable "
                f"*{mcq.concept.strip().lower()}*, select the transformation code that is {pick} justifiable.")
    return f"Research question: {dataset.research_question}\n\n{head}"


def _refuse_if_blind(session: Session, actor: User, mcq: MCQ) -> None:
    dataset = session.get(Dataset, mcq.dataset_id)
    if dataset is not None:
        refuse_if_blind(session, actor, dataset.name, MCQS_BLIND)


def _review_row(session: Session, mcq: MCQ) -> MCQReview | None:
    return session.get(MCQReview, mcq.id)


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
    reviews = {r.mcq_id: r for r in session.exec(select(MCQReview).where(MCQReview.dataset_id == dataset_id)).all()}
    views = []
    for q in session.exec(select(MCQ).where(MCQ.dataset_id == dataset_id).order_by(col(MCQ.position))).all():
        r = reviews.get(q.id)
        view = MCQView(q, r.status if r else "pending", "generated" if (q.extra or {}).get("source") == "generated"
                       else "imported", findings.get(q.id, []), r.note if r else "")
        if status is None or view.review == status:
            views.append(view)
    return views


def _get(session: Session, mcq_id: str) -> MCQ:
    mcq = session.get(MCQ, mcq_id)
    if mcq is None:
        raise NotFoundError(f"There is no MCQ {mcq_id}.")
    return mcq


def _record(session: Session, mcq: MCQ, actor: User, status: str, note: str, detail: dict[str, Any]) -> MCQReview:
    row = _review_row(session, mcq) or MCQReview(mcq_id=mcq.id, dataset_id=mcq.dataset_id, status=status)
    before = row.status if row.history else "pending"
    row.status, row.note, row.reviewed_by_id, row.reviewed_at = status, note.strip(), actor.id, utcnow()
    row.history = [*row.history, {"from": before, "to": status, "by": actor.id, "at": row.reviewed_at.isoformat(),
                                  "note": row.note, **detail}]
    session.add(row)
    session.flush()
    return row


@judges_actor
def review_mcq(*, session: Session, actor: User, mcq_id: str, decision: str, note: str = "") -> MCQReview:
    """Accept or reject an MCQ (a reason is required to reject), or put it back to pending."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    if decision not in ("accepted", "rejected", "pending"):
        raise MCQEditError(f"'{decision}' is not a review decision; accept, reject or reset to pending.")
    if decision == "rejected" and not note.strip():
        raise MCQEditError("Say why this MCQ is rejected: the reason stays with it.")
    mcq = _get(session, mcq_id)
    _refuse_if_blind(session, actor, mcq)
    return _record(session, mcq, actor, decision, note, {})


@judges_actor
def edit_mcq(*, session: Session, actor: User, mcq_id: str, options: list[str], key: str, note: str = "",
             mc_type: str | None = None) -> MCQReview:
    """Replace an MCQ's options and key. The key must be one of the options; 2-4 distinct, non-empty options."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    mcq = _get(session, mcq_id)
    _refuse_if_blind(session, actor, mcq)
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
        prov["role"] = "key" if i == correct else "distractor"
        new_options[i] = {**option, "extra": {**(option.get("extra") or {}), "provenance": prov}}
    mcq.options = new_options
    mcq.correct_index = correct
    mcq.mc_type = mc_type or mcq.mc_type
    mcq.extra = {**(mcq.extra or {}), "edited": True}
    session.add(mcq)
    return _record(session, mcq, actor, "edited", note, {"before": before})
