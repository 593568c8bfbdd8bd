"""inspect_ai's answers as forkpaths's submissions, scored by the kind's own engine (no inspect import here).

The part of each kind that differs is declared beside the kind, in its agent hook (``evaluation/agents/<kind>.py``):
which tasks a release holds (:meth:`~evaluation.agents.AgentKind.tasks`, each one inspect sample), the shape of
one answer, how an answer's text is validated, and how answers become the kind's submission files
(:meth:`~evaluation.agents.AgentKind.submissions`). This module loops over those hooks and the task kinds of
:mod:`evaluation.tasks` and never names a kind, so a kind that gets an agent hook is an inspect task too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from evaluation.agents import (
    ANSWERED,
    AgentKind,
    AgentTask,
    Submission,
    TaskAnswer,
    agent_kind,
    agent_kind_names,
)
from evaluation.agents.strategies import validate_answer
from evaluation.errors import EvaluationError
from evaluation.judges.base import Judge
from evaluation.scoring import RunBudget
from evaluation.tasks import KINDS, ScoredRun, ScoringContext, ScoringLimits, SubmissionCheckError, TaskKind
from exports.schema import Release

__all__ = ["PREFIX", "KindScore", "answer_of", "inspect_kinds", "inspect_task_name", "kind_of_task",
           "score_answers", "sample_values"]

#: inspect's namespace for forkpaths's tasks: ``inspect eval forkpaths/<kind>``
PREFIX = "forkpaths"


def inspect_kinds() -> list[str]:
    """The task kinds an agent can answer (a registered kind with an agent hook), in the registry's order."""
    hooks = set(agent_kind_names())
    return [name for name in KINDS if name in hooks]


def inspect_task_name(kind: str) -> str:
    return f"{PREFIX}/{kind}"


def kind_of_task(task_name: str) -> str | None:
    """The kind an inspect task name stands for (``forkpaths/mcq`` → ``mcq``), or None for any other task."""
    prefix, _, kind = task_name.partition("/")
    return kind if prefix == PREFIX and kind in inspect_kinds() else None


def answer_of(hook: AgentKind, task: AgentTask, text: str, replicate: int, *, workflow: bool = False) -> TaskAnswer:
    """The final answer's text as the kind takes it: validated as an agent run validates it (a strict kind keeps an
    answer it cannot read as it came, so that it is scored as unparseable)."""
    answer, problem = validate_answer(hook, task, text or "", workflow)
    if answer is not None:
        return TaskAnswer(task.key, replicate, "answered", "Answered (inspect_ai).", answer)
    return TaskAnswer(task.key, replicate, "invalid_answer", f"The model's answer could not be used: {problem}",
                      None, raw=text if getattr(hook, "strict", False) and text else None)


@dataclass(frozen=True)
class KindScore:
    """One submission made of some answers, and the kind's score of it."""

    submission: Submission
    scored: ScoredRun


def score_answers(kind: str, release: Release, release_folder: Path, answers: Sequence[TaskAnswer], *,
                  judge: Callable[[], Judge], mode: str = "default", k: int = 10,
                  limits: ScoringLimits | None = None, gt_cache: Path | None = None,
                  source: dict[str, Any] | None = None) -> list[KindScore]:
    """``answers`` made into the kind's submission(s) by its hook, each checked and scored by the kind itself,
    exactly as a submission uploaded to forkpaths would be.

    Raises:
        SubmissionCheckError: the kind refuses a submission (its sentence says why).
    """
    hook, task = agent_kind(kind), KINDS[kind]
    limits = limits or ScoringLimits()
    out = []
    for sub in hook.submissions(release, answers, source=dict(source or {})):
        task.check_files(sub.files, release, max_items=limits.max_analyses)
        ctx = ScoringContext(release=release, release_folder=release_folder, files=sub.files, judge=judge, mode=mode,
                             k=k, ground_truth_hash="", limits=limits,
                             budget=RunBudget(analysis_s=limits.analysis_timeout_s, total_s=limits.run_budget_s),
                             gt_cache=gt_cache)
        out.append(KindScore(sub, task.score(ctx)))
    return out


def sample_values(task: TaskKind, scores: dict[str, Any]) -> dict[str, float]:
    """The numbers a kind shows on the leaderboard, read from the scores of one run by the kind itself: an inspect
    score's value (a column without a number, e.g. an undefined score, is left out)."""
    row = task.leaderboard_values(SimpleNamespace(scores_effective=scores, transform_matcher={}), None) or {}
    keys = [c.key for c in task.leaderboard.columns if c.format in ("ci", "number")]
    return {key: float(row[key]) for key in keys if isinstance(row.get(key), int | float)
            and not isinstance(row.get(key), bool)}


class InspectError(EvaluationError):
    """An inspect task or log forkpaths cannot use (which one, what is wrong)."""


__all__ += ["ANSWERED", "InspectError", "SubmissionCheckError"]
