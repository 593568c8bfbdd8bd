"""Agents on MCQs (kind ``mcq``): one task per multiple-choice question, one-shot only, in BLADE's MCQ protocol
(blade-reference 5.2): the question's wording of :func:`evaluation.mcq_scoring.mcq_messages`; the first answer is
the answer (a *strict* kind: no repair turn); it is read by :func:`~evaluation.mcq_scoring.parse_answer`, so a
bare letter counts and an answer without a valid letter is never guessed: it goes into the answers file as it came
(scored as unparseable) and is not cached, so asking again re-sends it. One answers file per run of the agent
(question id → the model's answer, with where it came from). ``forkpaths score-mcq --ask-model`` is such a run."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evaluation.agents.base import ANSWERED, AgentTask, Submission, TaskAnswer
from evaluation.mcq_scoring import LETTERS, MCQ_TEMPLATE_VERSION, mcq_messages, parse_answer
from exports.mcq_part import MCQPart
from exports.schema import Release

__all__ = ["answer_shape", "narrow", "submissions", "tasks", "validate", "validate_text"]

name = "mcq"
label = "MCQs (one task per question)"
strategies = ("oneshot",)
strict = True
brief_template = MCQ_TEMPLATE_VERSION


def tasks(release: Release, release_folder: Path, *, only: Sequence[str] | None = None) -> list[AgentTask]:
    out = []
    for ds in release.datasets:
        if only and ds.name not in only:
            continue
        for q in MCQPart.of(ds).items:
            # the ask-model prompt, without its answer-format sentence (the strategy adds the shape)
            before, _, after = mcq_messages(ds, q)[-1]["content"].partition("\n\nAnswer with one JSON object")
            brief = before + "\n\n" + after.split("\n\n", 1)[-1]
            out.append(AgentTask(key=q.id, kind=name, title=f"{ds.name}: {q.kind} MCQ {q.id}", brief=brief,
                                 dataset=ds.name, columns=tuple(LETTERS[:len(q.options)])))
    return out


def narrow(release: Release, key: str) -> Release:
    """The release as it holds question ``key`` only: one answer scored on it is that question's score."""
    parts = [(MCQPart.of(ds), ds) for ds in release.datasets]
    return release.model_copy(update={"datasets": [
        part.model_copy(update={"items": [t for t in part.items if t.id == key]}).put(ds)
        for part, ds in parts if any(t.id == key for t in part.items)]})


def answer_shape(task: AgentTask, *, workflow: bool) -> str:
    return json.dumps({"answer": f"<one of {', '.join(task.columns)}>", "rationale": "<one or two sentences>"})


def validate_text(text: str, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
    """The letter the answer names (a letter alone, or {"answer": ..., "rationale": ...}), kept with the text."""
    letter, why = parse_answer(text, len(task.columns))
    if letter is None:
        raise ValueError(f"{why} (the answer must name one of {', '.join(task.columns)})")
    rationale = ""
    try:
        value = json.loads(text.strip().removeprefix("```json").removeprefix("```").removesuffix("```"))
        if isinstance(value, dict):
            rationale = str(value.get("rationale") or "")
    except ValueError:
        pass
    return {"answer": letter, "rationale": rationale, "raw": text}


def validate(value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
    return validate_text(value if isinstance(value, str) else json.dumps(value), task, workflow=workflow)


def _given(a: TaskAnswer) -> str | None:
    """What goes into the answers file: the model's own text (a letter, or its JSON), scored by the kind."""
    if a.status in ANSWERED and a.answer is not None:
        return str(a.answer.get("raw") or a.answer.get("answer"))
    return a.raw  # an answer without a valid letter: unparseable; no answer at all (endpoint error): None


def submissions(release: Release, answers: Sequence[TaskAnswer], *, source: dict[str, Any]) -> list[Submission]:
    out = []
    for r in sorted({a.replicate for a in answers}):
        mine = [a for a in answers if a.replicate == r]
        errors = {a.task: a.message for a in mine if a.status not in ANSWERED and a.raw is None}
        body = {"answers": {a.task: _given(a) for a in mine},
                "source": {"kind": "model", **source, "run": r, "template_version": MCQ_TEMPLATE_VERSION,
                           "errors": errors}}
        out.append(Submission(f"run {r}", [(f"mcq-answers-run{r}.json",
                                            json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8"))]))
    return out
