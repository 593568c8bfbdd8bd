"""Agent runs: a model under test answering a release's tasks, and each task's run."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from curation.models.columns import UTCDateTime, json_field, utc_now_field
from curation.models.jobs import RunStatus

__all__ = ["AgentRun", "AgentTaskRun"]


class AgentRun(SQLModel, table=True):
    """A model under test answering a release's tasks with a strategy (:mod:`curation.services.agent_runs`):
    what was asked (release, kind, endpoint, strategy, runs per task, temperature, seed, the prompt templates'
    versions), its lifecycle (the :class:`BackgroundJob` running it carries the heartbeat), what it cost, the
    submissions it generated and the scoring runs they became."""

    __tablename__ = "agent_run"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=32, description="the task kind answered (analyses, hypotheses, mcq)")
    release_version: str = Field(max_length=32, index=True)
    agent: str = Field(max_length=128, description="the name it has on the leaderboard")
    model: str = Field(max_length=128)
    base_url: str = Field(max_length=512)
    strategy: str = Field(max_length=16)
    workflow: bool = False
    runs_per_task: int = 1
    temperature: float = 0.0
    seed: int = 0
    only: list[str] = json_field(list)
    settings: dict[str, Any] = json_field(dict)
    templates: dict[str, Any] = json_field(dict)
    prices: list[float] | None = Field(default=None, sa_column=Column(JSON, nullable=True),
                                       description="USD per million input and output tokens, as set at start")
    job_id: int | None = Field(default=None, description="the background job running it (the latest)")
    status: str = Field(default=RunStatus.QUEUED.value, max_length=16, index=True)
    message: str = ""
    tasks_total: int = 0
    tasks_done: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    cost: float | None = None
    submissions: list[dict[str, Any]] = json_field(list)
    scoring_run_ids: list[int] = json_field(list)
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = utc_now_field()
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class AgentTaskRun(SQLModel, table=True):
    """One run of one task of an agent run: its status and sentence, the validated answer, what it cost, and
    where its transcript is kept (a JSON file under the data folder). Written once, in one transaction, when
    the task ends: a crash never leaves half a task, and a resumed run skips the tasks found here."""

    __tablename__ = "agent_task_run"
    __table_args__ = (UniqueConstraint("agent_run_id", "task_key", "replicate"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_run_id: int = Field(foreign_key="agent_run.id", index=True)
    task_key: str = Field(max_length=256)
    title: str = Field(default="", max_length=256)
    replicate: int = 0
    status: str = Field(max_length=32)
    message: str = ""
    answer: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    transcript_path: str = Field(default="", max_length=512, description="relative to the runs folder")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    tool_calls: int = 0
    model_seconds: float = 0.0
    seconds: float = 0.0
    cost: float | None = None
    finished_at: datetime = utc_now_field()

