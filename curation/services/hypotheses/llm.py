"""LLM-proposed hypotheses for the queries of a DiscoveryBench dataset in stage 2, as a background job.

A curator starts it (stage 2 open, not blind); per query still needing a gold hypothesis, one call through the
one LLM client (cached: a re-run sends nothing and stores nothing twice) proposes hypotheses. Each one the model
got right in shape and whose variables name only columns of the data dictionary (or say how they are derived)
is stored as an :class:`~curation.models.Alternative` of kind "hypothesis", source "llm", with the call's
provenance; the others are rejected with their reason in the report. Each query's hypotheses are stored in one
transaction of their own, so a cancel or failure half-way keeps whole queries only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from curation.db import Transactions, transactions
from curation.errors import DecisionValidationError, StageError
from curation.models import (
    Alternative,
    BackgroundJob,
    Dataset,
    HypothesisTask,
    HypothesisTaskStatus,
    Role,
    Stage,
    User,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.alternatives import store_alternative
from curation.services.background_jobs import JobControl, JobOutcome, job_kind_of
from curation.services.blinding import refuse_if_blind
from curation.services.generation_jobs import (
    generation_outcome,
    job_requester,
    problems_text,
    start_dataset_generation,
)
from curation.services.hypotheses.common import (
    HypothesisInput,
    HypothesisVariableInput,
    is_hypothesis_dataset,
    same_hypothesis_as,
    task_label,
    validated_payload,
)
from curation.services.stages import get_review_settings
from evaluation.errors import EvaluationError
from evaluation.llm import LLMClient, LLMConfig, LLMResult
from evaluation.llm.hypothesis_prompts import (
    HYPOTHESIS_TEMPLATE,
    ProposedHypothesis,
    columns_for,
    hypothesis_messages,
)
from evaluation.llm.prompts import parse_items, prompt_sha256
from evaluation.tasks.hypotheses import HYPOTHESIS

if TYPE_CHECKING:
    from curation.settings import Settings

__all__ = ["JOB_KIND", "HypothesisGenerationReport", "generate_hypotheses", "hypothesis_generation_summary",
           "plan_hypothesis_generation", "run_hypothesis_job", "start_hypothesis_generation"]

log = logging.getLogger(__name__)
JOB_KIND = job_kind_of(f"{__name__}:run_hypothesis_job")  # as the hypotheses kind declares it


@dataclass
class PlannedQuery:
    task_id: int
    task_key: str
    label: str
    messages: list[dict[str, str]]


@dataclass
class HypothesisGenerationReport:
    calls: int = 0
    cached: int = 0
    created: int = 0
    already_stored: int = 0
    duplicates: int = 0
    rejected: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    queries_total: int = 0
    queries_done: int = 0
    cancelled: bool = False


@judges_actor
def plan_hypothesis_generation(*, session: Session, actor: User, dataset_id: int) -> list[PlannedQuery]:
    """One call per query still needing a gold hypothesis (curators and admins, stage 2 open, not blind)."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise StageError(f"There is no dataset with id {dataset_id}.")
    if not is_hypothesis_dataset(session=session, dataset=dataset):
        raise StageError(f"'{dataset.name}' has no hypothesis tasks; its LLM alternatives are BLADE decisions.")
    refuse_if_blind(session=session, actor=actor, dataset=dataset.name,
                    what="Generated hypotheses are reviewed next to peers' ones.")
    if get_review_settings(session=session, dataset_id=dataset_id).stage != Stage.REVIEW.value:
        raise StageError(f"Hypotheses are generated while stage 2 of '{dataset.name}' is open.")
    tasks = session.exec(select(HypothesisTask).where(
        HypothesisTask.dataset_id == dataset_id, HypothesisTask.status == HypothesisTaskStatus.NEEDS_CURATION.value)
        .order_by(col(HypothesisTask.metadata_k), col(HypothesisTask.qid))).all()
    return [PlannedQuery(t.id or 0, t.key, task_label(t), hypothesis_messages(
        question=t.question, domain_knowledge=t.domain_knowledge, data_files=list(t.data_files),
        columns=columns_for(dataset.dictionary, list(t.data_files)))) for t in tasks]


def _parser(text: str) -> object:
    return parse_items(text, "hypotheses", ProposedHypothesis)


def _stored_items(session: Session, dataset_id: int, cache_key: str) -> set[int]:
    alts = session.exec(select(Alternative).where(Alternative.dataset_id == dataset_id, Alternative.source == "llm",
                                                  Alternative.kind == HYPOTHESIS.name))
    return {int(a.extra["llm_call"].get("item", -1)) for a in alts
            if (a.extra or {}).get("llm_call", {}).get("cache_key") == cache_key}


def _store_query(session: Session, dataset_id: int, job: PlannedQuery, result: LLMResult,
                 report: HypothesisGenerationReport) -> None:
    items, repairs, rejected = parse_items(result.content, "hypotheses", ProposedHypothesis)
    report.rejected += [f"{job.label}: {r}" for r in rejected]
    task = session.get(HypothesisTask, job.task_id)
    dataset = session.get(Dataset, dataset_id)
    assert task is not None and dataset is not None
    llm = {"model": result.model, "base_url": result.base_url, "prompt_template": result.template,
           "prompt_sha256": prompt_sha256(job.messages), "temperature": result.parameters.get("temperature"),
           "created_at": result.created_at.isoformat()}
    call = {"cache_key": result.cache_key, "parameters": result.parameters, "raw_response": result.raw,
            "attempts": result.attempts, "repairs": repairs}
    done = _stored_items(session, dataset_id, result.cache_key)
    for i, item in enumerate(items):
        assert isinstance(item, ProposedHypothesis)
        if i in done:
            report.already_stored += 1
            continue
        data = HypothesisInput(hypothesis=item.hypothesis, context=item.context, relationship=item.relationship,
                               workflow=item.workflow, variables=[HypothesisVariableInput(
                                   name=v.name, column=v.column, derived=v.derived) for v in item.variables])
        try:  # the same checks as an analyst's hypothesis: an answer may only name columns that exist
            payload = validated_payload(dataset, task, data, require_workflow=False)
        except DecisionValidationError as exc:
            report.rejected.append(f"{job.label}: hypothesis {i + 1} rejected: {exc}")
            continue
        payload = {**payload, "task_id": task.id, "task_key": task.key}
        stored = store_alternative(session=session, dataset_id=dataset_id, kind=HYPOTHESIS.name, source="llm",
                                   proposed_by_id=None, seed_id=None, payload=payload, llm=llm,
                                   extra={"llm_call": {**call, "item": i}}, same_as=same_hypothesis_as)
        report.created += 1
        report.duplicates += stored.duplicate_of is not None


@judges_actor
def generate_hypotheses(
    *, session_scope: Transactions, actor: User, dataset_id: int,
    config: LLMConfig, progress: Callable[[int, int, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> HypothesisGenerationReport:
    """Propose and store hypotheses for every query of the dataset still needing a gold one (see the module).

    It spans transactions: ``session_scope`` opens one per query's answer (:func:`curation.db.transactions`, or
    the caller's factory), and the LLM is asked between them."""
    client = LLMClient(config)  # raises LLMNotConfigured before anything else
    with session_scope() as session:
        jobs = plan_hypothesis_generation(session=session, actor=actor, dataset_id=dataset_id)
    report = HypothesisGenerationReport(queries_total=len(jobs))
    for n, job in enumerate(jobs):
        if progress:
            progress(n, len(jobs), job.label)
        if should_stop is not None and should_stop():
            report.cancelled = True
            return report
        try:
            result = client.ask(template=HYPOTHESIS_TEMPLATE, messages=job.messages, parse=_parser).result
            report.calls += 1
            report.cached += result.cached
            with session_scope() as session:
                _store_query(session, dataset_id, job, result, report)
        except EvaluationError as exc:  # LLM down / unusable answer: say which query, go on with the next
            report.errors.append(f"{job.label}: {exc}")
        report.queries_done = n + 1
    if progress:
        progress(len(jobs), len(jobs), "done")
    return report


@judges_actor
def start_hypothesis_generation(*, session: Session, actor: User, dataset_id: int) -> int:
    """Record a generation as a queued job (checked first, in the same transaction), one per dataset at a time;
    returns its id."""
    return start_dataset_generation(session=session, kind=JOB_KIND, actor=actor, dataset_id=dataset_id,
                                    plan=plan_hypothesis_generation)


def hypothesis_generation_summary(result: dict[str, Any]) -> tuple[str, str]:
    """(streamlit kind, Markdown text) of a generation's report, as the page shows it."""
    fields = HypothesisGenerationReport.__dataclass_fields__
    r = HypothesisGenerationReport(**{k: v for k, v in result.items() if k in fields})
    text = (f"{r.created} LLM hypotheses stored ({r.duplicates} flagged as duplicates); {r.already_stored} were "
            f"already stored; {r.cached} of {r.calls} answers came from the cache.")
    if r.cancelled:
        text = f"Cancelled after {r.queries_done} of {r.queries_total} queries; what was stored is kept. " + text
    return ("warning" if r.errors or r.cancelled else "success"), text + problems_text(r.errors, r.rejected)


def run_hypothesis_job(engine: Engine, job: BackgroundJob, control: JobControl, settings: Settings) -> JobOutcome:
    """The job's function (background_jobs.KINDS), run as the person who asked for it.
    It spans transactions: each query's hypotheses are stored in one of their own."""
    report = generate_hypotheses(session_scope=transactions(engine), actor=job_requester(engine, job),
                                 dataset_id=int(job.params["dataset_id"]), config=settings.llm_config(),
                                 progress=control.progress, should_stop=control.cancelled)
    return generation_outcome(report, hypothesis_generation_summary)
