"""Services judge the actor's current state, not the ``User`` object they were handed.

A page loads the signed-in user at the top of a run, then calls a service; a CLI loads it once per command.
Between the two an admin may deactivate, demote or reset the password of that user. Every public service that
takes ``actor`` is wrapped in :func:`judges_actor`, which re-reads the user's row inside the service's own
transaction and refuses a stale actor before the service body runs; the body then receives that fresh row.
``tests/curation/test_actor.py`` asserts that every such service is wrapped.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from curation.db import one_snapshot
from curation.db import session_scope as db_scope
from curation.errors import PermissionDenied, SessionExpired
from curation.models import User

__all__ = ["current_actor", "hold_actor", "judges_actor"]

P = ParamSpec("P")
R = TypeVar("R")


def current_actor(*, session: Session, actor: User) -> User:
    """The actor's row as it is now in this transaction, or an error if the actor is no longer who they were.

    Refused: an account that was removed or deactivated; a password reset or deactivation since the object was
    loaded (``auth_epoch`` moved on: the browser session that loaded it has ended); a changed role (a demoted
    admin must not act as an admin; a promoted user reloads to get the pages of the new role).
    """
    seen_active, seen_role, seen_epoch = actor.is_active, actor.role, actor.auth_epoch
    row = session.exec(
        select(User).where(User.id == actor.id).execution_options(populate_existing=True)
    ).first()
    if row is None or row.is_system:
        raise PermissionDenied(f"The account '{actor.username}' no longer exists; nothing was changed.")
    if not row.is_active:
        raise PermissionDenied(f"The account '{row.username}' is deactivated; nothing was changed.")
    if not seen_active or row.auth_epoch != seen_epoch:
        raise SessionExpired(
            f"The account '{row.username}' had its password reset or was deactivated since this page was "
            "loaded; nothing was changed. Please sign in again."
        )
    if row.role != seen_role:
        raise PermissionDenied(
            f"The role of '{row.username}' changed from {seen_role} to {row.role} since this page was loaded; "
            f"nothing was changed. Reload the page to continue as {row.role}."
        )
    return row


def hold_actor(*, session: Session, actor: User) -> User:
    """Judge the actor again at the write their permission guards, and keep their row as it is until the
    transaction ends: a demotion, deactivation or password reset committed since the check refuses the write
    (as :func:`current_actor` does), and one asked for from now on waits for this transaction.

    PostgreSQL: the row is read ``FOR SHARE`` (the latest committed version; writers to it wait). SQLite: the
    transaction takes the write lock first (:func:`curation.db.one_snapshot`), so the read sees the latest commit
    and no other writer commits before this transaction ends.
    """
    if session.get_bind().dialect.name == "sqlite":
        one_snapshot(session=session)
    else:
        session.exec(select(User.id).where(User.id == actor.id).with_for_update(read=True)).first()
    return current_actor(session=session, actor=actor)


hold_actor.__judges_actor__ = True  # type: ignore[attr-defined]  # it judges its actor itself, at the write
current_actor.__judges_actor__ = True  # type: ignore[attr-defined]  # it is the judge


def _judged(session: Session, actor: User) -> User:
    """``current_actor``, once per transaction: a service that calls services passes the judged row on."""
    txn = session.get_transaction()
    seen_txn, judged = session.info.get("forkpaths.judged_actors", (None, set()))
    if txn is None or seen_txn is not txn:
        judged = set()
    if actor.id in judged and actor in session:
        return actor
    row = current_actor(session=session, actor=actor)
    judged.add(row.id)
    session.info["forkpaths.judged_actors"] = (session.get_transaction(), judged)
    return row


def judges_actor(fn: Callable[P, R]) -> Callable[P, R]:
    """Wrap a service (keyword-only ``session`` and ``actor``): the body gets the actor's current row.

    A long-running service that opens its own transactions takes ``session_scope=`` (or an engine as its first
    argument) instead of ``session=``: the actor is judged in a transaction of its own before the body starts (the body's own calls to other
    services judge it again in theirs). ``actor=None`` (the CLI's first start, imports with no signed-in user)
    passes through unchanged.
    """

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        actor: Any = kwargs.get("actor")
        if actor is not None:
            session, scope = kwargs.get("session"), kwargs.get("session_scope")
            if isinstance(session, Session):
                kwargs["actor"] = _judged(session, actor)
            elif callable(scope):
                with scope() as own:
                    current_actor(session=own, actor=actor)
            elif args and isinstance(args[0], Engine):  # a service that starts a job takes the engine first
                with db_scope(args[0]) as own:
                    current_actor(session=own, actor=actor)
            else:
                raise TypeError(f"{fn.__qualname__} needs a keyword-only session= to judge its actor")
        return fn(*args, **kwargs)

    wrapper.__judges_actor__ = True  # type: ignore[attr-defined]
    return wrapper
