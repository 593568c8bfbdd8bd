"""Datasets and stage 1: who annotates which dataset, and each analyst's decisions (conceptual
variables, transforms, statistical models)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from curation.models.columns import UTCDateTime, _json, _ts, new_spec_id

__all__ = [
    "Dataset",
    "DatasetAssignment",
    "AnalysisStatus",
    "Analysis",
    "ConceptualVariable",
    "Transform",
    "StatModel",
]


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
    files: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False, server_default="[]"),
        description="Every file of a dataset that has more than its one table (a DiscoveryBench folder: metadata "
        "and data files), each {name, relpath, sha256, size, format, role, columns}; empty for BLADE datasets, "
        "whose one table is data_relpath. data_relpath is always the dataset's main table.",
    )
    parts: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}"),
        description="Each imported kind's part of the dataset (its items and their gold), by the kind's name, as the "
        "kind's release-part model dumps it (forkpaths import-<kind>); releases carry it as it is. Curated kinds keep "
        "their items in their own tables instead.",
    )
    created_at: datetime = _ts()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    archived_at: datetime | None = Field(
        default=None, sa_type=UTCDateTime,
        description="Set when a curator archives the dataset: kept, but hidden from annotation and new releases.",
    )
    archived_by_id: int | None = Field(default=None, foreign_key="user.id")

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class DatasetAssignment(SQLModel, table=True):
    dataset_id: int = Field(foreign_key="dataset.id", primary_key=True)
    user_id: int = Field(foreign_key="user.id", primary_key=True)
    assigned_at: datetime = _ts()
    assigned_by_id: int | None = Field(default=None, foreign_key="user.id")


class AnalysisStatus(StrEnum):
    DRAFT = "draft"
    SUBMITTED = "submitted"


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
    passed_check_sha256: str | None = Field(
        default=None, max_length=64,
        description="Fingerprint (code + the parent transforms' code it ran after) of the last sanity check that "
                    "passed on this code; None when the current code was never checked or its check failed.",
    )
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
    passed_check_sha256: str | None = Field(
        default=None, max_length=64,
        description="Fingerprint (code + the parent transforms' code it ran after) of the last sanity check that "
                    "passed on this code; None when the current code was never checked or its check failed.",
    )
    position: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()

