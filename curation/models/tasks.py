"""Task tables of the kinds beyond BLADE analyses: DiscoveryBench hypothesis tasks and the analysts' proposals.

Hypothesis tasks keep a table of their own rather than the generic curated tables
(:mod:`curation.models.curated`): their services and pages filter, sort and count by many of their fields
(split, question type, difficulty, gold source, status), so these are real columns. Programmatic tasks and their
candidate checks and artifacts are curated items (migration 0032)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from curation.models.columns import json_field, new_spec_id, utc_now_field

__all__ = [
    "HypothesisTaskStatus",
    "HypothesisTask",
    "HypothesisProposal",
]


class HypothesisTaskStatus(StrEnum):
    NEEDS_CURATION = "needs_curation"  # no gold hypothesis shipped: experts write one (stages 1-3)
    GOLD = "gold"  # a gold hypothesis came with the import (metadata or answer key), or stage 3 decided one


class HypothesisTask(SQLModel, table=True):
    """One DiscoveryBench query over a registered dataset (folder): the question, what the folder says about it,
    and its gold hypothesis (natural-language text, workflow, and the decomposition curation fills in)."""

    __tablename__ = "hypothesis_task"
    __table_args__ = (UniqueConstraint("dataset_id", "metadata_k", "qid"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    key: str = Field(unique=True, index=True, description="real/test/<folder>/metadata_<k>/q<qid>")
    source: str = Field(max_length=8, description="real or synth")
    split: str = Field(max_length=16, description="train, dev or test")
    metadata_k: int = Field(description="k of metadata_<k>.json (the answer keys' metadataid)")
    qid: int
    query_field: str = Field(default="", description="JSON path of the query: queries[0][1]")
    question: str
    question_type: str | None = Field(default=None, max_length=16, description="normalised: context, variables...")
    question_type_raw: str | None = Field(default=None, description="as written (relationhsip)")
    difficulty: int | None = None
    domain: str | None = None
    domain_knowledge: str | None = None
    workflow_tags: str | None = None
    data_files: list[str] = json_field()
    gold_hypothesis: str | None = None
    gold_source: str | None = Field(default=None, max_length=16, description="metadata or answer_key")
    gold_workflow: str | None = None
    gold_context: str | None = None
    gold_variables: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    gold_relationship: str | None = None
    true_hypothesis_expr: str | None = None
    target_col: str | None = None
    relevant_cols: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    status: str = Field(default=HypothesisTaskStatus.NEEDS_CURATION.value, max_length=16, index=True)
    created_at: datetime = utc_now_field()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    gold_provenance: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True),
        description="gold_source consensus: how stage 3 decided it (rule, tally, meeting, candidate, by, at)")


class HypothesisProposal(SQLModel, table=True):
    """One analyst's stage-1 hypothesis for one DiscoveryBench query, written blind, decomposed into context,
    variables (each a data-dictionary column or a derived column with how it is derived) and relationship, with
    a workflow and optional supporting code whose sandbox run is kept (``check``).

    It belongs to the analyst's :class:`Analysis` of the dataset: submitting that analysis submits every
    hypothesis in it at once, and the stage-1 blinding rule that holds for BLADE decisions holds for these."""

    __tablename__ = "hypothesis_proposal"
    __table_args__ = (UniqueConstraint("analysis_id", "task_id"),)

    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    task_id: int = Field(foreign_key="hypothesis_task.id", index=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    hypothesis: str
    context: str = ""
    variables: list[dict[str, Any]] = json_field()
    relationship: str = ""
    workflow: str = ""
    code: str = ""
    check: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = utc_now_field()
    updated_at: datetime = utc_now_field()
