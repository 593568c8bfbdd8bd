"""What the three stages of curating DiscoveryBench hypotheses share: the input shape, its validation against
the data dictionary, the task and dataset lookups, and duplicate detection."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field
from sqlmodel import Session, col, select

from curation.errors import DecisionValidationError, NotFoundError
from curation.models import Alternative, Dataset, HypothesisProposal, HypothesisTask, HypothesisTaskStatus
from evaluation.tasks.hypotheses import HYPOTHESIS

__all__ = [
    "HypothesisInput",
    "HypothesisVariableInput",
    "dictionary_columns",
    "is_hypothesis_dataset",
    "same_hypothesis_as",
    "task_label",
    "task_of",
    "validated_payload",
]


class HypothesisVariableInput(BaseModel):
    """One variable of a hypothesis: a column of the data dictionary, or a derived column and how it is made."""

    name: str = ""
    column: str | None = Field(default=None, description="the data-dictionary column it is, when it is one")
    derived: str = Field(default="", description="how it is derived from the data, when it is no column as is")
    description: str = ""


class HypothesisInput(BaseModel):
    """A hypothesis as an analyst (or the LLM) writes it: DiscoveryBench's decomposition plus a workflow."""

    hypothesis: str = ""
    context: str = ""
    variables: list[HypothesisVariableInput] = Field(default_factory=list)
    relationship: str = ""
    workflow: str = ""
    code: str = ""


def is_hypothesis_dataset(*, session: Session, dataset: Dataset) -> bool:
    """A dataset whose curation is hypotheses per query (an imported DiscoveryBench folder), not BLADE decisions."""
    if dataset.source == "discoverybench":
        return True
    return session.exec(select(HypothesisTask.id).where(HypothesisTask.dataset_id == dataset.id)).first() is not None


def task_label(task: HypothesisTask) -> str:
    question = task.question if len(task.question) <= 70 else task.question[:67] + "..."
    return f"query {task.metadata_k}/q{task.qid} ('{question}')"


def task_of(*, session: Session, task_id: int, curating: bool = False) -> tuple[HypothesisTask, Dataset]:
    """The task and its dataset; ``curating``: refused unless the task still needs a gold hypothesis."""
    task = session.get(HypothesisTask, task_id)
    dataset = session.get(Dataset, task.dataset_id) if task is not None else None
    if task is None or dataset is None:
        raise NotFoundError(f"There is no hypothesis task with id {task_id}.")
    if curating and task.status != HypothesisTaskStatus.NEEDS_CURATION.value:
        source = {"consensus": "decided at the stage-3 consensus"}.get(task.gold_source or "",
                                                                     f"imported from the {task.gold_source or 'folder'}")
        raise DecisionValidationError(f"The {task_label(task)} already has its gold hypothesis ({source}); "
                                      "only queries without one are curated.")
    return task, dataset


def dictionary_columns(dataset: Dataset, task: HypothesisTask | None = None) -> dict[str, str]:
    """column -> description of the data dictionary (of the task's data files when the entries name their file)."""
    files = set(task.data_files) if task is not None else set()
    out: dict[str, str] = {}
    for entry in dataset.dictionary:
        if files and entry.get("file") and entry["file"] not in files:
            continue
        out.setdefault(str(entry.get("column")), str((entry.get("properties") or {}).get("description", "")))
    return out


def _clean(text: str | None) -> str:
    return (text or "").strip()


def validated_payload(dataset: Dataset, task: HypothesisTask, data: HypothesisInput, *,
                      require_workflow: bool = True) -> dict[str, Any]:
    """The hypothesis as stored, or a DecisionValidationError naming the query, the field and what is wrong."""
    where = f"Hypothesis for the {task_label(task)}"
    if not _clean(data.hypothesis):
        raise DecisionValidationError(f"{where}: the hypothesis is empty; write the statement the data supports.")
    if not _clean(data.context):
        raise DecisionValidationError(f"{where}: the context is empty; say where the hypothesis holds (the "
                                      "population, place or period it is about).")
    if not data.variables:
        raise DecisionValidationError(f"{where}: name at least one variable, each a column of the data dictionary "
                                      "or a derived column.")
    columns = dictionary_columns(dataset, task)
    variables: list[dict[str, Any]] = []
    for n, v in enumerate(data.variables, start=1):
        name, column, derived = _clean(v.name), _clean(v.column), _clean(v.derived)
        label = f"variable {n}" + (f" ('{name}')" if name else "")
        if not name and column:
            name = column
        if not name:
            raise DecisionValidationError(f"{where}, {label}: give the variable a name.")
        if column and column not in columns:
            files = ", ".join(task.data_files) or dataset.name
            near = [c for c in columns if c.lower() == column.lower()]
            hint = f" (did you mean '{near[0]}'?)" if near else ""
            raise DecisionValidationError(
                f"{where}, {label}: '{column}' is not a column of the data dictionary of {files}{hint}; choose one "
                "of its columns, or leave the column empty and say how the variable is derived.")
        if not column and not derived:
            raise DecisionValidationError(f"{where}, {label}: ground it: choose its column in the data dictionary, "
                                          "or say how it is derived from the data.")
        variables.append({"name": name, "column": column or None, "derived": derived,
                          "description": _clean(v.description)})
    if not _clean(data.relationship):
        raise DecisionValidationError(f"{where}: the relationship is empty; say how the variables relate (its "
                                      "direction, size or form).")
    if require_workflow and not _clean(data.workflow):
        raise DecisionValidationError(f"{where}: the workflow is empty; describe the steps from the data to the "
                                      "hypothesis, so that someone could redo them.")
    return {"hypothesis": _clean(data.hypothesis), "context": _clean(data.context), "variables": variables,
            "relationship": _clean(data.relationship), "workflow": _clean(data.workflow), "code": data.code.rstrip()}


def _normal(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", (text or "").lower()).strip()


def same_hypothesis_as(*, session: Session, dataset_id: int, payload: dict[str, Any], analysis_ids: Sequence[int | None],
                       alternatives: Sequence[Alternative]) -> dict[str, str] | None:
    """The stage-1 hypothesis or hypothesis alternative of the same query stating the same thing, if any."""
    key, task_id = _normal(str(payload.get("hypothesis", ""))), int(payload.get("task_id") or 0)
    if analysis_ids:
        for h in session.exec(select(HypothesisProposal).where(
                HypothesisProposal.task_id == task_id, col(HypothesisProposal.analysis_id).in_(list(analysis_ids)))):
            if _normal(h.hypothesis) == key:
                return {"target_kind": HYPOTHESIS.name, "target_id": h.id}
    for a in alternatives:
        if int((a.payload or {}).get("task_id") or 0) == task_id and _normal(a.payload.get("hypothesis", "")) == key:
            return {"target_kind": "alternative", "target_id": a.id}
    return None
