"""Column pickers: columns are (name, origin, producer) records, shown with where they come from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from curation.models import Transform
from evaluation.specs import ColumnOrigin, ColumnRef


def column_key(col: ColumnRef | dict[str, Any]) -> str:
    c = col if isinstance(col, ColumnRef) else ColumnRef.model_validate(col)
    return f"o:{c.name}" if c.origin == ColumnOrigin.ORIGINAL else f"d:{c.producer_id}:{c.name}"


def column_label(key: str, transforms: Sequence[Transform]) -> str:
    if key.startswith("o:"):
        return key[2:]
    _, producer, name = key.split(":", 2)
    spec = next((t.spec_name for t in transforms if t.id == producer), "?")
    return f"{name}  ⟵ {spec}"


def column_from_key(key: str, rationale: str = "") -> ColumnRef:
    if key.startswith("o:"):
        return ColumnRef(name=key[2:], origin=ColumnOrigin.ORIGINAL, rationale=rationale)
    _, producer, name = key.split(":", 2)
    return ColumnRef(name=name, origin=ColumnOrigin.DERIVED, producer_id=producer, rationale=rationale)
