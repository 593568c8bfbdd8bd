"""Multiple-choice questions generated from the consensus, and curators' reviews of them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from curation.models.columns import json_field, new_spec_id, utc_now_field

__all__ = ["MCQ", "MCQReview"]


class MCQ(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, description="variable | transform")
    mc_type: str = Field(max_length=16, description="select_pos | select_neg")
    concept: str = ""
    options: list[dict[str, Any]] = json_field()
    correct_index: int = 0
    extra: dict[str, Any] = json_field(dict)
    position: int = 0
    created_at: datetime = utc_now_field()


class MCQReview(SQLModel, table=True):
    """A curator's review of one MCQ: accepted, rejected or edited (the MCQ row holds the edited content)."""

    __tablename__ = "mcq_review"

    mcq_id: str = Field(foreign_key="mcq.id", primary_key=True, max_length=64)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    status: str = Field(max_length=16, description="accepted | rejected | edited")
    note: str = ""
    reviewed_by_id: int | None = Field(default=None, foreign_key="user.id")
    reviewed_at: datetime = utc_now_field()
    history: list[dict[str, Any]] = json_field()

