"""LLM alternatives seeded by the analysts' own decisions (BLADE's two prompt kinds, Fig. 9 and 10).

For a dataset in stage 2 a curator generates: per submitted analysis, alternative conceptual variables seeded
by that analyst's variables; per stage-1 conceptual variable, alternative transforms that operationalise it.
Each generated transform is run in the sandbox after the parents of the step it replaces; a transform whose
code fails is stored with its error (reviewers see it and usually call it unjustifiable), never dropped. Items
the model got wrong in shape are rejected with their reason and listed in the report.

The LLM calls and the sandbox runs happen outside any database transaction; each seed's alternatives are then
stored in one transaction of their own, so a failure half-way keeps what was generated before it, and a second
run is answered from the LLM cache (nothing sent) while duplicates of what is stored are flagged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from curation.db import Transactions, transactions
from curation.errors import StageError
from curation.models import (
    Alternative,
    Analysis,
    AnalysisStatus,
    BackgroundJob,
    ConceptualVariable,
    Dataset,
    Role,
    Stage,
    Transform,
    User,
)
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.alternatives import (
    TransformAlternativeInput,
    check_alternative_transform,
    check_extra,
    seed_chain,
    store_alternative,
    transform_payload,
)
from curation.services.background_jobs import JobControl, JobOutcome, job_kind_of
from curation.services.blinding import refuse_if_blind
from curation.services.datasets import dataset_data_path, original_columns
from curation.services.generation_jobs import (
    generation_outcome,
    job_requester,
    problems_text,
    start_dataset_generation,
)
from curation.services.stages import get_review_settings
from evaluation.errors import EvaluationError
from evaluation.llm import LLMClient, LLMConfig, LLMResult
from evaluation.llm.prompts import (
    TRANSFORM_TEMPLATE,
    VARIABLE_TEMPLATE,
    ProposedTransform,
    ProposedVariable,
    parse_items,
    prompt_sha256,
    transform_messages,
    variable_messages,
)
from evaluation.sandbox import SandboxLimits
from evaluation.specs import ROOT_SPEC_ID

if TYPE_CHECKING:
    from curation.settings import Settings

__all__ = ["JOB_KIND", "GenerationJob", "GenerationReport", "generate_alternatives", "generation_summary",
           "plan_generation", "run_generation_job", "start_generation"]

log = logging.getLogger(__name__)
Progress = Callable[[int, int, str], None]


@dataclass
class GenerationJob:
    kind: str  # variable | transform
    label: str
    template: str
    messages: list[dict[str, str]]
    seed_ids: list[str]
    variable_id: str | None = None
    analysis_id: int = 0
    parents: list[str] = field(default_factory=lambda: [ROOT_SPEC_ID])


@dataclass
class GenerationReport:
    calls: int = 0
    cached: int = 0
    created: int = 0
    already_stored: int = 0
    duplicates: int = 0
    failed_checks: int = 0
    rejected: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seeds_total: int = 0
    seeds_done: int = 0
    cancelled: bool = False


def _variable_dict(v: ConceptualVariable) -> dict[str, Any]:
    return {"variable_type": v.variable_type, "concept": v.concept, "rationale": v.rationale,
            "columns": [c.get("name", "") for c in v.columns]}


@judges_actor
def plan_generation(*, session: Session, actor: User, dataset_id: int) -> list[GenerationJob]:
    """The calls to make for a dataset in stage 2 (curators and admins), seeded by the submitted analyses."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    dataset = session.get(Dataset, dataset_id)
    if dataset is None:
        raise StageError(f"There is no dataset with id {dataset_id}.")
    refuse_if_blind(session=session, actor=actor, dataset=dataset.name,
                    what="Generated alternatives are seeded by their decisions.")
    if get_review_settings(session=session, dataset_id=dataset_id).stage != Stage.REVIEW.value:
        raise StageError(f"Alternatives are generated while stage 2 of '{dataset.name}' is open.")
    analyses = session.exec(select(Analysis).where(Analysis.dataset_id == dataset_id,
                                                   Analysis.status == AnalysisStatus.SUBMITTED.value)
                            .order_by(col(Analysis.id))).all()
    columns = original_columns(dataset)
    common: dict[str, Any] = {"research_question": dataset.research_question, "description": dataset.description,
              "dictionary": dataset.dictionary, "columns": columns}
    jobs: list[GenerationJob] = []
    for analysis in analyses:
        variables = list(session.exec(select(ConceptualVariable).where(ConceptualVariable.analysis_id == analysis.id)
                                      .order_by(col(ConceptualVariable.position))).all())
        transforms = {t.id: t for t in session.exec(select(Transform).where(Transform.analysis_id == analysis.id))}
        if variables:
            jobs.append(GenerationJob(
                kind="variable", label=f"variables seeded by analysis {analysis.id}", template=VARIABLE_TEMPLATE,
                messages=variable_messages(**common, expert_variables=[_variable_dict(v) for v in variables]),
                seed_ids=[v.id for v in variables], analysis_id=analysis.id or 0))
        for v in variables:
            producers = [c["producer_id"] for c in v.columns if c.get("producer_id") in transforms]
            chain = seed_chain(session=session, analysis_id=analysis.id or 0, parents=producers) if producers else []
            first = transforms[producers[0]] if producers else None
            parents = list(first.branches[0].get("dependencies", [])) if first and first.branches else []
            jobs.append(GenerationJob(
                kind="transform", label=f"transforms for '{v.concept}'", template=TRANSFORM_TEMPLATE,
                messages=transform_messages(**common, variable=_variable_dict(v), expert_code=[t.code for t in chain]),
                seed_ids=[v.id], variable_id=v.id, analysis_id=analysis.id or 0, parents=parents or [ROOT_SPEC_ID]))
    return jobs


def _provenance(result: LLMResult, job: GenerationJob) -> tuple[dict[str, Any], dict[str, Any]]:
    llm = {"model": result.model, "base_url": result.base_url, "prompt_template": result.template,
           "prompt_sha256": prompt_sha256(job.messages), "temperature": result.parameters.get("temperature"),
           "created_at": result.created_at.isoformat()}
    call = {"cache_key": result.cache_key, "parameters": result.parameters, "raw_response": result.raw,
            "seed_ids": job.seed_ids, "attempts": result.attempts}
    return llm, call


def _stored_items(session: Session, dataset_id: int, cache_key: str) -> set[int]:
    """Items of this (cached) answer that an earlier run already stored: a re-run adds nothing twice."""
    alts = session.exec(select(Alternative).where(Alternative.dataset_id == dataset_id, Alternative.source == "llm"))
    return {int(a.extra["llm_call"].get("item", -1)) for a in alts
            if (a.extra or {}).get("llm_call", {}).get("cache_key") == cache_key}


def _run_variable_job(session: Session, dataset_id: int, job: GenerationJob, result: LLMResult,
                      report: GenerationReport, columns: list[str]) -> None:
    items, repairs, rejected = parse_items(result.content, "variables", ProposedVariable)
    report.rejected += [f"{job.label}: {r}" for r in rejected]
    llm, call = _provenance(result, job)
    done = _stored_items(session, dataset_id, result.cache_key)
    for i, item in enumerate(items):
        assert isinstance(item, ProposedVariable)
        if i in done:
            report.already_stored += 1
            continue
        unknown = [c for c in item.columns if c not in columns]
        if unknown:
            report.rejected.append(f"{job.label}: '{item.concept}' rejected: {unknown} are not columns of the data")
            continue
        # the shape a peer's proposal has (propose_variable_alternative): nothing in it hints at the source
        payload = {"variable_type": "Control" if item.interaction else item.variable_type,
                   "concept": item.concept.strip(), "interaction": item.interaction,
                   "on": item.on.strip() if item.interaction else "", "rationale": item.rationale.strip(),
                   "columns": list(dict.fromkeys(item.columns))}
        stored = store_alternative(session=session, dataset_id=dataset_id, kind="variable", source="llm", proposed_by_id=None,
                                   seed_id=None, payload=payload, llm=llm,
                                   extra={"llm_call": {**call, "repairs": repairs, "item": i}})
        report.created += 1
        report.duplicates += stored.duplicate_of is not None


def _checked_transforms(session_scope: Transactions, job: GenerationJob,
                        result: LLMResult, data_path: Path, limits: SandboxLimits,
                        report: GenerationReport, dataset_id: int,
                        ) -> list[tuple[int, ProposedTransform, dict[str, Any], list[str]]]:
    items, repairs, rejected = parse_items(result.content, "transforms", ProposedTransform)
    report.rejected += [f"{job.label}: {r}" for r in rejected]
    with session_scope() as session:
        chain = seed_chain(session=session, analysis_id=job.analysis_id, parents=job.parents)
        done = _stored_items(session, dataset_id, result.cache_key)
    out = []
    for i, item in enumerate(items):
        assert isinstance(item, ProposedTransform)
        if i in done:  # stored by an earlier run: not run again
            report.already_stored += 1
            continue
        try:
            check = check_alternative_transform(data_path=data_path, chain=chain, code=item.code,
                                                output_col=item.output_col.strip(), limits=limits)
        except EvaluationError as exc:  # the sandbox itself failed: keep the item, with why it was not run
            check = {"ok": False, "error": f"not run: {exc}", "error_kind": "setup", "code": item.code}
        report.failed_checks += not check.get("ok")
        out.append((i, item, check, repairs))
    return out


def _parser(kind: str) -> Callable[[str], object]:
    """What makes an answer usable (and cacheable): a list of items under the key the prompt asked for."""
    key, shape = ("variables", ProposedVariable) if kind == "variable" else ("transforms", ProposedTransform)
    return lambda text: parse_items(text, key, shape)


@judges_actor
def generate_alternatives(
    *,
    session_scope: Transactions,
    actor: User,
    dataset_id: int,
    config: LLMConfig,
    store: Path,
    limits: SandboxLimits,
    progress: Progress | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> GenerationReport:
    """Generate, check and store alternatives for a dataset in stage 2; returns what happened, per kind.

    It spans transactions: ``session_scope`` opens one per step (:func:`curation.db.transactions`, or the caller's
    factory); LLM calls and sandbox runs happen between them. A failed call is reported and the next seed goes
    on. ``should_stop`` is asked before each seed: when it says yes, generation stops there and what the seeds
    before stored is kept (``report.cancelled``, ``report.seeds_done``).
    """
    client = LLMClient(config)  # raises LLMNotConfigured before anything else
    with session_scope() as session:
        jobs = plan_generation(session=session, actor=actor, dataset_id=dataset_id)
        dataset = session.get(Dataset, dataset_id)
        assert dataset is not None
        data_path, columns = dataset_data_path(dataset, store), original_columns(dataset)
    report = GenerationReport(seeds_total=len(jobs))
    for n, job in enumerate(jobs):
        if progress:
            progress(n, len(jobs), job.label)
        if should_stop is not None and should_stop():
            report.cancelled = True
            if progress:
                progress(n, len(jobs), "cancelled")
            return report
        try:
            result = client.ask(template=job.template, messages=job.messages, parse=_parser(job.kind)).result
            report.calls += 1
            report.cached += result.cached
            if job.kind == "variable":
                with session_scope() as session:
                    _run_variable_job(session, dataset_id, job, result, report, columns)
                continue
            checked = _checked_transforms(session_scope, job, result, data_path, limits, report, dataset_id)
            llm, call = _provenance(result, job)
            with session_scope() as session:
                var = session.get(ConceptualVariable, job.variable_id)
                assert var is not None
                names = {t.id: t.spec_name for t in seed_chain(session=session, analysis_id=job.analysis_id, parents=job.parents)}
                for i, item, check, repairs in checked:
                    data = TransformAlternativeInput(code=item.code, output_col=item.output_col,
                                                     rationale=item.rationale, spec_name=item.spec_name,
                                                     parents=job.parents)
                    stored = store_alternative(session=session, dataset_id=dataset_id, kind="transform", source="llm",
                                               proposed_by_id=None, seed_id=job.variable_id,
                                               payload=transform_payload(var, data, names, check.get("value_hash")), llm=llm,
                                               extra={**check_extra(check),
                                                      "llm_call": {**call, "repairs": repairs, "item": i}})
                    report.created += 1
                    report.duplicates += stored.duplicate_of is not None
        except EvaluationError as exc:  # LLM down / unparseable answer: say which seed, go on with the next
            report.errors.append(f"{job.label}: {exc}")
        report.seeds_done = n + 1
    if progress:
        progress(len(jobs), len(jobs), "done")
    return report


# ------------------------------------------------------------------------------------ as a background job

JOB_KIND = job_kind_of(f"{__name__}:run_generation_job")  # as the analyses kind declares it


@judges_actor
def start_generation(*, session: Session, actor: User, dataset_id: int) -> int:
    """Record a generation for the dataset as a queued job (checked first, in the same transaction: curator, stage
    2, not blind), one per dataset at a time; returns the job's id. The caller commits, then hands it to a
    submitter (:func:`curation.services.jobs.make_job_submitter`)."""
    return start_dataset_generation(session=session, kind=JOB_KIND, actor=actor, dataset_id=dataset_id,
                                    plan=plan_generation)


def generation_summary(result: dict[str, Any]) -> tuple[str, str]:
    """(streamlit kind, Markdown text) of a generation's report, as the page shows it."""
    r = GenerationReport(**{k: v for k, v in result.items() if k in GenerationReport.__dataclass_fields__})
    text = (f"{r.created} alternatives stored ({r.duplicates} flagged as duplicates, "
            f"{r.failed_checks} transforms whose code failed: they are in the queue with their error); "
            f"{r.already_stored} were already stored; {r.cached} of {r.calls} answers came from the cache.")
    if r.cancelled:
        text = (f"Cancelled after {r.seeds_done} of {r.seeds_total} seeds; the {r.created} alternatives stored "
                f"before it stopped are kept. " + text)
    return ("warning" if r.errors or r.cancelled else "success"), text + problems_text(r.errors, r.rejected)


def run_generation_job(engine: Engine, job: BackgroundJob, control: JobControl, settings: Settings) -> JobOutcome:
    """The job's function (background_jobs.KINDS): generation as the person who asked for it, with the
    endpoint, data folder and sandbox limits of the process that runs it. Each seed's alternatives are stored in
    one transaction when that seed is done (see the module's docstring), so a cancel or a failure keeps whole
    seeds only, and a retried job adds nothing twice (cached answers, already-stored items skipped)."""
    report = generate_alternatives(
        session_scope=transactions(engine), actor=job_requester(engine, job),
        dataset_id=int(job.params["dataset_id"]), config=settings.llm_config(), store=settings.datasets_store,
        limits=SandboxLimits(timeout_s=settings.sandbox_timeout_s, memory_mb=settings.sandbox_memory_mb),
        progress=control.progress, should_stop=control.cancelled)
    return generation_outcome(report, generation_summary)
