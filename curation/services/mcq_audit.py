"""The MCQ audit: questions whose key disagrees with the votes, on generated and imported MCQs alike.

Each option is resolved to the items behind it: through its recorded provenance (generated MCQs), else by its
text (imported MCQs keep no link): a variable option by BLADE's variable string, a transform option by its
code, compared without whitespace, against alternative transforms, single stage-1 transforms and stage-1
transform paths (the codes of a transform and its ancestors in run order, as BLADE built its human options).
Statuses are the *current* ones under the dataset's rule, so the audit also catches keys that later votes or
a meeting overturned.

Flags (a question can have several):

* ``key_missing``: the key is not one of the options;
* ``key_not_justifiable``: a select_pos ("most justifiable") key the votes call unjustifiable or contested;
* ``key_other_variable``: a select_pos transform key written for another conceptual variable;
* ``key_voted_justifiable``: a select_neg ("least justifiable") key voted justifiable for this variable;
* ``key_contested``: a select_neg key whose status is contested;
* ``distractor_also_justifiable`` / ``distractor_also_unjustifiable``: another option is as right as the key.

Keys that match no item cannot be checked; they are counted as unlinked, never flagged.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session

from curation.errors import NotFoundError
from curation.ground_truth import Status
from curation.models import Dataset, Role, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import refuse_if_blind
from curation.services.ground_truth import (
    GroundTruthItem,
    dataset_rule,
    ground_truth,
    normal_concept,
    same_concept,
)
from curation.services.mcq_store import StoredMCQ, dataset_mcqs

__all__ = ["AuditFinding", "AuditReport", "audit_mcqs", "resolve_options", "same_concept"]

J, U, C = Status.JUSTIFIABLE.value, Status.UNJUSTIFIABLE.value, Status.CONTESTED.value


@dataclass(frozen=True)
class ResolvedOption:
    status: str
    concept: str  # normalised
    items: tuple[str, ...]  # target keys


@dataclass
class AuditFinding:
    mcq_id: str
    kind: str
    mc_type: str
    concept: str
    flag: str
    option: int
    message: str


@dataclass
class AuditReport:
    dataset: str
    rule: str
    total: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    checked: int = 0  # questions whose key resolved to items
    unlinked_keys: int = 0
    unlinked_options: int = 0
    options: int = 0
    findings: list[AuditFinding] = field(default_factory=list)

    @property
    def flagged(self) -> int:
        return len({f.mcq_id for f in self.findings})

    def flag_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(f.flag for f in self.findings).items()))


MCQS_BLIND = "MCQs are built from their decisions."  # why a blind curator is refused them


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text or "")


def _worst(statuses: list[str]) -> str:
    for s in (U, C, Status.UNJUDGED.value):
        if s in statuses:
            return s
    return J


class _Index:
    def __init__(self, items: list[GroundTruthItem]) -> None:
        self.by_key = {i.key: i for i in items}
        self.variables: dict[str, list[GroundTruthItem]] = {}
        self.concepts: dict[str, list[GroundTruthItem]] = {}
        for i in (i for i in items if i.kind == "variable"):
            self.variables.setdefault(normal_concept(i.cvar_str), []).append(i)
            self.concepts.setdefault(normal_concept(i.concept), []).append(i)
        self.code: dict[str, list[list[GroundTruthItem]]] = {}
        stage1 = {i.target_id: i for i in items if i.target_kind == "transform"}
        for i in items:
            if i.kind != "transform":
                continue
            self.code.setdefault(_squash(i.code), []).append([i])
            chain = [stage1[t] for t in i.path_ids if t in stage1] if i.target_kind == "transform" else []
            if len(chain) > 1:
                self.code.setdefault(_squash("".join(t.code for t in chain)), []).append(chain)
        for v in (i for i in items if i.target_kind == "variable" and i.path_ids):
            chain = [stage1[t] for t in v.path_ids if t in stage1]
            if chain:
                self.code.setdefault(_squash("".join(t.code for t in chain)), []).append(
                    [*chain, _Concept(v)])  # type: ignore[list-item]

    def resolve(self, kind: str, option: dict[str, Any]) -> ResolvedOption | None:
        prov = ((option.get("extra") or {}).get("provenance") or {}).get("items")
        if prov:
            found = [self.by_key.get(f"{p['target_kind']}:{p['target_id']}") for p in prov]
            if all(found):
                items = [i for i in found if i is not None]
                return ResolvedOption(_worst([i.status for i in items]),
                                      (option.get("extra") or {}).get("provenance", {}).get("concept")
                                      or normal_concept(items[-1].concept), tuple(i.key for i in items))
        text = option.get("text") or ""
        if kind == "variable":
            matches = self.variables.get(normal_concept(text)) or []
            if not matches:
                return None
            return ResolvedOption(_worst([m.status for m in matches]), normal_concept(matches[0].concept),
                                  tuple(m.key for m in matches))
        chains = self.code.get(_squash(text))
        if not chains:
            return None
        chain = chains[0]
        concept_of = next((c.concept for c in chain if isinstance(c, _Concept)), None)
        steps = [c for c in chain if isinstance(c, GroundTruthItem)]
        return ResolvedOption(_worst([s.status for s in steps]),
                              concept_of or normal_concept(steps[-1].concept), tuple(s.key for s in steps))


class _Concept:
    """Marks the variable a stage-1 path operationalises inside an index chain."""

    def __init__(self, variable: GroundTruthItem) -> None:
        self.concept = normal_concept(variable.concept)


def resolve_options(*, session: Session, dataset_id: int, mcq: StoredMCQ) -> list[ResolvedOption | None]:
    index = _Index(ground_truth(session=session, dataset_id=dataset_id))
    return [index.resolve(mcq.kind, o) for o in mcq.options]


def _check(q: StoredMCQ, resolved: list[ResolvedOption | None], out: list[AuditFinding], known: set[str]) -> None:
    def flag(name: str, i: int, message: str) -> None:
        out.append(AuditFinding(q.id, q.kind, q.mc_type, q.concept, name, i, message))

    concept = normal_concept(q.concept)
    k = q.correct_index
    key = resolved[k]
    assert key is not None

    def same(r: ResolvedOption) -> bool | None:
        """Does the option operationalise the question's variable? None: cannot tell (its recorded concept,
        e.g. a truncated "interaction term between", would fit several of the dataset's variables)."""
        if q.kind == "variable" or normal_concept(r.concept) == concept:
            return True
        if sum(same_concept(r.concept, k) for k in known) > 1:
            return None
        return same_concept(r.concept, concept)

    if q.mc_type == "select_pos":
        if key.status != J:
            flag("key_not_justifiable", k, f"the 'most justifiable' key is {key.status} by the votes")
        if q.kind == "transform" and same(key) is False:
            flag("key_other_variable", k, f"the key operationalises '{key.concept}', not '{q.concept}'")
        for i, r in enumerate(resolved):
            if i != k and r is not None and r.status == J and same(r) is True:
                flag("distractor_also_justifiable", i, f"option {chr(65 + i)} is justifiable too")
    else:
        if same(key) is True and key.status == J:
            flag("key_voted_justifiable", k, "the 'least justifiable' key was voted justifiable"
                 + ("" if q.kind == "variable" else f" for '{q.concept}'"))
        elif same(key) is True and key.status == C:
            flag("key_contested", k, "the 'least justifiable' key is contested")
        for i, r in enumerate(resolved):
            if i != k and r is not None and r.status == U and same(r) is True:
                flag("distractor_also_unjustifiable", i, f"option {chr(65 + i)} was voted unjustifiable too")


@judges_actor
def audit_mcqs(*, session: Session, actor: User | None, dataset_id: int) -> AuditReport:
    """Audit every MCQ of a dataset (curators and admins; ``actor`` None: the command line)."""
    if actor is not None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    if actor is not None:
        refuse_if_blind(session=session, actor=actor, dataset=dataset.name, what=MCQS_BLIND)
    rule = dataset_rule(session=session, dataset_id=dataset_id)
    items = ground_truth(session=session, dataset_id=dataset_id, rule=rule)
    index = _Index(items)
    known = {normal_concept(i.concept) for i in items if i.target_kind == "variable"}
    report = AuditReport(dataset.name, rule.key)
    kinds: Counter[str] = Counter()
    for q in dataset_mcqs(session=session, dataset_id=dataset_id):
        report.total += 1
        kinds[f"{q.kind}/{q.mc_type}"] += 1
        if not 0 <= q.correct_index < len(q.options):
            report.findings.append(AuditFinding(q.id, q.kind, q.mc_type, q.concept, "key_missing", q.correct_index,
                                                "the key is not one of the options"))
            continue
        resolved = [index.resolve(q.kind, o) for o in q.options]
        report.options += len(resolved)
        report.unlinked_options += sum(r is None for r in resolved)
        if resolved[q.correct_index] is None:
            report.unlinked_keys += 1
            continue
        report.checked += 1
        _check(q, resolved, report.findings, known)
    report.by_kind = dict(sorted(kinds.items()))
    return report
