"""inspect_ai's entry point: one ``forkpaths/<kind>`` task per kind an agent can answer (a loop over the
registry of :mod:`evaluation.tasks`, kinds with an agent hook; no kind is named here).

Task parameters (``-T name=value``):

* ``release``: a release version published in this data folder (``FORKPATHS_DATA_DIR``'s ``releases/``), or
  the path of a release folder;
* ``solver``: ``generate`` (one answer) or ``react`` (inspect's ReAct agent with a sandboxed Python tool);
* ``judge``, ``mode``, ``k``: as for a scoring run (default: the kind's own judge, ``default``, 10); a judge
  that asks an LLM uses ``FORKPATHS_LLM_*``;
* ``workflow``, ``only`` (task keys or datasets, comma-separated), ``max_steps``, ``step_timeout_s``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Task, task

from evaluation.inspect_bridge.answers import InspectError, inspect_kinds

__all__ = ["release_folder"]


def release_folder(release: str) -> Path:
    """The folder of ``release``: a path to a release folder, else a version published in the data folder."""
    from curation.settings import Settings

    given = Path(release).expanduser()
    if (given / "release.json").is_file() or (given / "MANIFEST").is_file():
        return given
    folder = Settings().releases_store / release
    if folder.is_dir():
        return folder
    raise InspectError(f"Release '{release}' is neither a release folder nor a version published in "
                       f"{folder.parent}; pass -T release=<version or path of a release folder>.")


def _factory(kind: str) -> Callable[..., Task]:
    def make(release: str = "", solver: str = "generate", judge: str = "", mode: str = "default", k: int = 10,
             workflow: bool = False, only: str = "", max_steps: int = 12, step_timeout_s: float = 30.0) -> Task:
        from curation.services.scoring import JudgeSettings, default_judge
        from curation.settings import Settings
        from evaluation.inspect_bridge.task import kind_task
        from evaluation.tasks import ScoringLimits

        if not release:
            raise InspectError(f"forkpaths/{kind} needs a release: -T release=<version or path of a release folder>.")
        settings = Settings()
        judges = JudgeSettings.from_settings(settings)
        name = judge or default_judge(kind)
        uses_judge = bool(getattr(_kind(kind), "uses_judge", False))
        if uses_judge:
            judges.configuration(name)  # refuses an unknown judge, or an LLM judge without an endpoint, now
        folder = release_folder(str(release))
        return kind_task(kind, folder, solver_name=solver, judge=lambda: judges.build(name), mode=mode, k=int(k),
                         workflow=bool(workflow), only=[s for s in str(only).split(",") if s.strip()] or None,
                         max_steps=int(max_steps), step_timeout_s=float(step_timeout_s),
                         limits=ScoringLimits.from_settings(settings), release_label=str(release),
                         gt_cache=settings.artifact_store().gt_cache)

    make.__name__ = kind
    make.__qualname__ = kind
    make.__module__ = __name__
    make.__doc__ = f"forkpaths's {kind} tasks of a release, scored by forkpaths's {kind} engine."
    return make


def _kind(name: str) -> Any:
    from evaluation.tasks import task_kind

    return task_kind(name)


def _registered_name(kind: str) -> str:
    """The name to register ``kind``'s task under, so that inspect finds it as ``forkpaths/<kind>``: inspect
    prefixes the package's name itself when it sees the package as installed, but not when the ``forkpaths.egg-info``
    folder an editable install leaves in the project folder shadows the installed distribution (running from the
    project folder, or tests, whose path starts there); then the name is given in full."""
    try:
        from inspect_ai._util.package import get_installed_package_name
    except ImportError:  # a later inspect: let it name the task as it does
        return kind
    return kind if get_installed_package_name(_factory) == __name__.split(".")[0] else f"{__name__.split('.')[0]}/{kind}"


for _name in inspect_kinds():
    globals()[_name] = task(name=_registered_name(_name))(_factory(_name))
