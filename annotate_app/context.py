"""What every page needs: settings, the engine (built once), the signed-in user, and the one error helper."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotate_app import state
from curation.bootstrap import StartupReport, initialise
from curation.db import session_scope
from curation.errors import CurationError, SessionExpired
from curation.models import Role, User
from curation.sandbox import prewarm
from curation.services.accounts import resume_session
from curation.settings import Settings

log = logging.getLogger("forkpaths.ui")
T = TypeVar("T")


def settings() -> Settings:
    """Read per run (cheap); the expensive start-up below is cached per database and data folder."""
    return Settings()


@st.cache_resource(show_spinner="Preparing the database…")
def _startup(database_url: str, data_dir: str) -> StartupReport:
    report = initialise(settings())
    prewarm(wait=False)  # the sandbox's template process imports pandas in the background
    return report


def engine() -> Engine:
    s = settings()
    return _startup(s.resolved_database_url, str(s.resolved_data_dir)).engine


@contextmanager
def db() -> Iterator[Session]:
    """One user action, one transaction."""
    with session_scope(engine()) as session:
        yield session


def show_error(exc: BaseException) -> None:
    """The single place where errors become messages: domain errors as they are, others logged."""
    if isinstance(exc, CurationError):
        st.error(str(exc), icon="⚠️")
    else:
        log.exception("unexpected error", exc_info=exc)
        st.error(
            f"Something went wrong ({type(exc).__name__}); nothing was saved. "
            "The details are in the server log.",
            icon="🚨",
        )


def attempt(action: Callable[[Session], T]) -> T | None:
    """Run ``action`` in one transaction; on failure show the error and return None (nothing is stored)."""
    try:
        with db() as session:
            return action(session)
    except Exception as exc:  # noqa: BLE001 - shown to the user by show_error
        show_error(exc)
        return None


def current_user() -> User | None:
    """The signed-in user, re-checked against the database on every run."""
    ident = state.signed_in()
    if ident is None:
        return None
    try:
        with db() as session:
            return resume_session(session=session, user_id=ident[0], auth_epoch=ident[1])
    except SessionExpired as exc:
        state.sign_out()
        state.flash(str(exc), "warning")
        return None


def require_user(*roles: Role) -> User:
    """Top of every page: the signed-in user with one of ``roles``, or stop the page with a message."""
    user = current_user()
    if user is None:
        st.warning("Please sign in.")
        st.stop()
    assert user is not None
    if roles and user.role not in {r.value for r in roles}:
        st.error(f"This page is for {' or '.join(r.value for r in roles)}s; you are signed in as {user.role}.")
        st.stop()
    return user


def show_flash() -> None:
    """Last action's message, in a slot that always exists so the elements below never shift position."""
    slot = st.empty()
    msg = state.pop_flash()
    if msg:
        kind, text = msg
        getattr(slot, kind if kind in ("success", "warning", "info", "error") else "info")(text)


def succeeded(action: Callable[[Session], object]) -> bool:
    """Like :func:`attempt` for actions without a result: True when the transaction committed."""
    try:
        with db() as session:
            action(session)
        return True
    except Exception as exc:  # noqa: BLE001 - shown to the user by show_error
        show_error(exc)
        return False
