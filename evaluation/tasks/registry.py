"""The registry: a kind's name → its :class:`~evaluation.tasks.base.TaskKind` (lm-evaluation-harness's task
registry, inspect_ai's tasks found by name).

Kinds are discovered, not imported by hand: every module of this package that defines ``KIND`` (a
:class:`TaskKind`), and every object published under the ``forkpaths.kinds`` entry-point group by another
installed package. They stand in the order they declare (``TaskKind.order``, then name), whatever order the
modules were found in. A kind whose declaration is wrong, or whose name is taken, stops the start with a sentence.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from evaluation.errors import EvaluationError
from evaluation.judges.base import JUDGES, forget_judge, register_judge
from evaluation.sandbox.registry import declare_engine_modules, forget_engine_modules
from evaluation.tasks.base import ItemKind, TaskKind, kind_problems
from exports.parts import declare_part, forget_part

__all__ = [
    "KINDS",
    "ENTRY_POINT_GROUP",
    "KindDeclarationError",
    "UnknownKind",
    "companion_kinds",
    "discover_kinds",
    "item_kind",
    "item_kinds",
    "kind_names",
    "kinds_with",
    "ranked_kinds",
    "register_kind",
    "registered",
    "task_kind",
]

ENTRY_POINT_GROUP = "forkpaths.kinds"
#: the package's modules that are not kinds
_NOT_KINDS = frozenset({"base", "registry"})

KINDS: dict[str, TaskKind] = {}


class UnknownKind(EvaluationError):
    """A run names a kind no module registered."""


class KindDeclarationError(EvaluationError):
    """A kind that cannot be registered (a wrong declaration, a name taken): the sentence says which and why."""


def _sort() -> None:
    ordered = sorted(KINDS.values(), key=lambda k: (k.order, k.name))
    KINDS.clear()
    KINDS.update((k.name, k) for k in ordered)


def register_kind(kind: Any, *, source: str = "") -> TaskKind:
    """Register ``kind`` (a :class:`TaskKind`) under its name.

    Raises:
        KindDeclarationError: not a TaskKind, a wrong declaration, its name or one of its decision-item kinds
            already registered by another kind.
    """
    where = f" (from {source})" if source else ""
    if not isinstance(kind, TaskKind):
        raise KindDeclarationError(f"{kind!r}{where} is not a TaskKind: a kind module defines KIND = TaskKind(...).")
    problems = kind_problems(kind)
    if problems:
        raise KindDeclarationError(f"The task kind {kind.name!r}{where} cannot be registered: {'; '.join(problems)}.")
    if kind.name in KINDS and KINDS[kind.name] is not kind:
        raise KindDeclarationError(f"Two task kinds are named {kind.name!r}{where}: each kind needs its own name.")
    for item in kind.item_kinds:
        owner = next((k.name for k, i in _item_kinds() if i.name == item.name), kind.name)
        if owner != kind.name:
            raise KindDeclarationError(f"The decision-item kind {item.name!r} of the task kind {kind.name!r}{where} "
                                       f"already belongs to the task kind {owner!r}.")
    for job in kind.jobs:
        holder = next((k.name for k in KINDS.values() if k.name != kind.name and any(j.name == job.name for j in k.jobs)),
                      None)
        if holder is not None:
            raise KindDeclarationError(f"The background job kind {job.name!r} of the task kind {kind.name!r}{where} "
                                       f"already belongs to the task kind {holder!r}.")
    for judge in kind.own_judges:
        if judge.name in JUDGES and JUDGES[judge.name] is not judge.build:
            raise KindDeclarationError(f"The judge {judge.name!r} of the task kind {kind.name!r}{where} is already "
                                       "registered by another kind or module: each judge needs its own name.")
    KINDS[kind.name] = kind
    _sort()
    for judge in kind.own_judges:  # the judges look its judges up by name, like the shared ones
        register_judge(judge.name, needs_llm=judge.needs_llm)(judge.build)
    declare_engine_modules(kind.name, kind.engine_modules)  # the sandbox may run their jobs
    for known in KINDS.values():  # the release format's readers and writers loop over the parts, in this order
        forget_part(known.name)
        if known.release_part is not None:
            declare_part(known.name, known.release_part)
    return kind


@contextmanager
def registered(kind: TaskKind) -> Iterator[TaskKind]:
    """``kind`` registered for the duration of the block (a kind defined in a test), then removed."""
    register_kind(kind, source="a test")
    try:
        yield kind
    finally:
        KINDS.pop(kind.name, None)
        forget_part(kind.name)
        forget_engine_modules(kind.name)
        for judge in kind.own_judges:
            forget_judge(judge.name)


def discover_kinds() -> list[TaskKind]:
    """Register every kind of this package and of the ``forkpaths.kinds`` entry points (idempotent)."""
    package = __name__.rpartition(".")[0]  # this package, scanned from its folder (importing it would be a circle)
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name in _NOT_KINDS or info.name.startswith("_") or info.ispkg:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        kind = getattr(module, "KIND", None)  # a module of the package without KIND is a helper, not a kind
        if kind is not None:
            register_kind(kind, source=module.__name__)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        register_kind(ep.load(), source=f"the entry point {ep.name} = {ep.value}")
    return list(KINDS.values())


def task_kind(name: str) -> TaskKind:
    """The kind registered as ``name``.

    Raises:
        UnknownKind: no kind has that name (the message lists the known ones).
    """
    try:
        return KINDS[name]
    except KeyError:
        raise UnknownKind(f"Unknown run kind '{name}'; the known kinds are {', '.join(KINDS)}.") from None


def kind_names() -> list[str]:
    """Every registered kind, in their declared order."""
    return list(KINDS)


def kinds_with(capability: str) -> list[TaskKind]:
    """The kinds that declare ``capability`` (a field of :class:`TaskKind` that is not empty)."""
    if capability not in TaskKind.__dataclass_fields__:
        raise AttributeError(f"TaskKind has no capability {capability!r}")
    return [k for k in KINDS.values() if getattr(k, capability)]


def ranked_kinds() -> list[TaskKind]:
    """The kinds whose runs are rows of a leaderboard (the others add columns to those rows)."""
    return [k for k in KINDS.values() if k.leaderboard.role == "ranked"]


def companion_kinds() -> list[TaskKind]:
    """The kinds whose latest run per agent adds columns to the ranked kinds' rows."""
    return [k for k in KINDS.values() if k.leaderboard.role == "companion"]


def _item_kinds() -> Iterator[tuple[TaskKind, ItemKind]]:
    for kind in KINDS.values():
        for item in kind.item_kinds:
            yield kind, item


def item_kinds() -> list[ItemKind]:
    """Every registered kind's decision-item kinds, in the kinds' order."""
    return [item for _, item in _item_kinds()]


def item_kind(name: str) -> ItemKind:
    """The decision-item kind ``name`` (an alternative's or a ground-truth item's ``kind``), as the task kind that
    owns it declares it.

    Raises:
        UnknownKind: no registered task kind declares it.
    """
    found = next((item for _, item in _item_kinds() if item.name == name), None)
    if found is None:
        known = ", ".join(item.name for _, item in _item_kinds())
        raise UnknownKind(f"Unknown decision-item kind '{name}'; the known ones are {known}.")
    return found
