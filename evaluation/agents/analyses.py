"""Agents on BLADE analyses (kind ``analyses``): one task per release dataset; one answer is one analysis
(conceptual variables, transform code, model code; a workflow when asked); the submission is BLADE's multi-run
file per dataset, a failed run written as BLADE writes a failed generation (``[2, "<sentence>"]``)."""

from __future__ import annotations

import ast
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from evaluation.agents.base import ANSWERED, AgentTask, Submission, TaskAnswer
from evaluation.agents.briefs import dictionary_text, sample_text
from evaluation.llm.quoting import quote
from evaluation.submissions import AgentVariables
from exports.native import release_data_path
from exports.schema import Release

__all__ = ["AnalysisAnswer", "answer_shape", "narrow", "submissions", "tasks", "validate"]

name = "analyses"
label = "BLADE analyses (one task per dataset)"
strategies = ("oneshot", "react")
SAMPLE_ROWS = 5

_SHAPE = json.dumps({
    "cvars": {"ivs": [{"description": "<conceptual independent variable>", "columns": ["<column of the final frame>"]}],
              "dv": {"description": "<conceptual dependent variable>", "columns": ["<column>"]},
              "controls": [{"description": "<control>", "columns": ["<column>"], "is_moderator": False,
                            "moderator_on": ""}]},
    "transform_code": "def transform(df):\n    ...\n    return df",
    "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n    ...\n    return results"}, indent=1)


class AnalysisAnswer(BaseModel):
    """One analysis as BLADE's EntireAnalysis, plus the optional workflow narrative."""

    model_config = ConfigDict(extra="ignore")
    cvars: AgentVariables
    transform_code: str
    m_code: str
    workflow: str | None = None

    @field_validator("transform_code", "m_code")
    @classmethod
    def _python(cls, code: str) -> str:
        if not code.strip():
            raise ValueError("is empty; write the function's Python code")
        try:
            ast.parse(code)
        except SyntaxError as exc:
            raise ValueError(f"is not valid Python (line {exc.lineno}: {exc.msg})") from None
        return code


def tasks(release: Release, release_folder: Path, *, only: Sequence[str] | None = None) -> list[AgentTask]:
    out = []
    for ds in release.datasets:
        if only and ds.name not in only:
            continue
        path = release_data_path(release_folder, ds)
        sample, columns = sample_text(path, SAMPLE_ROWS)
        desc = (ds.info or {}).get("data_desc") or ds.dictionary
        brief = (f"Research question: {quote(ds.research_question)}\n\n"
                 f"Data dictionary: {dictionary_text(desc, ds.description)}\n\n"
                 f"The data has {ds.num_rows} rows and these columns: {quote(', '.join(columns), limit=4000)}.\n"
                 f"Its first rows, as CSV: {quote(sample, limit=6000)}\n\n"
                 "Write one complete analysis answering the research question: the conceptual variables "
                 "(independent, dependent, controls) with the columns of the transformed frame that carry them, a "
                 "function `transform(df)` that returns the transformed frame, and a function `model(df)` that "
                 "fits a statistical model on it and returns the fitted result.")
        out.append(AgentTask(key=ds.name, kind=name, title=ds.title or ds.name, brief=brief, data_path=path,
                             dataset=ds.name, columns=columns))
    return out


def narrow(release: Release, key: str) -> Release:
    """The release as it holds dataset ``key`` only (a task is a dataset)."""
    return release.model_copy(update={"datasets": [ds for ds in release.datasets if ds.name == key]})


def answer_shape(task: AgentTask, *, workflow: bool) -> str:
    if not workflow:
        return _SHAPE
    return _SHAPE[:-1].rstrip() + ',\n "workflow": "<the analysis step by step, in plain language>"\n}'


def validate(value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
    answer = AnalysisAnswer.model_validate(value)
    if workflow and not (answer.workflow or "").strip():
        raise ValueError("workflow is missing; write the analysis's workflow as plain text")
    return answer.model_dump(mode="json", exclude_none=True)


def submissions(release: Release, answers: Sequence[TaskAnswer], *, source: dict[str, Any]) -> list[Submission]:
    """One submission for the whole agent run: BLADE's multi-run file per dataset holds every run."""
    files = []
    for ds in release.datasets:
        mine = sorted((a for a in answers if a.task == ds.name), key=lambda a: a.replicate)
        if not mine:
            continue
        runs: dict[str, Any] = {str(a.replicate): a.answer if a.status in ANSWERED and a.answer is not None
                                else [2, f"{a.status}: {a.message}"] for a in mine}
        body = {"dataset_name": ds.name, "n": len(mine), "analyses": runs, "agent": source}
        files.append((f"{ds.name}.json", json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8")))
    return [Submission("all runs", files)] if files else []
