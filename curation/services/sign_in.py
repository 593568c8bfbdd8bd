"""Signing in, with failed attempts throttled per account name and per client.

Failures are counted in the database (so the count holds across server processes on PostgreSQL). After
``max_failures`` within the window, further attempts are refused without checking the password, for a delay
that doubles with each further failure, and with the same message whether or not the account exists.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from curation.errors import AuthenticationError, CurationError, SignInThrottled, SSOError
from curation.models import AuthSession, SignInThrottle, User, utcnow
from curation.services.accounts import authenticate
from curation.services.sessions import start_auth_session
from curation.services.sso import SSOIdentity, resolve_sso_user
from curation.settings import OIDCConfig, SessionPolicy, ThrottlePolicy

__all__ = ["SignInOutcome", "sign_in", "sign_in_sso", "throttle_key"]

# Throttle rows untouched for this long are forgotten.
_KEEP_THROTTLE = timedelta(days=1)


def throttle_key(kind: str, value: str) -> str:
    """``account:<sha256>`` of the lower-cased name, or ``client:<sha256>`` of the client."""
    norm = value.strip().lower() if kind == "account" else value
    return f"{kind}:{hashlib.sha256(norm.encode('utf-8')).hexdigest()}"


def _lock_rows(session: Session, keys: list[str], now: datetime) -> list[SignInThrottle]:
    """The throttle rows of ``keys``, created if missing and locked for this transaction.

    The insert comes first on purpose: on SQLite it takes the write lock before anything is read, so two
    concurrent sign-ins queue up instead of one failing on a stale snapshot; on PostgreSQL ``FOR UPDATE``
    serialises them (in sorted key order, so two transactions cannot deadlock).
    """
    dialect = session.get_bind().dialect.name
    insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    for key in sorted(keys):
        session.execute(
            insert(SignInThrottle)
            .values(key=key, failures=0, window_started_at=now, updated_at=now)
            .on_conflict_do_nothing(index_elements=["key"])
        )
    rows = session.exec(
        select(SignInThrottle).where(col(SignInThrottle.key).in_(sorted(keys)))
        .order_by(SignInThrottle.key).with_for_update().execution_options(populate_existing=True)
    ).all()
    return list(rows)


def _wait_text(until: datetime, now: datetime) -> str:
    seconds = max(1, math.ceil((until - now).total_seconds()))
    span = f"{seconds} seconds" if seconds < 120 else f"{math.ceil(seconds / 60)} minutes"
    return f"try again in {span} (after {until:%H:%M:%S} UTC)"


def _record_failure(row: SignInThrottle, policy: ThrottlePolicy, now: datetime) -> None:
    if now - row.window_started_at > policy.window and (row.locked_until is None or row.locked_until <= now):
        row.failures, row.window_started_at, row.locked_until = 0, now, None
    row.failures += 1
    row.updated_at = now
    excess = row.failures - policy.max_failures
    if excess >= 0:
        delay = min(policy.first_delay * (2 ** min(excess, 30)), policy.max_delay)
        row.locked_until = now + delay


@dataclass
class SignInOutcome:
    """What a sign-in attempt came to. Failures are returned, not raised, so that the caller commits the
    failure count (a raised error would roll it back)."""

    user: User | None = None
    token: str | None = None
    expires_at: datetime | None = None
    error: CurationError | None = None
    #: SSO: this provider sign-in already opened a session (signed out or expired since): not a failure, but
    #: no new session either; the browser must sign in at the provider again.
    reused: bool = False


def sign_in(
    *,
    session: Session,
    username: str,
    password: str,
    client: str,
    session_policy: SessionPolicy,
    throttle: ThrottlePolicy,
    now: datetime | None = None,
) -> SignInOutcome:
    """Check the throttle, then the password; open a session on success.

    ``client`` identifies where the attempt comes from (an IP address, or the browser session when the
    address is unknown). A throttled attempt is refused before the password is checked, with the same
    message whether or not the account exists.
    """
    now = now or utcnow()
    account_key, client_key = throttle_key("account", username), throttle_key("client", client)
    rows = {r.key: r for r in _lock_rows(session, [account_key, client_key], now)}
    locked = [r.locked_until for r in rows.values() if r.locked_until is not None and r.locked_until > now]
    if locked:
        return SignInOutcome(error=SignInThrottled(
            f"Too many failed sign-ins; {_wait_text(max(locked), now)}."
        ))
    try:
        user = authenticate(session=session, username=username, password=password)
    except AuthenticationError as exc:
        for row in rows.values():
            _record_failure(row, throttle, now)
            session.add(row)
        session.execute(delete(SignInThrottle).where(col(SignInThrottle.updated_at) < now - _KEEP_THROTTLE))
        until = [r.locked_until for r in rows.values() if r.locked_until is not None and r.locked_until > now]
        if until:
            return SignInOutcome(error=SignInThrottled(
                f"{exc} Too many failed sign-ins; {_wait_text(max(until), now)}."
            ))
        return SignInOutcome(error=exc)
    # Success clears the account's count; the client's count decays with its window (a guesser with an
    # account of their own must not be able to reset it by signing in).
    session.execute(
        update(SignInThrottle).where(col(SignInThrottle.key) == account_key)
        .values(failures=0, locked_until=None, window_started_at=now, updated_at=now)
    )
    token = start_auth_session(session=session, user=user, policy=session_policy, now=now)
    return SignInOutcome(user=user, token=token, expires_at=now + session_policy.max_age)


def sign_in_sso(
    *,
    session: Session,
    identity: SSOIdentity,
    config: OIDCConfig,
    client: str,
    session_policy: SessionPolicy,
    throttle: ThrottlePolicy,
    now: datetime | None = None,
) -> SignInOutcome:
    """Open a forkpaths session for an identity the provider vouched for (creating its account at the first
    sign-in, see :func:`curation.services.sso.resolve_sso_user`), throttled like a password sign-in: per
    account (issuer and subject) and per client; a refused account (deactivated) counts as a failure.

    One provider sign-in opens one session: after a sign-out or an expiry the same one is ``reused``."""
    now = now or utcnow()
    used = session.exec(select(AuthSession.id).where(AuthSession.sso_login == identity.login_hash)).first()
    if used is not None:
        return SignInOutcome(reused=True)
    try:
        identity.check_not_expired(now)
    except SSOError as exc:  # a stale identity, not a guess: not counted as a failure
        return SignInOutcome(error=exc)
    account_key = throttle_key("account", f"sso:{identity.issuer}|{identity.subject}")
    rows = {r.key: r for r in _lock_rows(session, [account_key, throttle_key("client", client)], now)}
    locked = [r.locked_until for r in rows.values() if r.locked_until is not None and r.locked_until > now]
    if locked:
        return SignInOutcome(error=SignInThrottled(f"Too many failed sign-ins; {_wait_text(max(locked), now)}."))
    try:
        with session.begin_nested():  # a refusal leaves the account as it was (nothing half-stored)
            user = resolve_sso_user(session=session, identity=identity, config=config)
    except AuthenticationError as exc:
        for row in rows.values():
            _record_failure(row, throttle, now)
            session.add(row)
        return SignInOutcome(error=exc)
    session.execute(
        update(SignInThrottle).where(col(SignInThrottle.key) == account_key)
        .values(failures=0, locked_until=None, window_started_at=now, updated_at=now)
    )
    token = start_auth_session(session=session, user=user, policy=session_policy, now=now,
                               sso_login=identity.login_hash)
    return SignInOutcome(user=user, token=token, expires_at=now + session_policy.max_age)
