"""SQLModel tables of the curation database.

Decisions (conceptual variables, transforms, models) use 32-hex string ids so that BLADE's spec ids survive
import and export unchanged. Lists of structured values (columns, mappings, branches) are JSON columns holding
the dumps of the value objects in :mod:`curation.specs`; fields BLADE carries that forkpaths does not edit
(``time_stamp``, ``tags``, raw spec-id lists ...) live in ``extra`` so that nothing is lost.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, DateTime, TypeDecorator, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = [
    "Analysis",
    "AnalysisStatus",
    "ConceptualVariable",
    "Dataset",
    "DatasetAssignment",
    "Role",
    "StatModel",
    "Alternative",
    "Consensus",
    "MCQ",
    "ReleaseRecord",
    "Transform",
    "User",
    "Vote",
    "UTCDateTime",
    "new_spec_id",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_spec_id() -> str:
    """A BLADE-style spec id: a uuid4 as 32 hex characters."""
    return uuid.uuid4().hex


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC timestamps on every backend (SQLite drops the offset; this puts it back)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; forkpaths stores timezone-aware UTC only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ts(**kw: Any) -> Any:
    return Field(default_factory=utcnow, sa_type=UTCDateTime, **kw)


def _json(default: Any = list) -> Any:
    return Field(default_factory=default, sa_column=Column(JSON, nullable=False))


class Role(StrEnum):
    ANALYST = "analyst"
    CURATOR = "curator"
    ADMIN = "admin"


class AnalysisStatus(StrEnum):
    DRAFT = "draft"
    SUBMITTED = "submitted"


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, unique=True, max_length=64)
    display_name: str = Field(default="", max_length=128)
    password_hash: str = Field(default="", max_length=256)
    role: str = Field(default=Role.ANALYST.value, max_length=16)
    is_active: bool = True
    is_system: bool = Field(default=False, description="An account no one signs in with (e.g. imported annotators).")
    auth_epoch: int = Field(default=0, description="Bumped on password reset / deactivation; older sessions end.")
    created_at: datetime = _ts()


class Dataset(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True, max_length=128)
    title: str = Field(default="", max_length=256)
    research_question: str
    description: str = ""
    dictionary: list[dict[str, Any]] = _json()
    info: dict[str, Any] = _json(dict)
    data_relpath: str = Field(max_length=512)
    data_sha256: str = Field(max_length=64)
    num_rows: int = 0
    num_columns: int = 0
    source: str = Field(default="", max_length=32)
    extra: dict[str, Any] = _json(dict)
    created_at: datetime = _ts()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")


class DatasetAssignment(SQLModel, table=True):
    dataset_id: int = Field(foreign_key="dataset.id", primary_key=True)
    user_id: int = Field(foreign_key="user.id", primary_key=True)
    assigned_at: datetime = _ts()
    assigned_by_id: int | None = Field(default=None, foreign_key="user.id")


class Analysis(SQLModel, table=True):
    """One analyst's stage-1 analysis of one dataset."""

    __table_args__ = (UniqueConstraint("dataset_id", "annotator_id"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    annotator_id: int = Field(foreign_key="user.id", index=True)
    status: str = Field(default=AnalysisStatus.DRAFT.value, max_length=16)
    created_at: datetime = _ts()
    submitted_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class ConceptualVariable(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    variable_type: str = Field(max_length=16, description="IV, DV or Control (BLADE's vocabulary)")
    interaction: bool = Field(default=False, description="A moderator is a Control with interaction")
    moderates: str = Field(default="", description="For moderators: what it interacts with (BLADE 'on')")
    concept: str
    rationale: str = ""
    columns: list[dict[str, Any]] = _json()
    random_effect: bool = Field(default=False, description="BLADE's random_effect flag")
    tags: list[str] = _json()
    extra: dict[str, Any] = _json(dict)
    position: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Transform(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    spec_name: str = Field(max_length=256)
    specification: str = ""
    verbs: list[str] = _json()
    code: str = ""
    rationale: str = ""
    mapping: list[dict[str, Any]] = _json()
    branches: list[dict[str, Any]] = _json()
    tags: list[str] = _json()
    extra: dict[str, Any] = _json(dict)
    last_check: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    position: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class StatModel(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    family: str = Field(default="", max_length=64)
    specification: str = ""
    spec_name: str = Field(default="", max_length=256)
    code: str = ""
    rationale: str = ""
    columns: list[dict[str, Any]] = _json()
    variable_ids: list[str] = _json()
    transform_ids: list[str] = _json()
    tags: list[str] = _json()
    extra: dict[str, Any] = _json(dict)
    last_check: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    position: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Alternative(SQLModel, table=True):
    """A decision proposed for review: LLM-generated (seeded from a decision) or put forward by a peer."""

    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, description="variable | transform")
    source: str = Field(max_length=16, description="llm | peer")
    proposed_by_id: int | None = Field(default=None, foreign_key="user.id")
    seed_id: str | None = Field(default=None, max_length=64, description="decision it was generated from")
    llm: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    payload: dict[str, Any] = _json(dict)
    extra: dict[str, Any] = _json(dict)
    position: int = 0
    created_at: datetime = _ts()


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
    created_at: datetime = _ts()


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
    decided_at: datetime = _ts()
    note: str = ""
    votes_snapshot: list[dict[str, Any]] = _json()


class MCQ(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, description="variable | transform")
    mc_type: str = Field(max_length=16, description="select_pos | select_neg")
    concept: str = ""
    options: list[dict[str, Any]] = _json()
    correct_index: int = 0
    extra: dict[str, Any] = _json(dict)
    position: int = 0
    created_at: datetime = _ts()


class ReleaseRecord(SQLModel, table=True):
    """A cut release. The files are the release; this row indexes them (they never change after cutting)."""

    __tablename__ = "release"

    id: int | None = Field(default=None, primary_key=True)
    version: str = Field(index=True, unique=True, max_length=32)
    format_version: str = Field(max_length=16)
    previous_version: str | None = Field(default=None, max_length=32)
    notes: str = ""
    created_at: datetime = _ts()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    path: str = Field(max_length=512, description="release directory, relative to the releases folder")
    manifest_sha256: str = Field(max_length=64)
    summary: dict[str, Any] = _json(dict)
