"""What every page needs: settings, the engine (built once), the signed-in user, and the one error helper."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import streamlit as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from annotate_app import state
from annotate_app.components.session_cookie import cookie_name, http_date
from annotate_app.text import md
from curation.bootstrap import StartupReport, initialise
from curation.db import session_scope
from curation.errors import USER_ERRORS, SessionExpired
from curation.models import Role, User
from curation.services.background_jobs import JobSubmitter
from curation.services.jobs import RunSubmitter, make_job_submitter
from curation.services.run_worker import make_submitter
from curation.services.scoring import JudgeSettings, ScoringLimits
from curation.services.sessions import end_session, resume_auth_session
from curation.services.sign_in import sign_in as sign_in_service
from curation.services.sign_in import sign_in_sso
from curation.services.sso import check_provider, identity_from_claims
from curation.settings import OIDCConfig, Settings
from evaluation.sandbox import prewarm

log = logging.getLogger("forkpaths.ui")
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{20,128}")  # what secrets.token_urlsafe makes; anything else is ignored
T = TypeVar("T")


_settings_read: tuple[object, Settings] | None = None


def _settings_sources() -> object:
    """What :class:`Settings` is read from, as it is now: the ``FORKPATHS_*`` variables (any case, as
    pydantic-settings matches them) and the ``.env`` file of the working directory."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.upper().startswith("FORKPATHS_")))
    try:
        dotenv = os.stat(".env")
        dotenv_key: tuple[int, int, int] | None = (dotenv.st_ino, dotenv.st_mtime_ns, dotenv.st_size)
    except OSError:
        dotenv_key = None
    return (os.getcwd(), env, dotenv_key)


def settings() -> Settings:
    """The settings as the environment and ``.env`` state them now: read again whenever either changed, else the
    same object (reading them takes ~3 ms and a page asks a dozen times per run). Do not modify it.

    The expensive start-up below is cached per database and data folder."""
    global _settings_read
    sources, read = _settings_sources(), _settings_read
    if read is None or read[0] != sources:
        read = _settings_read = (sources, Settings())
    return read[1]


def _close_engine(report: StartupReport) -> None:
    report.engine.dispose()


def _stop_taking_work(runner: RunSubmitter | JobSubmitter) -> None:
    """Its threads (SQLite) end once the work they already took is done; nothing to stop for the queue."""
    shutdown = getattr(runner, "shutdown", None)
    if shutdown is not None:
        shutdown(wait=False)


# on_release: when Streamlit's resource cache is cleared, the engine's connections are closed and the threads end
@st.cache_resource(show_spinner="Preparing the database…", on_release=_close_engine)
def _startup(database_url: str, data_dir: str) -> StartupReport:
    report = initialise(settings())
    prewarm(wait=False)  # the sandbox's template process imports pandas in the background
    return report


@st.cache_resource(show_spinner=False, on_release=_stop_taking_work)
def _run_worker(database_url: str, data_dir: str) -> RunSubmitter:
    s = settings()
    return make_submitter(engine(), artifacts=s.artifact_store(),
                          judges=JudgeSettings.from_settings(s), limits=ScoringLimits.from_settings(s))


@st.cache_resource(show_spinner=False, on_release=_stop_taking_work)
def _job_runner(database_url: str, data_dir: str) -> JobSubmitter:
    return make_job_submitter(engine(), settings)


def job_runner() -> JobSubmitter:
    """Where background jobs (LLM alternative generation, ...) go: the queue's workers on PostgreSQL, the app's
    own threads on SQLite (one per database and data folder, shared by every browser session)."""
    s = settings()
    return _job_runner(s.resolved_database_url, str(s.resolved_data_dir))


def judge_settings() -> JudgeSettings:
    return JudgeSettings.from_settings(settings())


def scoring_limits() -> ScoringLimits:
    return ScoringLimits.from_settings(settings())


def run_worker() -> RunSubmitter:
    """Where runs go to be scored: the queue's workers on PostgreSQL, the app's own thread pool on SQLite (one per
    database and data folder, shared by every browser session)."""
    s = settings()
    return _run_worker(s.resolved_database_url, str(s.resolved_data_dir))


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
    if isinstance(exc, USER_ERRORS):
        st.error(md(exc), icon="⚠️")  # literally: messages quote values, code and paths
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


def session_cookie_name() -> str:
    return cookie_name(settings().resolved_database_url)


def _session_token() -> str | None:
    """This browser session's token, or the cookie's from the request that opened the page (a reload, a link
    opened in a new tab), unless that one already ended here."""
    token = state.session_token()
    if token is None:
        cookie = st.context.cookies.get(session_cookie_name())
        if isinstance(cookie, str) and _TOKEN_RE.fullmatch(cookie) and cookie != state.ignored_cookie():
            state.sign_in(cookie)
            token = cookie
    return token


def sso_config() -> OIDCConfig | None:
    """Single sign-on's configuration, or None when the FORKPATHS_OIDC_* settings do not configure it."""
    return settings().oidc_config()


def sso_ready() -> bool:
    """Whether Streamlit has the ``[auth]`` section ``st.login`` needs (``forkpaths run`` writes it)."""
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file at all: Streamlit raises rather than answering False
        return False


def start_sso(config: OIDCConfig) -> None:
    """Send the browser to the identity provider, unless it does not answer (then say so here)."""
    from annotate_app.components import sso

    try:
        check_provider(config)
    except Exception as exc:  # noqa: BLE001 - shown to the user by show_error
        show_error(exc)
        return
    sso.note_attempt()
    st.login()
    st.stop()


def _sso_token() -> str | None:
    """Back from the identity provider (``st.user`` holds its ID token's claims): open forkpaths's own session,
    once per provider sign-in, so that from here on everything is as for a password sign-in."""
    config = sso_config()  # first: without SSO settings Streamlit's secrets are never asked about
    if config is None or not sso_ready() or not st.user.is_logged_in:
        return None
    from annotate_app.components import sso

    sso.forget_attempt()
    claims = st.user.to_dict()
    try:
        identity = identity_from_claims(claims, config)
    except Exception as exc:  # noqa: BLE001 - shown to the user by show_error
        if state.get(state.SSO_TRIED) != "refused":
            state.put(state.SSO_TRIED, "refused")
            show_error(exc)
        return None
    if state.get(state.SSO_TRIED) == identity.login_hash:  # already turned into a session (since ended)
        return None
    state.put(state.SSO_TRIED, identity.login_hash)
    s = settings()
    outcome = attempt(lambda session: sign_in_sso(
        session=session, identity=identity, config=config, client=client_id(),
        session_policy=s.session_policy, throttle=s.throttle_policy,
    ))
    if outcome is None or outcome.reused:
        return None
    if outcome.error is not None:
        show_error(outcome.error)
        return None
    assert outcome.token is not None and outcome.expires_at is not None
    state.sign_in(outcome.token, http_date(outcome.expires_at))
    return outcome.token


def current_user() -> User | None:
    """The signed-in user, re-checked against the database (session and account) on every run."""
    token = _session_token() or _sso_token()
    if token is None:
        return None
    try:
        with db() as session:
            return resume_auth_session(session=session, token=token, policy=settings().session_policy)
    except SessionExpired as exc:
        state.sign_out(ended_token=token)
        state.flash(str(exc), "warning")
        return None


def client_id() -> str:
    """Who is signing in, for throttling: the client's IP address, else this browser session.

    ``st.context.ip_address`` is the peer address as Streamlit's server (uvicorn) resolved it: uvicorn honours
    ``X-Forwarded-For`` only from the proxies in ``FORWARDED_ALLOW_IPS`` (default 127.0.0.1), so a client
    cannot pick its own address by sending the header. Direct connections from this machine have no address
    (None); they are counted per browser session, and the per-account count holds regardless.
    """
    ip = st.context.ip_address
    if ip:
        return f"ip:{ip}"
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return f"browser:{ctx.session_id if ctx else 'unknown'}"


def sign_in(username: str, password: str) -> bool:
    """Check the credentials (throttled), open a session and ask the browser to keep its cookie."""
    s = settings()
    outcome = attempt(lambda session: sign_in_service(
        session=session, username=username, password=password, client=client_id(),
        session_policy=s.session_policy, throttle=s.throttle_policy,
    ))
    if outcome is None:
        return False
    if outcome.error is not None:  # the failure count is committed; now tell the user
        show_error(outcome.error)
        return False
    assert outcome.token is not None and outcome.expires_at is not None
    state.sign_in(outcome.token, http_date(outcome.expires_at))
    return True


def sign_out() -> None:
    """End the session on the server (the cookie, wherever it is, stops working) and clear the cookie here; a
    single sign-on ends at the provider too (``st.logout`` sends the browser there and back)."""
    token = state.session_token()
    if token:
        succeeded(lambda session: end_session(session=session, token=token))
    state.sign_out(ended_token=token)
    if sso_config() is not None and sso_ready() and st.user.is_logged_in:
        st.logout()
        st.stop()


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


def show_flash(where: str = state.FLASH_PAGE) -> None:
    """The last action's message, shown once, where it was meant to be: next to the button that caused it
    (``where`` names that place); page-wide successes are a toast that fades instead of a banner above the
    title, and page-wide warnings sit in a slot that always exists, so nothing below shifts."""
    slot = st.empty()
    msg = state.pop_flash(where)
    if msg:
        kind, text = msg
        if where == state.FLASH_PAGE and kind == "success":
            st.toast(md(text), icon="✅")
        else:
            getattr(slot, kind if kind in ("success", "warning", "info", "error") else "info")(md(text))


def succeeded(action: Callable[[Session], object]) -> bool:
    """Like :func:`attempt` for actions without a result: True when the transaction committed."""
    try:
        with db() as session:
            action(session)
        return True
    except Exception as exc:  # noqa: BLE001 - shown to the user by show_error
        show_error(exc)
        return False


def attempt_in_callback(action: Callable[[Session], T]) -> T | None:
    """:func:`attempt` for a widget callback, which runs before the page is drawn: a failure is kept and
    shown by :func:`show_deferred_error` at the place the page calls it (through :func:`show_error`)."""
    try:
        with db() as session:
            return action(session)
    except Exception as exc:  # noqa: BLE001 - shown by show_deferred_error on the run that follows
        state.defer_error(exc)
        return None


def show_deferred_error() -> None:
    """Show the error kept by :func:`attempt_in_callback`, once."""
    exc = state.pop_deferred_error()
    if exc is not None:
        show_error(exc)
