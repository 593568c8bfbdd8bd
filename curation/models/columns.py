"""Column types and field helpers every table module uses: timezone-aware UTC timestamps, spec ids, JSON columns."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, DateTime, TypeDecorator
from sqlmodel import Field

__all__ = ["UTCDateTime", "json_field", "new_spec_id", "utc_now_field", "utcnow"]


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


def utc_now_field(**kw: Any) -> Any:
    """A timestamp column that defaults to the moment the row is made (timezone-aware UTC)."""
    return Field(default_factory=utcnow, sa_type=UTCDateTime, **kw)


def json_field(default: Any = list) -> Any:
    """A JSON column, never NULL, defaulting to a fresh ``default()`` (an empty list unless told)."""
    return Field(default_factory=default, sa_column=Column(JSON, nullable=False))

