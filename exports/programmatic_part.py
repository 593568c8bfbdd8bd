"""The programmatic kind's part of a release (``DatasetRelease.parts["programmatic"]``), as the release format's
shared readers see it, beside its model (its kind declares it; :mod:`exports.upgrade` declares it to every reader
of a release)."""

from __future__ import annotations

from typing import Any

from exports.parts import ReleasePart
from exports.schema import ProgrammaticPart

__all__ = ["RELEASE_PART"]


def _items(part: ProgrammaticPart) -> list[tuple[str, str, Any]]:
    return [(t.key, f"`{t.key}` ({len(t.checks)} check{'' if len(t.checks) == 1 else 's'})",
             t.model_dump(mode="json")) for t in part.tasks]


#: A dataset's programmatic tasks, whole (prompt, ground-truth artifacts, checks): they are in the hash of every
#: run on the dataset (format 1.x's rule). A blind reader keeps them, as format 1.x's blinding did: their checks
#: are reviewed in curation, but what a release holds of them is the task's definition, not annotators' votes.
RELEASE_PART = ReleasePart(
    model=ProgrammaticPart, noun="programmatic tasks", one="programmatic task",
    counts=lambda part: {"programmatic tasks": len(part.tasks), "checks": sum(len(t.checks) for t in part.tasks)},
    hash_input=lambda part: {"programmatic_tasks": [t.model_dump(mode="json") for t in part.tasks]}
    if part.tasks else {},
    blind=lambda part: part, in_every_hash=True, items=_items,
    targets=lambda part: {("prog_check", c.id): f"{c.metric or c.function} of task {t.key}"
                          for t in part.tasks for c in t.checks})
