"""The buttons every decision kind shares: Edit / Delete on a recorded decision, Save / Cancel on its form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st
from sqlmodel import Session

from annotate_app import context, state
from annotate_app.components.drafts import Draft

PENDING_DELETE = "fp.delete.pending"  # the decision whose Delete waits for a second click


def edit_delete(edit_col: Any, delete_col: Any, *, key: str, draft: Draft, values: Callable[[], dict[str, Any]],
                delete: Callable[[Session], object], deleted: str) -> None:
    """Edit loads ``values()`` into the form; Delete asks first, then runs ``delete`` in one transaction."""
    if st.session_state.get(PENDING_DELETE) == key:
        edit_col.caption("Delete it for good?")
        if delete_col.button("Yes, delete", key=f"{key}.del.confirm", type="primary"):
            st.session_state.pop(PENDING_DELETE, None)
            if context.succeeded(delete):
                state.flash(deleted, where=list_flash(key.split(".", 1)[0]))
                st.rerun()
        if delete_col.button("Keep it", key=f"{key}.del.cancel"):
            st.session_state.pop(PENDING_DELETE, None)
            st.rerun()
        return
    if edit_col.button("Edit", key=f"{key}.edit"):
        draft.load(values())
        st.rerun()
    if delete_col.button("Delete", key=f"{key}.del"):
        st.session_state[PENDING_DELETE] = key  # one decision at a time: asking about another forgets this one
        st.rerun()


def list_flash(prefix: str) -> str:
    """Where deletions of a decision kind are confirmed: above its list (call context.show_flash there)."""
    return f"{prefix}.list"


def save_or_cancel(*, prefix: str, noun: str, draft: Draft, save: Callable[[Session], Any],
                   label: Callable[[Any], str]) -> None:
    """Save runs ``save`` in one transaction (errors shown, nothing stored); Cancel leaves editing."""
    row = st.container(horizontal=True)  # buttons as wide as their text, at any window width
    if row.button(f"Save {noun}", type="primary", key=f"{prefix}.save"):
        saved = context.attempt(save)
        if saved is not None:
            draft.reset()
            state.flash(f"Saved {noun} '{label(saved)}'.", where=prefix)
            st.rerun()
    if draft.data.get("editing") and row.button("Cancel editing", key=f"{prefix}.cancel"):
        draft.reset()
        st.rerun()
    context.show_flash(prefix)  # the confirmation, once, right under the button that saved
