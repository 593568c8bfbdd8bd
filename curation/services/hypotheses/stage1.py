"""Stage 1 of a DiscoveryBench dataset: each assigned analyst writes, blind to peers, a hypothesis per query that
still needs a gold one, decomposed into context, variables (each a column of the data dictionary, or a derived
column with how it is derived) and relationship, plus a workflow; supporting code runs in the sandbox on the
query's data file and its output is kept with the hypothesis.

The hypotheses live in the analyst's :class:`~curation.models.Analysis` of the dataset, as BLADE decisions do:
submitting it submits them all and locks them, and the one stage-1 blinding rule
(:mod:`curation.services.blinding`) and the stage-2 gate (:func:`curation.services.stages.require_reviewer`)
apply unchanged. Nothing here ever returns a peer's hypothesis.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import Field
from sqlmodel import Session, col, select

from curation.errors import DecisionValidationError, NotFoundError, SandboxError
from curation.models import (
    Analysis,
    AnalysisStatus,
    Dataset,
    HypothesisProposal,
    HypothesisTask,
    User,
    utcnow,
)
from curation.services.actor import judges_actor
from curation.services.annotation import _editable_analysis, _find_analysis, _require_assigned
from curation.services.checks import ensure_fast_copy
from curation.services.hypotheses.common import (
    HypothesisInput,
    is_hypothesis_dataset,
    task_label,
    task_of,
    validated_payload,
)
from evaluation.sandbox import MappedJobHandle, ModelCheck, SandboxLimits, start_model_check

__all__ = [
    "HypothesisCheck",
    "OwnHypotheses",
    "check_hypothesis_code",
    "code_fingerprint",
    "delete_hypothesis",
    "own_hypotheses",
    "save_hypothesis",
    "start_hypothesis_check",
    "submit_hypotheses",
    "task_data_path",
]


class HypothesisCheck(ModelCheck):
    """A model check of a hypothesis' supporting code: what it printed and the summary of its result."""

    fingerprint: str = Field(description="code_fingerprint of the code this check ran")
    data_file: str = Field(description="the query's data file the code ran on, as df")


def code_fingerprint(code: str) -> str:
    return hashlib.sha256(code.rstrip().encode()).hexdigest()


class OwnHypotheses:
    """The actor's stage-1 hypotheses of one dataset, by task id, and whether they are submitted."""

    def __init__(self, analysis: Analysis | None, rows: list[HypothesisProposal]) -> None:
        self.analysis = analysis
        self.by_task = {h.task_id: h for h in rows}

    @property
    def submitted(self) -> bool:
        return self.analysis is not None and self.analysis.status == AnalysisStatus.SUBMITTED.value


def _hypothesis_dataset(session: Session, dataset: Dataset) -> None:
    if not is_hypothesis_dataset(session, dataset):
        raise DecisionValidationError(f"'{dataset.name}' is a BLADE dataset: it is annotated with conceptual "
                                      "variables, transforms and models, not hypotheses.")


@judges_actor
def own_hypotheses(*, session: Session, actor: User, dataset_id: int) -> OwnHypotheses:
    """The actor's own hypotheses (assigned analysts, curators and admins who annotate); never a peer's."""
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    _require_assigned(session, actor, dataset)
    analysis = _find_analysis(session, dataset_id, actor.id or 0)
    rows = list(session.exec(select(HypothesisProposal).where(HypothesisProposal.analysis_id == analysis.id)
                             .order_by(col(HypothesisProposal.task_id))).all()) if analysis else []
    return OwnHypotheses(analysis, rows)


def task_data_path(dataset: Dataset, task: HypothesisTask, store: Path) -> tuple[Path, str]:
    """The CSV the supporting code of ``task`` runs on (its first data file) and that file's name."""
    wanted = list(task.data_files) or []
    files = [f for f in dataset.files or [] if f.get("role") == "data"]
    chosen = None
    for name in wanted:
        chosen = next((f for f in files if f.get("name") == name or Path(str(f.get("name"))).name == name), None)
        if chosen is not None:
            break
    if chosen is None:
        chosen = next((f for f in dataset.files or [] if f.get("relpath") == dataset.data_relpath), None)
    relpath = str(chosen["relpath"]) if chosen else dataset.data_relpath
    name = str(chosen["name"]) if chosen else Path(relpath).name
    fmt = str((chosen or {}).get("format") or Path(relpath).suffix.lstrip(".")).lower()
    if fmt not in ("csv", ""):
        raise DecisionValidationError(f"Supporting code runs on a CSV table as `df`; the {task_label(task)} reads "
                                      f"'{name}', a {fmt} file. Describe the steps in the workflow instead.")
    path = store / relpath
    if not path.is_file():
        raise SandboxError(f"The data file '{name}' of '{dataset.name}' is missing at {path}; check "
                           "FORKPATHS_DATA_DIR points at the folder the dataset was imported into.")
    return path, name


@judges_actor
def start_hypothesis_check(*, session: Session, actor: User, task_id: int, code: str, store: Path,
                           limits: SandboxLimits) -> MappedJobHandle[HypothesisCheck]:
    """Start running the supporting code of a hypothesis on the query's data file (``df``) in the sandbox.

    The result (JSON) is what a model check reports: the summary of the fitted result or the value of the last
    expression, and what the code printed; with the code it ran, its fingerprint and the data file.
    """
    task, dataset = task_of(session, task_id, curating=True)
    _hypothesis_dataset(session, dataset)
    _editable_analysis(session, actor, dataset.id or 0)  # assigned, not submitted: only then is there code to check
    if not code.strip():
        raise DecisionValidationError(f"Hypothesis for the {task_label(task)}: there is no code to run.")
    path, name = task_data_path(dataset, task, store)
    ensure_fast_copy(path)
    handle = start_model_check(data_path=path, transform_codes=[], code=code, limits=limits)
    return handle.then(lambda result: HypothesisCheck.model_validate(
        {**result.model_dump(), "code": code.rstrip(), "fingerprint": code_fingerprint(code), "data_file": name}))


@judges_actor
def check_hypothesis_code(*, session: Session, actor: User, task_id: int, code: str, store: Path,
                          limits: SandboxLimits) -> dict[str, Any]:
    """:func:`start_hypothesis_check` and wait for it."""
    return start_hypothesis_check(session=session, actor=actor, task_id=task_id, code=code, store=store,
                                  limits=limits).result().model_dump(mode="json")


def _kept_check(task: HypothesisTask, code: str, check: dict[str, Any] | None) -> dict[str, Any] | None:
    if not code.strip():
        return None
    where = f"Hypothesis for the {task_label(task)}"
    if not check or check.get("fingerprint") != code_fingerprint(code):
        raise DecisionValidationError(f"{where}: run the supporting code first (the check must be of this very "
                                      "code), or leave the code empty.")
    if not check.get("ok"):
        raise DecisionValidationError(f"{where}: the supporting code fails, so it cannot support the hypothesis: "
                                      f"{check.get('error') or 'it did not run'}. Fix it and run it again, or "
                                      "leave the code empty.")
    return check


@judges_actor
def save_hypothesis(*, session: Session, actor: User, task_id: int, data: HypothesisInput,
                    check: dict[str, Any] | None = None) -> HypothesisProposal:
    """Save (create or replace) the actor's hypothesis for one query, in one transaction.

    Code is optional; when there is code, ``check`` must be the passing sandbox run of that very code (it is
    kept with the hypothesis). Every field is checked before anything is stored.
    """
    task, dataset = task_of(session, task_id, curating=True)
    _hypothesis_dataset(session, dataset)
    analysis = _editable_analysis(session, actor, dataset.id or 0)
    payload = validated_payload(dataset, task, data)
    kept = _kept_check(task, payload["code"], check)
    row = session.exec(select(HypothesisProposal).where(HypothesisProposal.analysis_id == analysis.id,
                                                        HypothesisProposal.task_id == task_id)).first()
    if row is None:
        row = HypothesisProposal(analysis_id=analysis.id or 0, task_id=task_id, dataset_id=dataset.id or 0,
                                 **payload, check=kept)
    else:
        for key, value in payload.items():
            setattr(row, key, value)
        row.check, row.updated_at = kept, utcnow()
    session.add(row)
    session.flush()
    return row


@judges_actor
def delete_hypothesis(*, session: Session, actor: User, task_id: int) -> None:
    task, dataset = task_of(session, task_id)
    analysis = _editable_analysis(session, actor, dataset.id or 0)
    row = session.exec(select(HypothesisProposal).where(HypothesisProposal.analysis_id == analysis.id,
                                                        HypothesisProposal.task_id == task_id)).first()
    if row is None:
        raise DecisionValidationError(f"You have no hypothesis for the {task_label(task)} to delete.")
    session.delete(row)
    session.flush()


@judges_actor
def submit_hypotheses(*, session: Session, actor: User, dataset_id: int) -> Analysis:
    """Submit and lock the actor's stage-1 hypotheses of a DiscoveryBench dataset (at least one).

    Queries left without a hypothesis stay so: after submitting, the analyst sees peers' hypotheses (stage 2),
    so they can no longer write one blind.
    """
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    _hypothesis_dataset(session, dataset)
    analysis = _editable_analysis(session, actor, dataset_id)
    rows = session.exec(select(HypothesisProposal).where(HypothesisProposal.analysis_id == analysis.id)).all()
    if not rows:
        raise DecisionValidationError(f"Your stage 1 of '{dataset.name}' cannot be submitted yet: write a "
                                      "hypothesis for at least one query first.")
    for row in rows:  # a check that no longer matches its code (never through the page) is refused too
        task = session.get(HypothesisTask, row.task_id)
        if task is not None:
            _kept_check(task, row.code, row.check)
    analysis.status, analysis.submitted_at = AnalysisStatus.SUBMITTED.value, utcnow()
    session.add(analysis)
    session.flush()
    return analysis


