"""LLM candidate generation for a programmatic task, as a background job (issue 20's DataSciBench pipeline).

A curator asks for N samples; the job (a procrastinate worker on PostgreSQL, a thread of the app on SQLite, see
:mod:`curation.services.background_jobs`) asks the LLM for each solution, runs each in the sandbox, applies the
agreement rule, asks the LLM for checks, and stores the agreed artifacts and proposed checks as candidates in
one transaction. Progress (2N + 1 steps: each solution asked, each run, the checks asked) and the cancel flag
live on the job row; a cancel stops at the next step and stores nothing (every answer is cached, so asking again
sends only what was not asked yet). One generation per task at a time.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from curation.db import transactions
from curation.models import BackgroundJob, RunStatus, User
from curation.services.actor import judges_actor
from curation.services.background_jobs import JobControl, JobOutcome, job_kind_of, start_job
from curation.services.generation_jobs import (
    job_requester,
)
from curation.services.programmatic import (
    do_generation,
    generation_steps,
    plan_generation,
    store_generation,
)
from evaluation.llm import LLMClient

if TYPE_CHECKING:
    from curation.settings import Settings

__all__ = ["JOB_KIND", "generation_report", "run_candidate_job", "scope_of", "start_candidate_generation"]

log = logging.getLogger(__name__)
JOB_KIND = job_kind_of(f"{__name__}:run_candidate_job")  # as the programmatic kind declares it


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
