"""The StatQA kind's page component: its leaderboard notes and chart (accuracy per task type), and its run
drill-down: the run's figures with their CIs, the breakdowns by task type, difficulty and dataset, and per
question the question, the model's reply, what StatQA read from it, the verdict and, for a reader who may see it,
the gold. The questions of a dataset whose ground truth the reader is blind to are left out, with the reason."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from annotate_app import context
from annotate_app.text import md
from curation.models import ScoringRun, User
from curation.services.blinding import withheld_ground_truth
from curation.services.run_records import get_run
from curation.services.scoring import stored_result
from evaluation.tasks.statqa import ItemResult, StatQAResult, read_result

__all__ = ["breakdown_table", "drilldown", "gold_list", "headline", "leaderboard_charts", "leaderboard_notes", "questions_table",
           "task_figure"]

_STATUS = {"scored": "scored", "invalid_answer": "invalid answer", "gold_unreadable": "gold unreadable upstream",
           "unanswered": "unanswered"}


def _f(x: Any) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def _ci(est: Mapping[str, Any]) -> str:
    return "—" if est.get("ci_low") is None else f"[{est['ci_low']:.2f}, {est['ci_high']:.2f}]"


def headline(scores: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The run's figures as (label, value): each accuracy and its 95 % CI, then the counts."""
    o = scores.get("overall", {})
    cells = []
    for label, key in (("Accuracy (selection overall)", "accuracy"), ("Methods accuracy", "methods"),
                       ("Columns accuracy", "columns")):
        est = o.get(key) or {}
        cells += [(label, _f(est.get("point"))), (f"{label.split(' (')[0]}: 95 % CI", _ci(est))]
    return [*cells, ("Questions", str(o.get("questions", 0))), ("Invalid answers", str(o.get("invalid", 0))),
            ("Unanswered", str(o.get("unanswered", 0))), ("Gold unreadable upstream", str(o.get("gold_unreadable", 0)))]


def breakdown_table(groups: Mapping[str, Any], label: str) -> pd.DataFrame:
    """One row per group: its accuracies (with the CI of the overall one) and its counts."""
    return pd.DataFrame([{label: name, "accuracy": (g.get("accuracy") or {}).get("point"),
                          "95 % CI": _ci(g.get("accuracy") or {}), "methods": (g.get("methods") or {}).get("point"),
                          "columns": (g.get("columns") or {}).get("point"), "questions": g.get("questions", 0),
                          "invalid": g.get("invalid", 0), "unanswered": g.get("unanswered", 0)}
                         for name, g in groups.items()],
                        columns=[label, "accuracy", "95 % CI", "methods", "columns", "questions", "invalid",
                                 "unanswered"])


def _mark(score: int, status: str) -> str:
    if status == "unanswered":
        return "·"
    return "✔" if score else "✘"


def questions_table(items: Sequence[ItemResult]) -> pd.DataFrame:
    """One row per question: its id, dataset, type, difficulty, status and the verdict on each target."""
    return pd.DataFrame([{"id": i.id, "dataset": i.table, "task": i.task, "difficulty": i.difficulty,
                          "status": _STATUS.get(i.status, i.status), "overall": _mark(i.overall, i.status),
                          "columns": _mark(i.columns_score, i.status), "methods": _mark(i.methods_score, i.status)}
                         for i in items],
                        columns=["id", "dataset", "task", "difficulty", "status", "overall", "columns", "methods"])


def task_figure(scores: Mapping[str, Any]) -> go.Figure:
    """Accuracy per task type with its 95 % interval (a bar per type)."""
    tasks = scores.get("tasks", {})
    names = list(tasks)
    ests = [tasks[n].get("accuracy") or {} for n in names]
    points = [e.get("point") or 0.0 for e in ests]
    low = [p - (e["ci_low"] if e.get("ci_low") is not None else p) for p, e in zip(points, ests, strict=True)]
    high = [(e["ci_high"] if e.get("ci_high") is not None else p) - p for p, e in zip(points, ests, strict=True)]
    fig = go.Figure(go.Bar(x=points, y=names, orientation="h",
                           error_x={"type": "data", "array": high, "arrayminus": low}))
    fig.update_layout(title="Accuracy per task type (95 % CI over questions)", xaxis={"range": [0, 1]},
                      height=120 + 40 * len(names), margin={"l": 10, "r": 10, "t": 40, "b": 10})
    return fig


def leaderboard_notes(rows: Sequence[dict[str, Any]]) -> None:
    invalid = [r for r in rows if r.get("invalid")]
    if invalid:
        st.info(f"{len(invalid)} of these runs have answers StatQA cannot read (no JSON object where it looks, or the "
                "wrong shape), counted 0 as StatQA counts them; Run details say which and why.")


def leaderboard_charts(rows: Sequence[dict[str, Any]], container: Any) -> None:
    fig = go.Figure(go.Bar(x=[r.get("accuracy") or 0 for r in rows],
                           y=[f"#{r['run']} {r['agent']}" for r in rows], orientation="h"))
    fig.update_layout(title="StatQA accuracy (selection overall)", xaxis={"range": [0, 1]},
                      height=120 + 30 * len(rows), margin={"l": 10, "r": 10, "t": 40, "b": 10})
    container.plotly_chart(fig, key="leaderboard.statqa")


def _load(session: Any, user: User, run_id: int, artifacts: Any) -> tuple[StatQAResult, list[str], str]:
    run = get_run(session=session, actor=user, run_id=run_id)  # refuses a role that may not see runs
    result = read_result(stored_result(run, artifacts))
    blind, why = withheld_ground_truth(session=session, actor=user, release_version=run.release_version,
                                       names={i.dataset for i in result.items})
    return result, blind, why


def _question(item: ItemResult) -> None:
    st.markdown(f"**{item.table}** · {item.task} · {item.difficulty} · id {item.id}")
    st.write(item.question)
    if item.message:
        st.caption(item.message)
    st.caption("The model's reply")
    st.code(item.answer if item.answer is not None else "(no answer)", language=None, wrap_lines=True)
    if item.extracted is not None:
        st.caption("What StatQA read from it")
        st.code(item.extracted, language="json", wrap_lines=True)
    cols = st.columns(2)
    for col, target, counts, score_ in ((cols[0], "Columns", item.columns, item.columns_score),
                                         (cols[1], "Methods", item.methods, item.methods_score)):
        verdict = ("not compared" if item.status == "unanswered" else
                   "Invalid Answer (0)" if counts is None else
                   f"{'✔ exact' if score_ else '✘ not exact'}: {counts.correct} correct, {counts.wrong} wrong, "
                   f"{counts.missed} missed")
        col.markdown(f"**{target}**: {verdict}")
    st.caption("Gold (StatQA's ground truth)")
    gold = st.columns(2)
    for col, target, names in ((gold[0], "Columns", item.gold_columns), (gold[1], "Methods", item.gold_methods)):
        col.markdown(gold_list(target, names))


def gold_list(target: str, names: Sequence[str]) -> str:
    """The gold columns or methods as a person reads them: a heading and one name a line (StatQA compares them
    as sets, so their order says nothing)."""
    if not names:
        return f"**{target}**: none"
    return f"**{target}**\n" + "\n".join(f"- {md(n)}" for n in names)


def drilldown(run: ScoringRun, user: User, cfg: Any) -> None:
    """Run → question for one succeeded StatQA run."""
    run_id = run.id or 0
    loaded = context.attempt(lambda s: _load(s, user, run_id, cfg.artifact_store()))
    if loaded is None:
        return
    result, blind, why = loaded
    if blind:
        st.info(md(why + " Their questions are left out of these details."), icon="🙈")
    items = [i for i in result.items if i.dataset not in blind]
    scores = result.scores
    row = st.container(horizontal=True, gap="medium")
    for label, value in headline(scores):  # no delta: an interval drawn as one reads as a green improvement
        row.metric(label, value, width="content")
    st.caption(f"Scored by {result.rules} · release {result.release_version}" + "".join(f" · {n}" for n in result.notes))
    st.plotly_chart(task_figure(scores), key="details.statqa.types")
    numbers = {c: st.column_config.NumberColumn(format="%.2f") for c in ("accuracy", "methods", "columns")}
    by_task, by_level, by_dataset = st.tabs(["By task type", "By difficulty", "By dataset"])
    by_task.dataframe(breakdown_table(scores.get("tasks", {}), "task type"), hide_index=True, width="stretch",
                      key="statqa.tasks", column_config=numbers)
    by_level.dataframe(breakdown_table(scores.get("difficulties", {}), "difficulty"), hide_index=True,
                       width="stretch", key="statqa.levels", column_config=numbers)
    by_dataset.dataframe(breakdown_table({k: v for k, v in scores.get("datasets", {}).items() if k not in blind},
                                         "dataset"), hide_index=True, width="stretch", key="statqa.datasets",
                         column_config=numbers)
    if not items:
        return
    table = questions_table(items)
    statuses = st.multiselect("Status", sorted(set(table["status"])), default=sorted(set(table["status"])),
                              key="statqa.status")
    shown = table[table["status"].isin(statuses)]
    st.dataframe(shown, hide_index=True, width="stretch", key="statqa.questions")
    ids = list(shown["id"]) or [items[0].id]
    pick = st.selectbox("Question", ids, key="statqa.question",
                        format_func=lambda i: next(f"{x.id} · {x.question[:90]}" for x in items if x.id == i))
    _question(next(i for i in items if i.id == pick))
