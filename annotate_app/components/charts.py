"""Pure figure builders (DataFrame / graph → plotly Figure), so tests can assert on ``fig.data``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

DECISION_COLOURS = {"variables": "#4C78A8", "transforms": "#F58518", "models": "#54A24B"}
DECISION_NAMES = {"variables": "conceptual variables", "transforms": "transforms", "models": "models"}
# the legend sits above the plot, right-aligned, under a left-aligned title: neither hides the other nor the
# dataset names under the bars
_LEGEND = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1)


def _count_axis(top: float) -> dict[str, object]:
    """A y-axis of whole numbers: one tick per unit while that stays readable, else plotly's integer ticks."""
    axis: dict[str, object] = dict(tickformat=",d", rangemode="tozero", title="count")
    if top <= 10:
        axis.update(dtick=1, range=[0, max(1, top) * 1.05])
    return axis


def progress_figure(rows: pd.DataFrame) -> go.Figure:
    """Stacked bars of decisions per analyst, one group per dataset.

    ``rows`` has columns dataset, annotator, status, variables, transforms, models.
    """
    if rows.empty:
        return go.Figure(layout=go.Layout(title="No stage-1 work yet"))
    x = [rows["dataset"], rows["annotator"] + rows["status"].map({"submitted": " ✔"}).fillna("")]
    top = float(rows[list(DECISION_COLOURS)].sum(axis=1).max())
    # built whole: Figure.add_bar and update_layout re-validate the figure on each call, twice the CPU of the
    # home page's charts (every signed-in landing)
    return go.Figure(
        data=[go.Bar(x=x, y=rows[kind], name=DECISION_NAMES[kind], marker_color=colour)
              for kind, colour in DECISION_COLOURS.items()],
        layout=go.Layout(barmode="stack", height=380, margin=dict(l=10, r=10, t=80, b=10),
                         title=dict(text="Decisions recorded per analyst (✔ = submitted)", x=0, xanchor="left",
                                    y=0.97, yanchor="top"),
                         legend=_LEGEND, yaxis=_count_axis(top)))


def team_figure(team: pd.DataFrame) -> go.Figure:
    """Per dataset: analysts assigned, started and submitted."""
    if team.empty:
        return go.Figure()
    top = float(team[["analysts_assigned", "analyses_started", "analyses_submitted"]].max().max())
    return go.Figure(  # built whole, as progress_figure
        data=[go.Bar(x=team["dataset"], y=team[col], name=name, marker_color=colour) for col, name, colour in [
            ("analysts_assigned", "assigned", "#BAB0AC"),
            ("analyses_started", "started", "#F58518"),
            ("analyses_submitted", "submitted", "#54A24B"),
        ]],
        layout=go.Layout(barmode="group", height=320, margin=dict(l=10, r=10, t=80, b=10),
                         title=dict(text="Analysts per dataset", x=0, xanchor="left", y=0.97, yanchor="top"),
                         legend=_LEGEND, yaxis=_count_axis(top)))


PROGRESS_HEADERS = {"dataset": "Dataset", "annotator": "Analyst", "status": "Status",
                    "variables": "Conceptual variables", "transforms": "Transforms", "models": "Models",
                    "submitted_at": "Submitted (UTC)"}
TEAM_HEADERS = {"dataset": "Dataset", "analysts_assigned": "Analysts assigned",
                "analyses_started": "Analyses started", "analyses_submitted": "Analyses submitted",
                "decisions_recorded": "Decisions recorded"}


def progress_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The progress rows for reading: human headers, dates as text, an empty cell (not "None") when unsubmitted."""
    out = rows.copy()
    out["submitted_at"] = [("" if pd.isna(v) else pd.Timestamp(v).strftime("%Y-%m-%d %H:%M"))
                           for v in out["submitted_at"]]
    return out.rename(columns=PROGRESS_HEADERS)[list(PROGRESS_HEADERS.values())]


def team_table(team: pd.DataFrame) -> pd.DataFrame:
    return team.rename(columns=TEAM_HEADERS)[[h for k, h in TEAM_HEADERS.items() if k in team.columns]]


def column_figure(series: pd.Series, dtype: str) -> go.Figure:
    """A quick look at one column: histogram for numbers, top-20 bar chart otherwise."""
    name = str(series.name)
    values = series.dropna()
    if dtype == "number" and pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series):
        # Bin here rather than in the browser: a 150,000-row column stays a 40-bar payload.
        counts, edges = np.histogram(values.to_numpy(dtype=float), bins=40) if len(values) else ([], [0.0])
        centres = (np.asarray(edges[:-1]) + np.asarray(edges[1:])) / 2 if len(values) else []
        fig = go.Figure(go.Bar(x=centres, y=counts, marker_color="#4C78A8", name=name))
        fig.update_layout(xaxis_title=name, yaxis_title="rows", bargap=0.02)
    else:
        counts = series.astype("string").fillna("(missing)").value_counts().head(20)
        fig = go.Figure(go.Bar(x=counts.values[::-1], y=counts.index[::-1], orientation="h",
                               marker_color="#4C78A8", name=name))
        fig.update_layout(xaxis_title="rows", yaxis_title=name)
    missing = int(series.isna().sum())
    fig.update_layout(height=320, margin=dict(l=10, r=10, t=40, b=10),
                      title=f"{name} · {missing} missing of {len(series)}")
    return fig
