"""Jobs the sandbox may run, by name: an allowlist of engine modules and a one-line registration.

A job is a function ``fn(ctx: JobContext) -> dict`` in one of :func:`engine_modules` (the shared ones and those the
task kinds declare, ``TaskKind.engine_modules``), decorated with ``@sandbox_job("name")``. The zygote registers the
kinds and imports every engine module before it forks, so a job costs no import; the parent sends only the name,
and the job process refuses a name that is not registered, or whose module is no engine module.

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

__all__ = ["SHARED_ENGINE_MODULES", "JobFunction", "declare_engine_modules", "engine_modules", "forget_engine_modules",
           "import_engine_modules", "lookup", "registered", "sandbox_job"]

SHARED_ENGINE_MODULES: tuple[str, ...] = (
    "evaluation.sandbox.code_jobs",
    "evaluation.sandbox.agent_jobs",
)
"""Modules whose ``@sandbox_job`` functions every kind shares (the checks of analysts' code, agents' code). A kind's
own jobs live in the modules it declares (``TaskKind.engine_modules``), which the registry of kinds declares here."""

_DECLARED: dict[str, tuple[str, ...]] = {}

JobFunction = Callable[["JobContext"], dict[str, Any]]
_JOBS: dict[str, JobFunction] = {}


def declare_engine_modules(kind: str, modules: tuple[str, ...]) -> None:
    """The engine modules of kind ``kind`` (called by :func:`evaluation.tasks.register_kind`)."""
    _DECLARED[kind] = tuple(modules)


def forget_engine_modules(kind: str) -> None:
    _DECLARED.pop(kind, None)


def engine_modules() -> tuple[str, ...]:
    """Modules whose jobs may run in the sandbox: the shared ones, then those the registered kinds declare."""
    return tuple(dict.fromkeys([*SHARED_ENGINE_MODULES, *(m for ms in _DECLARED.values() for m in ms)]))


def sandbox_job(name: str) -> Callable[[JobFunction], JobFunction]:
    """Register ``fn`` as the sandbox job ``name``. Only a job of one of :func:`engine_modules` may run; that is
    checked when it is looked up (a module may be imported before the kinds that declare it register)."""

    def register(fn: JobFunction) -> JobFunction:
        existing = _JOBS.get(name)
        if existing is not None and existing.__module__ != fn.__module__:
            raise RuntimeError(f"sandbox job {name!r} is registered twice ({existing.__module__}, {fn.__module__})")
        _JOBS[name] = fn
        return fn

    return register


def import_engine_modules() -> None:
    """Import every engine module (the template, before it forks; the kinds must be registered first: importing
    :mod:`evaluation.tasks` registers them)."""
    for module in engine_modules():
        importlib.import_module(module)


def lookup(name: str) -> JobFunction | None:
    """The job ``name`` (None: no job has that name).

    Raises:
        LookupError: its module is no engine module: no kind declares it and it is not a shared one.
    """
    fn = _JOBS.get(name)
    if fn is not None and fn.__module__ not in engine_modules():
        raise LookupError(f"the sandbox job {name!r} is defined in {fn.__module__}, which no task kind declares "
                          "among its engine modules (TaskKind.engine_modules) and is not shared "
                          "(evaluation.sandbox.registry.SHARED_ENGINE_MODULES): it may not run")
    return fn


def registered() -> list[str]:
    """Names of every job of the engine modules (importing them, which is cheap: they import lazily)."""
    import_engine_modules()
    allowed = engine_modules()
    return sorted(name for name, fn in _JOBS.items() if fn.__module__ in allowed)
