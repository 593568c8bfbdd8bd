"""Stage-1 annotation: each analyst records conceptual variables, transforms and models, blind to peers.

Blinding is enforced here, not in the UI: an analyst sees a peer's stage-1 decisions only after submitting
their own analysis of the same dataset. Curators and admins see everything, except on a dataset they annotate
themselves and have not submitted (:mod:`curation.services.blinding`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
from pydantic import BaseModel, Field
from sqlalchemy import func, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, select

from curation.conditions import condition_problem
from curation.errors import (
    BlindingViolation,
    DecisionValidationError,
    NotFoundError,
    PermissionDenied,
    SubmittedAnalysisLocked,
)
from curation.models import (
    Analysis,
    AnalysisStatus,
    ConceptualVariable,
    Dataset,
    Role,
    StatModel,
    Transform,
    User,
    utcnow,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import is_blind
from curation.services.datasets import is_assigned, original_columns
from evaluation.specs import (
    ROOT_SPEC_ID,
    TRANSFORM_VERBS,
    VERBS_WITH_OUTPUT_COLUMN,
    Branch,
    ColumnMapping,
    ColumnOrigin,
    ColumnRef,
    VariableType,
)
from exports.blade_annotations import spec_name_from_specification as slug_from_specification

__all__ = [
    "AnalysisDecisions",
    "CheckNeeded",
    "ModelInput",
    "TransformInput",
    "VariableInput",
    "current_check",
    "ancestor_chain",
    "available_columns",
    "check_fingerprint",
    "checks_needed",
    "delete_model",
    "delete_transform",
    "editable_analysis",
    "find_analysis",
    "delete_variable",
    "get_analysis_decisions",
    "get_own_decisions",
    "list_peer_analyses",
    "model_dependencies",
    "pending_checks",
    "save_model",
    "save_transform",
    "require_assigned",
    "save_variable",
    "slug_from_specification",
    "submit_analysis",
]


def _clean_tags(tags: Sequence[str]) -> list[str]:
    """Trimmed, non-empty, first occurrence kept, in the order given."""
    return list(dict.fromkeys(t.strip() for t in tags if t.strip()))


class VariableInput(BaseModel):
    variable_type: VariableType
    concept: str
    rationale: str = ""
    moderates: str = ""
    columns: list[ColumnRef] = Field(default_factory=list)
    random_effect: bool = False
    tags: list[str] = Field(default_factory=list)


class TransformInput(BaseModel):
    spec_name: str = ""
    specification: str = ""
    verb: str
    code: str
    rationale: str = ""
    mapping: list[ColumnMapping] = Field(default_factory=list)
    branches: list[Branch] = Field(default_factory=lambda: [Branch(dependencies=[ROOT_SPEC_ID])])
    tags: list[str] = Field(default_factory=list)


class ModelInput(BaseModel):
    family: str
    specification: str = ""
    code: str
    rationale: str = ""
    columns: list[ColumnRef] = Field(default_factory=list)
    variable_ids: list[str] = Field(default_factory=list)
    transform_ids: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


@dataclass
class AnalysisDecisions:
    """An analysis with its decisions, in entry order."""

    analysis: Analysis
    dataset: Dataset
    annotator: User
    variables: list[ConceptualVariable] = field(default_factory=list)
    transforms: list[Transform] = field(default_factory=list)
    models: list[StatModel] = field(default_factory=list)

    @property
    def submitted(self) -> bool:
        return self.analysis.status == AnalysisStatus.SUBMITTED.value

    @property
    def transforms_by_id(self) -> dict[str, Transform]:
        return {t.id: t for t in self.transforms}


# ---------------------------------------------------------------------------------------------- access rules


def _dataset(session: Session, dataset_id: int) -> Dataset:
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    return dataset


@judges_actor
def require_assigned(*, session: Session, actor: User, dataset: Dataset) -> None:
    """Refuse an actor who may not annotate ``dataset`` (not an annotating role, archived, not assigned)."""
    require_role(actor, Role.ANALYST, Role.CURATOR, Role.ADMIN)
    if dataset.archived_at is not None:
        raise PermissionDenied(
            f"The dataset '{dataset.name}' is archived and cannot be annotated; a curator can restore it "
            "on the Datasets page."
        )
    if not is_assigned(session=session, user_id=actor.id or 0, dataset_id=dataset.id or 0):
        raise PermissionDenied(
            f"You are not assigned to annotate '{dataset.name}'; an admin assigns analysts to datasets."
        )


def find_analysis(*, session: Session, dataset_id: int, user_id: int) -> Analysis | None:
    """The user's own analysis of the dataset, if they started one."""
    return session.exec(
        select(Analysis).where(Analysis.dataset_id == dataset_id, Analysis.annotator_id == user_id)
    ).first()


def _has_submitted(session: Session, dataset_id: int, user_id: int) -> bool:
    analysis = find_analysis(session=session, dataset_id=dataset_id, user_id=user_id)
    return analysis is not None and analysis.status == AnalysisStatus.SUBMITTED.value


def _locked_analysis(session: Session, dataset_id: int, user_id: int) -> Analysis:
    """The user's analysis of the dataset, created if needed and locked until the transaction ends.

    Two browser tabs of one analyst are two threads saving at the same moment. The row is created with
    ``INSERT ... ON CONFLICT DO NOTHING`` (the loser waits for the winner and finds its row), then locked by
    a no-op ``UPDATE``: a row lock on PostgreSQL and the database write lock on SQLite, held to the commit.
    Everything the caller reads afterwards (positions, names already taken, the status) is current, so the
    saves land one after the other with unique positions, in the order the locks were granted.
    """
    dialect = session.get_bind().dialect.name
    insert = {"postgresql": postgresql_insert, "sqlite": sqlite_insert}.get(dialect)
    if insert is None:  # pragma: no cover - forkpaths runs on SQLite and PostgreSQL only
        raise RuntimeError(f"unsupported database {dialect!r}")
    session.execute(
        insert(Analysis)  # both dialects' Insert have on_conflict_do_nothing; the union type hides it from mypy
        .values(dataset_id=dataset_id, annotator_id=user_id, status=AnalysisStatus.DRAFT.value, created_at=utcnow())
        .on_conflict_do_nothing(index_elements=["dataset_id", "annotator_id"])  # type: ignore[attr-defined]
    )
    session.execute(
        update(Analysis)
        .where(Analysis.dataset_id == dataset_id, Analysis.annotator_id == user_id)  # type: ignore[arg-type]
        .values(status=Analysis.status)
        .execution_options(synchronize_session=False)
    )
    return session.exec(
        select(Analysis)
        .where(Analysis.dataset_id == dataset_id, Analysis.annotator_id == user_id)
        .execution_options(populate_existing=True)  # the status another tab may just have changed
    ).one()


@judges_actor
def editable_analysis(*, session: Session, actor: User, dataset_id: int) -> Analysis:
    """The actor's own analysis of the dataset, locked for this transaction, refused once submitted."""
    dataset = _dataset(session, dataset_id)
    require_assigned(session=session, actor=actor, dataset=dataset)
    analysis = _locked_analysis(session, dataset_id, actor.id or 0)
    if analysis.status == AnalysisStatus.SUBMITTED.value:
        raise SubmittedAnalysisLocked(
            f"Your analysis of '{dataset.name}' was submitted and is locked; it can no longer be edited."
        )
    return analysis


def _load(session: Session, analysis: Analysis) -> AnalysisDecisions:
    def rows(model: Any) -> list[Any]:
        return list(
            session.exec(
                select(model).where(model.analysis_id == analysis.id).order_by(model.position, model.created_at)
            ).all()
        )

    annotator = session.get(User, analysis.annotator_id)
    assert annotator is not None
    return AnalysisDecisions(
        analysis=analysis,
        dataset=_dataset(session, analysis.dataset_id),
        annotator=annotator,
        variables=rows(ConceptualVariable),
        transforms=rows(Transform),
        models=rows(StatModel),
    )


@judges_actor
def get_own_decisions(*, session: Session, actor: User, dataset_id: int) -> AnalysisDecisions | None:
    """The actor's own analysis of a dataset (``None`` when nothing was recorded yet)."""
    dataset = _dataset(session, dataset_id)
    require_assigned(session=session, actor=actor, dataset=dataset)
    analysis = find_analysis(session=session, dataset_id=dataset_id, user_id=actor.id or 0)
    return None if analysis is None else _load(session, analysis)


def _check_may_see(session: Session, actor: User, analysis: Analysis) -> None:
    if analysis.annotator_id == actor.id:
        return
    if actor.role in (Role.CURATOR.value, Role.ADMIN.value):
        require_role(actor, Role.CURATOR, Role.ADMIN)
        if is_blind(session=session, actor=actor, dataset_id=analysis.dataset_id):
            raise BlindingViolation(
                "Peers' stage-1 decisions stay hidden until you submit your own analysis of this dataset."
            )
        return
    require_role(actor, Role.ANALYST)
    if not _has_submitted(session, analysis.dataset_id, actor.id or 0):
        raise BlindingViolation(
            "Peers' stage-1 decisions stay hidden until you submit your own analysis of this dataset."
        )


@judges_actor
def get_analysis_decisions(*, session: Session, actor: User, analysis_id: int) -> AnalysisDecisions:
    """Any analysis the actor may see: their own, any for curators/admins, peers' only after submitting."""
    analysis = session.get(Analysis, analysis_id)
    if analysis is None:
        raise NotFoundError(f"There is no analysis with id {analysis_id}.")
    _check_may_see(session, actor, analysis)
    return _load(session, analysis)


@judges_actor
def list_peer_analyses(*, session: Session, actor: User, dataset_id: int) -> list[AnalysisDecisions]:
    """Every other analyst's analysis of a dataset, subject to blinding."""
    dataset = _dataset(session, dataset_id)
    if actor.role == Role.ANALYST.value:
        require_role(actor, Role.ANALYST)
        if not _has_submitted(session, dataset_id, actor.id or 0):
            raise BlindingViolation(
                f"Peers' stage-1 decisions on '{dataset.name}' stay hidden until you submit your own analysis."
            )
    else:
        require_role(actor, Role.CURATOR, Role.ADMIN)
        if is_blind(session=session, actor=actor, dataset_id=dataset_id):
            raise BlindingViolation(
                f"Peers' stage-1 decisions on '{dataset.name}' stay hidden until you submit your own analysis."
            )
    analyses = session.exec(
        select(Analysis).where(Analysis.dataset_id == dataset_id, Analysis.annotator_id != actor.id)
    ).all()
    return [_load(session, a) for a in analyses]


# -------------------------------------------------------------------------------------------- column catalogue


def available_columns(
    dataset: Dataset, transforms: Sequence[Transform], *, exclude_transform: str | None = None
) -> list[ColumnRef]:
    """Original columns of the dataset, then every column the analysis's transforms derive."""
    cols = [ColumnRef(name=c, origin=ColumnOrigin.ORIGINAL) for c in original_columns(dataset)]
    seen: set[tuple[str, str | None]] = {(c.name, None) for c in cols}
    for t in transforms:
        if t.id == exclude_transform:
            continue
        for m in t.mapping:
            out = m.get("output") or ""
            if out and (out, t.id) not in seen:
                seen.add((out, t.id))
                cols.append(ColumnRef(name=out, origin=ColumnOrigin.DERIVED, producer_id=t.id))
    return cols


def _validate_columns(
    columns: Sequence[ColumnRef], dataset: Dataset, transforms: Sequence[Transform], *, what: str
) -> None:
    originals = set(original_columns(dataset))
    derived = {(c.name, c.producer_id) for c in available_columns(dataset, transforms) if c.producer_id}
    for col in columns:
        if col.origin == ColumnOrigin.ORIGINAL and col.name not in originals:
            raise DecisionValidationError(f"{what}: column '{col.name}' is not a column of '{dataset.name}'.")
        if col.origin == ColumnOrigin.DERIVED and (col.name, col.producer_id) not in derived:
            raise DecisionValidationError(
                f"{what}: derived column '{col.name}' is not produced by any of your transforms."
            )


# ----------------------------------------------------------------------------------------- conceptual variables


def _next_position(session: Session, model: Any, analysis_id: int) -> int:
    current = session.exec(select(func.max(model.position)).where(model.analysis_id == analysis_id)).one()
    return int(current or 0) + 1


@judges_actor
def save_variable(
    *, session: Session, actor: User, dataset_id: int, data: VariableInput, variable_id: str | None = None
) -> ConceptualVariable:
    """Create or update one of the actor's conceptual variables."""
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset_id)
    decisions = _load(session, analysis)
    concept = data.concept.strip()
    if not concept:
        raise DecisionValidationError("Conceptual variable: the concept is empty; say what the variable is.")
    if re.fullmatch(r"[\d.\s]+", concept):
        raise DecisionValidationError(f"Conceptual variable: the concept '{concept}' is a number, not a concept.")
    if any(v.concept.strip().lower() == concept.lower() and v.id != variable_id for v in decisions.variables):
        raise DecisionValidationError(f"Conceptual variable: you already have a variable called '{concept}'.")
    vtype = data.variable_type
    if vtype in (VariableType.CONTROL, VariableType.MODERATOR) and not data.rationale.strip():
        raise DecisionValidationError(
            f"Conceptual variable '{concept}': a {vtype.value.lower()} needs a rationale (why control for it)."
        )
    if vtype == VariableType.MODERATOR and not data.moderates.strip():
        raise DecisionValidationError(f"Conceptual variable '{concept}': say what the moderator moderates.")
    if not data.columns:
        raise DecisionValidationError(
            f"Conceptual variable '{concept}': choose at least one column that operationalises it."
        )
    for col in data.columns:
        if not col.rationale.strip():
            raise DecisionValidationError(
                f"Conceptual variable '{concept}': column '{col.name}' needs a rationale (why this column)."
            )
    _validate_columns(data.columns, decisions.dataset, decisions.transforms, what=f"Variable '{concept}'")

    if variable_id is None:
        var = ConceptualVariable(
            analysis_id=analysis.id or 0,
            variable_type="",
            concept="",
            position=_next_position(session, ConceptualVariable, analysis.id or 0),
        )
    else:
        var = _own_row(session, ConceptualVariable, variable_id, analysis)
    is_moderator = vtype == VariableType.MODERATOR
    var.variable_type = VariableType.CONTROL.value if is_moderator else vtype.value
    var.interaction = is_moderator
    var.moderates = data.moderates.strip() if is_moderator else ""
    var.concept = concept
    var.rationale = data.rationale.strip()
    var.columns = [c.model_dump(mode="json") for c in data.columns]
    var.random_effect = data.random_effect
    var.tags = _clean_tags(data.tags)
    var.updated_at = utcnow()
    session.add(var)
    session.flush()
    return var


def _own_row(session: Session, model: Any, row_id: str, analysis: Analysis) -> Any:
    row = session.get(model, row_id)
    if row is None or row.analysis_id != analysis.id:
        raise NotFoundError(f"There is no such decision ({row_id}) in your analysis.")
    return row


@judges_actor
def delete_variable(*, session: Session, actor: User, dataset_id: int, variable_id: str) -> None:
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset_id)
    var = _own_row(session, ConceptualVariable, variable_id, analysis)
    for m in _load(session, analysis).models:
        if variable_id in m.variable_ids:
            m.variable_ids = [v for v in m.variable_ids if v != variable_id]
            session.add(m)
    session.delete(var)
    session.flush()


# ------------------------------------------------------------------------------------------------- transforms


def _parents_graph(transforms: Sequence[Transform]) -> nx.DiGraph:
    g: nx.DiGraph = nx.DiGraph()
    g.add_node(ROOT_SPEC_ID)
    for t in transforms:
        g.add_node(t.id)
        for b in t.branches:
            for dep in b.get("dependencies", []):
                g.add_edge(dep, t.id)
    return g


@judges_actor
def save_transform(
    *,
    session: Session,
    actor: User,
    dataset_id: int,
    data: TransformInput,
    transform_id: str | None = None,
    check: dict[str, Any] | None = None,
) -> Transform:
    """Create or update one of the actor's transforms; ``check`` is a sanity-check result for ``data.code``."""
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset_id)
    decisions = _load(session, analysis)
    others = [t for t in decisions.transforms if t.id != transform_id]
    spec_name = (data.spec_name.strip() or slug_from_specification(data.specification)).strip()
    label = f"Transform '{spec_name or data.specification[:40]}'"
    if not spec_name:
        raise DecisionValidationError("Transform: give it a name (or a specification to derive the name from).")
    if any(t.spec_name == spec_name for t in others):
        raise DecisionValidationError(f"{label}: you already have a transform with this name.")
    if data.verb not in TRANSFORM_VERBS:
        raise DecisionValidationError(f"{label}: '{data.verb}' is not one of BLADE's verbs {list(TRANSFORM_VERBS)}.")
    if not data.code.strip():
        raise DecisionValidationError(f"{label}: the code is empty; write pandas statements that act on df.")
    if data.verb in VERBS_WITH_OUTPUT_COLUMN and not any(m.output for m in data.mapping):
        raise DecisionValidationError(f"{label}: a {data.verb} must name the output column it creates.")
    originals = set(original_columns(decisions.dataset))
    known_cols = originals | {m.get("output") for t in others for m in t.mapping}
    for m in data.mapping:
        unknown = [c for c in m.inputs if c not in known_cols]
        if unknown:
            raise DecisionValidationError(
                f"{label}: input column(s) {unknown} are neither in the data nor derived by another transform."
            )
    branches = data.branches or [Branch(dependencies=[ROOT_SPEC_ID])]
    ids = {t.id for t in others} | {ROOT_SPEC_ID}
    for i, b in enumerate(branches, start=1):
        if not b.dependencies:
            raise DecisionValidationError(f"{label}: alternative {i} has no parent; choose the raw data or transforms.")
        missing = [d for d in b.dependencies if d not in ids]
        if missing:
            raise DecisionValidationError(f"{label}: alternative {i} depends on unknown transform(s) {missing}.")
        problem = condition_problem(b.condition, {t.spec_name for t in others})
        if problem:
            raise DecisionValidationError(f"{label}: the condition of alternative {i} is wrong: {problem}.")
    if transform_id is None:
        row = Transform(
            analysis_id=analysis.id or 0,
            spec_name=spec_name,
            position=_next_position(session, Transform, analysis.id or 0),
        )
    else:
        row = _own_row(session, Transform, transform_id, analysis)
    graph = _parents_graph(others)
    for b in branches:
        for dep in b.dependencies:
            if dep != ROOT_SPEC_ID and row.id in graph and nx.has_path(graph, row.id, dep):
                raise DecisionValidationError(
                    f"{label}: depending on '{_name(others, dep)}' would make a cycle (it comes after this one)."
                )
    row.spec_name = spec_name
    row.specification = data.specification.strip()
    row.verbs = [data.verb]
    row.code = data.code
    row.rationale = data.rationale.strip()
    row.mapping = [m.model_dump(mode="json") for m in data.mapping]
    row.branches = [b.model_dump(mode="json") for b in branches]
    row.tags = _clean_tags(data.tags)
    _keep_check(row, data.code, check)
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return row


def _check_for(code: str, *candidates: dict[str, Any] | None) -> dict[str, Any] | None:
    """The sanity-check result to keep with saved code: a check vouches only for the code it ran (it records
    that code), so the new check or the one already stored, whichever ran exactly ``code``; else none."""
    return next((c for c in candidates if c and c.get("code") == code and not c.get("stale")), None)


def current_check(row: Transform | StatModel) -> dict[str, Any] | None:
    """The decision's last sanity check if it ran the decision's current code (what a form shows), else None."""
    check = row.last_check
    return check if check and check.get("code") == row.code and not check.get("stale") else None


def _keep_check(row: Transform | StatModel, code: str, check: dict[str, Any] | None) -> None:
    """Store the check that ran ``code`` (shown to the analyst) and, when it passed, its fingerprint: the
    submission gate compares that fingerprint with the code and parents the decision has when submitted."""
    kept = _check_for(code, check, row.last_check)
    if kept is None and row.last_check and row.last_check.get("code") not in (None, code):
        # edited after a check: remember only that one ran on older code (its output no longer applies), so
        # the analyst reads "checked on older code" rather than "never checked"
        kept = {"code": row.last_check["code"], "stale": True}
    row.last_check = kept
    passed = bool(kept and kept.get("ok") and kept.get("fingerprint"))
    row.passed_check_sha256 = str(kept["fingerprint"]) if kept and passed else None


def _name(transforms: Sequence[Transform], tid: str) -> str:
    return next((t.spec_name for t in transforms if t.id == tid), tid)


@judges_actor
def delete_transform(*, session: Session, actor: User, dataset_id: int, transform_id: str) -> None:
    """Delete a transform nothing else builds on; otherwise say what depends on it."""
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset_id)
    decisions = _load(session, analysis)
    row = _own_row(session, Transform, transform_id, analysis)
    children = [t.spec_name for t in decisions.transforms if any(transform_id in b.get("dependencies", []) for b in t.branches)]
    users = [v.concept for v in decisions.variables if any(c.get("producer_id") == transform_id for c in v.columns)]
    models = [
        m.specification or m.family
        for m in decisions.models
        if transform_id in m.transform_ids or any(c.get("producer_id") == transform_id for c in m.columns)
    ]
    if children or users or models:
        parts = []
        if children:
            parts.append(f"transforms {children}")
        if users:
            parts.append(f"variables {users}")
        if models:
            parts.append(f"models {models}")
        raise DecisionValidationError(
            f"Transform '{row.spec_name}' is used by {', '.join(parts)}; change or delete those first."
        )
    session.delete(row)
    session.flush()


def ancestor_chain(transforms_by_id: dict[str, Transform], dependencies: Sequence[str]) -> list[Transform]:
    """The transforms that must run before a step with these parents, in a valid order.

    Each ancestor is reached through its first alternative (branch); shared ancestors run once.
    """
    order: list[Transform] = []
    seen: set[str] = set()

    def visit(tid: str, stack: tuple[str, ...]) -> None:
        if tid == ROOT_SPEC_ID or tid in seen:
            return
        if tid in stack:
            raise DecisionValidationError("The transforms' parents form a cycle.")
        t = transforms_by_id.get(tid)
        if t is None:
            raise DecisionValidationError(f"Unknown parent transform {tid}.")
        first = t.branches[0]["dependencies"] if t.branches else []
        for dep in first:
            visit(dep, (*stack, tid))
        seen.add(tid)
        order.append(t)

    for dep in dependencies:
        visit(dep, ())
    return order


def check_fingerprint(code: str, parents: Sequence[Transform]) -> str:
    """SHA-256 of a step's code and of the code of the transforms it runs after, in run order: a passing check
    vouches for exactly this, so editing the step or any transform before it asks for a new check."""
    payload = json.dumps({"code": code, "parents": [[t.id, t.code] for t in parents]}, sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def model_dependencies(transform_ids: Sequence[str], columns: Sequence[dict[str, Any] | ColumnRef]) -> list[str]:
    """The transforms a model runs after: the ones chosen, then the producers of its derived columns."""
    out = list(transform_ids)
    for c in columns:
        producer = c.producer_id if isinstance(c, ColumnRef) else c.get("producer_id")
        if producer and producer not in out:
            out.append(producer)
    return out


@dataclass(frozen=True)
class CheckNeeded:
    """A transform or model whose current code has no passing sanity check."""

    kind: str  # "transform" | "model"
    decision_id: str
    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} '{self.name}' ({self.reason})"


def _check_status(row: Transform | StatModel, parents: Sequence[str], by_id: dict[str, Transform]) -> str | None:
    """Why ``row`` still needs a sanity check, or None when its current code and parents passed one."""
    check = row.last_check or {}
    if not check:
        return "never checked"
    if check.get("code") != row.code:  # edited since: the check that ran (passed or not) was on other code
        return "checked on older code"
    if not check.get("ok"):
        return "its check failed"
    try:
        chain = ancestor_chain(by_id, parents)
    except DecisionValidationError:
        return "its parent transforms cannot be resolved"
    if row.passed_check_sha256 != check_fingerprint(row.code, chain):
        return "a transform it runs after changed since its check"
    return None


def pending_checks(decisions: AnalysisDecisions) -> list[CheckNeeded]:
    """The transforms and models of loaded decisions that still need a passing check (no database access)."""
    by_id = decisions.transforms_by_id
    out: list[CheckNeeded] = []
    for t in decisions.transforms:
        first = t.branches[0].get("dependencies", []) if t.branches else []
        reason = _check_status(t, first, by_id)
        if reason:
            out.append(CheckNeeded("transform", t.id, t.spec_name, reason))
    for m in decisions.models:
        reason = _check_status(m, model_dependencies(m.transform_ids, m.columns), by_id)
        if reason:
            out.append(CheckNeeded("model", m.id, m.specification or m.family, reason))
    return out


@judges_actor
def checks_needed(*, session: Session, actor: User, dataset_id: int) -> list[CheckNeeded]:
    """The actor's transforms and models that must pass a sanity check (on their current code) before submitting."""
    decisions = get_own_decisions(session=session, actor=actor, dataset_id=dataset_id)
    return [] if decisions is None else pending_checks(decisions)


# ----------------------------------------------------------------------------------------------------- models


@judges_actor
def save_model(
    *,
    session: Session,
    actor: User,
    dataset_id: int,
    data: ModelInput,
    model_id: str | None = None,
    check: dict[str, Any] | None = None,
) -> StatModel:
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset_id)
    decisions = _load(session, analysis)
    family = data.family.strip()
    label = f"Model '{data.specification.strip() or family}'"
    if not family:
        raise DecisionValidationError("Model: choose the model family.")
    if not data.code.strip():
        raise DecisionValidationError(
            f"{label}: the code is empty; e.g. model = smf.ols('y ~ x', data=df).fit()"
        )
    _validate_columns(data.columns, decisions.dataset, decisions.transforms, what=label)
    var_ids = {v.id for v in decisions.variables}
    unknown_vars = [v for v in data.variable_ids if v not in var_ids]
    if unknown_vars:
        raise DecisionValidationError(f"{label}: unknown conceptual variable(s) {unknown_vars}.")
    t_ids = {t.id for t in decisions.transforms}
    unknown_t = [t for t in data.transform_ids if t not in t_ids]
    if unknown_t:
        raise DecisionValidationError(f"{label}: unknown transform(s) {unknown_t}.")
    if model_id is None:
        row = StatModel(analysis_id=analysis.id or 0, position=_next_position(session, StatModel, analysis.id or 0))
    else:
        row = _own_row(session, StatModel, model_id, analysis)
    row.family = family
    row.specification = data.specification.strip() or family
    row.spec_name = slug_from_specification(row.specification)
    row.code = data.code
    row.rationale = data.rationale.strip()
    row.columns = [c.model_dump(mode="json") for c in data.columns]
    row.variable_ids = list(data.variable_ids)
    row.transform_ids = list(data.transform_ids)
    row.tags = _clean_tags(data.tags)
    _keep_check(row, data.code, check)
    row.updated_at = utcnow()
    session.add(row)
    session.flush()
    return row


@judges_actor
def delete_model(*, session: Session, actor: User, dataset_id: int, model_id: str) -> None:
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset_id)
    session.delete(_own_row(session, StatModel, model_id, analysis))
    session.flush()


# ------------------------------------------------------------------------------------------------- submission


@judges_actor
def submit_analysis(*, session: Session, actor: User, dataset_id: int) -> Analysis:
    """Lock the actor's stage-1 analysis. It needs an IV, a DV and a model, and every transform and model must
    have passed its sanity check on its current code, after its parents' current code."""
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset_id)
    decisions = _load(session, analysis)
    problems = []
    if not any(v.variable_type == VariableType.DV.value for v in decisions.variables):
        problems.append("no dependent variable (DV)")
    if not any(v.variable_type == VariableType.IV.value for v in decisions.variables):
        problems.append("no independent variable (IV)")
    if not decisions.models:
        problems.append("no statistical model")
    unchecked = pending_checks(decisions)
    if unchecked:
        problems.append("these need a passing sanity check on their current code: "
                        + "; ".join(str(c) for c in unchecked))
    if problems:
        raise DecisionValidationError(
            f"Your analysis of '{decisions.dataset.name}' cannot be submitted yet: {', '.join(problems)}."
        )
    analysis.status = AnalysisStatus.SUBMITTED.value
    analysis.submitted_at = utcnow()
    session.add(analysis)
    session.flush()
    return analysis
