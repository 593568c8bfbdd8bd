"""The programmatic kind's page component: its drill-down (run → task folder → check, with why each check failed
and the output files it read: tables as tables, images as images) and its leaderboard notes and chart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from annotate_app import context
from annotate_app.components.output_files import show_output_file
from curation.models import ScoringRun, User
from curation.services.programmatic import programmatic_run_details

__all__ = ["agenda_item", "checks_frame", "drilldown", "headline", "leaderboard_charts", "leaderboard_notes",
           "outcomes_frame", "task_type_figure"]

STATUS_ICON = {"true": "✅", "false": "❌"}


def task_type_figure(scores: Mapping[str, Any]) -> go.Figure:
    """Completion rate per task type with its 95 % interval (a bar per type)."""
    types = scores.get("task_types", {})
    names = list(types)
    points = [types[n].get("point") or 0.0 for n in names]
    low = [(types[n].get("point") or 0.0) - (types[n].get("ci_low") if types[n].get("ci_low") is not None
                                            else types[n].get("point") or 0.0) for n in names]
    high = [(types[n].get("ci_high") if types[n].get("ci_high") is not None else types[n].get("point") or 0.0)
            - (types[n].get("point") or 0.0) for n in names]
    fig = go.Figure(go.Bar(x=points, y=names, orientation="h",
                           error_x={"type": "data", "array": high, "arrayminus": low}))
    fig.update_layout(title="Completion rate per task type (95 % CI over tasks)", xaxis={"range": [0, 1]},
                      height=120 + 40 * len(names), margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def is_traceback(text: str) -> bool:
    """Is ``text`` a Python traceback (which names files of the server, and is not shown)?"""
    return "Traceback (most recent call last)" in text or 'File "/' in text


def outcomes_frame(outcomes: Sequence[Any]) -> pd.DataFrame:
    """One row per (task, run): its completion rate, whether it passed, how many checks errored."""
    return pd.DataFrame([{"task": o.task, "run": o.run, "CR": o.completion_rate,
                          "passed": "✅ yes" if o.passed else "❌ no",
                          "checks failed": sum(c.score == 1 for c in o.checks),
                          "checks errored": sum(c.score == 0 for c in o.checks)} for o in outcomes])


def checks_frame(checks: Sequence[Any]) -> pd.DataFrame:
    """One row per check: outcome, score, labels, and the sentence that says why."""
    return pd.DataFrame([{"": STATUS_ICON.get(c.status, "⚠️"), "score": c.score, "status": c.status,
                          "task type": c.task_type, "function": c.function, "metric": c.metric, "why": c.sentence}
                         for c in checks])


def leaderboard_notes(rows: Sequence[dict[str, Any]]) -> None:
    errored = [r for r in rows if r.get("check_errors")]
    if errored:
        st.info(f"{len(errored)} of these runs have check outcomes scored 0 as errors (a missing output file, a "
                "check that raised or returned something that is not a boolean); Run details say which and why.")


def leaderboard_charts(rows: Sequence[dict[str, Any]], container: Any) -> None:
    fig = go.Figure(go.Bar(x=[r.get("success_rate") or 0 for r in rows],
                           y=[f"#{r['run']} {r['agent']}" for r in rows], orientation="h"))
    fig.update_layout(title="Success rate (pass@1)", xaxis={"range": [0, 1]}, height=120 + 30 * len(rows),
                      margin={"l": 10, "r": 10, "t": 40, "b": 10})
    container.plotly_chart(fig, key="leaderboard.programmatic")


def headline(scores: dict[str, Any]) -> list[tuple[str, str]]:
    """The run's figures as (label, value): each rate, its 95 % CI as a figure of its own (where there is one),
    the counts."""
    cells = []
    for label, key in (("Success rate (pass@1)", "success_rate"), ("Completion rate", "completion_rate")):
        est = scores.get(key, {})
        point = est.get("point")
        cells.append((label, "undefined" if point is None else f"{point:.3f}"))
        if est.get("ci_low") is not None:
            cells.append((f"{label.split(' (')[0]}: 95 % CI", f"[{est['ci_low']:.2f}, {est['ci_high']:.2f}]"))
    return [*cells, ("Tasks", str(scores.get("tasks", 0))), ("Agent runs", str(scores.get("runs", 0))),
            ("Check errors", str(scores.get("errors", 0)))]


def drilldown(run: ScoringRun, user: User, cfg: Any) -> None:
    """Run → (task, run) → check, with the reason of each outcome and the output files."""
    details = context.attempt(lambda s: programmatic_run_details(session=s, actor=user, run_id=run.id or 0,
                                                                 artifacts=cfg.artifact_store()))
    if details is None:
        return
    result = details.result
    scores = result.scores.get("programmatic", {})
    row = st.container(horizontal=True, gap="medium")
    for label, value in headline(scores):  # no delta: an interval drawn as one reads as a green improvement
        row.metric(label, value, width="content")
    st.plotly_chart(task_type_figure(scores), key="details.programmatic.types")
    st.dataframe(outcomes_frame(result.outcomes), hide_index=True, key="details.programmatic.outcomes")
    pairs = [(o.run, o.task) for o in result.outcomes]
    choice = st.selectbox("Task folder", range(len(pairs)), key="details.programmatic.pair",
                          format_func=lambda i: f"{pairs[i][1]} · {pairs[i][0]}")
    outcome = result.outcomes[choice]
    st.subheader(f"{outcome.task} · {outcome.run}")
    if outcome.checks:
        st.dataframe(checks_frame(outcome.checks), hide_index=True, key="details.programmatic.checks")
    for c in (c for c in outcome.checks if c.score < 2):
        with st.expander(f"{STATUS_ICON.get(c.status, '⚠️')} {c.function} / {c.metric}: {c.status}", expanded=True):
            st.write(c.sentence)
            if c.detail and not is_traceback(c.detail):  # results scored before 1.1 kept the server's traceback
                st.caption(c.detail)
            if c.stdout:
                st.caption("What the check printed")
                st.code(c.stdout, language="text")
            if details.code.get(c.check_id):
                st.caption(f"The check's code (release {run.release_version})")
                st.code(details.code[c.check_id], language="python")
    files = details.outputs.get((outcome.run, outcome.task), {})
    st.subheader("Output files")
    if not files:
        st.info("The run has no output folder for this task.")
    notes = {str(f.get("path")): str(f["note"]) for f in outcome.files if f.get("note")}  # pickles: read or withheld
    for path, data in sorted(files.items()):
        with st.expander(f"📄 {path} ({len(data):,} bytes)", expanded=len(files) <= 3):
            if path in notes:
                st.caption(notes[path])
            show_output_file(path, data)


def agenda_item(item: Any, status_line: str) -> None:
    """A candidate check or artifact on a stage-3 meeting's agenda (the kind's ``agenda_view``)."""
    from annotate_app.components.programmatic_review import render_agenda_candidate

    render_agenda_candidate(item, status_line)
