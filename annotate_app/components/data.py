"""Cached reads of a dataset's table (keyed by its checksum, so a re-render costs nothing)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st


@st.cache_data(max_entries=4, show_spinner="Loading the data…")
def load_table(path: str, sha256: str) -> pd.DataFrame:
    return pd.read_csv(Path(path))


@st.cache_data(max_entries=16, show_spinner=False)
def sorted_head(path: str, sha256: str, column: str | None, ascending: bool, n: int) -> pd.DataFrame:
    df = load_table(path, sha256)
    if column and column in df.columns:
        df = df.sort_values(column, ascending=ascending, kind="stable", na_position="last")
    return df.head(n)
