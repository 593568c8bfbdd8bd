"""The agreement figure and split table builders are pure: assert on what they build."""

from __future__ import annotations

import pandas as pd

from annotate_app.components.agreement_charts import agreement_figure, agreement_table, split_frame


def test_agreement_figure_has_one_bar_series_per_metric_and_keeps_undefined_as_gaps():
    rows = pd.DataFrame([
        {"scope": "overall", "group": "all", "items_used": 4, "items_dropped": 1, "ratings": 9,
         "percent_agreement": 0.5, "fleiss_kappa": -0.2, "krippendorff_alpha": 0.1},
        {"scope": "question", "group": "justifiable", "items_used": 1, "items_dropped": 0, "ratings": 2,
         "percent_agreement": 1.0, "fleiss_kappa": None, "krippendorff_alpha": None},
    ])
    fig = agreement_figure(rows)
    assert [t.name for t in fig.data] == ["Krippendorff's α", "Fleiss' κ", "% agreement"]
    assert list(fig.data[0].x) == ["overall: all", "question: justifiable"]
    assert list(fig.data[2].y) == [0.5, 1.0]
    assert fig.data[1].y[1] is None or pd.isna(fig.data[1].y[1])
    assert [list(c) for c in fig.data[0].customdata] == [[4, 1], [1, 0]]


def test_empty_agreement_says_why():
    fig = agreement_figure(pd.DataFrame())
    assert not fig.data and "two voters" in fig.layout.title.text


def test_split_frame_names_items_by_their_queue_label_with_human_headers():
    frame = split_frame([{"dataset": "storms", "target_kind": "alternative", "target_id": "abc123456789",
                          "justifiable": 1, "unjustifiable": 2, "reasons": ["no", "not :x: $5"]}],
                        {"abc123456789": "#4"})
    assert list(frame.columns) == ["Item", "Kind", "Justifiable", "Unjustifiable", "Reasons given"]
    assert frame.iloc[0].to_dict() == {"Item": "#4", "Kind": "alternative", "Justifiable": 1, "Unjustifiable": 2,
                                       "Reasons given": "no · not :x: $5"}
    assert split_frame([{"dataset": "s", "target_kind": "variable", "target_id": "zzzzzzzzzz", "justifiable": 1,
                         "unjustifiable": 1, "reasons": []}]).iloc[0]["Item"] == "zzzzzzzz"


def test_agreement_table_has_human_headers_and_a_dash_for_undefined_figures():
    rows = pd.DataFrame([{"scope": "question", "group": "justifiable", "items_used": 1, "items_dropped": 0,
                          "ratings": 2, "percent_agreement": 1.0, "fleiss_kappa": None,
                          "krippendorff_alpha": float("nan")}])
    table = agreement_table(rows)
    assert list(table.columns) == ["By", "Group", "Items used", "Items dropped", "Verdicts", "% agreement",
                                   "Fleiss' κ", "Krippendorff's α"]
    assert table.iloc[0][["% agreement", "Fleiss' κ", "Krippendorff's α"]].tolist() == ["1.000", "—", "—"]
    assert "None" not in table.to_string()
