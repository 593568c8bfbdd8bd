"""The review page's two tabs, for every kind that curates in stages: the kind's queue of items to judge, and
live agreement (the same for every kind: it is computed over the votes, whatever they are about)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Protocol

import pandas as pd
import streamlit as st

from annotate_app import context
from annotate_app.components.agreement_charts import agreement_figure, agreement_table, split_frame
from annotate_app.components.llm_panel import render_llm_panel
from curation.models import Dataset, Role, Stage, User
from curation.services.agreement import agreement_report
from curation.services.stages import get_review_settings


class ReviewItems(Protocol):
    """What a kind's review queue offers the shared tabs: its stage and the items, each with its label."""

    stage: str
    items: Any  # a sequence of items with ``target_id`` and ``label``


def render_review_tabs(user: User, dataset: Dataset, queue: ReviewItems, render_queue: Callable[[], None], *,
                       llm_job: str | None = None) -> None:
    """Stage 2 of a dataset: a curator's LLM panel while the review is open (generating the kind's ``llm_job``),
    then the kind's queue (``render_queue``) and live agreement in two tabs. Only the open tab is computed: every
    vote reruns the page, and agreement need not be recomputed for it."""
    dataset_id = dataset.id or 0
    if user.role in (Role.CURATOR.value, Role.ADMIN.value) and queue.stage == Stage.REVIEW.value:
        render_llm_panel(user, dataset_id, dataset.name, *([llm_job] if llm_job else []))
    tabs = st.tabs(["Queue", "Agreement"], key="review.tab", on_change="rerun")
    with tabs[0]:
        if tabs[0].open is not False:
            render_queue()
    with tabs[1]:
        if tabs[1].open:
            render_agreement(user, dataset_id, {i.target_id: i.label for i in queue.items},
                             live=queue.stage == Stage.REVIEW.value)


AGREEMENT_REFRESH_S = 5


def render_agreement(user: User, dataset_id: int, labels: dict[str, str] | None = None, *, live: bool = True) -> None:
    """Agreement figures; ``live``: re-read every few seconds (only this part of the page), so votes cast by
    other analysts show up without a click."""
    if live:
        _live_agreement(user, dataset_id, labels)
    else:
        _agreement(user, dataset_id, labels, live=False)


@st.fragment(run_every=AGREEMENT_REFRESH_S)
def _live_agreement(user: User, dataset_id: int, labels: dict[str, str] | None) -> None:
    stage = context.attempt(lambda s: get_review_settings(session=s, dataset_id=dataset_id).stage)
    if stage != Stage.REVIEW.value:  # closed meanwhile: the whole page shows it read-only, and stops polling
        st.rerun(scope="app")
    _agreement(user, dataset_id, labels, live=True)


def _agreement(user: User, dataset_id: int, labels: dict[str, str] | None, *, live: bool) -> None:
    report = context.attempt(lambda s: agreement_report(session=s, actor=user, dataset_id=dataset_id))
    if report is not None:
        when = f"updated every {AGREEMENT_REFRESH_S} s as votes arrive" if live else "final: stage 2 is closed"
        st.caption(f"{report.voters} analyst(s) have voted · {when}.")
        if report.split:
            st.subheader("Split items")
            st.dataframe(split_frame([dataclasses.asdict(s) for s in report.split], labels or {}), hide_index=True, width="stretch")
        rows = pd.DataFrame([dataclasses.asdict(r) for r in report.rows],
                            columns=[f.name for f in dataclasses.fields(report.rows[0])] if report.rows else None)
        st.plotly_chart(agreement_figure(rows), width="stretch", key="review.agreement_chart")
        if not rows.empty:
            st.dataframe(agreement_table(rows), hide_index=True, width="stretch")
