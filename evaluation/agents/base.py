"""What passes between a strategy, a task kind's agent hook and the services: tasks, settings, outcomes.

A *task* is what one agent answers in one go: a release dataset for BLADE analyses, one hypothesis task for
DiscoveryBench, one question for MCQs. Each task kind that agents can answer has an :class:`AgentKind` hook
(the kind declares it, ``TaskKind.agent``; :func:`agent_kind` finds it by the kind's name): it lists a release's tasks, tells the model the
JSON shape of one answer, validates an answer (pydantic), and assembles the answers of every task and run into
the kind's own submission files, which the kind then scores like any uploaded submission. Nothing here touches a
database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from evaluation.errors import EvaluationError
from exports.schema import Release

__all__ = [
    "ANSWERED",
    "CANCELLED",
    "AgentKind",
    "AgentSettings",
    "AgentTask",
    "Submission",
    "TaskAnswer",
    "TaskFile",
    "TaskOutcome",
    "UnknownAgentKind",
    "agent_kind",
    "agent_kind_names",
]

Strategy = Literal["oneshot", "react"]
STRATEGIES: tuple[str, ...] = ("oneshot", "react")

#: statuses whose answer goes into the submission
ANSWERED = ("answered", "answered_without_code")
#: a task stopped half-way because its run was cancelled: not a finished task run (never stored; resume redoes it,
#: its model calls replayed from the cache)
CANCELLED = "cancelled"


class UnknownAgentKind(EvaluationError):
    """No task kind of that name can be answered by an agent."""


class AgentSettings(BaseModel):
    """How an agent answers one task; recorded on the run (with the prompt templates' versions)."""

    strategy: Strategy = "oneshot"
    workflow: bool = Field(default=False, description="also write a workflow narrative per answer")
    max_steps: int = Field(default=12, ge=1, le=100, description="ReAct: tool calls at most, then it must answer")
    step_timeout_s: float = Field(default=30.0, gt=0, le=600, description="ReAct: wall clock of one code run")
    observation_chars: int = Field(default=4000, ge=200, le=100_000,
                                   description="ReAct: an observation is cut to this many characters")
    sample_rows: int = Field(default=5, ge=0, le=50, description="rows of the data shown in the prompt")
    memory_mb: int = Field(default=2048, gt=0, description="ReAct: memory of one code run")


@dataclass(frozen=True)
class TaskFile:
    """One file of a task, as the ReAct tool puts it in the sandbox's working folder (under ``name``).

    ``format`` is ``csv``, ``tsv``, ``stata`` or ``other``; ``encoding`` is the text encoding a CSV/TSV was found
    in (``utf-8`` or ``cp1252``, DiscoveryBench ships both): the tool hands every text table over in UTF-8."""

    name: str
    path: Path
    format: str = "other"
    encoding: str | None = None

    @property
    def table(self) -> bool:
        return self.format in ("csv", "tsv", "stata")


@dataclass(frozen=True)
class AgentTask:
    """One task as the model sees it: the question and the data it is about (already quoted).

    ``data_path`` is the one table loaded as ``df``; ``files``, when given, are every file of the task, each put
    by name in the sandbox's working folder (``df`` is then the first table among them)."""

    key: str
    kind: str
    title: str
    brief: str  # the question, the data dictionary and the sample rows, as prompt text
    data_path: Path | None = None
    dataset: str | None = None
    columns: tuple[str, ...] = ()
    files: tuple[TaskFile, ...] = ()


@dataclass
class TaskOutcome:
    """What one run of one task produced: a status and a sentence, the validated answer (or None), the
    transcript, and what it cost (tokens, requests, seconds)."""

    status: str
    message: str
    answer: dict[str, Any] | None
    transcript: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0  # requests sent to the endpoint (0: every answer came from the cache)
    cache_hits: int = 0
    model_seconds: float = 0.0
    tool_calls: int = 0
    tool_seconds: float = 0.0
    seconds: float = 0.0  # the task's wall clock, model and tools included
    raw: str | None = None  # no usable answer: the model's last answer as it came (a strict kind scores it)


@dataclass(frozen=True)
class TaskAnswer:
    """One (task, run) of an agent run, as the submission is assembled from it."""

    task: str
    replicate: int
    status: str
    message: str
    answer: dict[str, Any] | None
    raw: str | None = None  # the model's own answer when it was not usable (see TaskOutcome.raw)


@dataclass(frozen=True)
class Submission:
    """One scoring run's worth of files: a label ("all runs", "run 3") and the files in the kind's format."""

    label: str
    files: list[tuple[str, bytes]]


@runtime_checkable
class AgentKind(Protocol):
    """The agent side of a task kind: the hook a kind declares (``TaskKind.agent``), or one module under
    ``evaluation/agents/`` registered by the kind's name."""

    name: str  # the task kind's name in evaluation.tasks
    label: str  # "BLADE analyses (one task per dataset)"
    strategies: tuple[str, ...]  # the strategies that make sense for it

    # Optional (read with getattr, so a hook need not declare them):
    #   strict: bool = False  -- the first answer is the answer: no repair turn; one that cannot be used still
    #       goes to the kind (TaskAnswer.raw; MCQs score it as unparseable) and is not cached, so asking again
    #       re-sends it. BLADE's MCQ protocol.
    #   brief_template: str  -- the version of the kind's own task wording, recorded on the run beside the
    #       strategy's template.
    #   validate_text(text, task, *, workflow) -> dict  -- validate the answer's text itself (instead of the JSON
    #       found in it, then validate()).
    #   narrow(release, key) -> Release  -- the release as it holds task ``key`` only, so that one answer scored on
    #       it is that task's own score (an inspect_ai sample's score; without it the whole release is used).

    def tasks(self, release: Release, release_folder: Path, *, only: Sequence[str] | None = None) -> list[AgentTask]:
        """The release's tasks of this kind (``only``: those whose key or dataset is listed)."""
        ...

    def answer_shape(self, task: AgentTask, *, workflow: bool) -> str:
        """The JSON shape of one answer, as the prompt shows it."""
        ...

    def validate(self, value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
        """The answer as stored, or ``ValueError`` / ``pydantic.ValidationError`` saying what is wrong."""
        ...

    def submissions(self, release: Release, answers: Sequence[TaskAnswer], *,
                    source: dict[str, Any]) -> list[Submission]:
        """The kind's submissions made of every answer (failed ones as the kind records failures): each is
        scored as one run. A kind whose files hold several runs per task makes one; a kind whose files hold one
        answer per task makes one per run of the agent."""
        ...


def _declared() -> dict[str, AgentKind]:
    """The hooks the task kinds declare (``TaskKind.agent``), by kind name, in the kinds' order: the registry of
    kinds is the one list of what agents can answer."""
    from evaluation.tasks import KINDS

    hooks = {}
    for kind in KINDS.values():
        if kind.agent is not None:
            if not isinstance(kind.agent, AgentKind):
                raise TypeError(f"the agent hook of the task kind {kind.name!r} does not implement AgentKind")
            hooks[kind.name] = kind.agent
    return hooks


def agent_kind(name: str) -> AgentKind:
    hooks = _declared()
    try:
        return hooks[name]
    except KeyError:
        known = ", ".join(hooks) or "none"
        raise UnknownAgentKind(f"Agents cannot answer tasks of kind '{name}'; they can answer: {known}.") from None


def agent_kind_names() -> list[str]:
    return list(_declared())
