"""The index of cut releases (the release files themselves live on disk, see :mod:`exports.native`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from curation.models.columns import json_field, utc_now_field

__all__ = ["ReleaseRecord"]


class ReleaseRecord(SQLModel, table=True):
    """A cut release. The files are the release; this row indexes them (they never change after cutting)."""

    __tablename__ = "release"

    id: int | None = Field(default=None, primary_key=True)
    version: str = Field(index=True, unique=True, max_length=32)
    format_version: str = Field(max_length=16)
    previous_version: str | None = Field(default=None, max_length=32)
    notes: str = ""
    created_at: datetime = utc_now_field()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    path: str = Field(max_length=512, description="release directory, relative to the releases folder")
    manifest_sha256: str = Field(max_length=64, description="SHA-256 of the MANIFEST as cut; checked on every read")
    zip_sha256: str | None = Field(
        default=None, max_length=64,
        description="SHA-256 of <version>.zip as cut; releases cut before 0005 get it on their first full check")
    summary: dict[str, Any] = json_field(dict)

