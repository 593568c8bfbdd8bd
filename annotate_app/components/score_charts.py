"""Pure figure builders for scores (leaderboard rows / comparisons / agreement → plotly Figure)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from annotate_app.text import stat_text

DECISION_TYPES = ("cvar", "value", "graph", "model", "model_cvar")
DECISION_LABELS = {"cvar": "variables", "value": "transforms (value)", "graph": "transforms (graph)",
                   "model": "models", "model_cvar": "models + variables"}


def run_label(row: dict[str, Any]) -> str:
    model = f" · {row['model']}" if row.get("model") else ""
    release = f" (release {row['release']})" if row.get("stale") and row.get("release") else ""
    return f"#{row['run']} {row['agent']}{model}{release}{' ★' if row.get('official') else ''}"


def _err(values: Sequence[float | None], lows: Sequence[float | None], highs: Sequence[float | None],
         ) -> dict[str, Any]:
    plus = [(h - v) if h is not None and v is not None else 0 for v, h in zip(values, highs, strict=True)]
    minus = [(v - lo) if lo is not None and v is not None else 0 for v, lo in zip(values, lows, strict=True)]
    return dict(type="data", symmetric=False, array=plus, arrayminus=minus, visible=True)


def f1_figure(rows: Sequence[dict[str, Any]]) -> go.Figure:
    """F1 per decision type, one bar per run, with the 95 % bootstrap interval as error bars."""
    fig = go.Figure()
    if not rows:
        fig.update_layout(title="No scored runs on this release yet")
        return fig
    x = [DECISION_LABELS[t] for t in DECISION_TYPES]
    for row in rows:
        y = [row.get(f"f1.{t}") for t in DECISION_TYPES]
        fig.add_bar(x=x, y=[v if v is not None else 0 for v in y], name=run_label(row),
                    error_y=_err(y, [row.get(f"f1.{t}.low") for t in DECISION_TYPES],
                                 [row.get(f"f1.{t}.high") for t in DECISION_TYPES]))
    fig.update_layout(barmode="group", height=380, margin=dict(l=10, r=10, t=40, b=10), legend_orientation="h",
                      title="F1 per decision type (error bars: 95 % bootstrap interval)",
                      yaxis=dict(range=[0, 1.05], title="F1"))
    return fig


def weighted_figure(rows: Sequence[dict[str, Any]]) -> go.Figure:
    """The weighted score per run, best first, with its 95 % interval."""
    fig = go.Figure()
    if not rows:
        fig.update_layout(title="No scored runs on this release yet")
        return fig
    ordered = list(reversed(rows))  # plotly draws the first bar at the bottom
    values = [r.get("weighted") for r in ordered]
    fig.add_bar(y=[run_label(r) for r in ordered], x=[v if v is not None else 0 for v in values], orientation="h",
                error_x=_err(values, [r.get("weighted.low") for r in ordered],
                             [r.get("weighted.high") for r in ordered]),
                marker_color=["#E45756" if r.get("stale") else "#4C78A8" for r in ordered],
                text=[("undefined" if r.get("weighted") is None else "") + (" stale" if r.get("stale") else "")
                      for r in ordered], textposition="auto")
    fig.update_layout(height=max(200, 40 * len(rows) + 80), margin=dict(l=10, r=10, t=40, b=10),
                      title="Weighted score (red: scored on an older ground truth)", xaxis=dict(range=[0, 1.05]))
    return fig


def difference_figure(differences: Sequence[dict[str, Any]]) -> go.Figure:
    """Paired differences F1(A) − F1(B) per decision type for one dataset (or 'all'), with their intervals."""
    fig = go.Figure()
    if not differences:
        fig.update_layout(title="Nothing to compare")
        return fig
    values = [d.get("diff") for d in differences]
    fig.add_scatter(x=[v if v is not None else 0 for v in values],
                    y=[DECISION_LABELS.get(d["decision_type"], d["decision_type"]) for d in differences],
                    mode="markers", marker=dict(size=11, color="#4C78A8"),
                    error_x=_err(values, [d.get("ci_low") for d in differences], [d.get("ci_high") for d in differences]))
    fig.add_vline(x=0, line_dash="dot", line_color="#888")
    fig.update_layout(height=300, margin=dict(l=10, r=10, t=40, b=10), xaxis=dict(range=[-1.05, 1.05]),
                      title="F1(A) − F1(B) with paired bootstrap 95 % interval")
    return fig


def confusion_figure(matrix: Sequence[Sequence[int]], labels: Sequence[str], title: str) -> go.Figure:
    """A 2 × 2 (or n × n) confusion matrix: rows the experts' labels, columns the judge's."""
    fig = go.Figure(go.Heatmap(z=list(matrix), x=[f"judge: {lab}" for lab in labels],
                               y=[f"experts: {lab}" for lab in labels], colorscale="Blues", showscale=False,
                               text=[[str(v) for v in row] for row in matrix], texttemplate="%{text}"))
    fig.update_layout(height=240, margin=dict(l=10, r=10, t=40, b=10), title=title, yaxis=dict(autorange="reversed"))
    return fig


def difference_table(differences: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The paired comparison as a table a person reads: figures to 3 decimals, a dash where a figure is undefined
    (an F1 with nothing to match on either side; an interval without two runs to resample)."""
    figures = {"F1 A": "f1_a", "F1 B": "f1_b", "A − B": "diff", "95 % low": "ci_low", "95 % high": "ci_high"}
    return pd.DataFrame([{"decision type": DECISION_LABELS[r["decision_type"]],
                          **{label: stat_text(r[key]) for label, key in figures.items()}, "paired": r["paired"]}
                         for r in differences], columns=["decision type", *figures, "paired"])
