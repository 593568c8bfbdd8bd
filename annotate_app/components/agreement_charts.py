"""Pure figure builders for stage-2 agreement (DataFrame → plotly Figure), so tests can assert on ``fig.data``."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from annotate_app.text import stat_text

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


SPLIT_HEADERS = {"item": "Item", "kind": "Kind", "justifiable": "Justifiable", "unjustifiable": "Unjustifiable",
                 "reasons": "Reasons given"}
TABLE_HEADERS = {"scope": "By", "group": "Group", "items_used": "Items used", "items_dropped": "Items dropped",
                 "ratings": "Verdicts", "percent_agreement": "% agreement", "fleiss_kappa": "Fleiss' κ",
                 "krippendorff_alpha": "Krippendorff's α"}
def split_frame(split: list[dict[str, object]], labels: dict[str, str] | None = None) -> pd.DataFrame:
    """Split items as a table, most disagreement first (the order the service gives), each named by its label in
    the review queue ("#3") so a reviewer can find it; human headers, no internal ids."""
    frame = pd.DataFrame(split, columns=["dataset", "target_kind", "target_id", "justifiable", "unjustifiable",
                                         "reasons"])
    frame.insert(0, "item", [(labels or {}).get(str(t), str(t)[:8]) for t in frame["target_id"]])
    frame["kind"] = frame["target_kind"].map(lambda k: "alternative" if k == "alternative" else f"peer {k}")
    frame["reasons"] = frame["reasons"].map(lambda r: " · ".join(r) if isinstance(r, list) else r)
    return frame[list(SPLIT_HEADERS)].rename(columns=SPLIT_HEADERS)


def agreement_table(rows: pd.DataFrame) -> pd.DataFrame:
    """The figures as a table a person reads: human headers, figures to 3 decimals, undefined ones as a dash
    (κ and α are undefined where every verdict is the same or an item has one voter)."""
    table = rows[[c for c in TABLE_HEADERS if c in rows.columns]].copy()
    for key in ("percent_agreement", "fleiss_kappa", "krippendorff_alpha"):
        if key in table.columns:
            table[key] = [stat_text(v) for v in table[key]]
    return table.rename(columns=TABLE_HEADERS)
