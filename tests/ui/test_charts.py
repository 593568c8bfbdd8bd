"""Figure builders are pure functions: assert on what they draw."""

from __future__ import annotations

import networkx as nx
import pandas as pd

from annotate_app.components.charts import (
    column_figure,
    progress_figure,
    progress_table,
    team_figure,
    team_table,
)
from annotate_app.components.kinds.analyses_graph import decision_graph_figure


def test_progress_figure_stacks_the_three_decision_kinds():
    rows = pd.DataFrame([{"dataset": "d", "annotator": "ana", "status": "submitted", "variables": 2,
                          "transforms": 3, "models": 1}])
    fig = progress_figure(rows)
    assert [t.name for t in fig.data] == ["conceptual variables", "transforms", "models"]
    assert [list(t.y) for t in fig.data] == [[2], [3], [1]]
    assert list(fig.data[0].x[1]) == ["ana ✔"]
    assert progress_figure(rows.iloc[0:0]).layout.title.text == "No stage-1 work yet"


def test_progress_charts_count_in_whole_numbers_and_keep_title_and_legend_apart():
    rows = pd.DataFrame([{"dataset": "d", "annotator": "ana", "status": "draft", "variables": 1,
                          "transforms": 0, "models": 0}])
    for fig in (progress_figure(rows), team_figure(pd.DataFrame([{
            "dataset": "d", "analysts_assigned": 1, "analyses_started": 1, "analyses_submitted": 0,
            "decisions_recorded": 1}]))):
        axis = fig.layout.yaxis
        assert axis.dtick == 1 and axis.tickformat == ",d"  # ticks 0, 1: never "0 0 0 1 1 1"
        assert fig.layout.legend.y > 1 and fig.layout.legend.xanchor == "right"  # above the plot, at the right
        assert fig.layout.title.x == 0 and fig.layout.margin.t >= 70  # the title on the left, with room
    many = rows.assign(variables=40)
    assert progress_figure(many).layout.yaxis.dtick is None  # plotly's own integer ticks for big counts


def test_progress_tables_have_human_headers_and_no_none():
    rows = pd.DataFrame([
        {"dataset": "d", "annotator": "ana", "status": "draft", "variables": 1, "transforms": 0, "models": 0,
         "submitted_at": None},
        {"dataset": "d", "annotator": "bo", "status": "submitted", "variables": 1, "transforms": 0, "models": 1,
         "submitted_at": pd.Timestamp("2026-01-02 03:04", tz="UTC")}])
    table = progress_table(rows)
    assert list(table.columns) == ["Dataset", "Analyst", "Status", "Conceptual variables", "Transforms", "Models",
                                   "Submitted (UTC)"]
    assert list(table["Submitted (UTC)"]) == ["", "2026-01-02 03:04"]
    assert "None" not in table.to_csv()
    team = pd.DataFrame([{"dataset": "d", "analysts_assigned": 2, "analyses_started": 1, "analyses_submitted": 0,
                          "decisions_recorded": 3}])
    assert list(team_table(team).columns) == ["Dataset", "Analysts assigned", "Analyses started",
                                              "Analyses submitted", "Decisions recorded"]


def test_team_figure_groups_assigned_started_submitted():
    team = pd.DataFrame([{"dataset": "d", "analysts_assigned": 3, "analyses_started": 2, "analyses_submitted": 1,
                          "decisions_recorded": 9}])
    assert [list(t.y) for t in team_figure(team).data] == [[3], [2], [1]]


def test_column_figure_bins_numbers_and_counts_categories():
    numbers = pd.Series(range(150_000), name="x", dtype=float)
    fig = column_figure(numbers, "number")
    assert len(fig.data[0].x) == 40 and sum(fig.data[0].y) == 150_000  # a small payload, all rows counted
    cats = pd.Series(["a", "b", "a", None], name="c")
    fig = column_figure(cats, "category")
    assert dict(zip(fig.data[0].y, fig.data[0].x, strict=True)) == {"a": 2, "b": 1, "(missing)": 1}
    assert "1 missing of 4" in fig.layout.title.text


def test_graph_figure_draws_every_node_kind_with_its_label():
    g = nx.DiGraph()
    g.add_node("o", kind="original", label="deaths")
    g.add_node("t", kind="transform", label="derive · log")
    g.add_node("c", kind="derived", label="ld")
    g.add_node("m", kind="model", label="OLS of ld on x")
    g.add_node("v", kind="variable", label="DV: deaths")
    g.add_edge("o", "t", role="input")
    g.add_edge("t", "c", role="output")
    g.add_edge("c", "m", role="input")
    g.add_edge("c", "v", role="operationalises")
    fig = decision_graph_figure(g)
    nodes = {t.name: list(t.text) for t in fig.data if t.mode == "markers+text"}
    assert nodes == {"original column": ["deaths"], "transform": ["derive · log"], "derived column": ["ld"],
                     "model": ["OLS of ld on x"], "conceptual variable": ["DV: deaths"]}
    xs = {t.name: t.x[0] for t in fig.data if t.mode == "markers+text"}
    assert xs["original column"] < xs["transform"] < xs["derived column"] < xs["model"]
    assert xs["conceptual variable"] > xs["model"]  # variables in a last column of their own
    assert {t.name for t in fig.data if t.mode == "lines"} == {"reads / writes", "operationalises / stands for"}
    # long labels are shortened on the figure, and kept whole in the hover
    g.nodes["m"]["label"] = "OLS of log deaths on femininity, controlling for pressure"
    g.nodes["m"]["hover"] = "model OLS of log deaths on femininity, controlling for pressure"
    (model,) = [t for t in decision_graph_figure(g).data if t.name == "model"]
    assert model.text[0] == "OLS of log deaths on femi…" and "controlling for pressure" in model.hovertext[0]
    positions = {t.name: t.textposition[0] for t in fig.data if t.mode == "markers+text"}
    assert positions["transform"] != positions["original column"]  # neighbours' labels do not collide
