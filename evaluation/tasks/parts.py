"""A dataset's part of each kind: ``DatasetRelease.parts[kind.name]``, validated by the kind's
:class:`~evaluation.tasks.base.ReleasePart` model (and kept validated on the dataset, so it is read once).

Shared code reads and writes parts only through these functions, with the kind in hand; it never names one.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from evaluation.errors import EvaluationError
from evaluation.tasks.base import TaskKind
from exports.schema import DatasetRelease, Release

__all__ = ["PartError", "part_of", "validate_parts", "with_part"]


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
