"""Scored runs: the immutable record of a scoring, its fanned-out parts, evaluators' overrides and the
judge-validation labels."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from curation.models.columns import UTCDateTime, json_field, utc_now_field
from curation.models.jobs import RunStatus

__all__ = ["ScoringRun", "ScoringRunPart", "ScoreOverride", "ReproducibilityOverride", "JudgeLabel"]


class ScoringRun(SQLModel, table=True):
    """One agent run scored against one release: an immutable record of what was scored, how and by whom.

    The provenance columns (submission, release, ground-truth hashes, evaluator version, judge, mode, k) are
    written once at registration and never changed; only the lifecycle columns (status, progress, timings,
    message, result) move forward, and ``official`` is a curator's flag. The scores a human override changes
    are kept apart (``scores_effective``) from those the engine computed (``scores``).
    """

    __tablename__ = "scoring_run"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=16, description="the task kind of its submission (a name in evaluation.tasks.KINDS)")
    agent: str = Field(max_length=128, index=True)
    model_name: str = Field(default="", max_length=128)
    release_version: str = Field(max_length=32, index=True)
    ground_truth_hash: str = Field(max_length=64)
    dataset_hashes: dict[str, Any] = json_field(dict)
    submission_sha256: str = Field(max_length=64)
    submission_files: list[dict[str, Any]] = json_field()
    evaluator_version: str = Field(max_length=32)
    judge: dict[str, Any] = json_field(dict)
    transform_matcher: dict[str, Any] = json_field(dict)
    mode: str = Field(default="default", max_length=16)
    k: int = 10
    source: str = Field(default="web", max_length=8, description="web | cli")
    rescore_of_id: int | None = Field(default=None, foreign_key="scoring_run.id")
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = utc_now_field()
    status: str = Field(default=RunStatus.QUEUED.value, max_length=16, index=True)
    progress_done: int = 0
    progress_total: int = 0
    stage: str = Field(default="", max_length=256)
    message: str = ""
    cancel_requested: bool = False
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    executor: str = Field(default="", max_length=256,
                          description="host/pid/start of the process scoring it (curation.services.run_lifecycle)")
    attempts: int = Field(default=0, description="how many times a scorer claimed it (more than 1: retried)")
    job_id: int | None = Field(default=None, description="its procrastinate job, when a worker scores it")
    result_path: str | None = Field(default=None, max_length=512,
                                    description="the result file's name (runs scored before the artifact store: "
                                    "its path under the data dir's runs/ folder)")
    release_sha256: str | None = Field(default=None, max_length=64,
                                       description="SHA-256 of the release's MANIFEST: its address in the "
                                       "artifact store")
    result_sha256: str | None = Field(default=None, max_length=64,
                                      description="SHA-256 of the result file: its address in the artifact store")
    scores: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    scores_effective: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    official: bool = False
    official_by_id: int | None = Field(default=None, foreign_key="user.id")
    official_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    agent_run_id: int | None = Field(default=None, index=True,
                                     description="the agent run whose generated submission this is")


class ScoringRunPart(SQLModel, table=True):
    """One part of a fanned-out run (one dataset's file): scored by whichever worker claims it, its result kept
    here until the last part is in and the run's result is combined from all of them, in the files' order.

    A part is claimed by one conditional UPDATE (queued -> running, with the claimer's ``executor``), and its
    result is accepted only from the process holding it, once (``done``): a part retried after its worker died is
    scored again from its start, and never counted twice."""

    __tablename__ = "scoring_run_part"
    __table_args__ = (UniqueConstraint("run_id", "idx"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="scoring_run.id", index=True)
    idx: int
    label: str = Field(default="", max_length=128)
    status: str = Field(default=RunStatus.QUEUED.value, max_length=16)
    executor: str = Field(default="", max_length=256)
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    attempts: int = 0
    progress_done: int = 0
    progress_total: int = 0
    result: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class ScoreOverride(SQLModel, table=True):
    """An evaluator's correction of one automatic match, with the original value, who, why and when.

    One override per item: a second evaluator correcting the same item is refused (the unique constraint makes
    that hold under concurrency too), never silently overwritten.
    """

    __tablename__ = "score_override"
    __table_args__ = (UniqueConstraint("run_id", "dataset", "analysis_key", "kind", "item"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="scoring_run.id", index=True)
    dataset: str = Field(max_length=128)
    analysis_key: str = Field(max_length=256, description="the analysis, or a hypothesis task's key")
    kind: str = Field(max_length=16, description="variable | model | transform; hypotheses: context | variables | "
                      "relationship")
    item: str = Field(max_length=256, description="variable: '<gt_id>|<agent_index>'; model: the GT model id; "
                      "transform: 'value|<unit id>' or 'graph|<unit id>'; a hypothesis facet: the pair 'P0|G0'")
    label: str = Field(default="", description="what the item is, in words, for the record")
    original: bool = Field(description="whether the engine counted it as a match")
    value: bool = Field(description="whether it counts as a match after the override")
    reason: str
    author_id: int = Field(foreign_key="user.id")
    created_at: datetime = utc_now_field()
    detail: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True),
                                          description="a hypothesis facet: {'value': {...}, 'original': {...}}")


class ReproducibilityOverride(SQLModel, table=True):
    """An evaluator's correction of one item's reproducibility outcome (a reproducibility run), with the engine's
    outcome, who, why and when. One per item: a second override of the same item is refused, not overwritten."""

    __tablename__ = "reproducibility_override"
    __table_args__ = (UniqueConstraint("run_id", "item"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="scoring_run.id", index=True)
    item: str = Field(max_length=256, description="the item's key in the run's result")
    original: str = Field(max_length=32, description="the engine's outcome")
    value: str = Field(max_length=32, description="the outcome after the override")
    reason: str
    author_id: int = Field(foreign_key="user.id")
    created_at: datetime = utc_now_field()


class JudgeLabel(SQLModel, table=True):
    """One judge decision sampled for expert labelling (the judge validation queue) and, once labelled, the
    expert's answer: does this pair / model row really match?"""

    __tablename__ = "judge_label"
    __table_args__ = (UniqueConstraint("run_id", "dataset", "analysis_key", "kind", "item"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="scoring_run.id", index=True)
    dataset: str = Field(max_length=128)
    analysis_key: str = Field(max_length=256)
    kind: str = Field(max_length=16, description="variable | model; hypotheses: context | variables | relationship")
    item: str = Field(max_length=256)
    judge: str = Field(max_length=32)
    ground_truth: str = ""
    agent: str = ""
    judge_rationale: str = ""
    judge_value: bool
    expert_value: bool | None = None
    judge_label: str | None = Field(default=None, max_length=128, description="a categorical decision (hypothesis "
                                    "facets: match / no match, 'k of n gold, m predicted', A / B / C)")
    expert_label: str | None = Field(default=None, max_length=128)
    reason: str | None = None
    expert_id: int | None = Field(default=None, foreign_key="user.id")
    labelled_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = utc_now_field()

