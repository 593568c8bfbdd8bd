"""Stage 3: the ground-truth rule a dataset uses, and consensus meetings with their outcomes and audit trail."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from curation.models.columns import UTCDateTime, json_field, utc_now_field

__all__ = ["GroundTruthSetting", "Meeting", "MeetingOutcome", "MeetingEvent"]


class GroundTruthSetting(SQLModel, table=True):
    """The ground-truth rule a dataset uses (a dataset without a row uses the default rule); changes kept."""

    __tablename__ = "ground_truth_setting"

    dataset_id: int = Field(foreign_key="dataset.id", primary_key=True)
    rule: str = Field(max_length=64, description="name@version of a rule in curation.ground_truth.RULES")
    changed_by_id: int | None = Field(default=None, foreign_key="user.id")
    changed_at: datetime = utc_now_field()
    history: list[dict[str, Any]] = json_field()


class Meeting(SQLModel, table=True):
    """A stage-3 consensus meeting on one dataset: agenda, attendance, the votes before and after."""

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    status: str = Field(default="open", max_length=16, description="open | closed")
    rule: str = Field(max_length=64, description="the ground-truth rule the agenda was built with")
    started_by_id: int | None = Field(default=None, foreign_key="user.id")
    started_at: datetime = utc_now_field()
    closed_by_id: int | None = Field(default=None, foreign_key="user.id")
    closed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    attendance: list[int] = json_field()
    agenda: list[dict[str, Any]] = json_field()
    current: int = Field(default=0, description="agenda position shown on the projector")
    pre_votes: list[dict[str, Any]] = json_field()
    post_votes: list[dict[str, Any]] = json_field()


class MeetingOutcome(SQLModel, table=True):
    """The outcome of one agenda item; ``revision`` makes two facilitators' concurrent edits a clear conflict."""

    __tablename__ = "meeting_outcome"
    __table_args__ = (UniqueConstraint("meeting_id", "target_kind", "target_id"),)

    id: int | None = Field(default=None, primary_key=True)
    meeting_id: int = Field(foreign_key="meeting.id", index=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    target_kind: str = Field(max_length=16)
    target_id: str = Field(max_length=64)
    outcome: str = Field(max_length=16, description="justifiable | unjustifiable | contested")
    reason: str = ""
    dissent: str = ""
    recorded_by_id: int | None = Field(default=None, foreign_key="user.id")
    recorded_at: datetime = utc_now_field()
    revision: int = 1


class MeetingEvent(SQLModel, table=True):
    """The audit trail of a meeting: who did what, when."""

    __tablename__ = "meeting_event"

    id: int | None = Field(default=None, primary_key=True)
    meeting_id: int = Field(foreign_key="meeting.id", index=True)
    actor_id: int | None = Field(default=None, foreign_key="user.id")
    at: datetime = utc_now_field()
    action: str = Field(max_length=32)
    target_kind: str = Field(default="", max_length=16)
    target_id: str = Field(default="", max_length=64)
    detail: dict[str, Any] = json_field(dict)

