"""The review queue: everything to judge on a dataset, as the reviewer may see it.

Items are peers' submitted stage-1 variables and transforms and every alternative (peer or LLM) not merged
into another. What a reviewer sees of an item's origin follows the dataset's settings: with source-blind
review (the default) neither the source nor the proposer is shown and items are in an order that does not
give the source away (a hash of the id); with the source visible, proposers are named or pseudonymous.

Source-blind review also presents every item the same way, whoever made it: a transform is titled by what it
creates ("transform creating deaths_sqrt"), not by the name its proposer gave it (the LLM's alternatives were
auto-named ``alt_<column>`` next to analysts' own names), parents are named the same way, the graph shows only
what an item runs after (alternatives have no children), and a moderator is marked the same on every variable.
The queue is built with one query per table, so 600 items cost a handful of queries.
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
    ConceptualVariable,
    ProposerDisplay,
    Transform,
    User,
    Vote,
)
from curation.services.actor import judges_actor
from curation.services.alternatives import made_columns
from curation.services.datasets import original_columns
from curation.services.stages import require_reviewer
from curation.services.votes import QUESTIONS
from evaluation.specs import ROOT_SPEC_ID
from evaluation.tasks import item_kind

__all__ = ["ReviewItem", "ReviewQueue", "filter_items", "neutral_title", "review_queue"]


@dataclass
class ReviewItem:
    target_kind: str  # variable | transform | alternative
    target_id: str
    kind: str  # variable | transform
    label: str = ""
    source: str | None = None  # peer | llm, None when the dataset is source-blind
    proposer: str | None = None
    own: bool = False
    title: str = ""
    concept: str = ""  # the conceptual variable the item belongs to
    variable_type: str = ""
    code: str = ""
    rationale: str = ""
    columns: list[str] = field(default_factory=list)
    check: dict[str, Any] | None = None
    parents: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    duplicate_of: str | None = None
    duplicate_label: str | None = None
    duplicate_kind: str | None = None  # the label of that item in this queue ("#3"), when it is in it
    variable_id: str | None = None  # the stage-1 variable alternatives to this item are proposed for
    alt_parent_ids: list[str] = field(default_factory=list)  # what an alternative transform runs after
    my_votes: dict[str, dict[str, Any]] = field(default_factory=dict)
    voters: int = 0

    @property
    def key(self) -> str:
        return f"{self.target_kind}:{self.target_id}"

    @property
    def finished_by_me(self) -> bool:
        """Every question answered (or skipped) by the reviewer."""
        return all(q.key in self.my_votes for q in QUESTIONS[self.kind])


@dataclass
class ReviewQueue:
    dataset_id: int
    dataset_name: str
    stage: str
    can_vote: bool
    source_visible: bool
    proposer_display: str
    items: list[ReviewItem]
    data_columns: list[str] = field(default_factory=list)
    derived_columns: list[str] = field(default_factory=list)  # made by the dataset's transforms (see alternatives)

    @property
    def proposable_columns(self) -> list[str]:
        """What a proposed variable may use: the data's columns, then those the transforms make."""
        return list(dict.fromkeys([*self.data_columns, *self.derived_columns]))


def _column_names(columns: list[dict[str, Any]]) -> list[str]:
    return [c.get("name", "") for c in columns]


def _outputs(t: Transform) -> list[str]:
    return [m.get("output", "") for m in t.mapping if m.get("output")]


def neutral_title(columns: list[str]) -> str:
    """A transform's title in source-blind review: what it creates, the same words for everyone's."""
    return f"transform creating {', '.join(columns)}" if columns else "transform"


def _moderator(variable_type: str, interaction: bool) -> str:
    return variable_type + (" (moderator)" if interaction else "")


def _transform_items(transforms: list[Transform], variables: list[ConceptualVariable], names: dict[str, str],
                     blind: bool) -> list[ReviewItem]:
    children: dict[str, list[str]] = defaultdict(list)
    for t in transforms:
        for b in t.branches:
            for dep in b.get("dependencies", []):
                children[dep].append(names.get(t.id, t.spec_name))
    users: dict[str, list[ConceptualVariable]] = defaultdict(list)
    for v in variables:
        for c in v.columns:
            if c.get("producer_id"):
                users[c["producer_id"]].append(v)
    items = []
    for t in transforms:
        parents = [names.get(d, d[:8]) for b in t.branches for d in b.get("dependencies", [])]
        uses = users.get(t.id, [])
        first = list(t.branches[0].get("dependencies", [])) if t.branches else [ROOT_SPEC_ID]
        items.append(ReviewItem(
            target_kind="transform", target_id=t.id, kind="transform", title=names.get(t.id, t.spec_name),
            concept="; ".join(dict.fromkeys(v.concept for v in uses)),
            variable_type=uses[0].variable_type if uses else "", code=t.code, rationale=t.rationale,
            columns=_outputs(t), check=t.last_check,
            parents=list(dict.fromkeys(parents)), children=[] if blind else children.get(t.id, []),
            variable_id=uses[0].id if uses else None, alt_parent_ids=first or [ROOT_SPEC_ID]))
    return items


def _variable_item(v: ConceptualVariable, names: dict[str, str], firsts: dict[str, list[str]]) -> ReviewItem:
    producer_ids = [c["producer_id"] for c in v.columns if c.get("producer_id")]
    producers = [names.get(p, "") for p in producer_ids]
    return ReviewItem(target_kind="variable", target_id=v.id, kind="variable", title=v.concept, concept=v.concept,
                      variable_type=_moderator(v.variable_type, v.interaction),
                      rationale=v.rationale, columns=_column_names(v.columns), parents=[p for p in producers if p],
                      variable_id=v.id,
                      alt_parent_ids=firsts.get(producer_ids[0], [ROOT_SPEC_ID]) if producer_ids else [ROOT_SPEC_ID])


def _alternative_item(a: Alternative, seeds: dict[str, str], names: dict[str, str], blind: bool) -> ReviewItem:
    p = a.payload or {}
    extra = a.extra or {}
    if a.kind == "variable":
        cols = p.get("columns") or []
        return ReviewItem(target_kind="alternative", target_id=a.id, kind="variable", title=p.get("concept", ""),
                          concept=p.get("concept", ""),
                          variable_type=_moderator(p.get("variable_type", ""), bool(p.get("interaction"))),
                          rationale=p.get("rationale", ""),
                          columns=list(dict.fromkeys(c if isinstance(c, str) else c.get("name", "") for c in cols)),
                          duplicate_of=extra.get("duplicate_of"), duplicate_kind=extra.get("duplicate_kind"))
    cvar = p.get("associated_cvar_spec") or {}
    concept = p.get("concept") or cvar.get("concept") or seeds.get(a.seed_id or "", "")
    columns = [p["output_col"]] if p.get("output_col") else []
    parent_ids = list(p.get("parent_ids") or [])
    parents = [names.get(i, i[:8]) for i in parent_ids] if parent_ids else list(p.get("parents") or [])
    title = neutral_title(columns) if blind else (p.get("spec_name") or p.get("output_col") or "alternative transform")
    return ReviewItem(target_kind="alternative", target_id=a.id, kind="transform", title=title, concept=concept,
                      variable_type=p.get("variable_type") or cvar.get("variable_type", ""), code=p.get("code", ""),
                      rationale=p.get("rationale", ""), columns=columns,
                      check=extra.get("check"), parents=parents,
                      duplicate_of=extra.get("duplicate_of"), duplicate_kind=extra.get("duplicate_kind"),
                      variable_id=a.seed_id,  # peer or LLM alike: what a reviewer may propose never hints the source
                      alt_parent_ids=parent_ids or [ROOT_SPEC_ID])


def _order_key(item: ReviewItem) -> str:
    return hashlib.sha256(item.key.encode()).hexdigest()


@judges_actor
def review_queue(*, session: Session, actor: User, dataset_id: int) -> ReviewQueue:
    """Everything to judge on a dataset, with the actor's own votes (blinding and stage checked)."""
    dataset, review, can_vote = require_reviewer(session=session, actor=actor, dataset_id=dataset_id)
    analyses = {a.id: a for a in session.exec(select(Analysis).where(
        Analysis.dataset_id == dataset_id, Analysis.status == AnalysisStatus.SUBMITTED.value)).all()}
    ids = list(analyses)
    variables = list(session.exec(select(ConceptualVariable).where(col(ConceptualVariable.analysis_id).in_(ids))
                                  .order_by(col(ConceptualVariable.position))).all()) if ids else []
    transforms = list(session.exec(select(Transform).where(col(Transform.analysis_id).in_(ids))
                                   .order_by(col(Transform.position))).all()) if ids else []
    alternatives = list(session.exec(select(Alternative).where(Alternative.dataset_id == dataset_id)
                                     .order_by(col(Alternative.position), col(Alternative.created_at))).all())
    users = {u.id: u for u in session.exec(select(User)).all()}
    blind = not review.source_visible
    names = {t.id: neutral_title(_outputs(t)) if blind else t.spec_name for t in transforms} | {ROOT_SPEC_ID: "raw data"}
    firsts = {t.id: list(t.branches[0].get("dependencies", [])) if t.branches else [ROOT_SPEC_ID] for t in transforms}

    items: list[tuple[ReviewItem, int | None, str]] = []
    for aid, analysis in analyses.items():
        mine_t = [t for t in transforms if t.analysis_id == aid]
        mine_v = [v for v in variables if v.analysis_id == aid]
        items += [(i, analysis.annotator_id, "peer") for i in _transform_items(mine_t, mine_v, names, blind)]
        items += [(_variable_item(v, names, firsts), analysis.annotator_id, "peer") for v in mine_v]
    seeds = {v.id: v.concept for v in variables}
    for a in alternatives:
        if (a.extra or {}).get("merged_into") or not item_kind(a.kind).in_decision_graph:
            continue  # the other kinds' alternatives are reviewed on their kind's own page
        items.append((_alternative_item(a, seeds, names, blind), a.proposed_by_id, a.source))

    votes = session.exec(select(Vote).where(Vote.dataset_id == dataset_id)).all()
    voters: dict[tuple[str, str], set[int]] = defaultdict(set)
    mine: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for v in votes:
        voters[(v.target_kind, v.target_id)].add(v.annotator_id)
        if v.annotator_id == actor.id:
            mine[(v.target_kind, v.target_id)][v.question] = {
                "answer": v.answer, "skipped_reason": v.skipped_reason, "explanation": v.explanation}

    out = []
    for item, proposer_id, source in items:
        k = (item.target_kind, item.target_id)
        item.own = proposer_id is not None and proposer_id == actor.id
        item.my_votes, item.voters = mine.get(k, {}), len(voters.get(k, ()))
        if review.source_visible:
            item.source = source
            user = users.get(proposer_id) if proposer_id is not None else None
            if user is not None:
                item.proposer = (user.display_name or user.username
                                 if review.proposer_display == ProposerDisplay.NAMED.value else f"A{user.id}")
        elif item.own:
            item.proposer = "you"  # one's own work is never hidden from oneself
        out.append(item)
    if not review.source_visible:
        out.sort(key=_order_key)
    for n, item in enumerate(out, start=1):
        item.label = f"#{n}"
    labels = {i.target_id: i.label for i in out}
    for item in out:
        if item.duplicate_of:
            item.duplicate_label = labels.get(item.duplicate_of)
    return ReviewQueue(dataset_id=dataset_id, dataset_name=dataset.name, stage=review.stage, can_vote=can_vote,
                       source_visible=review.source_visible, proposer_display=review.proposer_display, items=out,
                       data_columns=original_columns(dataset), derived_columns=made_columns(transforms, alternatives))


def filter_items(items: list[ReviewItem], *, kind: str | None = None, source: str | None = None,
                 unvoted_only: bool = False, include_own: bool = True) -> list[ReviewItem]:
    """The items matching the reviewer's filters (``source`` applies only where it is visible)."""
    return [i for i in items
            if (kind is None or i.kind == kind)
            and (source is None or i.source == source)
            and (not unvoted_only or (not i.finished_by_me and not i.own))
            and (include_own or not i.own)]
