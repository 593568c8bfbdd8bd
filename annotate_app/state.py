"""Every ``st.session_state`` key of the app, in one place, with typed accessors."""

from __future__ import annotations

from typing import Any

import streamlit as st

SESSION_TOKEN = "fp.session_token"
COOKIE = "fp.cookie"
IGNORED_COOKIE = "fp.ignored_cookie"
FLASH = "fp.flash"
SSO_BROWSER = "fp.sso_browser"  # this browser's id for single sign-on attempts (components/sso.py)
SSO_TRIED = "fp.sso_tried"  # the provider sign-in (login hash) this browser session already turned into a session
DATASET_ID = "fp.dataset_id"
FORM_VERSION = "fp.form.version"
DEFERRED_ERROR = "fp.deferred_error"
UPLOAD_NAME = "fp.datasets.upload_name"
CHECK_JOB = "fp.check_job"
REVIEW_DATASET_ID = "fp.review.dataset_id"
REVIEW_PAGE = "fp.review.page"
REVIEW_ERRORS = "fp.review.errors"  # item key -> the exception its last vote raised (shown next to the item)


def session_token() -> str | None:
    """The token of this browser's server-side session (the database validates it on every run), or None."""
    token = st.session_state.get(SESSION_TOKEN)
    return str(token) if token else None


def sign_in(token: str, expires_at_http: str | None = None) -> None:
    """Remember the session; ``expires_at_http`` (an HTTP date) asks for the cookie to be written too."""
    st.session_state[SESSION_TOKEN] = token
    if expires_at_http is not None:
        st.session_state[COOKIE] = ("set", token, expires_at_http)


def sign_out(ended_token: str | None = None) -> None:
    """Forget everything of this browser session; ``ended_token`` (ended on the server) is never tried again
    in this browser session and the cookie holding it is cleared."""
    for key in list(st.session_state.keys()):
        if str(key).startswith("fp."):
            del st.session_state[key]
    if ended_token:
        st.session_state[IGNORED_COOKIE] = ended_token
        st.session_state[COOKIE] = ("clear", "", "")


def ignored_cookie() -> str | None:
    value = st.session_state.get(IGNORED_COOKIE)
    return str(value) if value else None


def cookie_action() -> tuple[str, str, str] | None:
    """What the browser's session cookie should become: ("set", token, http-date) or ("clear", "", "")."""
    value: Any = st.session_state.get(COOKIE)
    return value


FLASH_PAGE = "page"


def flash(message: str, kind: str = "success", where: str = FLASH_PAGE) -> None:
    """A message shown once on the next run (survives st.rerun), at the place called ``where``."""
    st.session_state[FLASH] = (kind, message, where)


def pop_flash(where: str = FLASH_PAGE) -> tuple[str, str] | None:
    """The pending message for ``where`` (removed: it is shown once), or None."""
    value: Any = st.session_state.get(FLASH)
    if value is None or (value[2] if len(value) > 2 else FLASH_PAGE) != where:
        return None
    del st.session_state[FLASH]
    return value[0], value[1]


def defer_error(exc: BaseException) -> None:
    """An error raised in a widget callback, kept to be shown where the page draws it (survives the rerun)."""
    st.session_state[DEFERRED_ERROR] = exc


def pop_deferred_error() -> BaseException | None:
    value: Any = st.session_state.pop(DEFERRED_ERROR, None)
    return value


def form_version(name: str) -> int:
    """A counter in widget keys; bumping it gives a form fresh (pre-filled) widgets."""
    return int(st.session_state.get(f"{FORM_VERSION}.{name}", 0))


def bump_form(name: str) -> None:
    st.session_state[f"{FORM_VERSION}.{name}"] = form_version(name) + 1


def get(key: str, default: Any = None) -> Any:
    return st.session_state.get(key, default)


def put(key: str, value: Any) -> None:
    st.session_state[key] = value


def reset_drafts() -> None:
    """Forget half-filled decision forms of this browser session (e.g. when the analyst switches dataset: the
    forms then start from the server's drafts of the other dataset). Each form gets fresh widgets (a new
    version in their keys): the browser would otherwise send the old widgets' values back."""
    for key in list(st.session_state.keys()):
        text = str(key)
        if text.startswith("fp.draft."):
            bump_form(text.removeprefix("fp.draft."))
        if text.startswith(("fp.draft.", "fp.draft_kept.")):
            del st.session_state[key]


def check_job(prefix: str) -> Any:
    """The sanity check of form ``prefix`` that is still running (see components/check_result.py), or None."""
    return st.session_state.get(f"{CHECK_JOB}.{prefix}")


def put_check_job(prefix: str, job: Any) -> None:
    st.session_state[f"{CHECK_JOB}.{prefix}"] = job


def drop_check_job(prefix: str) -> None:
    st.session_state.pop(f"{CHECK_JOB}.{prefix}", None)
def review_error(item_key: str) -> BaseException | None:
    errors: dict[str, BaseException] = st.session_state.get(REVIEW_ERRORS, {})
    return errors.get(item_key)


def set_review_error(item_key: str, exc: BaseException | None) -> None:
    errors: dict[str, BaseException] = dict(st.session_state.get(REVIEW_ERRORS, {}))
    if exc is None:
        errors.pop(item_key, None)
    else:
        errors[item_key] = exc
    st.session_state[REVIEW_ERRORS] = errors

# stage 3: consensus meeting and MCQ review
MEETING_DATASET_ID = "fp.meeting.dataset_id"
MEETING_SEEN = "fp.meeting.seen"  # item key -> outcome revision the facilitator saw when they opened the item
MEETING_PROJECTOR = "fp.meeting.projector"
MCQ_DATASET_ID = "fp.mcq.dataset_id"


def seen_revision(item_key: str) -> int | None:
    seen: dict[str, int] = st.session_state.get(MEETING_SEEN, {})
    return seen.get(item_key)


def set_seen_revision(item_key: str, revision: int | None) -> None:
    seen: dict[str, int] = dict(st.session_state.get(MEETING_SEEN, {}))
    if revision is None:
        seen.pop(item_key, None)
    else:
        seen[item_key] = revision
    st.session_state[MEETING_SEEN] = seen
# scoring runs, leaderboard and drill-down
RUN_ID = "fp.runs.run_id"
DRILL_DATASET = "fp.runs.dataset"
DRILL_ANALYSIS = "fp.runs.analysis"


def chosen_run() -> int | None:
    value = st.session_state.get(RUN_ID)
    return None if value is None else int(value)


def choose_run(run_id: int | None) -> None:
    st.session_state[RUN_ID] = run_id


# agent runs
AGENT_RUN_ID = "fp.agent.run_id"


def chosen_agent_run() -> int | None:
    value = st.session_state.get(AGENT_RUN_ID)
    return None if value is None else int(value)


def choose_agent_run(run_id: int | None) -> None:
    st.session_state[AGENT_RUN_ID] = run_id


REPRO_ITEM = "repro.chosen_item"


def chosen_repro_item() -> str | None:
    """The reproducibility item last opened in Run details (kept across reruns and overrides)."""
    value = st.session_state.get(REPRO_ITEM)
    return None if value is None else str(value)


def choose_repro_item(key: str | None) -> None:
    st.session_state[REPRO_ITEM] = key
