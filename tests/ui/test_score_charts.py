"""Score figure builders are pure: assert on what they draw."""

from __future__ import annotations

import pytest

from annotate_app.components.score_charts import (
    confusion_figure,
    difference_figure,
    f1_figure,
    weighted_figure,
)


def _row(run, weighted, stale=""):
    row = {"run": run, "agent": "a", "model": "m", "official": run == 1, "stale": stale, "weighted": weighted,
           "weighted.low": weighted - 0.1, "weighted.high": weighted + 0.05}
    for t in ("cvar", "value", "graph", "model", "model_cvar"):
        row.update({f"f1.{t}": 0.5, f"f1.{t}.low": 0.4, f"f1.{t}.high": 0.7})
    row["f1.value"], row["f1.value.low"], row["f1.value.high"] = None, None, None
    return row


def test_f1_figure_draws_one_bar_group_per_run_with_asymmetric_intervals():
    fig = f1_figure([_row(1, 0.6), _row(2, 0.4)])
    assert [t.name for t in fig.data] == ["#1 a · m ★", "#2 a · m"]
    bar = fig.data[0]
    assert list(bar.x)[0] == "variables" and list(bar.y)[1] == 0  # an undefined F1 draws as 0, no error bar
    assert list(bar.error_y.array)[0] == pytest.approx(0.2) and list(bar.error_y.arrayminus)[0] == pytest.approx(0.1)
    assert list(bar.error_y.array)[1] == 0
    assert f1_figure([]).layout.title.text == "No scored runs on this release yet"


def test_weighted_figure_marks_stale_runs_red_and_puts_the_best_on_top():
    fig = weighted_figure([_row(1, 0.6), _row(2, 0.4, stale="changed")])
    assert list(fig.data[0].y) == ["#2 a · m", "#1 a · m ★"]  # plotly draws the first at the bottom
    assert list(fig.data[0].marker.color) == ["#E45756", "#4C78A8"] and list(fig.data[0].text) == [" stale", ""]


def test_difference_and_confusion_figures():
    fig = difference_figure([{"decision_type": "cvar", "diff": 0.2, "ci_low": 0.1, "ci_high": 0.4}])
    assert list(fig.data[0].x) == [0.2] and list(fig.data[0].y) == ["variables"]
    heat = confusion_figure([[5, 1], [1, 3]], ["match", "no match"], "t")
    assert [list(r) for r in heat.data[0].z] == [[5, 1], [1, 3]] and list(heat.data[0].x)[0] == "judge: match"


def test_difference_table_shows_a_dash_for_undefined_figures():
    from annotate_app.components.score_charts import difference_table

    table = difference_table([
        {"decision_type": "cvar", "f1_a": 0.98431, "f1_b": 0.5, "diff": 0.48431, "ci_low": 0.2, "ci_high": 0.7,
         "paired": True},
        {"decision_type": "graph", "f1_a": None, "f1_b": None, "diff": None, "ci_low": None, "ci_high": float("nan"),
         "paired": True}])
    assert table.iloc[0][["decision type", "F1 A", "A − B"]].tolist() == ["variables", "0.984", "0.484"]
    assert table.iloc[1][["F1 A", "F1 B", "A − B", "95 % low", "95 % high"]].tolist() == ["—"] * 5
    assert "None" not in table.to_string() and "nan" not in table.to_string()
