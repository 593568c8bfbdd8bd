"""Curated items in one shape (issue 27, point 3): the items experts curate and their candidates, for every kind
that keeps its items here, in two generic tables. A kind owns the ``payload`` of its rows: it declares the pydantic
models that validate them (:class:`evaluation.tasks.base.CuratedShape`, the ``curated`` capability of its
:class:`~evaluation.tasks.base.TaskKind`), and :mod:`curation.services.curated` validates every write through them.
A new curated kind therefore needs no migration.

Votes and consensus on a candidate are the usual :class:`~curation.models.review.Vote` /
:class:`~curation.models.review.Consensus` rows (their ``target_id`` is the candidate's id).

Real columns only where queries need them: an item's ``dataset_id``, ``kind``, ``key`` (unique per kind) and
``status``; a candidate's ``item_id``, ``dataset_id``, ``kind``, ``role``, ``source``, who proposed it and what it
edits (``seed_id``), its release ``gate`` evidence and its ``position``. Everything else is payload.

The MCQ kind keeps each question here as an item with no candidates (its id the item's key, its review state the
item's status; see :mod:`curation.services.mcq_store` for its mapping).

Not every kind is here: DiscoveryBench's :class:`~curation.models.tasks.HypothesisTask` keeps its own table on
purpose, because its pages and services filter, sort and count by many of its fields (split, question type,
difficulty, gold source, status); the "real columns where queries need them" choice made for a whole kind."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from curation.models.columns import json_field, new_spec_id, utc_now_field

__all__ = ["CuratedCandidate", "CuratedItem"]


class CuratedItem(SQLModel, table=True):
    """One item a kind curates (a programmatic task, an MCQ, ...): its kind, its key (unique within the kind) and its
    kind-owned payload. Its candidates are :class:`CuratedCandidate` rows."""

    __tablename__ = "curated_item"
    __table_args__ = (UniqueConstraint("kind", "key"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, index=True, description="the task kind that owns it")
    key: str = Field(max_length=128, index=True, description="its name, unique within its kind")
    status: str = Field(default="", max_length=16, description="the kind's state of the item ('' when none)")
    payload: dict[str, Any] = json_field(dict)
    created_at: datetime = utc_now_field()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")


class CuratedCandidate(SQLModel, table=True):
    """A candidate of a curated item (a proposed check, a ground-truth artifact, ...), reviewed like any decision:
    ``role`` says which of its kind's candidate models its payload is, and votes name it by its id."""

    __tablename__ = "curated_candidate"

    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    item_id: int = Field(foreign_key="curated_item.id", index=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, description="the task kind that owns it (its item's)")
    role: str = Field(max_length=16, description="which of its kind's candidate payloads it is")
    source: str = Field(max_length=16, description="llm | peer | imported | agreement ...")
    proposed_by_id: int | None = Field(default=None, foreign_key="user.id")
    seed_id: str | None = Field(default=None, max_length=64, description="the candidate it is an edit of")
    payload: dict[str, Any] = json_field(dict)
    gate: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    extra: dict[str, Any] = json_field(dict)
    position: int = 0
    created_at: datetime = utc_now_field()
