"""Inter-rater agreement on stage-2 votes: percent agreement, Fleiss' κ and Krippendorff's α (nominal).

A *unit* is one question about one item; its ratings are the current answers (yes / no / unsure) of the
analysts who voted, skipped questions being missing. Units with fewer than two ratings cannot show agreement
and are counted as dropped. Figures are given overall, per decision kind, per question and per source
(expert: stage-1 decisions and peers' alternatives; LLM: generated alternatives). Krippendorff's α comes from
the ``krippendorff`` package (the reference implementation of Castro's, tested against Krippendorff's own
examples); Fleiss' κ is a dozen lines, written out so its generalisation to unequal rater counts is explicit.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import krippendorff
import numpy as np
from sqlmodel import Session, col, select

from curation.errors import NotFoundError
from curation.models import Alternative, Dataset, Role, Stage, User, Vote
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.stages import dataset_stages, require_reviewer
from curation.services.votes import ANSWERS, VERDICT

__all__ = [
    "AgreementFigures",
    "AgreementReport",
    "SplitItem",
    "agreement_figures",
    "agreement_report",
    "fleiss_kappa",
    "krippendorff_alpha",
    "percent_agreement",
]

Ratings = Mapping[Hashable, Sequence[str]]  # unit -> the answers given


def _counts(units: Ratings, categories: Sequence[str]) -> list[list[int]]:
    return [[Counter(r)[c] for c in categories] for r in units.values() if len(r) >= 2]


def percent_agreement(units: Ratings) -> float | None:
    """Mean over units of the share of rater pairs that agree."""
    shares = []
    for r in units.values():
        n = len(r)
        if n >= 2:
            shares.append(sum(k * (k - 1) for k in Counter(r).values()) / (n * (n - 1)))
    return sum(shares) / len(shares) if shares else None


def fleiss_kappa(units: Ratings, categories: Sequence[str] = ANSWERS) -> float | None:
    """Fleiss' κ: (P̄ − P̄e) / (1 − P̄e), with each unit's P_i over its own number of raters.

    ``None`` when fewer than one unit has two ratings or when every rating is the same category (P̄e = 1,
    where κ is undefined: there is no variation to agree on).
    """
    table = _counts(units, categories)
    if not table:
        return None
    p_i = [sum(k * (k - 1) for k in row) / (sum(row) * (sum(row) - 1)) for row in table]
    total = sum(sum(row) for row in table)
    p_j = [sum(row[j] for row in table) / total for j in range(len(categories))]
    p_bar, p_e = sum(p_i) / len(p_i), sum(p * p for p in p_j)
    if math.isclose(p_e, 1.0):
        return None
    return (p_bar - p_e) / (1 - p_e)


def krippendorff_alpha(units: Ratings, categories: Sequence[str] = ANSWERS) -> float | None:
    """Krippendorff's α for nominal data, through the ``krippendorff`` package (``None`` when undefined)."""
    usable = [r for r in units.values() if len(r) >= 2]
    if not usable or len({a for r in usable for a in r}) < 2:
        return None
    index = {c: i for i, c in enumerate(categories)}
    value_counts = np.array([[Counter(r)[c] for c in categories] for r in usable], dtype=float)
    value = krippendorff.alpha(value_counts=value_counts, value_domain=list(range(len(index))),
                               level_of_measurement="nominal")
    return None if value is None or math.isnan(value) else float(value)


@dataclass
class AgreementFigures:
    scope: str  # overall | kind | question | source
    group: str
    items_used: int
    items_dropped: int
    ratings: int
    percent_agreement: float | None
    fleiss_kappa: float | None
    krippendorff_alpha: float | None


def agreement_figures(scope: str, group: str, units: Ratings) -> AgreementFigures:
    used = sum(len(r) >= 2 for r in units.values())
    return AgreementFigures(scope=scope, group=group, items_used=used, items_dropped=len(units) - used,
                            ratings=sum(len(r) for r in units.values()), percent_agreement=percent_agreement(units),
                            fleiss_kappa=fleiss_kappa(units), krippendorff_alpha=krippendorff_alpha(units))


@dataclass
class SplitItem:
    dataset: str
    target_kind: str
    target_id: str
    justifiable: int
    unjustifiable: int
    reasons: list[str] = field(default_factory=list)


@dataclass
class AgreementReport:
    datasets: list[str]
    rows: list[AgreementFigures]
    split: list[SplitItem]
    voters: int


def _source_of(session: Session, votes: Sequence[Vote]) -> dict[str, tuple[str, str]]:
    """target id -> (kind, source) for alternatives; decisions are experts' (kind from target_kind)."""
    ids = {v.target_id for v in votes if v.target_kind == "alternative"}
    if not ids:
        return {}
    alts = session.exec(select(Alternative).where(col(Alternative.id).in_(ids))).all()
    return {a.id: (a.kind, "LLM" if a.source == "llm" else "expert") for a in alts}


@judges_actor
def agreement_report(*, session: Session, actor: User, dataset_id: int | None = None) -> AgreementReport:
    """Agreement on one dataset's votes (anyone who may review it) or on every dataset past stage 1
    (``dataset_id`` None: curators and admins)."""
    if dataset_id is None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
        stages = dataset_stages(session=session)
        ids = [i for i, s in stages.items() if s != Stage.ANNOTATE.value]
        show_source = True
    else:
        _, review, _ = require_reviewer(session=session, actor=actor, dataset_id=dataset_id)
        ids = [dataset_id]
        # per-source figures would tell a source-blind reviewer how the LLM's items fare: curators only then
        show_source = review.source_visible or actor.role in (Role.CURATOR.value, Role.ADMIN.value)
    datasets = {d.id: d.name for d in session.exec(select(Dataset).where(col(Dataset.id).in_(ids))).all()}
    if dataset_id is not None and dataset_id not in datasets:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    votes = list(session.exec(select(Vote).where(col(Vote.dataset_id).in_(ids))).all()) if ids else []
    alt = _source_of(session, votes)
    groups: dict[tuple[str, str], dict[Hashable, list[str]]] = defaultdict(lambda: defaultdict(list))
    verdicts: dict[tuple[int, str, str], list[Vote]] = defaultdict(list)
    for v in votes:
        if v.answer is None:
            continue
        kind, source = alt.get(v.target_id, (v.target_kind, "expert"))
        unit = (v.target_kind, v.target_id, v.question)
        for scope, group in (("overall", "all"), ("kind", kind), ("question", v.question), ("source", source)):
            if scope == "source" and not show_source:
                continue
            groups[(scope, group)][unit].append(v.answer)
        if v.question == VERDICT:
            verdicts[(v.dataset_id, v.target_kind, v.target_id)].append(v)
    order = {"overall": 0, "kind": 1, "question": 2, "source": 3}
    rows = [agreement_figures(scope, group, units)
            for (scope, group), units in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))]
    split = []
    for (ds_id, kind, tid), vs in verdicts.items():
        yes, no = sum(v.answer == "yes" for v in vs), sum(v.answer == "no" for v in vs)
        if yes and no:
            split.append(SplitItem(datasets[ds_id], kind, tid, yes, no, [v.explanation for v in vs if v.explanation]))
    split.sort(key=lambda s: (-min(s.justifiable, s.unjustifiable) / (s.justifiable + s.unjustifiable),
                              s.dataset, s.target_id))
    return AgreementReport(datasets=sorted(datasets.values()), rows=rows, split=split,
                           voters=len({v.annotator_id for v in votes}))
