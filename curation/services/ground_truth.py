"""Ground-truth status of every item of a dataset: the rule applied to the current votes, a meeting's outcome
where one was recorded, and the dataset's rule choice with a preview of what a change would do.

Items are the submitted stage-1 variables and transforms and every alternative not merged into another; on a
DiscoveryBench dataset also the submitted stage-1 hypotheses of its queries (``target_kind`` "hypothesis") and the
LLM's hypotheses (alternatives of kind "hypothesis"), each with the query it answers (``task_id``).
A stage-1 decision imported from BLADE that no one has voted on is BLADE's own ground truth (its experts
accepted it at their consensus meeting): it is justifiable with the basis "imported". Everything else follows
the rule (:mod:`curation.ground_truth`), or the latest meeting outcome recorded for it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
from sqlmodel import Session, col, select

from curation.errors import NotFoundError, StageError
from curation.ground_truth import (
    DEFAULT_RULE,
    RULES,
    Rule,
    Status,
    StatusResult,
    apply_rule,
    get_rule,
    verdicts_by_voter,
)
from curation.models import (
    IMPORTED_USERNAME,
    Alternative,
    Analysis,
    AnalysisStatus,
    ConceptualVariable,
    Dataset,
    GroundTruthSetting,
    HypothesisProposal,
    HypothesisTask,
    Meeting,
    MeetingOutcome,
    Role,
    Transform,
    User,
    Vote,
    utcnow,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from evaluation.specs import ROOT_SPEC_ID
from evaluation.tasks import item_kind
from evaluation.tasks.hypotheses import HYPOTHESIS

__all__ = [
    "GroundTruthItem",
    "RuleChange",
    "cvar_str",
    "dataset_rule",
    "ground_truth",
    "latest_outcomes",
    "normal_concept",
    "preview_rule",
    "same_concept",
    "set_rule",
]


def normal_concept(text: str) -> str:
    return " ".join((text or "").lower().replace("_", " ").split()).rstrip(".")


def same_concept(a: str, b: str) -> bool:
    """Same conceptual variable: equal normalised words, or one's words begin the other's ("education" and
    "education level": BLADE's MCQ keys and its alternatives' copied concepts drift this way)."""
    x, y = normal_concept(a).split(), normal_concept(b).split()
    n = min(len(x), len(y))
    return n > 0 and x[:n] == y[:n]


def cvar_str(variable_type: str, concept: str, interaction: bool = False, on: str = "") -> str:
    """BLADE's string form of a conceptual variable (blade-reference 1.5.2)."""
    concept = (concept or "").strip()
    if interaction:
        return f"Moderator: {concept} interacting with {on} variable"
    if variable_type == "Control":
        return f"Control: {concept}."
    return f"{variable_type}: {concept}"


@dataclass
class GroundTruthItem:
    target_kind: str  # variable | transform | alternative
    target_id: str
    kind: str  # variable | transform
    source: str  # decision | llm | peer
    proposer_id: int | None
    concept: str  # the conceptual variable it is, or operationalises
    variable_type: str = ""
    interaction: bool = False
    moderates: str = ""
    variable_id: str | None = None  # the variable a transform operationalises (stage-1 id or BLADE's)
    label: str = ""
    code: str = ""
    rationale: str = ""
    columns: list[str] = field(default_factory=list)
    path_ids: list[str] = field(default_factory=list)  # transforms from the data to this one, in run order
    votes: list[dict[str, Any]] = field(default_factory=list)
    result: StatusResult | None = None
    basis: str = "rule"  # rule | meeting | imported
    meeting: dict[str, Any] | None = None
    task_id: int | None = None  # hypotheses: the DiscoveryBench query (HypothesisTask) it answers
    detail: dict[str, Any] = field(default_factory=dict)  # programmatic candidates: the gate's evidence, the file

    @property
    def key(self) -> str:
        return f"{self.target_kind}:{self.target_id}"

    @property
    def status(self) -> str:
        if self.meeting is not None:
            return str(self.meeting["outcome"])
        if self.basis == "imported":
            return Status.JUSTIFIABLE.value
        assert self.result is not None
        return self.result.status

    @property
    def why(self) -> str:
        if self.meeting is not None:
            return f"meeting {self.meeting['meeting_id']}: {self.meeting['outcome']} ({self.meeting['reason']})"
        if self.basis == "imported":
            return "BLADE ground truth (imported; accepted by BLADE's experts at their consensus)"
        assert self.result is not None
        return self.result.why

    @property
    def cvar_str(self) -> str:
        return cvar_str(self.variable_type, self.concept, self.interaction, self.moderates)

    def answers(self, question: str) -> list[str]:
        return [v["answer"] for v in self.votes if v["question"] == question and v["answer"] is not None]


def dataset_rule(*, session: Session, dataset_id: int) -> Rule:
    row = session.get(GroundTruthSetting, dataset_id)
    return get_rule(row.rule if row is not None else DEFAULT_RULE)


def _topological(ids: set[str], parents: dict[str, list[str]], order: dict[str, int]) -> list[str]:
    g: nx.DiGraph = nx.DiGraph()
    g.add_nodes_from(ids)
    for i in ids:
        for p in parents.get(i, []):
            if p in ids:
                g.add_edge(p, i)
    return list(nx.lexicographical_topological_sort(g, key=lambda n: (order.get(n, 0), n)))


def _ancestors(start: list[str], parents: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    stack = [s for s in start if s in parents]
    while stack:
        tid = stack.pop()
        if tid in seen:
            continue
        seen.add(tid)
        stack += [p for p in parents[tid] if p in parents and p not in seen]
    return seen


def latest_outcomes(*, session: Session, dataset_id: int) -> dict[tuple[str, str], dict[str, Any]]:
    rows = session.exec(select(MeetingOutcome, Meeting).join(Meeting, col(Meeting.id) == col(MeetingOutcome.meeting_id))
                        .where(MeetingOutcome.dataset_id == dataset_id)
                        .order_by(col(MeetingOutcome.recorded_at), col(MeetingOutcome.id))).all()
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for o, m in rows:
        out[(o.target_kind, o.target_id)] = {"meeting_id": m.id, "outcome": o.outcome, "reason": o.reason,
                                              "dissent": o.dissent, "recorded_at": o.recorded_at.isoformat()}
    return out


def ground_truth(*, session: Session, dataset_id: int, rule: Rule | None = None) -> list[GroundTruthItem]:
    """Every item of the dataset with its status under ``rule`` (default: the dataset's rule)."""
    if session.get(Dataset, dataset_id) is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    rule = rule or dataset_rule(session=session, dataset_id=dataset_id)
    analyses = session.exec(select(Analysis).where(Analysis.dataset_id == dataset_id,
                                                   Analysis.status == AnalysisStatus.SUBMITTED.value)).all()
    owner = {a.id: a.annotator_id for a in analyses}
    imported_ids = set(session.exec(select(User.id).where(User.username == IMPORTED_USERNAME)).all())
    aids = list(owner)
    variables = list(session.exec(select(ConceptualVariable).where(col(ConceptualVariable.analysis_id).in_(aids))
                                  .order_by(col(ConceptualVariable.position), col(ConceptualVariable.id))).all()) if aids else []
    transforms = list(session.exec(select(Transform).where(col(Transform.analysis_id).in_(aids))
                                   .order_by(col(Transform.position), col(Transform.id))).all()) if aids else []
    alternatives = session.exec(select(Alternative).where(Alternative.dataset_id == dataset_id)
                                .order_by(col(Alternative.position), col(Alternative.id))).all()
    votes: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for vote in session.exec(select(Vote).where(Vote.dataset_id == dataset_id).order_by(col(Vote.id))).all():
        votes[(vote.target_kind, vote.target_id)].append({"annotator_id": vote.annotator_id, "question": vote.question,
                                                          "answer": vote.answer, "explanation": vote.explanation})
    outcomes = latest_outcomes(session=session, dataset_id=dataset_id)

    parents = {t.id: [d for b in t.branches[:1] for d in b.get("dependencies", []) if d != ROOT_SPEC_ID]
               for t in transforms}
    order = {t.id: i for i, t in enumerate(transforms)}
    users: dict[str, ConceptualVariable] = {}
    for v in variables:
        for c in v.columns:
            if c.get("producer_id") and c["producer_id"] not in users:
                users[c["producer_id"]] = v
    items: list[GroundTruthItem] = []
    for v in variables:
        producers = [c["producer_id"] for c in v.columns if c.get("producer_id") in parents]
        items.append(GroundTruthItem(
            "variable", v.id, "variable", "decision", owner[v.analysis_id], v.concept, v.variable_type,
            v.interaction, v.moderates, v.id, v.concept, rationale=v.rationale,
            columns=[c.get("name", "") for c in v.columns],
            path_ids=_topological(_ancestors(producers, parents), parents, order)))
    for t in transforms:
        user = users.get(t.id)
        items.append(GroundTruthItem(
            "transform", t.id, "transform", "decision", owner[t.analysis_id], user.concept if user else "",
            user.variable_type if user else "", user.interaction if user else False, user.moderates if user else "",
            user.id if user else None, t.spec_name, t.code, t.rationale,
            [m.get("output", "") for m in t.mapping if m.get("output")],
            _topological(_ancestors([t.id], parents), parents, order)))
    items += _hypothesis_items(session, dataset_id, owner, alternatives)
    for a in alternatives:
        if (a.extra or {}).get("merged_into") or not item_kind(a.kind).in_decision_graph:
            continue  # the other kinds' alternatives are items of their own (above)
        p, blade = a.payload or {}, (a.extra or {}).get("blade") or {}
        if a.kind == "variable":
            items.append(GroundTruthItem(
                "alternative", a.id, "variable", a.source, a.proposed_by_id, p.get("concept", ""),
                p.get("variable_type", ""), bool(p.get("interaction")), p.get("on") or "",
                blade.get("associated_cv_spec_id") or a.seed_id, p.get("concept", ""), rationale=p.get("rationale", ""),
                columns=list(p.get("columns") or [])))
        else:
            cv = p.get("associated_cvar_spec") or {}
            concept = p.get("concept") or cv.get("concept") or ""
            items.append(GroundTruthItem(
                "alternative", a.id, "transform", a.source, a.proposed_by_id, concept,
                p.get("variable_type") or cv.get("variable_type") or "", bool(cv.get("interaction")),
                cv.get("on") or "", a.seed_id or blade.get("associated_cvar_spec_id"),
                p.get("spec_name") or p.get("output_col") or "", p.get("code", ""), p.get("rationale", ""),
                [p["output_col"]] if p.get("output_col") else [],
                [*_topological(_ancestors(list(p.get("parent_ids") or []), parents), parents, order), a.id]))
    by_variable = {v.id: v for v in variables}
    for item in items:
        seed = by_variable.get(item.variable_id or "")
        if item.target_kind == "alternative" and item.kind == "transform" and seed is not None:
            # the variable the transform was generated for, by id (BLADE's copied concept text can differ)
            item.concept, item.variable_type = seed.concept, seed.variable_type
            item.interaction, item.moderates = seed.interaction, seed.moderates
        item.votes = votes.get((item.target_kind, item.target_id), [])
        verdicts = verdicts_by_voter(item.kind, ((str(v["annotator_id"]), v["question"], v["answer"])
                                                 for v in item.votes))
        item.result = apply_rule(rule, list(verdicts.values()))
        if not item.votes and item.source == "decision" and item.proposer_id in imported_ids:
            item.basis = "imported"
        item.meeting = outcomes.get((item.target_kind, item.target_id))
        if item.meeting is not None:
            item.basis = "meeting"
    return items


def _hypothesis_columns(variables: list[dict[str, Any]]) -> list[str]:
    return [str(v["column"]) for v in variables if v.get("column")]


def _hypothesis_items(session: Session, dataset_id: int, owner: dict[int | None, int],
                      alternatives: Any) -> list[GroundTruthItem]:
    """The stage-1 hypotheses (of submitted analyses) and the LLM's hypotheses of a DiscoveryBench dataset."""
    tasks = {t.id: t for t in session.exec(select(HypothesisTask).where(HypothesisTask.dataset_id == dataset_id))}
    if not tasks:
        return []
    items: list[GroundTruthItem] = []
    proposals = session.exec(select(HypothesisProposal).where(
        HypothesisProposal.dataset_id == dataset_id, col(HypothesisProposal.analysis_id).in_(list(owner)))
        .order_by(col(HypothesisProposal.task_id), col(HypothesisProposal.created_at), col(HypothesisProposal.id))
    ).all() if owner else []
    for h in proposals:
        task = tasks.get(h.task_id)
        items.append(GroundTruthItem(
            HYPOTHESIS.name, h.id, HYPOTHESIS.name, "decision", owner[h.analysis_id], task.question if task else "",
            label=h.hypothesis, code=h.code, rationale=h.workflow, columns=_hypothesis_columns(h.variables),
            task_id=h.task_id))
    for a in alternatives:
        if a.kind != HYPOTHESIS.name or (a.extra or {}).get("merged_into"):
            continue
        p = a.payload or {}
        task = tasks.get(int(p.get("task_id") or 0))
        items.append(GroundTruthItem(
            "alternative", a.id, HYPOTHESIS.name, a.source, a.proposed_by_id, task.question if task else "",
            label=str(p.get("hypothesis", "")), code=str(p.get("code", "")), rationale=str(p.get("workflow", "")),
            columns=_hypothesis_columns(list(p.get("variables") or [])), task_id=task.id if task else None))
    return items


@dataclass(frozen=True)
class RuleChange:
    target_kind: str
    target_id: str
    kind: str
    label: str
    before: str
    after: str
    why: str


@judges_actor
def preview_rule(*, session: Session, actor: User, dataset_id: int, rule: str) -> list[RuleChange]:
    """What switching the dataset to ``rule`` would change (items a meeting decided keep their outcome)."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    try:
        new = get_rule(rule)
    except KeyError as exc:
        raise StageError(str(exc.args[0])) from exc
    now = {i.key: i for i in ground_truth(session=session, dataset_id=dataset_id)}
    changes = []
    for item in ground_truth(session=session, dataset_id=dataset_id, rule=new):
        old = now[item.key]
        if old.status != item.status:
            changes.append(RuleChange(item.target_kind, item.target_id, item.kind, item.label or item.concept,
                                      old.status, item.status, item.why))
    return changes


@judges_actor
def set_rule(*, session: Session, actor: User, dataset_id: int, rule: str) -> GroundTruthSetting:
    """Make ``rule`` the dataset's ground-truth rule (curators and admins); the change is kept in the history."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    if session.get(Dataset, dataset_id) is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    try:
        new = get_rule(rule)
    except KeyError as exc:
        raise StageError(str(exc.args[0])) from exc
    row = session.get(GroundTruthSetting, dataset_id)
    before = row.rule if row is not None else DEFAULT_RULE
    if row is None:
        row = GroundTruthSetting(dataset_id=dataset_id, rule=new.key)
    row.rule, row.changed_by_id, row.changed_at = new.key, actor.id, utcnow()
    row.history = [*row.history, {"from": before, "to": new.key, "by": actor.id, "at": row.changed_at.isoformat()}]
    session.add(row)
    session.flush()
    return row


RULE_CHOICES = sorted(RULES.values(), key=lambda r: r.strictness)
