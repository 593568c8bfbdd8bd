"""Stage 2: a dataset's stage and review settings, alternatives proposed for review, votes and their
changes, and the consensus each item reached."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from curation.models.columns import UTCDateTime, json_field, new_spec_id, utc_now_field

__all__ = ["Stage", "ProposerDisplay", "DatasetReview", "Alternative", "Vote", "VoteChange", "Consensus"]


class Stage(StrEnum):
    """Where a dataset is in the curation process."""

    ANNOTATE = "annotate"  # stage 1: each analyst annotates, blind to peers
    REVIEW = "review"  # stage 2: analysts who submitted review peers' decisions and alternatives
    CLOSED = "closed"  # stage 2 closed: votes are final


class ProposerDisplay(StrEnum):
    NAMED = "named"
    PSEUDONYMOUS = "pseudonymous"


class DatasetReview(SQLModel, table=True):
    """A dataset's stage and its review settings; a dataset without a row is in stage 1 with the defaults."""

    __tablename__ = "dataset_review"

    dataset_id: int = Field(foreign_key="dataset.id", primary_key=True)
    stage: str = Field(default=Stage.ANNOTATE.value, max_length=16)
    proposer_display: str = Field(default=ProposerDisplay.PSEUDONYMOUS.value, max_length=16)
    source_visible: bool = Field(default=False, description="Reviewers see whether a peer or the LLM proposed it")
    opened_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    opened_by_id: int | None = Field(default=None, foreign_key="user.id")
    closed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    closed_by_id: int | None = Field(default=None, foreign_key="user.id")
    updated_at: datetime = utc_now_field()


class Alternative(SQLModel, table=True):
    """A decision proposed for review: LLM-generated (seeded from a decision) or put forward by a peer."""

    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, description="variable | transform")
    source: str = Field(max_length=16, description="llm | peer")
    proposed_by_id: int | None = Field(default=None, foreign_key="user.id")
    seed_id: str | None = Field(default=None, max_length=64, description="decision it was generated from")
    llm: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    payload: dict[str, Any] = json_field(dict)
    extra: dict[str, Any] = json_field(dict)
    position: int = 0
    created_at: datetime = utc_now_field()


class Vote(SQLModel, table=True):
    """One annotator's answer to one question about one item; ``answer`` None means the question was skipped."""

    __table_args__ = (UniqueConstraint("target_kind", "target_id", "annotator_id", "question"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    target_kind: str = Field(max_length=16, description="alternative | variable | transform | model")
    target_id: str = Field(max_length=64, index=True)
    annotator_id: int = Field(foreign_key="user.id", index=True)
    question: str = Field(max_length=64)
    answer: str | None = Field(default=None, max_length=8, description="yes | no | unsure | None (skipped)")
    skipped_reason: str = ""
    explanation: str = ""
    position: int = 0
    created_at: datetime = utc_now_field()


class VoteChange(SQLModel, table=True):
    """One change of one current vote: who, what, when, before and after (``None``: no vote at that time)."""

    __tablename__ = "vote_change"

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    target_kind: str = Field(max_length=16)
    target_id: str = Field(max_length=64, index=True)
    annotator_id: int = Field(foreign_key="user.id", index=True)
    question: str = Field(max_length=64)
    before: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    after: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    changed_by_id: int | None = Field(default=None, foreign_key="user.id")
    changed_at: datetime = utc_now_field()
    note: str = ""


class Consensus(SQLModel, table=True):
    """The resolved status of one item, with how it was reached and the votes it was based on."""

    __table_args__ = (UniqueConstraint("target_kind", "target_id"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    target_kind: str = Field(max_length=16)
    target_id: str = Field(max_length=64)
    status: str = Field(max_length=16, description="justifiable | unjustifiable | split | unresolved")
    rule: str = Field(default="", max_length=64)
    decided_by_id: int | None = Field(default=None, foreign_key="user.id")
    decided_at: datetime = utc_now_field()
    note: str = ""
    votes_snapshot: list[dict[str, Any]] = json_field()

