"""The MCQ kind's page component: a run's accuracy beside chance, per dataset and per question kind, and every
question with the answer given, how it was read and whether it was right."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from annotate_app import context
from curation.models import ScoringRun, User
from curation.services.scoring import stored_result
from evaluation.mcq_scoring import parse_mcq_report

_STATUS = {"correct": "✅ correct", "wrong": "❌ wrong", "unparseable": "⚠️ unparseable", "unanswered": "— unanswered"}


def drilldown(run: ScoringRun, user: User, cfg: Any) -> None:
    """Accuracy and chance per group, then the questions (filter by dataset and status)."""
    data = context.attempt(lambda _s: stored_result(run, cfg.artifact_store()))
    if data is None:
        return
    report = parse_mcq_report(data, label=f"the MCQ report of run {run.id}")
    overall = next((g for g in report.groups if g.dataset == "all" and g.kind == "all"), None)
    row = st.container(horizontal=True, gap="medium")
    if overall is not None:
        row.metric("Accuracy", f"{overall.accuracy:.3f}", width="content",
                   help=f"{overall.correct} of {overall.questions} questions right")
        row.metric("Chance", f"{overall.chance:.3f}", width="content",
                   help="the accuracy of answering at random (1 / options, averaged over the questions)")
        row.metric("Unparseable", overall.unparseable, width="content",
                   help="answers without a valid letter: never guessed, counted wrong")
    groups = pd.DataFrame([{"dataset": g.dataset, "question kind": g.kind, "questions": g.questions,
                            "correct": g.correct, "accuracy": g.accuracy, "chance": g.chance}
                           for g in report.groups if not (g.dataset == "all" and g.kind == "all")])
    if not groups.empty:
        st.subheader("By dataset and question kind")
        st.dataframe(groups, hide_index=True, key="details.mcq.groups", column_config={
            "accuracy": st.column_config.NumberColumn(format="%.3f"),
            "chance": st.column_config.NumberColumn(format="%.3f")})
    st.subheader("Questions")
    c1, c2 = st.columns(2)
    datasets = sorted({i.dataset for i in report.items})
    chosen = c1.multiselect("Dataset", datasets, key="details.mcq.datasets", placeholder="every dataset")
    statuses = c2.multiselect("Outcome", list(_STATUS), format_func=_STATUS.get, key="details.mcq.status",
                              placeholder="every outcome")
    items = [i for i in report.items if (not chosen or i.dataset in chosen) and (not statuses or i.status in statuses)]
    st.dataframe(pd.DataFrame([{"question": i.id, "dataset": i.dataset, "kind": i.kind, "type": i.mc_type,
                                "answer given": i.answer, "read as": i.parsed, "correct letter": i.correct,
                                "outcome": _STATUS.get(i.status, i.status), "why": i.reason} for i in items]),
                 hide_index=True, key="details.mcq.items")
    if report.unknown_ids:
        st.warning(f"{len(report.unknown_ids)} answered id(s) are not questions of release {report.release_version}: "
                   f"{', '.join(report.unknown_ids[:10])}.")
