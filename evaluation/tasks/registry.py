"""The registry: a kind's name → its module object (lm-evaluation-harness's task registry, inspect_ai's
tasks found by name)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from evaluation.errors import EvaluationError
from evaluation.tasks.base import ItemKind, TaskKind

__all__ = [
    "KINDS",
    "UnknownKind",
    "companion_kinds",
    "item_kind",
    "kind_names",
    "ranked_kinds",
    "register_kind",
    "task_kind",
]

KINDS: dict[str, TaskKind] = {}


class UnknownKind(EvaluationError):
    """A run names a kind no module registered."""


def register_kind(kind: Any) -> Any:
    """Register ``kind`` (a module or object implementing :class:`TaskKind`) under ``kind.name``."""
    if not isinstance(kind, TaskKind):
        raise TypeError(f"{kind!r} does not implement the TaskKind protocol")
    if kind.name in KINDS and KINDS[kind.name] is not kind:
        raise ValueError(f"a task kind named {kind.name!r} is already registered")
    for item in getattr(kind, "item_kinds", ()):
        owner = next((k.name for k, i in _item_kinds() if i.name == item.name), kind.name)
        if owner != kind.name:
            raise ValueError(f"the decision-item kind {item.name!r} already belongs to the task kind {owner!r}")
    KINDS[kind.name] = kind
    return kind


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
    """Every registered kind, in registration order."""
    return list(KINDS)


def ranked_kinds() -> list[TaskKind]:
    """The kinds whose runs are rows of a leaderboard (the others add columns to those rows)."""
    return [k for k in KINDS.values() if k.leaderboard.role == "ranked"]


def companion_kinds() -> list[TaskKind]:
    """The kinds whose latest run per agent adds columns to the ranked kinds' rows."""
    return [k for k in KINDS.values() if k.leaderboard.role == "companion"]


def _item_kinds() -> Iterator[tuple[TaskKind, ItemKind]]:
    for kind in KINDS.values():
        for item in getattr(kind, "item_kinds", ()):
            yield kind, item


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
