"""The QRData kind's page component: a run's accuracy with its interval, the breakdowns (question type, reasoning,
dataset), and per question the question, the gold (only where the reader may see that dataset's ground truth),
the answer, what was read from it and the verdict (withheld with the gold: a verdict tells it); and what it adds to the leaderboard (notes and a chart).

The tables are built by pure functions (``*_table``) so tests can read them; the Streamlit parts are thin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from annotate_app import context
from annotate_app.text import md, plural, stat_text
from curation.models import ScoringRun, User
from curation.services.blinding import withheld_ground_truth
from curation.services.scoring import get_run, stored_result
from evaluation.tasks.qrdata import QRDataItem, QRDataResult, read_result

__all__ = ["accuracy_text", "breakdown_table", "drilldown", "leaderboard_charts", "leaderboard_notes",
           "questions_table", "viewable"]

VERDICT = {"correct": "✔ correct", "wrong": "✘ wrong", "invalid_answer": "⚠ invalid answer",
           "unanswered": "– unanswered"}
WITHHELD = "(withheld)"


def human(name: str) -> str:
    """A question type or reasoning as a person reads it (``multiple_choice`` → ``multiple choice``)."""
    return name.replace("_", " ")


def accuracy_text(group: Mapping[str, Any]) -> str:
    """``0.62 [0.45, 0.79]``: the accuracy with its 95 % interval (a dash where undefined)."""
    est = group.get("accuracy") or {}
    point = est.get("point")
    if point is None:
        return "—"
    lo, hi = est.get("ci_low"), est.get("ci_high")
    return f"{point:.2f}" + (f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else "")


def breakdown_table(groups: Mapping[str, Mapping[str, Any]], what: str) -> pd.DataFrame:
    """One row per group (question type, reasoning or dataset): accuracy with its CI and the counts."""
    return pd.DataFrame([{what: name, "accuracy (95 % CI)": accuracy_text(g), "questions": g.get("questions", 0),
                          "correct": g.get("correct", 0), "wrong": g.get("wrong", 0),
                          "invalid answers": g.get("invalid_answer", 0), "unanswered": g.get("unanswered", 0)}
                         for name, g in groups.items()],
                        columns=[what, "accuracy (95 % CI)", "questions", "correct", "wrong", "invalid answers",
                                 "unanswered"])


def _verdict(i: QRDataItem, blind: set[str]) -> str:
    # a verdict tells the gold (a correct choice is the gold): withheld with it, except where nothing was read
    if i.dataset in blind and i.status in ("correct", "wrong"):
        return WITHHELD
    return VERDICT[i.status]


def questions_table(items: Sequence[QRDataItem], blind: set[str]) -> pd.DataFrame:
    """One row per question: its dataset and type, the gold, the answer, what was read from it and the verdict
    (gold and verdict withheld on ``blind`` datasets)."""
    return pd.DataFrame([{"id": i.id, "dataset": i.dataset, "type": human(i.question_type),
                          "reasoning": human(i.reasoning),
                          "gold": WITHHELD if i.dataset in blind else (i.gold or ""), "answer": i.answer or "",
                          "read": i.read or "", "verdict": _verdict(i, blind)} for i in items],
                        columns=["id", "dataset", "type", "reasoning", "gold", "answer", "read", "verdict"])


def viewable(result: QRDataResult, blind: set[str]) -> QRDataResult:
    """The result without the gold of the datasets in ``blind``, nor the sentences that say how an answer compared
    with it (an unreadable answer's sentence stays: it does not depend on the gold)."""
    def hide(i: QRDataItem) -> QRDataItem:
        if i.dataset not in blind:
            return i
        shown = "The verdict is withheld with the gold." if i.status in ("correct", "wrong") else i.sentence
        return i.model_copy(update={"gold": None, "sentence": shown})

    return result.model_copy(update={"items": [hide(i) for i in result.items]})


def leaderboard_notes(rows: Sequence[dict[str, Any]]) -> None:
    invalid = [r for r in rows if r.get("invalid_answer")]
    if invalid:
        st.info(f"{plural(len(invalid), 'run')} of these ha{'s' if len(invalid) == 1 else 've'} answers upstream's "
                "rules cannot read (no number, or no choice first): they count as wrong, as upstream counts them. "
                "Run details show each one and why.")


def leaderboard_charts(rows: Sequence[dict[str, Any]], container: Any) -> None:
    """Accuracy per run with its 95 % interval."""
    points = [r.get("accuracy") or 0.0 for r in rows]
    hi = [0.0 if r.get("accuracy.high") is None else r["accuracy.high"] - (r.get("accuracy") or 0.0) for r in rows]
    lo = [0.0 if r.get("accuracy.low") is None else (r.get("accuracy") or 0.0) - r["accuracy.low"] for r in rows]
    fig = go.Figure(go.Bar(x=points, y=[f"#{r['run']} {r['agent']}" for r in rows], orientation="h",
                           error_x={"type": "data", "array": hi, "arrayminus": lo}))
    fig.update_layout(title="QRData accuracy (95 % bootstrap CI)", xaxis={"range": [0, 1]},
                      height=120 + 30 * len(rows), margin={"l": 10, "r": 10, "t": 40, "b": 10})
    container.plotly_chart(fig, key="leaderboard.qrdata")


def _load(run_id: int, user: User, cfg: Any) -> tuple[QRDataResult, set[str], str] | None:
    def action(s: Any) -> tuple[QRDataResult, set[str], str]:
        run = get_run(session=s, actor=user, run_id=run_id)  # evaluators, curators and admins only
        result = read_result(stored_result(run, cfg.artifact_store()))
        names = sorted({i.dataset for i in result.items})
        blind, why = withheld_ground_truth(session=s, actor=user, release_version=run.release_version, names=names)
        return viewable(result, set(blind)), set(blind), why

    return context.attempt(action)


def drilldown(run: ScoringRun, user: User, cfg: Any) -> None:
    """Run → question for one succeeded QRData run."""
    loaded = _load(run.id or 0, user, cfg)
    if loaded is None:
        return
    result, blind, why = loaded
    if why:
        st.info(md(why + " Their gold answers are not shown."), icon="🙈")
    s = result.scores.get("qrdata", {})
    row = st.container(horizontal=True, gap="medium")
    row.metric("Accuracy", stat_text((s.get("accuracy") or {}).get("point"), 2), width="content",
               help="correct / questions by upstream's rules (first number within 3 %, choice by prefix)")
    est = s.get("accuracy") or {}
    if est.get("ci_low") is not None:
        row.metric("95 % CI", f"[{est['ci_low']:.2f}, {est['ci_high']:.2f}]", width="content")
    for label, key in (("Questions", "questions"), ("Correct", "correct"), ("Invalid answers", "invalid_answer"),
                       ("Unanswered", "unanswered")):
        row.metric(label, s.get(key, 0), width="content")
    st.caption(md(f"Release {result.release_version} · answers from {result.source.get('file', 'the submission')}"))
    if result.unknown_ids:
        st.caption(md(f"Answered ids the release does not hold (left out): {', '.join(result.unknown_ids[:20])}"))
    by_type, by_reasoning, by_dataset = st.tabs(["By question type", "By reasoning", "By dataset"])
    by_type.dataframe(breakdown_table({human(k): v for k, v in s.get("question_types", {}).items()},
                                      "question type"), hide_index=True, key="qrdata.types")
    by_reasoning.dataframe(breakdown_table({human(k): v for k, v in s.get("reasoning", {}).items()}, "reasoning"),
                           hide_index=True, key="qrdata.reasoning")
    # a blind dataset's own figures would tell its verdicts (one question: its verdict): left out
    by_dataset.dataframe(breakdown_table({k: v for k, v in s.get("datasets", {}).items() if k not in blind},
                                         "dataset"), hide_index=True, key="qrdata.datasets")
    if not result.items:
        return
    table = questions_table(result.items, blind)
    verdicts = sorted(set(table["verdict"]))
    chosen = st.multiselect("Verdict", verdicts, default=verdicts, key="qrdata.verdict")
    table = table[table["verdict"].isin(chosen)]
    st.dataframe(table, hide_index=True, width="stretch", key="qrdata.questions")
    if table.empty:
        return
    qid = st.selectbox("Question", list(table["id"]), key="qrdata.question",
                       format_func=lambda i: f"{i} · {next(x.dataset for x in result.items if x.id == i)}")
    item = next(i for i in result.items if i.id == qid)
    st.subheader(f"Question {item.id} · {item.dataset} · {human(item.question_type)}")
    st.markdown(f"**Question:** {md(item.question or '(not recorded)')}")
    st.markdown(f"**Gold:** {md(WITHHELD if item.dataset in blind else item.gold or '—')}")
    st.markdown("**Answer:**")
    st.code(item.answer if item.answer is not None else "(no answer)", language=None, wrap_lines=True)
    banner = {"correct": st.success, "wrong": st.error, "invalid_answer": st.warning, "unanswered": st.info}
    if _verdict(item, blind) == WITHHELD:
        st.info(md(item.sentence), icon="🙈")
    else:
        banner[item.status](md(f"{VERDICT[item.status]}: {item.sentence}"))
