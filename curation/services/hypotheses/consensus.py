"""Stage 3 of a DiscoveryBench dataset: a query's gold hypothesis is a candidate the decision rule (or the
consensus meeting) makes justifiable, decided by a curator with its provenance, and the release's view of it.

Candidates are the query's submitted stage-1 hypotheses and the LLM's hypotheses; their statuses come from
:func:`curation.services.ground_truth.ground_truth` (the dataset's rule on the current votes, or the latest
meeting outcome), so a contested hypothesis goes on the meeting's agenda like any other item. Deciding a query
(after stage 2 is closed and while no meeting is open) writes the chosen candidate into the
:class:`~curation.models.HypothesisTask` (``gold_source`` "consensus", status "gold") with ``gold_provenance``
(rule, tally, meeting, candidate, who, when), and freezes every candidate's status in a ``Consensus`` row with
the votes it rested on; all in one transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from curation.errors import DecidedElsewhere, DecisionValidationError, NotFoundError, StageError
from curation.ground_truth import Status
from curation.models import (
    Alternative,
    Analysis,
    Consensus,
    Dataset,
    HypothesisProposal,
    HypothesisTask,
    HypothesisTaskStatus,
    Role,
    Stage,
    User,
    utcnow,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import refuse_if_blind
from curation.services.ground_truth import GroundTruthItem, dataset_rule, ground_truth
from curation.services.hypotheses.common import task_label
from curation.services.kind_curation import KindCuration
from curation.services.meetings import display_names, open_meeting
from curation.services.release_data import Pseudonym, pseudonym
from curation.services.stages import get_review_settings, lock_for_review_write
from evaluation.tasks.hypotheses import HYPOTHESIS
from exports.hypotheses_part import (
    HypothesesPart,
    HypothesisCandidate,
    HypothesisGold,
    HypothesisTaskRelease,
    HypothesisVariable,
)

__all__ = ["CURATION", "GoldBoard", "HypothesisParts", "TaskGold", "decide_gold", "gold_board",
           "hypotheses_release_part", "hypothesis_release_parts", "hypothesis_task_release", "task_release_parts"]

#: What stages 1-3 recorded about one hypothesis task, ``(*, session, task, who)``: its stage-1 candidates
#: and, once the decision rule made one justifiable, the consensus gold (``None`` until then). Called inside
#: the cut's snapshot, with the release's pseudonyms.
HypothesisParts = Callable[..., tuple[list[HypothesisCandidate], HypothesisGold | None]]


@dataclass
class TaskGold:
    task: HypothesisTask
    candidates: list[GroundTruthItem] = field(default_factory=list)
    payloads: dict[str, dict[str, Any]] = field(default_factory=dict)  # item key -> the hypothesis' fields

    @property
    def justifiable(self) -> list[GroundTruthItem]:
        return [c for c in self.candidates if c.status == Status.JUSTIFIABLE.value]

    @property
    def suggested(self) -> GroundTruthItem | None:
        """The justifiable candidate with the most justifiable votes; None when none is, or when two tie."""
        ranked = sorted(self.justifiable, key=lambda c: -(c.result.justifiable if c.result else 0))
        if not ranked:
            return None
        top = ranked[0].result.justifiable if ranked[0].result else 0
        if len(ranked) > 1 and (ranked[1].result.justifiable if ranked[1].result else 0) == top:
            return None
        return ranked[0]

    @property
    def decided(self) -> bool:
        return self.task.gold_source == "consensus"


@dataclass
class GoldBoard:
    dataset_id: int
    stage: str
    rule: str
    meeting_open: bool
    tasks: list[TaskGold]
    names: dict[int, str] = field(default_factory=dict)  # who decided a gold, by user id


def _payloads(session: Session, items: list[GroundTruthItem]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        if item.target_kind == "alternative":  # an LLM's hypothesis
            a = session.get(Alternative, item.target_id)
            if a is not None:
                out[item.key] = dict(a.payload or {})
        else:  # a stage-1 hypothesis
            h = session.get(HypothesisProposal, item.target_id)
            if h is not None:
                out[item.key] = {"hypothesis": h.hypothesis, "context": h.context, "variables": h.variables,
                                 "relationship": h.relationship, "workflow": h.workflow, "code": h.code}
    return out


def _board(session: Session, dataset_id: int) -> list[TaskGold]:
    tasks = list(session.exec(select(HypothesisTask).where(HypothesisTask.dataset_id == dataset_id)
                              .order_by(col(HypothesisTask.metadata_k), col(HypothesisTask.qid))).all())
    items: dict[int, list[GroundTruthItem]] = defaultdict(list)
    for item in ground_truth(session=session, dataset_id=dataset_id):
        if item.kind == HYPOTHESIS.name and item.task_id is not None:
            items[item.task_id].append(item)
    board = []
    for task in tasks:
        candidates = items.get(task.id or 0, [])
        if candidates or task.gold_source == "consensus":
            board.append(TaskGold(task, candidates, _payloads(session, candidates)))
    return board


@judges_actor
def gold_board(*, session: Session, actor: User, dataset_id: int) -> GoldBoard:
    """Per query with candidates: their statuses, the suggested gold and the gold decided (curators, admins)."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    refuse_if_blind(session=session, actor=actor, dataset=dataset.name,
                    what="The consensus shows peers' hypotheses.")
    review = get_review_settings(session=session, dataset_id=dataset_id)
    board = _board(session, dataset_id)
    deciders = [int(t.task.gold_provenance["decided_by_id"]) for t in board
                if t.task.gold_provenance and t.task.gold_provenance.get("decided_by_id") is not None]
    return GoldBoard(dataset_id, review.stage, dataset_rule(session=session, dataset_id=dataset_id).key,
                     open_meeting(session=session, dataset_id=dataset_id) is not None, board,
                     display_names(session=session, user_ids=deciders))


def _tally(item: GroundTruthItem) -> dict[str, int]:
    r = item.result
    return {"justifiable": r.justifiable, "unjustifiable": r.unjustifiable, "unsure": r.unsure} if r else {}


def _variable_names(variables: list[dict[str, Any]]) -> list[str]:
    return [str(v.get("name") or v.get("column") or "") for v in variables if v.get("name") or v.get("column")]


def _claim(session: Session, task: HypothesisTask, actor: User) -> None:
    """Take the query's decision with one conditional write (its status from "needs curation" to "gold"), so that
    of two curators deciding it at once exactly one goes on: on PostgreSQL the second waits on the row, then finds
    its condition false; the task read before that is refreshed and the loser is told who decided first."""
    claimed = session.execute(
        update(HypothesisTask)
        .where(col(HypothesisTask.id) == task.id,
               col(HypothesisTask.status) == HypothesisTaskStatus.NEEDS_CURATION.value)
        .values(status=HypothesisTaskStatus.GOLD.value)
        .execution_options(synchronize_session=False))
    session.refresh(task)
    if claimed.rowcount == 1:  # type: ignore[attr-defined]  # an UPDATE's CursorResult
        return
    provenance = task.gold_provenance or {}
    decided_by = provenance.get("decided_by_id")
    if task.gold_source == "consensus" and decided_by is not None and decided_by != actor.id:
        who = display_names(session=session, user_ids=[int(decided_by)]).get(int(decided_by), "another curator")
        when = str(provenance.get("decided_at", ""))[:19].replace("T", " ")
        raise DecidedElsewhere(
            f"{who} decided the gold hypothesis of the {task_label(task)} first (at {when} UTC): "
            f"\"{(task.gold_hypothesis or '')[:120]}\". Yours was not stored; reload the page to see their decision.")
    raise DecisionValidationError(f"The {task_label(task)} already has its gold hypothesis "
                                  f"({task.gold_source}); it is not decided again.")


@judges_actor
def decide_gold(*, session: Session, actor: User, task_id: int, target_kind: str, target_id: str,
                note: str = "") -> HypothesisTask:
    """Make one justifiable candidate the query's gold hypothesis (curators and admins; stage 2 closed, no
    meeting open), with provenance, and freeze every candidate's status of that query in the consensus table."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    task = session.get(HypothesisTask, task_id)
    dataset = session.get(Dataset, task.dataset_id) if task is not None else None
    if task is None or dataset is None:
        raise NotFoundError(f"There is no hypothesis task with id {task_id}.")
    refuse_if_blind(session=session, actor=actor, dataset=dataset.name,
                    what="The consensus shows peers' hypotheses.")
    lock_for_review_write(session=session, dataset_id=dataset.id or 0)
    stage = get_review_settings(session=session, dataset_id=dataset.id or 0).stage
    if stage != Stage.CLOSED.value:
        raise StageError(f"Close stage 2 of '{dataset.name}' first: the gold is decided on final votes.")
    if open_meeting(session=session, dataset_id=dataset.id or 0) is not None:
        raise StageError(f"A consensus meeting on '{dataset.name}' is open; close it first, so that its "
                         "outcomes are final.")
    if task.status != HypothesisTaskStatus.NEEDS_CURATION.value:
        _claim(session, task, actor)  # says who decided it
    tg = next((t for t in _board(session, dataset.id or 0) if t.task.id == task_id), None)
    candidates = tg.candidates if tg else []
    chosen = next((c for c in candidates if c.target_kind == target_kind and c.target_id == target_id), None)
    if chosen is None:
        raise NotFoundError(f"{target_kind} {target_id[:8]} is not a hypothesis for the {task_label(task)}.")
    if chosen.status != Status.JUSTIFIABLE.value:
        raise DecisionValidationError(
            f"That hypothesis is {chosen.status} ({chosen.why}); only one the decision rule or the meeting made "
            "justifiable becomes the gold.")
    assert tg is not None
    _claim(session, task, actor)  # the one conditional write: of two curators deciding at once, one goes on
    payload = tg.payloads.get(chosen.key) or {}
    now = utcnow()
    rule = dataset_rule(session=session, dataset_id=dataset.id or 0)
    provenance = {
        "rule": rule.key, "basis": chosen.basis, "status": chosen.status, "why": chosen.why,
        "tally": _tally(chosen), "meeting": chosen.meeting,
        "candidate": {"target_kind": chosen.target_kind, "target_id": chosen.target_id, "source": chosen.source},
        "variables": payload.get("variables") or [], "code": payload.get("code", ""),
        "candidates": [{"target_kind": c.target_kind, "target_id": c.target_id, "status": c.status,
                        "tally": _tally(c)} for c in candidates],
        "decided_by_id": actor.id, "decided_at": now.isoformat(), "note": note.strip(),
    }
    task.gold_hypothesis, task.gold_context = str(payload.get("hypothesis", "")), str(payload.get("context", ""))
    task.gold_variables = _variable_names(list(payload.get("variables") or []))
    task.gold_relationship, task.gold_workflow = str(payload.get("relationship", "")), str(payload.get("workflow", ""))
    task.gold_source, task.status, task.gold_provenance = "consensus", HypothesisTaskStatus.GOLD.value, provenance
    session.add(task)
    for c in candidates:
        row = session.exec(select(Consensus).where(Consensus.target_kind == c.target_kind,
                                                   Consensus.target_id == c.target_id)).first()
        if row is None:
            row = Consensus(dataset_id=dataset.id or 0, target_kind=c.target_kind, target_id=c.target_id, status="")
        row.status = c.status
        row.rule = rule.key if c.basis == "rule" else c.basis
        row.decided_by_id, row.decided_at = actor.id, now
        gold = " · the gold hypothesis of this query" if c is chosen else ""
        row.note = f"{task.key}: {c.why}{gold}"
        row.votes_snapshot = [{"target_kind": c.target_kind, "target_id": c.target_id,
                               "annotator": f"A{v['annotator_id']}", "question": v["question"],
                               "answer": v["answer"], "explanation": v.get("explanation", "")} for v in c.votes]
        session.add(row)
    session.flush()
    return task


def _who(session: Session, user_id: Any) -> str | None:
    user = session.get(User, int(user_id)) if user_id is not None else None
    return pseudonym(user).id if user is not None else None


def _release_provenance(provenance: dict[str, Any], who: Callable[[int | None], str | None]) -> dict[str, Any]:
    out = {k: v for k, v in provenance.items() if k != "decided_by_id"}
    decided_by = provenance.get("decided_by_id")
    out["decided_by"] = who(int(decided_by)) if decided_by is not None else None
    return out


def _candidates_of(session: Session, task: HypothesisTask,
                   who: Callable[[int | None], str | None]) -> list[HypothesisCandidate]:
    owners = {a.id: a.annotator_id for a in session.exec(select(Analysis).where(
        Analysis.dataset_id == task.dataset_id, Analysis.status == "submitted")).all()}
    rows = session.exec(select(HypothesisProposal).where(
        HypothesisProposal.task_id == task.id, col(HypothesisProposal.analysis_id).in_(list(owners)))
        .order_by(col(HypothesisProposal.created_at), col(HypothesisProposal.id))).all() if owners else []
    return [HypothesisCandidate(
        id=h.id, author=who(owners[h.analysis_id]), hypothesis=h.hypothesis, context=h.context,
        variables=[HypothesisVariable(name=str(v.get("name", "")), column=v.get("column") or None,
                                      derived=str(v.get("derived", "")), description=str(v.get("description", "")))
                   for v in h.variables],
        relationship=h.relationship, workflow=h.workflow, code=h.code, check=h.check) for h in rows]


def _gold_of(task: HypothesisTask, who: Callable[[int | None], str | None], *,
             imported: bool) -> HypothesisGold | None:
    sources = ("metadata", "answer_key", "consensus") if imported else ("consensus",)
    if not task.gold_hypothesis or task.gold_source not in sources:
        return None
    provenance = task.gold_provenance or {}
    return HypothesisGold(
        hypothesis=task.gold_hypothesis, context=task.gold_context, variables=task.gold_variables,
        relationship=task.gold_relationship, workflow=task.gold_workflow,
        source=task.gold_source,  # type: ignore[arg-type]
        candidate_id=(provenance.get("candidate") or {}).get("target_id"),
        provenance=_release_provenance(provenance, who) if provenance else {})


def task_release_parts(*, session: Session, task: HypothesisTask,
                       who: Callable[[int | None], str | None]) -> tuple[list[HypothesisCandidate], HypothesisGold | None]:
    """What stages 1-3 recorded about one task (a :data:`HypothesisParts`): its stage-1
    hypotheses of submitted analyses, authors as the release's pseudonyms, and its consensus gold (None unless
    stage 3 decided one: an imported gold is the builder's)."""
    return _candidates_of(session, task, who), _gold_of(task, who, imported=False)


def hypothesis_release_parts(
    *, session: Session, dataset_id: int,
) -> dict[str, tuple[list[HypothesisCandidate], HypothesisGold | None]]:
    """Per task key of the dataset: its stage-1 hypotheses of submitted analyses (authors pseudonymised) and its
    gold (imported, or decided at the consensus with its provenance)."""
    tasks = list(session.exec(select(HypothesisTask).where(HypothesisTask.dataset_id == dataset_id)
                              .order_by(col(HypothesisTask.metadata_k), col(HypothesisTask.qid))).all())

    def who(user_id: int | None) -> str | None:
        return _who(session, user_id)

    return {t.key: (_candidates_of(session, t, who), _gold_of(t, who, imported=True)) for t in tasks}


def hypothesis_task_release(task: HypothesisTask, *, candidates: list[HypothesisCandidate] | None = None,
                            consensus_gold: HypothesisGold | None = None) -> HypothesisTaskRelease:
    """One hypothesis task as released: the query as imported, and its gold.

    The gold is the consensus gold when stage 3 decided one (it replaces an imported gold), else the gold that
    came with the import (``gold_source`` metadata or answer_key), else none: the task is still to be curated.
    Every task is released, with or without gold, so that a release holds each folder's queries whole (its
    DiscoveryBench export writes them all back) and a reader can see what is still to curate.
    """
    gold = consensus_gold
    if gold is None and task.gold_hypothesis is not None and task.gold_source in ("metadata", "answer_key"):
        gold = HypothesisGold(hypothesis=task.gold_hypothesis, context=task.gold_context,
                              variables=list(task.gold_variables) if task.gold_variables is not None else None,
                              relationship=task.gold_relationship, workflow=task.gold_workflow,
                              source=task.gold_source)  # type: ignore[arg-type]
    return HypothesisTaskRelease(
        key=task.key, source=task.source, split=task.split, metadata_k=task.metadata_k,  # type: ignore[arg-type]
        qid=task.qid, query_field=task.query_field, question=task.question, question_type=task.question_type,
        question_type_raw=task.question_type_raw, difficulty=task.difficulty, domain=task.domain,
        domain_knowledge=task.domain_knowledge, workflow_tags=task.workflow_tags, data_files=list(task.data_files),
        true_hypothesis_expr=task.true_hypothesis_expr, target_col=task.target_col,
        relevant_cols=list(task.relevant_cols) if task.relevant_cols is not None else None, gold=gold,
        candidates=list(candidates or []))


def hypotheses_release_part(*, session: Session, dataset: Dataset, who: Pseudonym,
                            task_parts: HypothesisParts | None = task_release_parts) -> HypothesesPart:
    """The hypotheses kind's part of ``dataset`` in a release being cut (its
    :attr:`~curation.services.kind_curation.KindCuration.release_part`): every task, gold or still to curate,
    with what ``task_parts`` says stages 1-3 recorded about it (default :func:`task_release_parts`; ``None``:
    tasks carry their imported gold)."""
    tasks = []
    for task in session.exec(select(HypothesisTask).where(HypothesisTask.dataset_id == dataset.id)
                             .order_by(col(HypothesisTask.metadata_k), col(HypothesisTask.qid))).all():
        candidates, consensus_gold = (task_parts(session=session, task=task, who=who) if task_parts
                                      else ([], None))
        tasks.append(hypothesis_task_release(task, candidates=candidates, consensus_gold=consensus_gold))
    return HypothesesPart(tasks=tasks)


CURATION = KindCuration(release_part=hypotheses_release_part)
