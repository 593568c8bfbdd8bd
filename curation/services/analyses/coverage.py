"""Expert coverage: for each analyst, the share of the final justifiable set they had thought of alone in
stage 1, the figure that shows why several analysts are needed.

The final justifiable set is every justifiable item (stage-1 decisions of all analysts and alternatives),
counted once per *idea*: a variable by its normalised concept, a transform by the value hash of its output
when the sandbox recorded one, else by its code without whitespace. An analyst covers an idea when one of
their own submitted stage-1 decisions is that idea.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlmodel import Session, select

from curation.ground_truth import Status
from curation.models import Alternative, Role, Transform, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.alternatives import output_hashes
from curation.services.ground_truth import GroundTruthItem, ground_truth, normal_concept

__all__ = ["Coverage", "CoverageRow", "expert_coverage"]


@dataclass
class CoverageRow:
    analyst: str  # display name (curators see names)
    user_id: int
    kind: str  # variable | transform | all
    covered: int
    total: int

    @property
    def share(self) -> float:
        return self.covered / self.total if self.total else 0.0


@dataclass
class Coverage:
    dataset_id: int
    ideas: dict[str, int] = field(default_factory=dict)  # kind -> size of the justifiable set
    rows: list[CoverageRow] = field(default_factory=list)
    union: dict[str, int] = field(default_factory=dict)  # kind -> ideas any analyst had in stage 1


def _idea(item: GroundTruthItem, hashes: dict[str, str]) -> str:
    if item.kind == "variable":
        return "v:" + normal_concept(item.concept)
    h = hashes.get(item.target_id)
    return "t:" + (h if h else re.sub(r"\s+", "", item.code))


@judges_actor
def expert_coverage(*, session: Session, actor: User, dataset_id: int) -> Coverage:
    require_role(actor, Role.CURATOR, Role.ADMIN)
    items = ground_truth(session=session, dataset_id=dataset_id)
    ids = [i.target_id for i in items]
    hashes: dict[str, str] = {}
    for t in session.exec(select(Transform).where(Transform.id.in_(ids))).all():  # type: ignore[attr-defined]
        outputs = sorted(output_hashes(t))
        if outputs:  # the same idea as an alternative computing the same column, however its code is written
            hashes[t.id] = outputs[0]
    for a in session.exec(select(Alternative).where(Alternative.id.in_(ids))).all():  # type: ignore[attr-defined]
        h = (a.extra or {}).get("value_hash")
        if h:
            hashes[a.id] = str(h)
    justifiable: dict[str, set[str]] = {"variable": set(), "transform": set()}
    own: dict[int, dict[str, set[str]]] = {}
    for i in items:
        if i.kind not in justifiable:  # DiscoveryBench hypotheses are not BLADE decisions: no coverage of them
            continue
        idea = _idea(i, hashes)
        if i.status == Status.JUSTIFIABLE.value:
            justifiable[i.kind].add(idea)
        if i.source == "decision" and i.proposer_id is not None:
            own.setdefault(i.proposer_id, {"variable": set(), "transform": set()})[i.kind].add(idea)
    report = Coverage(dataset_id, {k: len(v) for k, v in justifiable.items()})
    everyone: dict[str, set[str]] = {"variable": set(), "transform": set()}
    for uid in sorted(own):
        user = session.get(User, uid)
        name = (user.display_name or user.username) if user else f"A{uid}"
        total_cov = 0
        for kind in ("variable", "transform"):
            covered = own[uid][kind] & justifiable[kind]
            everyone[kind] |= covered
            total_cov += len(covered)
            report.rows.append(CoverageRow(name, uid, kind, len(covered), len(justifiable[kind])))
        report.rows.append(CoverageRow(name, uid, "all", total_cov, sum(len(v) for v in justifiable.values())))
    report.union = {k: len(v) for k, v in everyone.items()}
    return report
