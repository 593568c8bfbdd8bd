"""Stage 2 of a DiscoveryBench dataset: peers' submitted hypotheses and the LLM's, per query, to vote on.

Who may look and vote is :func:`curation.services.stages.require_reviewer` / ``require_voter`` (the same gate
as BLADE decisions: own stage 1 submitted, stage 2 open); votes go through
:func:`curation.services.votes.cast_vote` with the question ``justifiable`` (a reason is required for
unjustifiable), so history, agreement, meetings and decision rules treat them like every other vote.
What a reviewer sees of an item's origin follows the dataset's review settings: source-blind by default, items
of a query in an order that does not give the source away.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session, col, select

from curation.models import (
    Alternative,
    Analysis,
    AnalysisStatus,
    HypothesisProposal,
    HypothesisTask,
    ProposerDisplay,
    User,
    Vote,
)
from curation.services.actor import judges_actor
from curation.services.hypotheses.common import dictionary_columns
from curation.services.stages import require_reviewer
from curation.services.votes import VERDICT
from evaluation.tasks.hypotheses import HYPOTHESIS

__all__ = ["HypothesisItem", "HypothesisReview", "TaskReview", "hypothesis_review"]


@dataclass
class HypothesisItem:
    target_kind: str  # hypothesis (a stage-1 one) | alternative (the LLM's)
    target_id: str
    task_id: int
    hypothesis: str
    context: str = ""
    variables: list[dict[str, Any]] = field(default_factory=list)
    relationship: str = ""
    workflow: str = ""
    code: str = ""
    check: dict[str, Any] | None = None
    source: str | None = None  # peer | llm; None when the dataset is source-blind
    proposer: str | None = None
    own: bool = False
    label: str = ""
    my_vote: dict[str, Any] | None = None
    voters: int = 0
    duplicate_of: str | None = None

    @property
    def key(self) -> str:
        return f"{self.target_kind}:{self.target_id}"


@dataclass
class TaskReview:
    task: HypothesisTask
    items: list[HypothesisItem]
    columns: dict[str, str]


@dataclass
class HypothesisReview:
    dataset_id: int
    dataset_name: str
    stage: str
    can_vote: bool
    source_visible: bool
    tasks: list[TaskReview]

    @property
    def items(self) -> list[HypothesisItem]:
        return [i for t in self.tasks for i in t.items]


def _order(item: HypothesisItem) -> str:
    return hashlib.sha256(item.key.encode()).hexdigest()


@judges_actor
def hypothesis_review(*, session: Session, actor: User, dataset_id: int) -> HypothesisReview:
    """Every hypothesis to judge on a DiscoveryBench dataset, per query, with the actor's own votes."""
    dataset, review, can_vote = require_reviewer(session=session, actor=actor, dataset_id=dataset_id)
    owners = {a.id: a.annotator_id for a in session.exec(select(Analysis).where(
        Analysis.dataset_id == dataset_id, Analysis.status == AnalysisStatus.SUBMITTED.value)).all()}
    tasks = list(session.exec(select(HypothesisTask).where(HypothesisTask.dataset_id == dataset_id)
                              .order_by(col(HypothesisTask.metadata_k), col(HypothesisTask.qid))).all())
    proposals = list(session.exec(select(HypothesisProposal).where(
        col(HypothesisProposal.analysis_id).in_(list(owners)))).all()) if owners else []
    alternatives = [a for a in session.exec(select(Alternative).where(
        Alternative.dataset_id == dataset_id, Alternative.kind == HYPOTHESIS.name)
        .order_by(col(Alternative.position))).all() if not (a.extra or {}).get("merged_into")]
    users = {u.id: u for u in session.exec(select(User)).all()}
    votes = session.exec(select(Vote).where(Vote.dataset_id == dataset_id, Vote.question == VERDICT)).all()
    voters: dict[tuple[str, str], set[int]] = defaultdict(set)
    mine: dict[tuple[str, str], dict[str, Any]] = {}
    for v in votes:
        voters[(v.target_kind, v.target_id)].add(v.annotator_id)
        if v.annotator_id == actor.id:
            mine[(v.target_kind, v.target_id)] = {"answer": v.answer, "explanation": v.explanation}

    rows: list[tuple[HypothesisItem, int | None, str]] = []
    for h in proposals:
        rows.append((HypothesisItem(HYPOTHESIS.name, h.id, h.task_id, h.hypothesis, h.context, list(h.variables),
                                    h.relationship, h.workflow, h.code, h.check), owners[h.analysis_id], "peer"))
    for a in alternatives:
        p = a.payload or {}
        rows.append((HypothesisItem("alternative", a.id, int(p.get("task_id") or 0), str(p.get("hypothesis", "")),
                                    str(p.get("context", "")), list(p.get("variables") or []),
                                    str(p.get("relationship", "")), str(p.get("workflow", "")),
                                    str(p.get("code", "")), (a.extra or {}).get("check"),
                                    duplicate_of=(a.extra or {}).get("duplicate_of")), a.proposed_by_id, a.source))
    by_task: dict[int, list[HypothesisItem]] = defaultdict(list)
    for item, proposer_id, source in rows:
        k = (item.target_kind, item.target_id)
        item.own = proposer_id is not None and proposer_id == actor.id
        item.my_vote, item.voters = mine.get(k), len(voters.get(k, ()))
        if review.source_visible:
            item.source = source
            user = users.get(proposer_id) if proposer_id is not None else None
            if user is not None:
                item.proposer = (user.display_name or user.username
                                 if review.proposer_display == ProposerDisplay.NAMED.value else f"A{user.id}")
        elif item.own:
            item.proposer = "you"
        by_task[item.task_id].append(item)
    out = []
    n = 0
    for task in tasks:
        items = by_task.get(task.id or 0, [])
        if not review.source_visible:
            items.sort(key=_order)
        for item in items:
            n += 1
            item.label = f"H{n}"
        if items:
            out.append(TaskReview(task, items, dictionary_columns(dataset, task)))
    return HypothesisReview(dataset_id=dataset_id, dataset_name=dataset.name, stage=review.stage, can_vote=can_vote,
                            source_visible=review.source_visible, tasks=out)
