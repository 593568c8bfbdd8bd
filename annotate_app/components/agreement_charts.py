"""Pure figure builders for stage-2 agreement (DataFrame → plotly Figure), so tests can assert on ``fig.data``."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

METRICS = {"krippendorff_alpha": ("Krippendorff's α", "#4C78A8"), "fleiss_kappa": ("Fleiss' κ", "#F58518"),
           "percent_agreement": ("% agreement", "#54A24B")}


def agreement_figure(rows: pd.DataFrame) -> go.Figure:
    """Grouped bars of α, κ and percent agreement per group (``scope: group``), undefined figures left out.

    ``rows`` has columns scope, group, items_used, items_dropped and the three metrics (None when undefined).
    """
    fig = go.Figure()
    if rows.empty:
        fig.update_layout(title="No votes to compare yet: agreement needs two voters on an item")
        return fig
    labels = rows["scope"] + ": " + rows["group"]
    for key, (name, colour) in METRICS.items():
        fig.add_bar(x=labels, y=rows[key], name=name, marker_color=colour,
                    customdata=rows[["items_used", "items_dropped"]].to_numpy(),
                    hovertemplate="%{x}<br>" + name + " = %{y:.3f}<br>items used %{customdata[0]}, "
                                  "dropped %{customdata[1]}<extra></extra>")
    fig.update_layout(barmode="group", height=380, margin=dict(l=10, r=10, t=40, b=10), legend_orientation="h",
                      title="Agreement per group (items with fewer than two votes are dropped)",
                      yaxis=dict(range=[-1, 1], zeroline=True))
    return fig


def split_frame(split: list[dict[str, object]], labels: dict[str, str] | None = None) -> pd.DataFrame:
    """Split items as a table, most disagreement first (the order the service gives), each with its label in
    the review queue ("#3") so a reviewer can find it."""
    frame = pd.DataFrame(split, columns=["dataset", "target_kind", "target_id", "justifiable", "unjustifiable",
                                         "reasons"])
    frame.insert(0, "item", [(labels or {}).get(str(t), str(t)[:8]) for t in frame["target_id"]])
    return frame
