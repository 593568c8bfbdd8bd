"""MCQs generated from the ground-truth statuses, following BLADE's kinds (blade-reference 5.1, 5.3).

* **Transform MCQs**, per conceptual variable C that is itself justifiable. Options are the code of a stage-1
  variable's transform path (the path's codes joined in run order, as BLADE built its human options) or of an
  alternative transform. ``select_pos``: the key is justifiable and operationalises C; distractors are transforms
  voted unjustifiable for C, then justifiable transforms written for *another* variable (BLADE's easier
  negatives). ``select_neg``: the key is a transform voted unjustifiable for C, or (when C has none) one that
  operationalises another variable; distractors are justifiable transforms for C.
* **Variable MCQs**: ``select_neg`` keys are variables voted unjustifiable (``not_derivable`` when most voters said
  it cannot be derived from the data), distractors justifiable variables; ``select_pos`` the other way round.

Contested and unjudged items are never options, so never keys. Every option records its provenance (the item,
its transform path, its votes, the rule or meeting outcome behind its status) and why it is the key or a
distractor. Generation is deterministic for a seed: candidates are sorted before a seeded ``random.Random``
picks and shuffles.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sqlmodel import Session, select

from curation.errors import CurationError, NotFoundError
from curation.ground_truth import Status
from curation.models import IMPORTED_USERNAME, Dataset, Role, User
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
from curation.services.mcq_audit import MCQS_BLIND
from curation.services.mcq_store import StoredMCQ, add_mcq, dataset_mcqs

__all__ = ["GENERATOR", "GenerationReport", "MCQGenerationError", "MCQSettings", "build_mcqs", "generate_mcqs"]

GENERATOR = "forkpaths-mcq@1"


class MCQGenerationError(CurationError):
    """Too few judged items to build any MCQ; the message says what is missing."""


@dataclass(frozen=True)
class MCQSettings:
    seed: int = 0
    max_options: int = 4  # transform MCQs: 2-4 options (BLADE: mostly 4)
    variable_options: int = 3  # variable MCQs: BLADE's cvar MCQs all have 3
    per_concept: int = 3  # at most this many MCQs of each mc_type per conceptual variable
    variable_mcqs: int = 5  # at most this many variable MCQs of each mc_type


@dataclass
class _Option:
    text: str
    rationale: str
    kind: str  # variable | transform
    concept: str  # normalised concept it is / operationalises
    status: str
    source_kind: str  # path | alternative | variable
    source_ids: list[str]
    is_llm: bool
    items: list[GroundTruthItem]  # the items whose statuses make this option's status
    negative_reason: str = ""

    @property
    def ident(self) -> str:
        return f"{self.source_kind}:{'/'.join(self.source_ids)}"


@dataclass
class GenerationReport:
    dataset: str
    seed: int
    rule: str
    mcqs: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    created: int = 0
    kept: int = 0
    removed: int = 0

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for q in self.mcqs:
            out[f"{q['kind']}/{q['mc_type']}"] += 1
        return dict(sorted(out.items()))


def _worst(statuses: list[str]) -> str:
    for s in (Status.UNJUSTIFIABLE.value, Status.CONTESTED.value, Status.UNJUDGED.value):
        if s in statuses:
            return s
    return Status.JUSTIFIABLE.value


def _transform_options(items: list[GroundTruthItem]) -> list[_Option]:
    by_id = {i.target_id: i for i in items if i.kind == "transform"}
    out = []
    for v in (i for i in items if i.target_kind == "variable" and i.path_ids):
        path = [by_id[t] for t in v.path_ids if t in by_id]
        if not path:
            continue
        out.append(_Option("\n".join(t.code.rstrip("\n") for t in path) + "\n", "\n".join(t.rationale for t in path),
                           "transform", normal_concept(v.concept), _worst([t.status for t in path]), "path",
                           [t.target_id for t in path], False, path))
    for a in (i for i in items if i.target_kind == "alternative" and i.kind == "transform" and i.code.strip()):
        out.append(_Option(a.code, a.rationale, "transform", normal_concept(a.concept), a.status, "alternative",
                           [a.target_id], a.source == "llm", [a]))
    return out


def _variable_options(items: list[GroundTruthItem]) -> list[_Option]:
    out = []
    for v in (i for i in items if i.kind == "variable"):
        derive = v.answers("can_derive_from_data")
        reason = "not_derivable" if derive and derive.count("no") * 2 > len(derive) else "voted_unjustifiable"
        out.append(_Option(v.cvar_str, v.rationale, "variable", normal_concept(v.concept), v.status,
                           "variable" if v.target_kind == "variable" else "alternative", [v.target_id],
                           v.source == "llm", [v], reason if v.status == Status.UNJUSTIFIABLE.value else ""))
    return out


def _dedupe(options: list[_Option]) -> list[_Option]:
    seen: set[str] = set()
    out = []
    for o in sorted(options, key=lambda o: o.ident):
        key = " ".join(o.text.split())
        if key not in seen:
            seen.add(key)
            out.append(o)
    return out


def _why(option: _Option, role: str, mc_type: str, concept: str) -> str:
    if role == "key" and mc_type == "select_pos":
        return f"justifiable ({option.items[-1].why}) and operationalises {concept}" if option.kind == "transform" \
            else f"justifiable ({option.items[-1].why})"
    if option.negative_reason == "wrong_variable":
        return f"operationalises a different variable ('{option.items[-1].concept}'), not {concept}"
    if option.negative_reason == "not_derivable":
        return f"voted not derivable from the data ({option.items[-1].why})"
    if option.negative_reason == "voted_unjustifiable":
        bad = next((i for i in option.items if i.status == Status.UNJUSTIFIABLE.value), option.items[-1])
        return f"voted unjustifiable ({bad.label or bad.concept}: {bad.why})"
    return f"justifiable ({option.items[-1].why}), so not the least justifiable"


def _provenance(option: _Option, role: str, why: str, pseudo: dict[int, str]) -> dict[str, Any]:
    return {
        "role": role, "why": why, "status": option.status, "concept": option.concept,
        "items": [{"target_kind": i.target_kind, "target_id": i.target_id, "kind": i.kind, "source": i.source,
                   "status": i.status, "basis": i.basis, "rule": i.result.rule if i.result else "",
                   "why": i.why, "meeting": i.meeting, "path": i.path_ids,
                   "tally": {"justifiable": i.result.justifiable, "unjustifiable": i.result.unjustifiable,
                             "unsure": i.result.unsure} if i.result else {},
                   "votes": [{"annotator": pseudo.get(v["annotator_id"], f"A{v['annotator_id']}"),
                              "question": v["question"], "answer": v["answer"]} for v in i.votes]}
                  for i in option.items],
    }


def _mcq(kind: str, mc_type: str, concept: str, key: _Option, distractors: list[_Option], rng: random.Random,
         dataset: str, settings: MCQSettings, rule: str, pseudo: dict[int, str]) -> dict[str, Any]:
    options = [key, *distractors]
    rng.shuffle(options)
    label = concept if kind == "transform" else "the analysis"
    rendered = []
    for o in options:
        role = "key" if o is key else "distractor"
        why = _why(o, role, mc_type, label)
        rendered.append({"text": o.text, "rationale": o.rationale, "is_llm_generated": o.is_llm,
                         "source_kind": o.source_kind, "source_ids": o.source_ids,
                         "negative_reason": o.negative_reason if (role == "key") == (mc_type == "select_neg") else "",
                         "extra": {"provenance": _provenance(o, role, why, pseudo)}})
    ident = json.dumps([dataset, settings.seed, kind, mc_type, concept, key.ident, sorted(o.ident for o in options)])
    return {"id": hashlib.sha256(ident.encode()).hexdigest()[:32], "kind": kind, "mc_type": mc_type,
            "concept": concept if kind == "transform" else "", "options": rendered,
            "correct_index": options.index(key),
            "extra": {"source": "generated", "generator": GENERATOR, "seed": settings.seed, "rule": rule}}


def _sample(rng: random.Random, pool: list[_Option], n: int) -> list[_Option]:
    return rng.sample(pool, min(n, len(pool)))


def build_mcqs(items: list[GroundTruthItem], *, dataset: str, settings: MCQSettings, rule: str,
               pseudo: dict[int, str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """The MCQs (release-shaped dicts) and notes on what could not be built. Pure and deterministic."""
    rng = random.Random(settings.seed)
    pseudo = pseudo or {}
    mcqs: list[dict[str, Any]] = []
    notes: list[str] = []
    J, U = Status.JUSTIFIABLE.value, Status.UNJUSTIFIABLE.value
    # ---- transform MCQs, per justifiable conceptual variable
    transforms = _transform_options(items)
    concepts: dict[str, str] = {}
    for v in items:
        if v.target_kind == "variable" and v.status == J:
            concepts.setdefault(normal_concept(v.concept), v.concept.strip())
    for c_norm, concept in sorted(concepts.items()):
        mine = [o for o in transforms if o.concept == c_norm]
        pos = _dedupe([o for o in mine if o.status == J])
        pos_text = {" ".join(o.text.split()) for o in pos}
        neg_same = [o for o in _dedupe([o for o in mine if o.status == U]) if " ".join(o.text.split()) not in pos_text]
        for o in neg_same:
            o.negative_reason = "voted_unjustifiable"
        others = []
        # easier negatives: justifiable transforms of a variable that is clearly another one (not "gender" for
        # "gender of children": BLADE's concept strings drift, and a near-namesake is no wrong variable)
        for o in _dedupe([o for o in transforms if not same_concept(o.concept, c_norm) and o.status == J]):
            if " ".join(o.text.split()) not in pos_text:
                others.append(_Option(**{**o.__dict__, "negative_reason": "wrong_variable"}))
        if not pos:
            notes.append(f"transform MCQs for '{concept}': no justifiable transform operationalises it "
                         f"({sum(o.status == Status.CONTESTED.value for o in mine)} contested, "
                         f"{sum(o.status == Status.UNJUDGED.value for o in mine)} unjudged, {len(neg_same)} unjustifiable)")
            continue
        if not neg_same and not others:
            notes.append(f"transform MCQs for '{concept}': nothing to set against its justifiable transforms "
                         "(no transform voted unjustifiable for it and no justifiable transform for another variable)")
            continue
        for key in _sample(rng, pos, settings.per_concept):
            wanted = settings.max_options - 1
            chosen = _sample(rng, neg_same, wanted)
            chosen += _sample(rng, others, wanted - len(chosen))
            mcqs.append(_mcq("transform", "select_pos", concept, key, chosen, rng, dataset, settings, rule, pseudo))
        neg_keys = _sample(rng, neg_same, settings.per_concept) or _sample(rng, others, 1)
        for key in neg_keys:
            mcqs.append(_mcq("transform", "select_neg", concept, key, _sample(rng, pos, settings.max_options - 1),
                             rng, dataset, settings, rule, pseudo))
    # ---- variable MCQs
    variables = _variable_options(items)
    vpos = _dedupe([o for o in variables if o.status == J])
    vneg = _dedupe([o for o in variables if o.status == U])
    if vpos and vneg:
        for key in _sample(rng, vneg, settings.variable_mcqs):
            mcqs.append(_mcq("variable", "select_neg", "", key, _sample(rng, vpos, settings.variable_options - 1),
                             rng, dataset, settings, rule, pseudo))
        for key in _sample(rng, vpos, settings.variable_mcqs):
            mcqs.append(_mcq("variable", "select_pos", "", key, _sample(rng, vneg, settings.variable_options - 1),
                             rng, dataset, settings, rule, pseudo))
    else:
        notes.append(f"variable MCQs: need at least one justifiable and one unjustifiable variable; there are "
                     f"{len(vpos)} justifiable and {len(vneg)} unjustifiable "
                     f"({sum(o.status == Status.CONTESTED.value for o in variables)} contested, "
                     f"{sum(o.status == Status.UNJUDGED.value for o in variables)} unjudged)")
    return mcqs, notes


def _pseudonyms(session: Session) -> dict[int, str]:
    return {u.id: ("BLADE" if u.username == IMPORTED_USERNAME else f"A{u.id}")
            for u in session.exec(select(User)).all() if u.id is not None}


@judges_actor
def generate_mcqs(*, session: Session, actor: User | None, dataset_id: int,
                  settings: MCQSettings | None = None) -> GenerationReport:
    """Generate and store MCQs for a dataset (curators and admins; ``actor`` None: the command line).

    Generated MCQs a curator has not reviewed yet are replaced; reviewed ones and imported ones are kept.
    Raises MCQGenerationError, storing nothing, when no MCQ can be built.
    """
    if actor is not None:
        require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    if actor is not None:
        refuse_if_blind(session=session, actor=actor, dataset=dataset.name, what=MCQS_BLIND)
    settings = settings or MCQSettings()
    rule = dataset_rule(session=session, dataset_id=dataset_id)
    items = ground_truth(session=session, dataset_id=dataset_id, rule=rule)
    built, notes = build_mcqs(items, dataset=dataset.name, settings=settings, rule=rule.key,
                              pseudo=_pseudonyms(session))
    if not built:
        by: dict[str, int] = defaultdict(int)
        for item in items:
            by[f"{item.kind} {item.status}"] += 1
        tally = ", ".join(f"{n} {k}" for k, n in sorted(by.items())) or "no decisions or alternatives at all"
        raise MCQGenerationError(
            f"No MCQ can be built for '{dataset.name}' yet: " + "; ".join(notes) + f". Items now: {tally}. "
            "Contested and unjudged items are never used; record votes or meeting outcomes first.")
    report = GenerationReport(dataset.name, settings.seed, rule.key, built, notes)
    existing = dataset_mcqs(session=session, dataset_id=dataset_id)
    kept_ids = set()
    for row in existing:
        if row.extra.get("source") != "generated":
            continue
        if row.review is not None:  # any review, even one reset to pending, keeps it
            kept_ids.add(row.id)
            report.kept += 1
        else:
            session.delete(row.row)
            report.removed += 1
    session.flush()
    last = max((r.position for r in existing), default=-1)
    for n, q in enumerate(built):
        if q["id"] in kept_ids:
            continue
        add_mcq(session=session, dataset_id=dataset_id, mcq_id=q["id"], question=q, position=last + 1 + n)
        report.created += 1
    session.flush()
    return report


def generated_mcqs(*, session: Session, dataset_id: int) -> list[StoredMCQ]:
    return dataset_mcqs(session=session, dataset_id=dataset_id)
