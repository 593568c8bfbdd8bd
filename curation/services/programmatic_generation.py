"""LLM candidate generation for a programmatic task (issue 20's DataSciBench pipeline): planned, run (the LLM and
the sandbox, no database) and stored in three steps, in one transaction (:func:`generate_candidates`) or as a
background job.

A curator asks for N samples; the job (a procrastinate worker on PostgreSQL, a thread of the app on SQLite, see
:mod:`curation.services.background_jobs`) asks the LLM for each solution, runs each in the sandbox, applies the
agreement rule, asks the LLM for checks, and stores the agreed artifacts and proposed checks as candidates in
one transaction. Progress (2N + 1 steps: each solution asked, each run, the checks asked) and the cancel flag
live on the job row; a cancel stops at the next step and stores nothing (every answer is cached, so asking again
sends only what was not asked yet). One generation per task at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from curation.db import transactions
from curation.models import BackgroundJob, RunStatus, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.background_jobs import JobControl, JobOutcome, job_kind_of, start_job
from curation.services.curated import add_candidate, set_item_payload
from curation.services.generation_jobs import (
    job_requester,
)
from curation.services.programmatic import (
    CURATING,
    ProgrammaticError,
    artifact_payload,
    check_payload,
    next_position,
    release_task,
    task_by_id,
    task_inputs,
    task_row,
)
from evaluation.llm import LLMClient
from evaluation.programmatic.groundtruth import agree, ask_checks, ask_solution, run_solution
from evaluation.programmatic.runner import CheckLimits
from exports.programmatic_part import ProgrammaticTaskRelease

if TYPE_CHECKING:
    from curation.settings import Settings

__all__ = ["JOB_KIND", "MAX_SAMPLES", "MIN_SAMPLES", "GenerationPlan", "GenerationWork", "do_generation", "generate_candidates",
           "generation_report", "generation_steps", "plan_generation", "run_candidate_job", "scope_of",
           "start_candidate_generation", "store_generation"]

log = logging.getLogger(__name__)
JOB_KIND = job_kind_of(f"{__name__}:run_candidate_job")  # as the programmatic kind declares it


@dataclass
class GenerationPlan:
    """What a generation needs, read in one short transaction: the task as a release would carry it and the
    bytes and columns of its input files."""

    task_id: int
    key: str
    dataset_id: int
    spec: ProgrammaticTaskRelease
    inputs: dict[str, bytes]
    columns: dict[str, list[str]]


@dataclass
class GenerationWork:
    """What the LLM and the sandbox made of a plan (nothing stored yet)."""

    codes: list[str]
    runs: list[Any]
    agreement: Any
    proposed: list[Any]
    llm: dict[str, Any]


MIN_SAMPLES, MAX_SAMPLES = 2, 20


@judges_actor
def plan_generation(*, session: Session, actor: User, task_id: int, samples: int, store: Path) -> GenerationPlan:
    """Check the request (curators and admins, 2..20 samples, the task and its input files exist) and read what
    the generation needs.

    Raises:
        PermissionDenied: not a curator or admin.
        ProgrammaticError: a sample count out of range, an input file that cannot be read.
    """
    require_role(actor, *CURATING)
    if not MIN_SAMPLES <= samples <= MAX_SAMPLES:
        raise ProgrammaticError(f"Ask for between {MIN_SAMPLES} and {MAX_SAMPLES} samples (not {samples}): "
                                "self-consistency needs at least two.")
    task = task_by_id(session=session, task_id=task_id)
    spec = release_task(session=session, task=task, released_only=False)
    inputs = task_inputs(session=session, task=task, store=store)
    columns = {name: data.split(b"\n", 1)[0].decode("utf-8", "replace").strip().split(",")
               for name, data in inputs.items() if name.endswith(".csv")}
    return GenerationPlan(task_id, task.key, task.dataset_id, spec, inputs, columns)


def generation_steps(samples: int) -> int:
    """Progress steps of a generation: each sample asked, each sample run, the checks asked."""
    return 2 * samples + 1


def do_generation(plan: GenerationPlan, *, client: Any, samples: int, limits: CheckLimits | None = None,
                  progress: Callable[[int, int, str], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> GenerationWork | None:
    """Ask the LLM for ``samples`` solutions, run each in the sandbox, apply the agreement rule, ask for checks.
    Touches no database. Returns None when ``should_stop`` said stop between two steps.

    Raises:
        LLMNotConfigured / LLMCallError / LLMAnswerError: the LLM is missing, failed or answered garbage.
    """
    total = generation_steps(samples)
    done = 0

    def step(stage: str) -> bool:
        nonlocal done
        if progress is not None:
            progress(done, total, stage)
        done += 1
        return should_stop is not None and should_stop()

    codes = []
    for i in range(samples):
        if step(f"asking the LLM for solution {i + 1} of {samples}"):
            return None
        codes.append(ask_solution(client, plan.spec, i, samples, plan.columns))
    timeout = (limits or CheckLimits()).check_timeout_s * 6
    runs = []
    for i, code in enumerate(codes):
        if step(f"running solution {i + 1} of {samples} in the sandbox"):
            return None
        runs.append(run_solution(code, plan.inputs, timeout_s=timeout))
    agreement = agree(runs)
    if step(f"asking the LLM for checks ({len(agreement.artifacts)} agreed artifacts)"):
        return None
    proposed = ask_checks(client, plan.spec, sorted(agreement.artifacts))
    if progress is not None:
        progress(total, total, "storing the candidates")
    return GenerationWork(codes, runs, agreement, proposed, client.describe())


def store_generation(*, session: Session, plan: GenerationPlan, work: GenerationWork,
                     samples: int) -> dict[str, Any]:
    """Store the agreed artifacts and proposed checks as candidates (one transaction: all or nothing) and
    return the summary the page and the job show.

    Raises:
        ProgrammaticError: a proposed check that cannot be stored (nothing is stored then).
    """
    task = task_by_id(session=session, task_id=plan.task_id)
    agreement = work.agreement
    position = next_position(session=session, task_id=plan.task_id)
    created = {"artifacts": 0, "checks": 0}
    for path, data in agreement.artifact_bytes().items():
        add_candidate(session=session, item=task_row(task), role="artifact", source="agreement",
                      payload=artifact_payload(path, data), position=position,
                      extra={"support": agreement.support[path], "ok_samples": agreement.ok_samples,
                             "samples": agreement.samples, "rule": agreement.rule, "llm": work.llm})
        position += 1
        created["artifacts"] += 1
    for c in work.proposed:
        try:
            payload = check_payload(c.model_dump())
        except ProgrammaticError as exc:
            raise ProgrammaticError(f"The LLM proposed a check that cannot be stored: {exc}") from exc
        add_candidate(session=session, item=task_row(task), role="check", source="llm", payload=payload,
                      position=position, extra={"llm": work.llm})
        position += 1
        created["checks"] += 1
    summary = {"task": plan.key, "samples": samples, "ran": agreement.ok_samples, "agreed": dict(agreement.support),
               "disagreeing": agreement.disagreeing, "errors": [r.error for r in work.runs if not r.ok], **created,
               "solutions": work.codes,
               "runs": [{"ok": r.ok, "error": r.error, "files": sorted(r.files)} for r in work.runs]}
    row = task_row(task)
    set_item_payload(session=session, item=row, payload={
        **row.payload, "extra": {**task.extra, "last_generation": {k: v for k, v in summary.items()
                                                                   if k not in ("solutions", "runs")}}})
    session.flush()
    return summary


@judges_actor
def generate_candidates(*, session: Session, actor: User, task_id: int, client: Any, samples: int, store: Path,
                        limits: CheckLimits | None = None) -> dict[str, Any]:
    """The DataSciBench pipeline with experts in the loop, inside one transaction (the CLI and tests; the page
    runs it as a background job, :func:`start_candidate_generation`): the LLM writes ``samples``
    solutions, each runs in the sandbox; the outputs that agree become candidate artifacts; the LLM proposes
    checks. All candidates await the analysts' votes. Returns a summary (agreement, errors of the samples, counts).

    Raises:
        PermissionDenied: not a curator or admin.
        LLMNotConfigured / LLMCallError / LLMAnswerError: the LLM is missing, failed or answered garbage; nothing
            is stored then.
        ProgrammaticError: fewer than two samples asked for.
    """
    plan = plan_generation(session=session, actor=actor, task_id=task_id, samples=samples, store=store)
    work = do_generation(plan, client=client, samples=samples, limits=limits)
    assert work is not None  # nothing asks it to stop
    return store_generation(session=session, plan=plan, work=work, samples=samples)


def scope_of(task_id: int) -> str:
    """The job scope: one generation per programmatic task at a time."""
    return f"prog_task:{task_id}"


@judges_actor
def start_candidate_generation(*, session: Session, actor: User, task_id: int, samples: int, store: Path) -> int:
    """Record a generation as a queued job, after the same checks the job makes (curators and admins, 2..20
    samples, the task's input files readable), in the same transaction; returns its id.

    Raises:
        PermissionDenied / ProgrammaticError / NotFoundError: as :func:`plan_generation`.
        JobError: a generation for this task is already queued or running.
    """
    plan = plan_generation(session=session, actor=actor, task_id=task_id, samples=samples, store=store)
    return start_job(session=session, kind=JOB_KIND, params={"task_id": task_id, "samples": samples},
                     scope=scope_of(task_id), requester=actor, total=generation_steps(samples),
                     what=f"An LLM generation for task {plan.key}")


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def generation_report(result: dict[str, Any]) -> tuple[str, str]:
    """(streamlit kind, Markdown text) of a generation's result, as the page shows it."""
    if result.get("cancelled"):
        return "warning", (f"Cancelled at: {result.get('stage', 'a step')}. Nothing was stored; generating again "
                           "sends only the requests not answered yet (answers are cached).")
    text = (f"{result.get('ran', 0)} of {result.get('samples', 0)} solutions ran in the sandbox; "
            f"{_n(result.get('artifacts', 0), 'artifact')} agreed and {_n(result.get('checks', 0), 'check')} "
            f"{'was' if result.get('checks', 0) == 1 else 'were'} proposed. "
            "They are candidates now: the analysts vote on them in stage 2.")
    if result.get("disagreeing"):
        text += "  \nNo majority for: " + ", ".join(f"{p} (groups {g})" for p, g in result["disagreeing"].items())
    return ("warning" if result.get("errors") or result.get("disagreeing") else "success"), text


def run_candidate_job(engine: Engine, job: BackgroundJob, control: JobControl, settings: Settings) -> JobOutcome:
    """The job's function (background_jobs.KINDS), run as the person who asked for it. It spans transactions
    (:func:`curation.db.transactions`): the LLM and the sandbox run for minutes outside any, between the plan's
    and the one that stores the candidates at the end."""
    task_id, samples = int(job.params["task_id"]), int(job.params["samples"])
    client = LLMClient(settings.llm_config())  # LLMNotConfigured: the job fails with the sentence saying what to set
    actor = job_requester(engine, job)
    step = transactions(engine)
    with step() as s:
        plan = plan_generation(session=s, actor=actor, task_id=task_id, samples=samples, store=settings.datasets_store)
    stage = {"now": "queued"}

    def progress(done: int, total: int, what: str) -> None:
        stage["now"] = what
        control.progress(done, total, what)

    work = do_generation(plan, client=client, samples=samples, progress=progress, should_stop=control.cancelled)
    if work is None:
        result = {"cancelled": True, "task": plan.key, "samples": samples, "stage": stage["now"]}
        return JobOutcome(RunStatus.CANCELLED.value, generation_report(result)[1], result)
    with step() as s:
        summary = store_generation(session=s, plan=plan, work=work, samples=samples)
    return JobOutcome(RunStatus.SUCCEEDED.value, generation_report(summary)[1], summary)
