"""Agents on MCQs (kind ``mcq``): one task per multiple-choice question, the same prompt as ``score-mcq
--ask-model`` (:func:`evaluation.mcq_scoring.mcq_messages`), one-shot only; one answers file per run of the agent
(question id → letter), scored strictly (an answer without a valid letter is never guessed)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.agents.base import ANSWERED, AgentTask, Submission, TaskAnswer, register_agent_kind
from evaluation.mcq_scoring import LETTERS, mcq_messages, parse_answer
from exports.schema import Release

__all__ = ["answer_shape", "submissions", "tasks", "validate"]

name = "mcq"
label = "MCQs (one task per question)"
strategies = ("oneshot",)


def tasks(release: Release, release_folder: Path, *, only: Sequence[str] | None = None) -> list[AgentTask]:
    out = []
    for ds in release.datasets:
        if only and ds.name not in only:
            continue
        for q in ds.mcqs:
            # the ask-model prompt, without its answer-format sentence (the strategy adds the shape)
            before, _, after = mcq_messages(ds, q)[-1]["content"].partition("\n\nAnswer with one JSON object")
            brief = before + "\n\n" + after.split("\n\n", 1)[-1]
            out.append(AgentTask(key=q.id, kind=name, title=f"{ds.name}: {q.kind} MCQ {q.id}", brief=brief,
                                 dataset=ds.name, columns=tuple(LETTERS[:len(q.options)])))
    return out


def answer_shape(task: AgentTask, *, workflow: bool) -> str:
    return json.dumps({"answer": f"<one of {', '.join(task.columns)}>", "rationale": "<one or two sentences>"})


def validate(value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
    letter, why = parse_answer(json.dumps(value), len(task.columns))
    if letter is None:
        raise ValueError(why)
    rationale = value.get("rationale") if isinstance(value, dict) else None
    return {"answer": letter, "rationale": str(rationale or "")}


def submissions(release: Release, answers: Sequence[TaskAnswer], *, source: dict[str, Any]) -> list[Submission]:
    out = []
    for r in sorted({a.replicate for a in answers}):
        got = {a.task: (a.answer or {}).get("answer") if a.status in ANSWERED else None
               for a in answers if a.replicate == r}
        body = {"answers": got, "source": {"kind": "model", **source, "run": r}}
        out.append(Submission(f"run {r}", [(f"mcq-answers-run{r}.json",
                                            json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8"))]))
    return out


register_agent_kind(sys.modules[__name__])
