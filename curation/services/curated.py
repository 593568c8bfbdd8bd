"""Curated items in one shape (issue 27, point 3): write and read a kind's curated items and their candidates
(:mod:`curation.models.curated`) through the payload models the kind declares (``TaskKind.curated``, a
:class:`~evaluation.tasks.base.CuratedShape`).

Every write of a payload goes through :func:`valid_payload`: a payload that does not fit its kind's model is
refused with a sentence naming the field, and what is stored is the model's JSON form. Nothing here names a kind;
each kind's own services build on these functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from sqlmodel import Session, col, select

from curation.errors import CurationError
from curation.models import CuratedCandidate, CuratedItem
from evaluation.tasks import CuratedShape, UnknownKind, task_kind

__all__ = [
    "CuratedPayloadError",
    "add_candidate",
    "add_item",
    "candidates_of",
    "curated_shape",
    "item_by_key",
    "items_of",
    "set_item_payload",
    "valid_payload",
]


class CuratedPayloadError(CurationError):
    """A curated item's or candidate's payload that its kind's model refuses (which field, and why)."""


def curated_shape(kind: str) -> CuratedShape:
    """The payload models of ``kind``'s curated items.

    Raises:
        CuratedPayloadError: no such kind, or a kind that keeps no curated items.
    """
    try:
        shape = task_kind(kind).curated
    except UnknownKind as exc:
        raise CuratedPayloadError(str(exc)) from None
    if shape is None:
        raise CuratedPayloadError(f"The {kind} kind keeps no curated items (its TaskKind declares no `curated`).")
    return shape


def _describe(error: Mapping[str, Any]) -> str:
    where = ".".join(str(p) for p in error.get("loc", ()))
    return f"field '{where}': {error.get('msg', 'invalid')}" if where else str(error.get("msg", "invalid"))


def valid_payload(kind: str, payload: Mapping[str, Any], *, role: str | None = None) -> dict[str, Any]:
    """``payload`` checked by ``kind``'s model of its items (``role`` None) or of its candidates of ``role``, in
    the model's JSON form (what is stored).

    Raises:
        CuratedPayloadError: an unknown kind or role, or a payload the model refuses (the sentence names the field).
    """
    shape = curated_shape(kind)
    if role is None:
        model, what = shape.item, f"a {kind} item"
    else:
        found = shape.candidates.get(role)
        if found is None:
            raise CuratedPayloadError(f"The {kind} kind has no candidates of role {role!r} (it has "
                                      f"{', '.join(sorted(shape.candidates)) or 'none'}).")
        model, what = found, f"a {kind} {role}"
    try:
        return model.model_validate(dict(payload)).model_dump(mode="json")
    except ValidationError as exc:
        problems = "; ".join(_describe(e) for e in exc.errors())
        raise CuratedPayloadError(f"The payload of {what} was refused: {problems}. Nothing was stored.") from None


def add_item(*, session: Session, kind: str, dataset_id: int, key: str, payload: Mapping[str, Any],
             status: str = "", created_by_id: int | None = None) -> CuratedItem:
    """Store a curated item of ``kind`` (flushed: it has its id).

    Raises:
        CuratedPayloadError: the payload does not fit the kind's model.
    """
    item = CuratedItem(dataset_id=dataset_id, kind=kind, key=key, status=status,
                       payload=valid_payload(kind, payload), created_by_id=created_by_id)
    session.add(item)
    session.flush()
    return item


def set_item_payload(*, session: Session, item: CuratedItem, payload: Mapping[str, Any]) -> CuratedItem:
    """Replace an item's payload (checked as :func:`add_item` checks it)."""
    item.payload = valid_payload(item.kind, payload)
    session.add(item)
    return item


def add_candidate(*, session: Session, item: CuratedItem, role: str, source: str, payload: Mapping[str, Any],
                  proposed_by_id: int | None = None, seed_id: str | None = None,
                  gate: dict[str, Any] | None = None, extra: Mapping[str, Any] | None = None,
                  position: int = 0) -> CuratedCandidate:
    """Store a candidate of ``role`` for ``item`` (its kind and dataset are the item's; not flushed).

    Raises:
        CuratedPayloadError: the item's kind has no such role, or the payload does not fit its model.
    """
    candidate = CuratedCandidate(item_id=item.id or 0, dataset_id=item.dataset_id, kind=item.kind, role=role,
                                 source=source, proposed_by_id=proposed_by_id, seed_id=seed_id,
                                 payload=valid_payload(item.kind, payload, role=role), gate=gate,
                                 extra=dict(extra or {}), position=position)
    session.add(candidate)
    return candidate


def items_of(*, session: Session, kind: str, dataset_id: int | None = None) -> list[CuratedItem]:
    """``kind``'s curated items (of one dataset, or all), by key."""
    stmt = select(CuratedItem).where(CuratedItem.kind == kind)
    if dataset_id is not None:
        stmt = stmt.where(CuratedItem.dataset_id == dataset_id)
    return list(session.exec(stmt.order_by(col(CuratedItem.key))).all())


def item_by_key(*, session: Session, kind: str, key: str) -> CuratedItem | None:
    return session.exec(select(CuratedItem).where(CuratedItem.kind == kind, CuratedItem.key == key)).first()


def candidates_of(*, session: Session, kind: str, item_id: int | None = None,
                  dataset_id: int | None = None) -> list[CuratedCandidate]:
    """``kind``'s candidates of one item (by position, then age) or of one dataset (by item, then position)."""
    stmt = select(CuratedCandidate).where(CuratedCandidate.kind == kind)
    if item_id is not None:
        stmt = stmt.where(CuratedCandidate.item_id == item_id)
    if dataset_id is not None:
        stmt = stmt.where(CuratedCandidate.dataset_id == dataset_id)
    order = (col(CuratedCandidate.position), col(CuratedCandidate.created_at)) if item_id is not None else \
        (col(CuratedCandidate.item_id), col(CuratedCandidate.position))
    return list(session.exec(stmt.order_by(*order)).all())
