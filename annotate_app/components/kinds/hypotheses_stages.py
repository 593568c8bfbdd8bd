"""The hypotheses kind's stage pages (an imported DiscoveryBench folder): stage 1 proposes a hypothesis per query,
stage 2 reviews peers' and LLM-proposed ones, stage 3 decides each query's gold hypothesis."""

from __future__ import annotations

from typing import Any

import streamlit as st

from annotate_app import context
from annotate_app.components.hypothesis_gold import render_gold_board
from annotate_app.components.hypothesis_review import render_hypothesis_queue
from annotate_app.components.hypothesis_stage1 import render_hypothesis_stage1
from annotate_app.components.llm_panel import HYPOTHESIS_JOB
from annotate_app.components.meeting_view import render_rule_picker
from annotate_app.components.review_tabs import render_review_tabs
from curation.models import Dataset, User
from curation.services.discoverybench_import import list_hypothesis_tasks
from curation.services.hypotheses import gold_board, hypothesis_review, is_hypothesis_dataset, own_hypotheses

DEFAULT = False
MEETING_NOTE = " The gold hypotheses are decided in the next tab."


def claims(session: Any, dataset: Dataset) -> bool:
    """A DiscoveryBench folder: hypotheses per query, not BLADE decisions."""
    return is_hypothesis_dataset(session=session, dataset=dataset)


def annotate(user: User, dataset: Dataset) -> None:
    dataset_id = dataset.id or 0
    tasks = context.attempt(lambda s: list_hypothesis_tasks(session=s, actor=user, dataset_id=dataset_id))
    mine = context.attempt(lambda s: own_hypotheses(session=s, actor=user, dataset_id=dataset_id))
    if tasks is not None and mine is not None:
        render_hypothesis_stage1(user, dataset, tasks, mine)


def review(user: User, dataset: Dataset, stage: str) -> None:
    hyp = context.attempt(lambda s: hypothesis_review(session=s, actor=user, dataset_id=dataset.id or 0))
    if hyp is None:
        st.stop()
    render_review_tabs(user, dataset, hyp, lambda: render_hypothesis_queue(user, hyp), llm_job=HYPOTHESIS_JOB)


def _gold(user: User, dataset_id: int) -> None:
    board = context.attempt(lambda s: gold_board(session=s, actor=user, dataset_id=dataset_id))
    if board is not None:
        render_gold_board(user, board)


def consensus_tabs(user: User, dataset: Dataset) -> list[tuple[str, Any]]:
    dataset_id = dataset.id or 0
    return [("Gold hypotheses", lambda: _gold(user, dataset_id)),
            ("Ground truth", lambda: render_rule_picker(user, dataset_id))]
