"""Figure builders are pure functions: assert on what they draw."""

from __future__ import annotations

import networkx as nx
import pandas as pd

from annotate_app.components.charts import column_figure, decision_graph_figure, progress_figure, team_figure


def test_progress_figure_stacks_the_three_decision_kinds():
    rows = pd.DataFrame([{"dataset": "d", "annotator": "ana", "status": "submitted", "variables": 2,
                          "transforms": 3, "models": 1}])
    fig = progress_figure(rows)
    assert [t.name for t in fig.data] == ["variables", "transforms", "models"]
    assert [list(t.y) for t in fig.data] == [[2], [3], [1]]
    assert list(fig.data[0].x[1]) == ["ana ✔"]
    assert progress_figure(rows.iloc[0:0]).layout.title.text == "No stage-1 work yet"


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


def test_graph_figure_draws_every_node_kind():
    g = nx.DiGraph()
    g.add_node("r", kind="root", label="data")
    g.add_node("t", kind="transform", label="log")
    g.add_node("c", kind="column", label="ld")
    g.add_node("m", kind="model", label="OLS")
    g.add_edges_from([("r", "t"), ("t", "c"), ("c", "m")])
    fig = decision_graph_figure(g)
    names = {t.name for t in fig.data if t.name}
    assert names == {"data", "transform", "column", "model"}
    xs = {t.name: t.x[0] for t in fig.data if t.name}
    assert xs["data"] < xs["transform"] < xs["column"] < xs["model"]  # left to right by dependency depth
