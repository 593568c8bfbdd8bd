"""Accounts, roles and sign-in.

Every service that changes or reveals data takes the acting :class:`~curation.models.User` and checks the
role itself (:func:`require_role`); hiding a page in the UI is never the protection.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path

from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlmodel import Session, col, select

from curation.account_rules import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, PASSWORD_RULE
from curation.errors import AccountError, AuthenticationError, CurationError, NotFoundError, PermissionDenied
from curation.models import Role, User
from curation.services.actor import judges_actor
from curation.services.sessions import end_user_sessions

__all__ = [
    "MAX_PASSWORD_LENGTH",
    "MIN_PASSWORD_LENGTH",
    "PASSWORD_RULE",
    "authenticate",
    "change_own_password",
    "check_new_password",
    "create_user",
    "ensure_first_admin",
    "forget_stale_password_file",
    "generate_password",
    "get_user",
    "list_users",
    "operator_account",
    "require_role",
    "reset_password",
    "set_user_active",
    "set_user_role",
]

_USERNAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,63}$")
log = logging.getLogger(__name__)

#: Set only by the test suite (tests/conftest.py), which creates and signs in thousands of accounts: Argon2 with
#: argon2-cffi's own profile for tests (``profiles.CHEAPEST``) instead of its RFC 9106 default, a hundredth of
#: the cost. Hashes made either way verify either way (a hash carries its parameters), and the next sign-in
#: without it upgrades a cheap hash to the default (``check_needs_rehash``).
INSECURE_TEST_HASHING_VARIABLE = "FORKPATHS_INSECURE_TEST_PASSWORD_HASHING"


def _password_hasher() -> PasswordHasher:
    if os.environ.get(INSECURE_TEST_HASHING_VARIABLE) == "1":
        return PasswordHasher.from_parameters(profiles.CHEAPEST)
    return PasswordHasher()


_hasher = _password_hasher()


def require_role(actor: User, *roles: Role) -> None:
    """Refuse the action unless ``actor`` is active and holds one of ``roles``."""
    if not actor.is_active:
        raise PermissionDenied(f"The account '{actor.username}' is deactivated.")
    if actor.role not in {r.value for r in roles}:
        needed = " or ".join(r.value for r in roles)
        has = actor.role or "waiting for an admin's approval (no role yet)"
        raise PermissionDenied(f"This needs the {needed} role; '{actor.username}' is {has}.")


@functools.cache
def _common_passwords() -> frozenset[str]:
    """The common passwords long enough to pass the length rule (1,090 of them).

    From zxcvbn's list of the 30,000 most used passwords, ranked from leaked password sets (the list the
    zxcvbn strength estimator, first written at Dropbox, ships and keeps). Only exact use is refused: the
    list is lower case, and so is the comparison.
    """
    # 30,000 words: loaded when a password is set, not at every start
    from zxcvbn.frequency_lists import FREQUENCY_LISTS

    return frozenset(p for p in FREQUENCY_LISTS["passwords"] if len(p) >= MIN_PASSWORD_LENGTH)


def _too_long(password: str, what: str = "The password") -> str | None:
    if len(password) > MAX_PASSWORD_LENGTH:
        return f"{what} has {len(password):,} characters; at most {MAX_PASSWORD_LENGTH:,} are accepted."
    return None


def check_new_password(password: str) -> None:
    """Refuse a password that breaks the rule (:data:`PASSWORD_RULE`), with a sentence saying which part.

    Raises:
        AccountError: too short, too long (checked first, before anything else reads it) or common.
    """
    if (problem := _too_long(password)) is not None:
        raise AccountError(f"{problem} {PASSWORD_RULE}")
    core = len(password.strip())  # spaces around it do not count: "password  " is a common one padded
    if core < MIN_PASSWORD_LENGTH:
        around = " besides the spaces around it" if core != len(password) else ""
        raise AccountError(f"The password has {core} characters{around}; at least {MIN_PASSWORD_LENGTH} are "
                           f"needed. {PASSWORD_RULE}")
    if password.strip().lower() in _common_passwords():
        raise AccountError("This password is one of the most common ones, among the first anyone guessing tries. "
                           f"{PASSWORD_RULE}")


def generate_password() -> str:
    """A random password that satisfies the rule: 16 characters from 96 random bits."""
    password = secrets.token_urlsafe(12)
    check_new_password(password)
    return password


def _create(session: Session, *, username: str, password: str, role: Role, display_name: str) -> User:
    username = username.strip()
    if not _USERNAME_RE.match(username):
        raise AccountError(
            f"User name '{username}' is not allowed: use 2–64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    if session.exec(select(User).where(User.username == username)).first() is not None:
        raise AccountError(f"There is already a user called '{username}'.")
    check_new_password(password)
    user = User(
        username=username,
        display_name=display_name.strip() or username,
        password_hash=_hasher.hash(password),
        role=Role(role).value,
    )
    session.add(user)
    session.flush()
    return user


@judges_actor
def create_user(
    *, session: Session, actor: User | None, username: str, password: str, role: Role, display_name: str = ""
) -> User:
    """Create an account. ``actor`` must be an admin (``None`` only for the CLI / first start)."""
    if actor is not None:
        require_role(actor, Role.ADMIN)
    return _create(session, username=username, password=password, role=role, display_name=display_name)


def ensure_first_admin(*, session: Session, username: str, password: str | None) -> tuple[User, str | None]:
    """Create the first admin when no (non-system) user exists.

    Returns the admin and, when a password had to be generated, that password (shown once to the operator).
    """
    existing = session.exec(select(User).where(User.is_system == False)).first()  # noqa: E712
    if existing is not None:
        admin = session.exec(select(User).where(User.role == Role.ADMIN.value)).first()
        return (admin or existing), None
    generated = None
    if not password:
        password = generated = generate_password()
    user = _create(session, username=username, password=password, role=Role.ADMIN, display_name="Administrator")
    return user, generated


def authenticate(*, session: Session, username: str, password: str) -> User:
    """Check a user name and password; the same message for every failure, so names cannot be probed."""
    if (problem := _too_long(password)) is not None:  # refused before hashing: its cost grows with its length
        raise AuthenticationError(f"{problem} Nothing was checked.")
    user = session.exec(select(User).where(User.username == username.strip())).first()
    failure = AuthenticationError("Wrong user name or password.")
    if user is None or user.is_system or not user.password_hash:
        _hasher.hash(password)  # same cost as a real check
        raise failure
    try:
        _hasher.verify(user.password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        raise failure from None
    if not user.is_active:
        raise AuthenticationError("This account is deactivated; ask an administrator.")
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = _hasher.hash(password)
        session.add(user)
    return user


def get_user(*, session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFoundError(f"There is no user with id {user_id}.")
    return user


@judges_actor
def list_users(*, session: Session, actor: User, include_system: bool = False) -> Sequence[User]:
    require_role(actor, Role.ADMIN, Role.CURATOR)
    stmt = select(User).order_by(User.username)
    if not include_system:
        stmt = stmt.where(User.is_system == False)  # noqa: E712
    return session.exec(stmt).all()


def operator_account(*, session: Session, username: str | None) -> User:
    """Who a terminal command acts as: the active account ``username`` (``--as USER``), else the first active admin
    (the operator has the machine).

    Raises:
        CurationError: there is no such active account.
    """
    stmt = select(User).where(User.is_active == True)  # noqa: E712
    stmt = stmt.where(User.username == username) if username else stmt.where(User.role == Role.ADMIN.value)
    user = session.exec(stmt.order_by(col(User.id))).first()
    if user is None:
        raise CurationError(f"No active user '{username}'." if username else "There is no active admin.")
    return user


def _count_active_admins(session: Session) -> int:
    return len(
        session.exec(select(User).where(User.role == Role.ADMIN.value, User.is_active == True)).all()  # noqa: E712
    )


@judges_actor
def reset_password(
    *,
    session: Session,
    actor: User,
    user_id: int,
    new_password: str,
    first_admin_password_file: Path | None = None,
) -> User:
    """Admin sets a new password; the user's open sessions end.

    ``first_admin_password_file``: the generated first-admin password's file, removed once it is stale.
    """
    require_role(actor, Role.ADMIN)
    user = get_user(session=session, user_id=user_id)
    if user.is_system:
        raise AccountError(f"'{user.username}' is a system account and cannot sign in.")
    if user.oidc_subject is not None:
        raise AccountError(f"'{user.username}' signs in through single sign-on and has no password here; "
                           "deactivate the account to stop it signing in.")
    check_new_password(new_password)
    user.password_hash = _hasher.hash(new_password)
    user.auth_epoch += 1
    session.add(user)
    end_user_sessions(session=session, user_id=user.id or 0, reason="password")
    if first_admin_password_file is not None:
        forget_stale_password_file(session=session, path=first_admin_password_file)
    return user


@judges_actor
def change_own_password(
    *,
    session: Session,
    actor: User,
    old_password: str,
    new_password: str,
    keep_session_token: str | None = None,
    first_admin_password_file: Path | None = None,
) -> User:
    """Change one's own password. Every other session of the account ends; ``keep_session_token`` (the
    browser that made the change) stays signed in. The first admin's password file is removed once stale."""
    if actor.oidc_subject is not None:
        raise AccountError("This account signs in through single sign-on; its password is kept by the identity "
                           "provider, not here.")
    if (problem := _too_long(old_password, "The current password")) is not None:
        raise AuthenticationError(f"{problem} Nothing was changed.")
    check_new_password(new_password)  # before the current password is hashed: a too-long one costs nothing
    try:
        _hasher.verify(actor.password_hash, old_password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        raise AuthenticationError("The current password is wrong.") from None
    if new_password == old_password:
        raise AccountError("The new password is the same as the current one.")
    user = actor  # the current row, attached to this session (see judges_actor)
    user.password_hash = _hasher.hash(new_password)
    user.auth_epoch += 1
    session.add(user)
    session.flush()
    end_user_sessions(session=session, user_id=user.id or 0, reason="password", keep_token=keep_session_token)
    if first_admin_password_file is not None:
        forget_stale_password_file(session=session, path=first_admin_password_file)
    return user


def forget_stale_password_file(*, session: Session, path: Path) -> bool:
    """Remove the generated first-admin password file once that password no longer signs in.

    Called at every start and after password changes, so the file never outlives its use (it is readable by
    anyone who can read the data folder). Deleting inside the transaction is safe even if it rolls back: the
    password was changed by someone who knew the old one. Returns True when the file was removed.
    """
    if not path.is_file():
        return False
    try:
        fields = dict(
            line.split(":", 1) for line in path.read_text(encoding="utf-8").splitlines() if ":" in line
        )
        username, password = fields["user name"].strip(), fields["password"].strip()
    except (OSError, UnicodeDecodeError, KeyError, ValueError):
        log.warning("%s could not be read; left as it is", path)
        return False
    user = session.exec(select(User).where(User.username == username)).first()
    still_valid = False
    if user is not None and user.is_active and user.password_hash and _too_long(password) is None:
        try:
            still_valid = _hasher.verify(user.password_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            still_valid = False
    if still_valid:
        return False
    path.unlink(missing_ok=True)
    log.info("removed %s: that password no longer signs in", path)
    return True


@judges_actor
def set_user_active(*, session: Session, actor: User, user_id: int, active: bool) -> User:
    """Deactivate (or reactivate) an account; a deactivated user's open sessions are refused."""
    require_role(actor, Role.ADMIN)
    user = get_user(session=session, user_id=user_id)
    if not active and user.id == actor.id:
        raise AccountError("You cannot deactivate your own account.")
    if not active and user.role == Role.ADMIN.value and user.is_active and _count_active_admins(session) <= 1:
        raise AccountError("This is the last active admin; make another admin first.")
    if user.is_active != active:
        user.is_active = active
        user.auth_epoch += 1
        session.add(user)
        if not active:
            session.flush()
            end_user_sessions(session=session, user_id=user.id or 0, reason="deactivated")
    return user


@judges_actor
def set_user_role(*, session: Session, actor: User, user_id: int, role: Role) -> User:
    require_role(actor, Role.ADMIN)
    user = get_user(session=session, user_id=user_id)
    if user.role == Role.ADMIN.value and role != Role.ADMIN and _count_active_admins(session) <= 1:
        raise AccountError("This is the last active admin; make another admin first.")
    user.role = Role(role).value  # approves a pending SSO account too
    user.role_from_claim = False  # an admin's choice: a later SSO sign-in changes it only if the claim maps
    session.add(user)
    return user
