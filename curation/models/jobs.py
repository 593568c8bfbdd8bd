"""Long work other than scoring, and the lifecycle states every run and job moves through."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from curation.models.columns import UTCDateTime, json_field, utc_now_field

__all__ = ["RunStatus", "BackgroundJob"]


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # the process scoring it died (killed, machine lost); re-score it


class BackgroundJob(SQLModel, table=True):
    """A long job other than scoring a run (LLM alternative generation; agent runs next): what was asked, by
    whom, and its lifecycle, which every page and every worker machine reads from here
    (:mod:`curation.services.background_jobs`).

    ``active_scope`` holds ``scope`` while the job is queued or running and is cleared when it ends; it is unique,
    so one job per scope (e.g. one generation per dataset) is enforced by the database, also between machines.
    """

    __tablename__ = "background_job"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=32, index=True, description="e.g. llm_alternatives")
    params: dict[str, Any] = json_field(dict)
    scope: str = Field(default="", max_length=128, index=True, description="e.g. dataset:3")
    active_scope: str | None = Field(default=None, max_length=128, unique=True, index=True)
    requested_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = utc_now_field()
    status: str = Field(default=RunStatus.QUEUED.value, max_length=16, index=True)
    progress_done: int = 0
    progress_total: int = 0
    stage: str = Field(default="", max_length=256)
    message: str = ""
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    cancel_requested: bool = False
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    executor: str = Field(default="", max_length=256, description="host/pid/start of the process running it")
    attempts: int = 0
    job_id: int | None = Field(default=None, description="its procrastinate job, when a worker runs it")
    dismissed_at: datetime | None = Field(default=None, sa_type=UTCDateTime,
                                          description="when its summary was dismissed from the page")

