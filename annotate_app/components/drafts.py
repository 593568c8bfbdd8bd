"""Editable forms whose widgets can be pre-filled: a draft dict plus a version number in the widget keys.

Loading new values (editing an existing decision, the sanity check's suggestions) stores them in the draft and
bumps the version, so the next run creates fresh widgets initialised from the draft.

A draft given a ``server`` name is also kept on the server for its user (curation.services.drafts): each run
stores what the form holds (:meth:`Draft.keep`), a new browser session (a reload, another tab) starts from
it, and saving or cancelling the form (:meth:`Draft.reset`) discards it.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from annotate_app import context, state
from curation.models import User
from curation.services.drafts import discard_draft, load_draft, save_draft

NOT_KEPT = ("sanity_check",)  # a sanity check's output is the check's, not something the person typed


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """JSON's view of ``values`` (tuples become lists), to compare with what the server holds."""
    return json.loads(json.dumps({k: v for k, v in values.items() if k not in NOT_KEPT}, default=str))


class Draft:
    def __init__(self, name: str, defaults: dict[str, Any], *, server: tuple[User, str] | None = None) -> None:
        self.name = name
        self.defaults = defaults
        self.server = server
        self._store_key = f"fp.draft.{name}"
        self._kept_key = f"fp.draft_kept.{name}"
        if self._store_key not in st.session_state:
            data = dict(defaults)
            kept = self._load() if server is not None else None
            if kept:
                data.update({k: v for k, v in kept.items() if k in defaults})
            st.session_state[self._store_key] = data
            st.session_state[self._kept_key] = _plain(data) if kept else _plain(defaults)

    @property
    def data(self) -> dict[str, Any]:
        return st.session_state[self._store_key]

    def key(self, field: str) -> str:
        return f"fp.{self.name}.{state.form_version(self.name)}.{field}"

    def value(self, field: str) -> Any:
        """The widget's current value if it exists this version, else the draft's."""
        return st.session_state.get(self.key(field), self.data.get(field, self.defaults.get(field)))

    def capture(self, fields: list[str]) -> dict[str, Any]:
        """Copy the current widget values into the draft (before a callback rebuilds the widgets)."""
        for f in fields:
            if self.key(f) in st.session_state:
                self.data[f] = st.session_state[self.key(f)]
        return self.data

    def load(self, values: dict[str, Any]) -> None:
        self.data.update(values)
        state.bump_form(self.name)

    def reset(self) -> None:
        st.session_state[self._store_key] = dict(self.defaults)
        state.bump_form(self.name)
        if self.server is not None:
            user, name = self.server
            context.attempt(lambda s: discard_draft(session=s, actor=user, name=name))
            st.session_state[self._kept_key] = _plain(self.defaults)

    def keep(self, values: dict[str, Any]) -> None:
        """Keep what the form holds now (in the draft's own fields) on the server, when it changed: a reload
        brings it back. A form back at its defaults leaves nothing behind."""
        if self.server is None:
            return
        plain = _plain({k: v for k, v in values.items() if k in self.defaults})
        if plain == st.session_state.get(self._kept_key):
            return
        user, name = self.server
        if plain == _plain(self.defaults):
            done = context.succeeded(lambda s: discard_draft(session=s, actor=user, name=name))
        else:
            done = context.succeeded(lambda s: save_draft(session=s, actor=user, name=name, data=plain))
        if done:
            st.session_state[self._kept_key] = plain

    def _load(self) -> dict[str, Any] | None:
        assert self.server is not None
        user, name = self.server
        return context.attempt(lambda s: load_draft(session=s, actor=user, name=name))
