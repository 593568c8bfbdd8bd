"""Pure figure builders (DataFrame / graph → plotly Figure), so tests can assert on ``fig.data``."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pandas as pd
import plotly.graph_objects as go

DECISION_COLOURS = {"variables": "#4C78A8", "transforms": "#F58518", "models": "#54A24B"}
NODE_STYLE = {
    "root": ("#7f7f7f", "square", "data"),
    "transform": ("#F58518", "diamond", "transform"),
    "column": ("#4C78A8", "circle", "column"),
    "model": ("#54A24B", "star", "model"),
}


def progress_figure(rows: pd.DataFrame) -> go.Figure:
    """Stacked bars of decisions per analyst, one group per dataset.

    ``rows`` has columns dataset, annotator, status, variables, transforms, models.
    """
    fig = go.Figure()
    if rows.empty:
        fig.update_layout(title="No stage-1 work yet")
        return fig
    x = [rows["dataset"], rows["annotator"] + rows["status"].map({"submitted": " ✔"}).fillna("")]
    for kind, colour in DECISION_COLOURS.items():
        fig.add_bar(x=x, y=rows[kind], name=kind, marker_color=colour)
    fig.update_layout(barmode="stack", height=360, margin=dict(l=10, r=10, t=40, b=10),
                      title="Decisions recorded (✔ = submitted)", legend_orientation="h",
                      yaxis=dict(tickformat="d", rangemode="tozero"))
    return fig


def team_figure(team: pd.DataFrame) -> go.Figure:
    """Per dataset: analysts assigned, started and submitted."""
    fig = go.Figure()
    if team.empty:
        return fig
    for col, name, colour in [
        ("analysts_assigned", "assigned", "#BAB0AC"),
        ("analyses_started", "started", "#F58518"),
        ("analyses_submitted", "submitted", "#54A24B"),
    ]:
        fig.add_bar(x=team["dataset"], y=team[col], name=name, marker_color=colour)
    fig.update_layout(barmode="group", height=300, margin=dict(l=10, r=10, t=40, b=10),
                      title="Team progress per dataset", legend_orientation="h",
                      yaxis=dict(tickformat="d", rangemode="tozero", dtick=1 if team[["analysts_assigned"]].max().max() <= 10 else None))
    return fig


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


def decision_graph_figure(graph: nx.DiGraph) -> go.Figure:
    """Draw the transforms → columns → models graph left to right by dependency depth."""
    fig = go.Figure()
    if graph.number_of_nodes() == 0:
        return fig
    layers = {n: i for i, gen in enumerate(nx.topological_generations(graph)) for n in gen}
    nx.set_node_attributes(graph, layers, "layer")
    pos = nx.multipartite_layout(graph, subset_key="layer", align="vertical")
    ex: list[float | None] = []
    ey: list[float | None] = []
    for a, b in graph.edges:
        ex += [pos[a][0], pos[b][0], None]
        ey += [pos[a][1], pos[b][1], None]
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#BBBBBB", width=1),
                             hoverinfo="skip", showlegend=False))
    for kind, (colour, symbol, label) in NODE_STYLE.items():
        nodes = [n for n, d in graph.nodes(data=True) if d.get("kind") == kind]
        if not nodes:
            continue
        fig.add_trace(go.Scatter(
            x=[pos[n][0] for n in nodes], y=[pos[n][1] for n in nodes], mode="markers+text",
            marker=dict(size=16, color=colour, symbol=symbol, line=dict(width=1, color="#333")),
            text=[graph.nodes[n].get("label", n) for n in nodes], textposition="top center",
            hovertext=[graph.nodes[n].get("hover", "") for n in nodes], hoverinfo="text", name=label,
        ))
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    pad_x = 0.15 * (max(xs) - min(xs) or 1)  # room for the labels of the first and last layer
    pad_y = 0.15 * (max(ys) - min(ys) or 1)
    fig.update_layout(height=max(320, 60 * max(len(g) for g in nx.topological_generations(graph)) + 120),
                      margin=dict(l=10, r=10, t=10, b=10), legend_orientation="h", plot_bgcolor="white",
                      xaxis=dict(visible=False, range=[min(xs) - pad_x, max(xs) + pad_x]),
                      yaxis=dict(visible=False, range=[min(ys) - pad_y, max(ys) + pad_y]))
    return fig
