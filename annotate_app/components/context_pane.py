"""The dataset context pane: question, description, data dictionary, sortable preview, per-column plots."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from annotate_app.components.charts import column_figure
from annotate_app.components.data import load_table, sorted_head
from annotate_app.text import md
from curation.models import Dataset

PREVIEW_ROWS = 200


def dictionary_frame(dataset: Dataset) -> pd.DataFrame:
    rows = []
    for f in dataset.dictionary:
        p = f.get("properties", {})
        rows.append({
            "column": f.get("column"),
            "description": p.get("description", ""),
            "dtype": p.get("dtype", ""),
            "unique": p.get("num_unique_values"),
            "min": None if p.get("min") is None else str(p.get("min")),
            "max": None if p.get("max") is None else str(p.get("max")),
            "std": p.get("std"),
            "samples": ", ".join(map(str, p.get("samples", []))),
        })
    return pd.DataFrame(rows)


def render_context(dataset: Dataset, data_path: str) -> None:
    st.markdown(f"#### ❓ {md(dataset.research_question)}")
    with st.expander("Dataset description and data dictionary", expanded=False):
        st.markdown(md(dataset.description) if dataset.description else "_No description._")
        st.caption(f"{dataset.num_rows:,} rows × {dataset.num_columns} columns")
        st.dataframe(dictionary_frame(dataset), hide_index=True, width="stretch")
    with st.expander("Data preview and column plots", expanded=False):
        cols = [f.get("column") for f in dataset.dictionary]
        c1, c2, c3 = st.columns([3, 1, 3])
        sort_col = c1.selectbox("Sort the whole table by", ["(file order)", *cols], key="ctx.sort_col")
        ascending = c2.radio("Order", ["↑", "↓"], horizontal=True, key="ctx.sort_dir") == "↑"
        plot_col = c3.selectbox("Plot column", cols, key="ctx.plot_col")
        head = sorted_head(data_path, dataset.data_sha256, None if sort_col == "(file order)" else sort_col,
                           ascending, PREVIEW_ROWS)
        st.caption(f"First {min(PREVIEW_ROWS, dataset.num_rows)} rows (click a header to sort these rows).")
        st.dataframe(head, width="stretch", height=260)
        if plot_col:
            dtype = next((f.get("properties", {}).get("dtype", "") for f in dataset.dictionary
                          if f.get("column") == plot_col), "")
            frame = load_table(data_path, dataset.data_sha256)
            st.plotly_chart(column_figure(frame[plot_col], dtype), width="stretch", key="ctx.plot")
