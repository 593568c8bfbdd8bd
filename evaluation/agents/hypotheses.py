"""Agents on DiscoveryBench hypothesis tasks (kind ``hypotheses``): one task per hypothesis task of the release;
one answer is a hypothesis with its workflow (and, optionally, code, context, variables, relationship); the
submission is the hypotheses submission (COMMON.md, ``forkpaths-hypotheses`` 1.0), one per run of the agent,
since the format holds one answer per task. A task that got no usable answer is left out of that run's file
(the kind scores it as unanswered)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evaluation.agents.base import ANSWERED, AgentTask, Submission, TaskAnswer
from evaluation.agents.briefs import dictionary_text, file_preview, task_file
from evaluation.llm.quoting import quote
from exports.hypotheses_part import HypothesesPart, HypothesisTaskRelease
from exports.schema import DatasetRelease, Release

__all__ = ["FORMAT", "FORMAT_VERSION", "HypothesisReply", "answer_shape", "data_files", "narrow", "submissions",
           "tasks", "validate"]

name = "hypotheses"
label = "DiscoveryBench hypotheses (one task per query)"
strategies = ("oneshot", "react")
FORMAT, FORMAT_VERSION = "forkpaths-hypotheses", "1.0"
SAMPLE_ROWS = 5
MAX_FILES_SHOWN = 12  # a task naming more files shows the first dozen in full and names the rest

_SHAPE = json.dumps({"hypothesis": "<the hypothesis your analysis supports, in one or two sentences>",
                     "workflow": "<the analysis step by step, in plain language>",
                     "code": "<the Python code of the analysis (optional)>",
                     "context": "<the population or condition it holds in (optional)>",
                     "variables": ["<the variables involved (optional)>"],
                     "relationship": "<how they are related (optional)>"}, indent=1)


class HypothesisReply(BaseModel):
    """One answer, as the model gives it (the task key is added when the submission is written)."""

    model_config = ConfigDict(extra="ignore")
    hypothesis: str = Field(min_length=1)
    workflow: str = Field(min_length=1)
    code: str | None = None
    context: str | None = None
    variables: list[str] | None = None
    relationship: str | None = None


def data_files(release_folder: Path, ds: DatasetRelease, task: HypothesisTaskRelease) -> list[Path]:
    """The task's data files inside the release (by the dataset's file list; its data table when none)."""
    by_name = {f.name: f for f in ds.files} | {Path(f.name).name: f for f in ds.files}
    out = []
    for fname in task.data_files:
        rf = by_name.get(fname) or by_name.get(Path(fname).name)
        if rf is not None:
            out.append(release_folder / rf.path)
    if not out and ds.data_file:
        out.append(release_folder / ds.data_file)
    return out


def tasks(release: Release, release_folder: Path, *, only: Sequence[str] | None = None) -> list[AgentTask]:
    out = []
    for ds in release.datasets:
        for t in HypothesesPart.of(ds).tasks:
            if only and t.key not in only and ds.name not in only:
                continue
            paths = data_files(release_folder, ds, t)
            files = tuple(task_file(p.name, p) for p in dict.fromkeys(paths))
            first = next((f for f in files if f.table and f.path.is_file()), None)
            previews = [file_preview(f, SAMPLE_ROWS) for f in files[:MAX_FILES_SHOWN]]
            columns = next((c for f, (_, c) in zip(files, previews, strict=False) if f is first), ())
            columns_desc = [c for f in ds.files for c in f.columns] or ds.dictionary
            listing = "\n".join(text for text, _ in previews)
            if len(files) > MAX_FILES_SHOWN:
                listing += f"\n- and {len(files) - MAX_FILES_SHOWN} more: " + quote(
                    ", ".join(f.name for f in files[MAX_FILES_SHOWN:]), limit=2000)
            loaded = (f"`df` is {quote(first.name)}, already loaded" if first is not None else "there is no table "
                      "to load as `df`")
            brief = (f"Query: {quote(t.question)}\n\n"
                     + (f"Domain: {quote(t.domain)}\n" if t.domain else "")
                     + (f"Domain knowledge: {quote(t.domain_knowledge, limit=4000)}\n" if t.domain_knowledge else "")
                     + f"Dataset: {quote(ds.description or ds.title or ds.name, limit=4000)}\n"
                     f"Columns: {dictionary_text(columns_desc)}\n\n"
                     f"The task's {len(files)} data file{'s' if len(files) != 1 else ''} (code finds each in its "
                     f"working folder under its name, text in UTF-8; {loaded}):\n{listing or '(none)'}"
                     "\n\nFind the hypothesis the data supports as an answer to the query, and say how you "
                     "found it.")
            out.append(AgentTask(key=t.key, kind=name, title=t.question[:120], brief=brief,
                                 data_path=first.path if first else None, dataset=ds.name, columns=columns,
                                 files=files))
    return out


def narrow(release: Release, key: str) -> Release:
    """The release as it holds hypothesis task ``key`` only: one answer scored on it is that task's score."""
    parts = [(HypothesesPart.of(ds), ds) for ds in release.datasets]
    return release.model_copy(update={"datasets": [
        part.model_copy(update={"tasks": [t for t in part.tasks if t.key == key]}).put(ds)
        for part, ds in parts if any(t.key == key for t in part.tasks)]})


def answer_shape(task: AgentTask, *, workflow: bool) -> str:
    return _SHAPE  # a hypotheses answer always carries its workflow


def validate(value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
    return HypothesisReply.model_validate(value).model_dump(mode="json", exclude_none=True)


def submissions(release: Release, answers: Sequence[TaskAnswer], *, source: dict[str, Any]) -> list[Submission]:
    out = []
    for r in sorted({a.replicate for a in answers}):
        rows = [{"task": a.task, **(a.answer or {})} for a in sorted(answers, key=lambda a: a.task)
                if a.replicate == r and a.status in ANSWERED and a.answer is not None]
        body = {"format": FORMAT, "format_version": FORMAT_VERSION, "answers": rows}
        out.append(Submission(f"run {r}", [(f"hypotheses-run{r}.json",
                                            json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8"))]))
    return out
