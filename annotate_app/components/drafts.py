"""Editable forms whose widgets can be pre-filled: a draft dict plus a version number in the widget keys.

Loading new values (editing an existing decision, the sanity check's suggestions) stores them in the draft and
bumps the version, so the next run creates fresh widgets initialised from the draft.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotate_app import state


class Draft:
    def __init__(self, name: str, defaults: dict[str, Any]) -> None:
        self.name = name
        self.defaults = defaults
        self._store_key = f"fp.draft.{name}"
        if self._store_key not in st.session_state:
            st.session_state[self._store_key] = dict(defaults)

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
