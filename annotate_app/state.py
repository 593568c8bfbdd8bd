"""Every ``st.session_state`` key of the app, in one place, with typed accessors."""

from __future__ import annotations

from typing import Any

import streamlit as st

USER_ID = "fp.user_id"
AUTH_EPOCH = "fp.auth_epoch"
FLASH = "fp.flash"
DATASET_ID = "fp.dataset_id"
FORM_VERSION = "fp.form.version"


def signed_in() -> tuple[int, int] | None:
    """(user id, auth epoch) of the signed-in user, or None."""
    uid = st.session_state.get(USER_ID)
    return None if uid is None else (int(uid), int(st.session_state.get(AUTH_EPOCH, 0)))


def sign_in(user_id: int, auth_epoch: int) -> None:
    st.session_state[USER_ID] = user_id
    st.session_state[AUTH_EPOCH] = auth_epoch


def sign_out() -> None:
    for key in list(st.session_state.keys()):
        if str(key).startswith("fp."):
            del st.session_state[key]


def flash(message: str, kind: str = "success") -> None:
    """A message shown once on the next run (survives st.rerun)."""
    st.session_state[FLASH] = (kind, message)


def pop_flash() -> tuple[str, str] | None:
    value: Any = st.session_state.pop(FLASH, None)
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
    """Forget half-filled decision forms (e.g. when the analyst switches dataset)."""
    for key in list(st.session_state.keys()):
        if str(key).startswith("fp.draft.") or str(key).startswith(FORM_VERSION):
            del st.session_state[key]
