"""The MCQ kind's part of a release (``DatasetRelease.parts["mcq"]``), as the release format's shared readers see
it, beside its model (its kind declares it; :mod:`exports.upgrade` declares it to every reader of a release)."""

from __future__ import annotations

from typing import Any

from exports.parts import ReleasePart
from exports.schema import MCQPart

__all__ = ["RELEASE_PART"]


def _items(part: MCQPart) -> list[tuple[str, str, Any]]:
    return [(q.id, f"`{q.id}` ({q.kind}, {q.mc_type})", q.model_dump(mode="json")) for q in part.items]


#: A dataset's MCQs: counted, hashed for MCQ runs only (an answer key or a question that changes makes an MCQ run
#: stale; it changes nothing another kind's runs score against), never shown to a reader blind to the dataset.
RELEASE_PART = ReleasePart(
    model=MCQPart, noun="MCQs", one="MCQ",
    counts=lambda part: {"MCQs": len(part.items)},
    hash_input=lambda part: {"mcqs": [q.model_dump(mode="json") for q in part.items]} if part.items else {},
    blind=lambda part: None, work=("MCQs",), items=_items)
