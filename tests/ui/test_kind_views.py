"""The leaderboard table is drawn from the kinds' column specs (data), so a kind's columns need no page code."""

from __future__ import annotations

from annotate_app.components.kinds import column_config, leaderboard_frame, view_module
from evaluation.tasks import Column, task_kind


def _row(**kw):
    return {"run": 7, "release": "1.0.0", "agent": "a", "model": "m", "official": False, "overrides": 2,
            "judge": "offline", "mode": "default", "stale": "", **kw}


def test_columns_come_from_the_kinds_specs():
    columns = [*task_kind("analyses").leaderboard.columns, *task_kind("mcq").leaderboard.columns,
               Column("toy_words", "toy words", "count")]
    row = _row(**{"weighted": 0.5, "weighted.low": 0.25, "weighted.high": 0.75, "f1.cvar": None,
                  "precision.cvar": 0.4, "mcq_accuracy": 0.2, "toy_words": 3})
    frame = leaderboard_frame([row], columns)
    assert list(frame.columns[:4]) == ["run", "release", "official", "overrides"]
    assert list(frame.columns[-3:]) == ["judge", "mode", "stale"]
    first = frame.iloc[0]
    assert first["weighted"] == "0.50 [0.25, 0.75]" and first["F1 variables"] == "undefined"
    assert first["precision variables"] == 0.4 and first["MCQ accuracy"] == 0.2 and first["toy words"] == 3
    assert first["overrides"] == "✎ 2" and first["run"].startswith("#7 a")
    assert set(column_config(columns)) == {c.label for c in columns if c.format == "number"}


def test_each_kind_view_names_a_component_that_draws_its_drilldown():
    for name in ("analyses", "mcq", "reproducibility"):
        view = task_kind(name).view
        if view is not None:
            assert callable(view_module(view).drilldown)
    assert task_kind("analyses").view == "analyses"
    assert task_kind("reproducibility").view == "reproducibility"
