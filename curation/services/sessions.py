"""Signed-in sessions that survive a reload.

A browser holds a random token (in a cookie); the database holds only its SHA-256, the user, the user's
``auth_epoch`` at sign-in, and when the session expires. Every page run re-validates the token here, so a
session is revocable at any moment: signing out, a password change or reset and a deactivation end it.

Signing in (with throttling of failed attempts) is in :mod:`curation.services.sign_in`.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from sqlalchemy import delete
from sqlmodel import Session, col, select

from curation.errors import SessionExpired
from curation.models import AuthSession, User, utcnow
from curation.settings import SessionPolicy

__all__ = [
    "END_MESSAGES",
    "end_session",
    "end_user_sessions",
    "hash_token",
    "resume_auth_session",
    "start_auth_session",
]

# Seconds between two writes of a session's last_seen_at: a page run is a click, not worth a write each.
_TOUCH_EVERY = timedelta(seconds=60)
# Ended and expired sessions are kept this long (to tell a returning browser why it was signed out).
_KEEP_ENDED = timedelta(days=7)

END_MESSAGES = {
    "sign_out": "You signed out (in this or another tab); please sign in again.",
    "password": "Your password was changed; please sign in again.",
    "deactivated": "Your account has been deactivated; you have been signed out.",
    "expired": "Your sign-in expired; please sign in again.",
    "idle": "You were signed out after a period without activity; please sign in again.",
}


def hash_token(token: str) -> str:
    """The SHA-256 stored for a token. A fast hash suffices: the token has 256 random bits."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def start_auth_session(
    *, session: Session, user: User, policy: SessionPolicy, now: datetime | None = None, sso_login: str | None = None
) -> str:
    """Open a session for ``user`` (already authenticated) and return its token, for the browser only.

    ``sso_login``: the provider sign-in it comes from (:attr:`curation.services.sso.SSOIdentity.login_hash`)."""
    now = now or utcnow()
    token = secrets.token_urlsafe(32)
    session.add(AuthSession(
        token_hash=hash_token(token), user_id=user.id or 0, auth_epoch=user.auth_epoch,
        created_at=now, last_seen_at=now, expires_at=now + policy.max_age, sso_login=sso_login,
    ))
    # Housekeeping on the (rare) sign-in rather than on every page run.
    session.execute(delete(AuthSession).where(col(AuthSession.expires_at) < now - _KEEP_ENDED))
    session.flush()
    return token


def _end(row: AuthSession, reason: str, now: datetime) -> None:
    row.ended_at = now
    row.end_reason = reason


def resume_auth_session(
    *, session: Session, token: str, policy: SessionPolicy, now: datetime | None = None
) -> User:
    """The user of a live session, or :class:`SessionExpired` saying why it is over.

    Checked on every page run: the session exists, has not ended, expired or idled out, and its user is
    still active with the same ``auth_epoch`` (a password reset or deactivation bumps it).
    """
    now = now or utcnow()
    row = session.exec(select(AuthSession).where(AuthSession.token_hash == hash_token(token))).first()
    if row is None:
        raise SessionExpired("You have been signed out; please sign in again.")
    if row.ended_at is not None:
        raise SessionExpired(END_MESSAGES.get(row.end_reason, "You have been signed out; please sign in again."))
    user = session.get(User, row.user_id)
    reason = None
    if now >= row.expires_at:
        reason = "expired"
    elif now - row.last_seen_at >= policy.idle:
        reason = "idle"
    elif user is None or not user.is_active:
        reason = "deactivated"
    elif user.auth_epoch != row.auth_epoch:
        reason = "password"
    if reason is not None:
        # Not written back: the caller's transaction rolls back on this error, and every reason here is
        # derived again, identically, from the row and the clock on the next try.
        raise SessionExpired(END_MESSAGES[reason])
    if now - row.last_seen_at >= _TOUCH_EVERY:
        row.last_seen_at = now
        session.add(row)
    assert user is not None
    return user


def end_session(*, session: Session, token: str, reason: str = "sign_out", now: datetime | None = None) -> None:
    """Sign out: the token no longer works (the cookie may linger in the browser; it is refused)."""
    row = session.exec(select(AuthSession).where(AuthSession.token_hash == hash_token(token))).first()
    if row is not None and row.ended_at is None:
        _end(row, reason, now or utcnow())
        session.add(row)


def end_user_sessions(
    *, session: Session, user_id: int, reason: str, keep_token: str | None = None, now: datetime | None = None
) -> int:
    """End every live session of a user (password change or reset, deactivation); returns how many.

    ``keep_token`` keeps one (the browser that changed its own password) and moves it to the user's new
    ``auth_epoch``.
    """
    now = now or utcnow()
    keep = hash_token(keep_token) if keep_token else None
    live = session.exec(
        select(AuthSession).where(AuthSession.user_id == user_id, col(AuthSession.ended_at).is_(None))
    ).all()
    user = session.get(User, user_id)
    ended = 0
    for row in live:
        if keep is not None and row.token_hash == keep:
            row.auth_epoch = user.auth_epoch if user is not None else row.auth_epoch
        else:
            _end(row, reason, now)
            ended += 1
        session.add(row)
    return ended
