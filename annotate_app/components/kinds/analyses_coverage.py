"""The BLADE analyses kind's coverage tab (stage 3): per analyst, the share of the final justifiable variables and
transforms they had thought of alone in stage 1."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from annotate_app import context
from curation.models import User
from curation.services.analyses.coverage import Coverage, expert_coverage


def coverage_figure(rows: pd.DataFrame) -> go.Figure:
    """Per analyst, the share of the final justifiable set they had thought of alone (columns analyst, kind,
    covered, total)."""
    fig = go.Figure()
    if rows.empty:
        fig.update_layout(title="No justifiable items yet")
        return fig
    for kind, colour in (("variable", "#4C78A8"), ("transform", "#F58518"), ("all", "#54A24B")):
        part = rows[rows["kind"] == kind]
        share = [c / t if t else 0 for c, t in zip(part["covered"], part["total"], strict=True)]
        fig.add_bar(x=part["analyst"], y=share, name=kind, marker_color=colour,
                    text=[f"{c}/{t}" for c, t in zip(part["covered"], part["total"], strict=True)])
    fig.update_layout(barmode="group", height=360, title="Share of the final justifiable set each analyst had alone",
                      yaxis=dict(tickformat=".0%", range=[0, 1]), margin=dict(l=10, r=10, t=40, b=10))
    return fig


def render_coverage(user: User, dataset_id: int) -> None:
    cov: Coverage | None = context.attempt(lambda s: expert_coverage(session=s, actor=user, dataset_id=dataset_id))
    if cov is None:
        return
    rows = pd.DataFrame([{"analyst": r.analyst, "kind": r.kind, "covered": r.covered, "total": r.total}
                         for r in cov.rows])
    st.plotly_chart(coverage_figure(rows), key="coverage.chart")
    total = sum(cov.ideas.values())
    union = sum(cov.union.values())
    st.caption(f"{total} justifiable ideas; all analysts together had {union} of them in stage 1, the rest came "
               "from alternatives (peers or the LLM) in stage 2.")
