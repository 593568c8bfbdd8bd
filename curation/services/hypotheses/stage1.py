"""Stage 1 of a DiscoveryBench dataset: each assigned analyst writes, blind to peers, a hypothesis per query that
still needs a gold one, decomposed into context, variables (each a column of the data dictionary, or a derived
column with how it is derived) and relationship, plus a workflow; supporting code runs in the sandbox with all
of the query's data files in its working folder by name (``df`` is the first, CSV in any encoding the import
took, or Stata .dta) and its output is kept with the hypothesis.

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
from curation.services.annotation import editable_analysis, find_analysis, require_assigned
from curation.services.hypotheses.common import (
    HypothesisInput,
    is_hypothesis_dataset,
    task_label,
    task_of,
    validated_payload,
)
from evaluation.sandbox import DataFile, MappedJobHandle, ModelCheck, SandboxLimits, start_files_model_check
from evaluation.sandbox.bundle import table_format

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
    "task_data_files",
]


class HypothesisCheck(ModelCheck):
    """A run of a hypothesis' supporting code: what it printed and, when it left one, its result (a fitted
    model's summary or the value of its last expression). Supporting code is code whose output is kept: it must
    run without error, it need not fit a model."""

    fingerprint: str = Field(description="code_fingerprint of the code this check ran")
    data_file: str = Field(description="the query's data file the code ran on, as df")
    files: list[str] = Field(default_factory=list, description="all the query's data files, in the code's working "
                                                               "directory by these names")


BUNDLES = ".sandbox-bundles"
"""The folder of the data store where the query's files are kept packed for the sandbox (see
:func:`evaluation.sandbox.bundle.bundle_for`)."""


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
    if not is_hypothesis_dataset(session=session, dataset=dataset):
        raise DecisionValidationError(f"'{dataset.name}' is a BLADE dataset: it is annotated with conceptual "
                                      "variables, transforms and models, not hypotheses.")


@judges_actor
def own_hypotheses(*, session: Session, actor: User, dataset_id: int) -> OwnHypotheses:
    """The actor's own hypotheses (assigned analysts, curators and admins who annotate); never a peer's."""
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise NotFoundError(f"There is no dataset with id {dataset_id}.")
    require_assigned(session=session, actor=actor, dataset=dataset)
    analysis = find_analysis(session=session, dataset_id=dataset_id, user_id=actor.id or 0)
    rows = list(session.exec(select(HypothesisProposal).where(HypothesisProposal.analysis_id == analysis.id)
                             .order_by(col(HypothesisProposal.task_id))).all()) if analysis else []
    return OwnHypotheses(analysis, rows)


def task_data_files(dataset: Dataset, task: HypothesisTask, store: Path) -> list[DataFile]:
    """The query's data files (in the order its metadata names them; the dataset's main table when it names
    none), each by its name, with the table format and CSV encoding the import recorded. The first is ``df``.

    Raises:
        DecisionValidationError: the first file is not a table (CSV or Stata .dta).
        SandboxError: a file is missing from the store.
    """
    files = [f for f in dataset.files or [] if f.get("role") == "data"]
    chosen: list[dict[str, Any]] = []
    for name in task.data_files or []:
        found = next((f for f in files if f.get("name") == name or Path(str(f.get("name"))).name == name), None)
        if found is not None and found not in chosen:
            chosen.append(found)
    if not chosen:
        main = next((f for f in dataset.files or [] if f.get("relpath") == dataset.data_relpath), None)
        chosen = [main or {"relpath": dataset.data_relpath, "name": Path(dataset.data_relpath).name,
                           "format": "csv"}]
    out = []
    for f in chosen:
        relpath, name = str(f["relpath"]), Path(str(f.get("name") or f["relpath"])).name
        path = store / relpath
        if not path.is_file():
            raise SandboxError(f"The data file '{name}' of '{dataset.name}' is missing at {path}; check "
                               "FORKPATHS_DATA_DIR points at the folder the dataset was imported into.")
        fmt = str(f.get("format") or "").lower() or None
        out.append(DataFile(name=name, path=path, format=fmt, encoding=f.get("encoding") or None))
    first = out[0]
    if table_format(first.name, first.format) is None:
        raise DecisionValidationError(f"Supporting code reads the first data file as `df`; the {task_label(task)} "
                                      f"reads '{first.name}' first, which is not a table (CSV or Stata .dta). "
                                      "Describe the steps in the workflow instead.")
    return out


@judges_actor
def start_hypothesis_check(*, session: Session, actor: User, task_id: int, code: str, store: Path,
                           limits: SandboxLimits) -> MappedJobHandle[HypothesisCheck]:
    """Start running the supporting code of a hypothesis in the sandbox, with all of the query's data files in its
    working directory by name and the first of them read as ``df``.

    The result (JSON) is what the code printed and, when it left one, the summary of its fitted result or the
    value of its last expression; with the code it ran, its fingerprint and the data file. Code that runs to its
    end passes: it need not fit a model.
    """
    task, dataset = task_of(session=session, task_id=task_id, curating=True)
    _hypothesis_dataset(session, dataset)
    editable_analysis(session=session, actor=actor, dataset_id=dataset.id or 0)  # assigned, not submitted: only then is there code to check
    if not code.strip():
        raise DecisionValidationError(f"Hypothesis for the {task_label(task)}: there is no code to run.")
    files = task_data_files(dataset, task, store)
    handle = start_files_model_check(files=files, code=code, limits=limits, bundle_dir=store / BUNDLES,
                                     label="the supporting code")
    names = [f.name for f in files]
    return handle.then(lambda result: HypothesisCheck.model_validate(
        {**_ran(result).model_dump(), "code": code.rstrip(), "fingerprint": code_fingerprint(code),
         "data_file": names[0], "files": names}))


def _ran(result: ModelCheck) -> ModelCheck:
    """The model check read as supporting code: code that ran to its end without leaving a model (it printed
    a table, say) has run, so it passes; its output is what is kept."""
    if result.ok or result.error_kind != "no_result":
        return result
    return result.model_copy(update={"ok": True, "error": None, "error_kind": None, "failed_step": None,
                                     "traceback": None})


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
        error = str(check.get("error") or "it did not run").strip().rstrip(".")
        raise DecisionValidationError(f"{where}: the supporting code stops with an error, so its output cannot be "
                                      f"kept ({error}). Fix it and run it again, or leave the code empty.")
    return check


@judges_actor
def save_hypothesis(*, session: Session, actor: User, task_id: int, data: HypothesisInput,
                    check: dict[str, Any] | None = None) -> HypothesisProposal:
    """Save (create or replace) the actor's hypothesis for one query, in one transaction.

    Code is optional; when there is code, ``check`` must be a sandbox run of that very code that ended without
    error (it is kept with the hypothesis, with what the code printed). Every field is checked before anything is stored.
    """
    task, dataset = task_of(session=session, task_id=task_id, curating=True)
    _hypothesis_dataset(session, dataset)
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset.id or 0)
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
    task, dataset = task_of(session=session, task_id=task_id)
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset.id or 0)
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
    analysis = editable_analysis(session=session, actor=actor, dataset_id=dataset_id)
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


