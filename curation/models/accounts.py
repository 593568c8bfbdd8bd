"""Who uses forkpaths: accounts and roles, signed-in browsers, sign-in throttling, form drafts."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlmodel import Field, SQLModel

from curation.models.columns import UTCDateTime, _json, _ts

__all__ = ["Role", "User", "AuthSession", "SignInThrottle", "FormDraft"]


class Role(StrEnum):
    ANALYST = "analyst"
    CURATOR = "curator"
    ADMIN = "admin"
    EVALUATOR = "evaluator"


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


class AuthSession(SQLModel, table=True):
    """A signed-in browser: the cookie holds a random token, this row only its SHA-256 (a leaked database
    holds no usable token). Ended sessions are kept a while with the reason, so the browser can be told why."""

    __tablename__ = "auth_session"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    auth_epoch: int = Field(description="The user's auth_epoch at sign-in; a later reset or deactivation ends it.")
    created_at: datetime = _ts()
    last_seen_at: datetime = _ts()
    expires_at: datetime = Field(sa_type=UTCDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    end_reason: str = Field(default="", max_length=32, description="sign_out | password | deactivated | ...")


class SignInThrottle(SQLModel, table=True):
    """Failed sign-ins of one account name or one client, for throttling across server processes.

    ``key`` is ``account:`` or ``client:`` followed by a SHA-256, so typed names (sometimes a password typed
    into the wrong field) and client addresses are not stored in clear.
    """

    __tablename__ = "sign_in_throttle"

    key: str = Field(primary_key=True, max_length=80)
    failures: int = 0
    window_started_at: datetime = _ts()
    locked_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    updated_at: datetime = _ts()


class FormDraft(SQLModel, table=True):
    """A half-filled form of one user (an annotation form, release notes), kept on the server so that a reload
    or a new tab brings it back; removed when the form is saved or cancelled."""

    __tablename__ = "form_draft"

    user_id: int = Field(foreign_key="user.id", primary_key=True)
    name: str = Field(max_length=128, primary_key=True, description="the form, e.g. 'annotate.3.tf'")
    data: dict[str, Any] = _json(dict)
    updated_at: datetime = _ts()

