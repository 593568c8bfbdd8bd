"""The name of a kind of background job has one source: its declaration (``TaskKind.jobs``, or the shared
``background_jobs.KINDS``). The services that start jobs take it from there by the function that runs them, so
a job is recorded under the name the kind declares, and ``start_job`` still refuses a name nobody declares."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from curation.errors import JobError
from curation.services.background_jobs import job_kind_of, job_kinds, start_job
from evaluation.tasks import KINDS, JobKind, registered
from tests.conformance import toy_kind

RUNNER = f"{toy_kind.__name__}:run_tally_job"


def test_every_service_records_its_jobs_under_the_declared_name():
    declared = {job.runner: job.name for kind in KINDS.values() for job in kind.jobs}
    assert declared, "some kind declares a background job"
    for runner, name in {**declared, **{r: n for n, r in job_kinds().items()}}.items():
        assert job_kind_of(runner) == name
        module = importlib.import_module(runner.partition(":")[0])
        # the constant the service starts its jobs with is the declared name
        assert name in {getattr(module, c, None) for c in ("JOB_KIND", "AGENT_JOB")}, runner


def test_a_declared_name_is_found_by_its_runner_and_only_while_declared():
    with pytest.raises(LookupError, match=f"No kind of background job is declared to run {RUNNER}"):
        job_kind_of(RUNNER)
    renamed = dataclasses.replace(toy_kind.KIND, jobs=(JobKind("toy_tally_v2", RUNNER),))
    with registered(renamed):
        assert job_kind_of(RUNNER) == "toy_tally_v2"  # a new name in the declaration is the name used
    with pytest.raises(JobError, match="There is no kind of job called 'toy_tally_v2'"):
        start_job(session=None, kind="toy_tally_v2", params={}, scope="toy", requester=None)  # type: ignore[arg-type]


def test_only_the_shared_starter_writes_a_job_row():
    """Every service queues its jobs through ``start_job`` (one permission re-check, one busy rule), none builds a
    ``BackgroundJob`` row of its own."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    writers = []
    for package in ("annotate_app", "curation", "evaluation", "exports"):
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "BackgroundJob"
                   for n in ast.walk(tree)):
                writers.append(path.relative_to(root).as_posix())
    assert writers == ["curation/services/background_jobs.py"]
