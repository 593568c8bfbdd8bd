"""Who uses forkpaths: accounts and roles, signed-in browsers, sign-in throttling, form drafts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import UniqueConstraint
from sqlmodel import Field, SQLModel

from curation.account_rules import Role
from curation.models.columns import UTCDateTime, json_field, utc_now_field

__all__ = ["IMPORTED_USERNAME", "PENDING_ROLE", "Role", "User", "AuthSession", "SignInThrottle", "FormDraft"]


#: The role of an SSO account that no admin has approved yet: no role at all (every role check refuses it).
PENDING_ROLE = ""
#: The system account (``is_system``) that owns work imported from elsewhere (BLADE's expert annotations).
IMPORTED_USERNAME = "blade-experts"


class User(SQLModel, table=True):
    """An account. A local one signs in with its password; a single-sign-on one is keyed by its identity
    provider's (``oidc_issuer``, ``oidc_subject``), never by its user name, which is derived and can change."""

    __table_args__ = (UniqueConstraint("oidc_issuer", "oidc_subject", name="uq_user_oidc_identity"),)

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, unique=True, max_length=64)
    display_name: str = Field(default="", max_length=128)
    password_hash: str = Field(default="", max_length=256)
    role: str = Field(default=Role.ANALYST.value, max_length=16,
                      description="A Role's value, or PENDING_ROLE: an SSO account no admin has approved yet.")
    is_active: bool = True
    is_system: bool = Field(default=False, description="An account no one signs in with (e.g. imported annotators).")
    auth_epoch: int = Field(default=0, description="Bumped on password reset / deactivation; older sessions end.")
    created_at: datetime = utc_now_field()
    oidc_issuer: str | None = Field(default=None, max_length=512, description="SSO: the provider's issuer URL.")
    oidc_subject: str | None = Field(default=None, max_length=255, description="SSO: the provider's subject id.")
    role_from_claim: bool = Field(
        default=False, description="SSO: the role came from the provider's claim mapping (recomputed at each "
        "sign-in); False once an admin sets it.")

    @property
    def is_pending(self) -> bool:
        """An SSO account waiting for an admin to give it a role: it can sign in and sees only that."""
        return self.role == PENDING_ROLE


class AuthSession(SQLModel, table=True):
    """A signed-in browser: the cookie holds a random token, this row only its SHA-256 (a leaked database
    holds no usable token). Ended sessions are kept a while with the reason, so the browser can be told why."""

    __tablename__ = "auth_session"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    auth_epoch: int = Field(description="The user's auth_epoch at sign-in; a later reset or deactivation ends it.")
    created_at: datetime = utc_now_field()
    last_seen_at: datetime = utc_now_field()
    expires_at: datetime = Field(sa_type=UTCDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    end_reason: str = Field(default="", max_length=32, description="sign_out | password | deactivated | ...")
    sso_login: str | None = Field(
        default=None, max_length=64, index=True,
        description="SSO: SHA-256 of the provider sign-in (issuer, subject, nonce, issued-at) this session came "
        "from; one provider sign-in opens one session, never a second after sign-out or expiry.")


class SignInThrottle(SQLModel, table=True):
    """Failed sign-ins of one account name or one client, for throttling across server processes.

    ``key`` is ``account:`` or ``client:`` followed by a SHA-256, so typed names (sometimes a password typed
    into the wrong field) and client addresses are not stored in clear.
    """

    __tablename__ = "sign_in_throttle"

    key: str = Field(primary_key=True, max_length=80)
    failures: int = 0
    window_started_at: datetime = utc_now_field()
    locked_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    updated_at: datetime = utc_now_field()


class FormDraft(SQLModel, table=True):
    """A half-filled form of one user (an annotation form, release notes), kept on the server so that a reload
    or a new tab brings it back; removed when the form is saved or cancelled."""

    __tablename__ = "form_draft"

    user_id: int = Field(foreign_key="user.id", primary_key=True)
    name: str = Field(max_length=128, primary_key=True, description="the form, e.g. 'annotate.3.tf'")
    data: dict[str, Any] = json_field(dict)
    updated_at: datetime = utc_now_field()

