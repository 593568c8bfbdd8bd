"""Jobs the sandbox may run, by name: an allowlist of engine modules and a one-line registration.

A job is a function ``fn(ctx: JobContext) -> dict`` in one of :data:`ENGINE_MODULES`, decorated with
``@sandbox_job("name")``. The zygote imports every engine module before it forks, so a job costs no import;
the parent sends only the name, and the job process refuses a name that is not registered. Registering a job
from a module outside the allowlist raises at import time.

A job runs code it did not write only in the child of :meth:`JobContext.split
<evaluation.sandbox.runtime.JobContext.split>` (issue 26: one boundary for every path), and every registered job
must pass the shared attack suite, ``tests/evaluation/test_boundary_suite.py``, which fails for a job that has no
driver there.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluation.sandbox.runtime import JobContext

__all__ = ["ENGINE_MODULES", "JobFunction", "import_engine_modules", "lookup", "registered", "sandbox_job"]

ENGINE_MODULES: tuple[str, ...] = (
    "evaluation.sandbox.code_jobs",
    "evaluation.groundtruth.jobs",
    "evaluation.groundtruth.convert_job",
    "evaluation.hms.expression",
    "evaluation.programmatic.job",
    "evaluation.sandbox.agent_jobs",
    "evaluation.reproducibility.script_job",
)
"""Modules whose ``@sandbox_job`` functions may run in the sandbox. Add a module here to register its jobs."""

JobFunction = Callable[["JobContext"], dict[str, Any]]
_JOBS: dict[str, JobFunction] = {}


def sandbox_job(name: str) -> Callable[[JobFunction], JobFunction]:
    """Register ``fn`` as the sandbox job ``name`` (only from a module in :data:`ENGINE_MODULES`)."""

    def register(fn: JobFunction) -> JobFunction:
        if fn.__module__ not in ENGINE_MODULES:
            raise RuntimeError(
                f"sandbox job {name!r} is defined in {fn.__module__}, which is not in "
                "evaluation.sandbox.registry.ENGINE_MODULES"
            )
        existing = _JOBS.get(name)
        if existing is not None and existing.__module__ != fn.__module__:
            raise RuntimeError(f"sandbox job {name!r} is registered twice ({existing.__module__}, {fn.__module__})")
        _JOBS[name] = fn
        return fn

    return register


def import_engine_modules() -> None:
    for module in ENGINE_MODULES:
        importlib.import_module(module)


def lookup(name: str) -> JobFunction | None:
    return _JOBS.get(name)


def registered() -> list[str]:
    """Names of every job of the engine modules (importing them, which is cheap: they import lazily)."""
    import_engine_modules()
    return sorted(_JOBS)
