"""How a file an agent or a check wrote is shown on a page: a table, an image, JSON or text, by its name's ending
(the Run details drill-down of programmatic runs and the candidates of the Programmatic checks page)."""

from __future__ import annotations

import io
import json

import pandas as pd
import streamlit as st

__all__ = ["MAX_TABLE_ROWS", "show_output_file"]

MAX_TABLE_ROWS = 500


def show_output_file(path: str, data: bytes) -> None:
    """Show ``data``, the file at ``path``, as what its name says it is; a file that does not read as that is
    named with why."""
    lower = path.lower()
    if lower.endswith((".csv", ".tsv")):
        try:
            frame = pd.read_csv(io.BytesIO(data), sep="\t" if lower.endswith(".tsv") else ",")
        except Exception as exc:  # noqa: BLE001 - the agent's file: say it does not read as a table
            st.warning(f"{path} does not read as a table: {exc}")
            return
        st.caption(f"{path}: {len(frame)} rows × {len(frame.columns)} columns"
                   + (f" (first {MAX_TABLE_ROWS} shown)" if len(frame) > MAX_TABLE_ROWS else ""))
        st.dataframe(frame.head(MAX_TABLE_ROWS), hide_index=True)
    elif lower.endswith((".png", ".jpg", ".jpeg", ".gif")):
        try:
            st.image(data, caption=path)
        except Exception as exc:  # noqa: BLE001 - not an image a browser shows
            st.warning(f"{path} is not an image that can be shown: {exc}")
    elif lower.endswith(".json"):
        try:
            st.json(json.loads(data), expanded=2)
        except ValueError as exc:
            st.warning(f"{path} is not valid JSON ({exc}); as text:")
            st.code(data[:20000].decode("utf-8", "replace"))
    elif lower.endswith((".md", ".txt", ".log", ".py")):
        st.code(data[:20000].decode("utf-8", "replace"), language="markdown" if lower.endswith(".md") else None)
    else:
        st.caption(f"{path}: {len(data)} bytes (not shown)")
