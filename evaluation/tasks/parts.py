"""A dataset's part of each kind: ``DatasetRelease.parts[kind.name]``, validated by the kind's
:class:`~evaluation.tasks.base.ReleasePart` model (and kept validated on the dataset, so it is read once).

Shared code reads and writes parts only through these functions, with the kind in hand; it never names one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evaluation.errors import EvaluationError
from evaluation.tasks.base import TaskKind, score_in_process
from exports.schema import DatasetRelease, Release

__all__ = ["PartError", "answers_accuracy", "keeping_items", "part_of", "validate_parts", "with_part"]


class PartError(EvaluationError):
    """A dataset's part that its kind cannot read: the sentence names the dataset, the kind and the field."""


def _where(exc: ValidationError) -> str:
    first = exc.errors()[0]
    loc = ".".join(str(x) for x in first.get("loc", ())) or "(the part itself)"
    return f"{loc}: {first.get('msg', 'invalid')}"


def part_of(ds: DatasetRelease, kind: TaskKind, *, source: str = "") -> Any:
    """The dataset's part of ``kind`` as its model (None: the dataset has none, or the kind keeps no part).

    Raises:
        PartError: the payload does not fit the kind's model (which dataset, kind and field).
    """
    spec = kind.release_part
    if spec is None or kind.name not in ds.parts:
        return None
    raw = ds.parts[kind.name]
    cached = ds._parsed.get(kind.name)
    if cached is not None and cached[0] is raw:  # read from this very payload (a copy shares the dict)
        return cached[1]
    try:
        parsed = spec.model.model_validate(raw)
    except ValidationError as exc:
        where = f" in {source}" if source else ""
        raise PartError(f"The {kind.name} part of dataset {ds.name!r}{where} is malformed at {_where(exc)}.") from exc
    ds._parsed[kind.name] = (raw, parsed)
    return parsed


def with_part(ds: DatasetRelease, kind: TaskKind, part: BaseModel | None) -> DatasetRelease:
    """A copy of ``ds`` whose part of ``kind`` is ``part`` (None: without one)."""
    parts = {k: v for k, v in ds.parts.items() if k != kind.name}
    if part is not None:
        parts[kind.name] = part.model_dump(mode="json")
    copy = ds.model_copy(update={"parts": dict(sorted(parts.items()))})
    copy._parsed = {k: v for k, v in ds._parsed.items() if k != kind.name}  # model_copy shares the cache
    return copy


def validate_parts(release: Release, *, source: str = "", known: dict[str, TaskKind] | None = None) -> None:
    """Every part of every dataset read by its kind: a part of a kind nobody registered, or one its kind cannot
    read, is refused with a sentence (nothing of the release is taken).

    Raises:
        PartError: the first part that cannot be read.
    """
    from evaluation.tasks.registry import KINDS

    kinds = KINDS if known is None else known
    where = f" in {source}" if source else ""
    for ds in release.datasets:
        for name in ds.parts:
            kind = kinds.get(name)
            if kind is None or kind.release_part is None:
                raise PartError(f"Dataset {ds.name!r}{where} has a part of kind {name!r}, which this forkpaths does "
                                f"not know (it knows {', '.join(k for k, v in kinds.items() if v.release_part)}).")
            part_of(ds, kind, source=source)


def keeping_items(release: Release, kind: TaskKind, keep: Callable[[Any], bool], *,
                  field: str = "questions") -> Release:
    """A copy of ``release`` holding only the items of ``kind``'s part (its list ``field``) that ``keep`` accepts,
    and only the datasets left holding one: an answers file scored on it is scored on those items alone (an
    inspect sample's value, an imported run's accuracy)."""
    out = []
    for ds in release.datasets:
        part = part_of(ds, kind)
        if part is None:
            continue
        kept = [item for item in getattr(part, field) if keep(item)]
        if kept:
            out.append(with_part(ds, kind, part.model_copy(update={field: kept})))
    return release.model_copy(update={"datasets": out})


def answers_accuracy(kind: TaskKind, release: Release, release_folder: Path, answers: Mapping[str, str], *,
                     has_gold: Callable[[Any], bool], accuracy: Callable[[dict[str, Any]], Mapping[str, Any]]
                     ) -> dict[str, Any] | None:
    """Final answers by item id (AIRepr's, by sample index) scored in this process as ``kind``'s answers file
    ``{"answers": {id: text}}`` over the items of its part (``questions``) that the release holds with their gold
    (``has_gold``): the accuracy ``accuracy`` picks from the run's scores, with how many items were scored and the
    ids the release does not hold; None when it holds none of them."""
    held = {q.id for ds in release.datasets if (part := part_of(ds, kind)) is not None for q in part.questions
            if has_gold(q)}
    mine = {k: v for k, v in answers.items() if k in held}
    if not mine:
        return None
    narrowed = keeping_items(release, kind, lambda q: q.id in mine)
    body = json.dumps({"answers": mine}).encode("utf-8")
    scored = score_in_process(kind, narrowed, release_folder, [("airepr-final-answers.json", body)])
    return {**accuracy(scored.scores), "questions": len(mine), "not_in_release": sorted(set(answers) - held, key=str)}
