"""Agents on programmatic tasks (kind ``programmatic``, DataSciBench-style): one task per programmatic task of the
release; its input files are in the working folder (the ReAct tool's, and an inspect sample's files); one answer
is the task's output files, each by its path in the task's folder with its text (``files``) or, for a binary file
such as a plot, its bytes in base64 (``files_base64``). The submission is the kind's own: one zip of output folders
per run of the agent (a folder per task, named by its key), all runs in one submission (success rate is pass@1
over the runs). A task without a usable answer has no folder (its checks score 0, ``no_output``)."""

from __future__ import annotations

import base64
import binascii
import io
import json
import zipfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evaluation.agents.base import ANSWERED, AgentTask, Submission, TaskAnswer
from evaluation.agents.briefs import file_preview, task_file
from evaluation.llm.quoting import quote
from exports.programmatic_part import ProgrammaticPart, task_input_paths
from exports.schema import Release

__all__ = ["OutputsAnswer", "answer_shape", "narrow", "submissions", "tasks", "validate"]

name = "programmatic"
label = "Programmatic tasks (one task per task, its output files as the answer)"
strategies = ("oneshot", "react")
SAMPLE_ROWS = 5
MAX_ANSWER_MB = 20

_SHAPE = json.dumps({"files": {"<path of an output file in the task's folder, e.g. cleaned.csv>": "<its text>"},
                     "files_base64": {"<path of a binary output, e.g. plot.png>": "<its bytes in base64 (optional)>"}},
                    indent=1)


def _path(p: str) -> str:
    pure = PurePosixPath(p.replace("\\", "/"))
    if not p.strip() or pure.is_absolute() or ".." in pure.parts or ":" in p:
        raise ValueError(f"the output path {p!r} must be a relative path inside the task's folder")
    return str(pure)


class OutputsAnswer(BaseModel):
    """A task's output files: text by path, binary ones in base64."""

    model_config = ConfigDict(extra="ignore")
    files: dict[str, str] = Field(default_factory=dict)
    files_base64: dict[str, str] = Field(default_factory=dict)

    @field_validator("files", "files_base64")
    @classmethod
    def _paths(cls, value: dict[str, str]) -> dict[str, str]:
        return {_path(k): v for k, v in value.items()}

    @field_validator("files_base64")
    @classmethod
    def _decodes(cls, value: dict[str, str]) -> dict[str, str]:
        for k, v in value.items():
            try:
                base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(f"the bytes of {k} are not base64") from None
        return value


def tasks(release: Release, release_folder: Path, *, only: Sequence[str] | None = None) -> list[AgentTask]:
    inputs = task_input_paths(release, release_folder)
    out = []
    for ds in release.datasets:
        for t in ProgrammaticPart.of(ds).tasks:
            if only and t.key not in only and ds.name not in only:
                continue
            files = tuple(task_file(n, p) for n, p in inputs.get(t.key, {}).items())
            first = next((f for f in files if f.table), None)
            listing = "\n".join(file_preview(f, SAMPLE_ROWS)[0] for f in files)
            brief = (f"Task: {quote(t.prompt, limit=8000)}\n\n"
                     f"Its {len(files)} input file{'s' if len(files) != 1 else ''} (code finds each in its working "
                     f"folder under its name):\n{listing or '(none)'}\n\n"
                     "Write every output file the task asks for; your answer gives each one's path in the task's "
                     "folder and its content.")
            out.append(AgentTask(key=t.key, kind=name, title=t.key, brief=brief,
                                 data_path=first.path if first else None, dataset=ds.name,
                                 columns=(), files=files))
    return out


def narrow(release: Release, key: str) -> Release:
    """The release as it holds programmatic task ``key`` only."""
    parts = [(ProgrammaticPart.of(ds), ds) for ds in release.datasets]
    return release.model_copy(update={"datasets": [
        part.model_copy(update={"tasks": [t for t in part.tasks if t.key == key]}).put(ds)
        for part, ds in parts if any(t.key == key for t in part.tasks)]})


def answer_shape(task: AgentTask, *, workflow: bool) -> str:
    return _SHAPE


def validate(value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
    answer = OutputsAnswer.model_validate(value)
    if not answer.files and not answer.files_base64:
        raise ValueError("files is empty; give at least one output file")
    size = sum(len(v) for v in answer.files.values()) + sum(len(v) for v in answer.files_base64.values())
    if size > MAX_ANSWER_MB * 2**20:
        raise ValueError(f"the output files hold more than {MAX_ANSWER_MB} MB")
    return answer.model_dump(mode="json")


def submissions(release: Release, answers: Sequence[TaskAnswer], *, source: dict[str, Any]) -> list[Submission]:
    """One submission: a zip of output folders per run of the agent (tasks without a usable answer left out)."""
    files = []
    for r in sorted({a.replicate for a in answers}):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for a in sorted((a for a in answers if a.replicate == r), key=lambda a: a.task):
                if a.status not in ANSWERED or a.answer is None:
                    continue
                for path, text in (a.answer.get("files") or {}).items():
                    zf.writestr(f"{a.task}/{path}", str(text).encode("utf-8"))
                for path, data in (a.answer.get("files_base64") or {}).items():
                    zf.writestr(f"{a.task}/{path}", base64.b64decode(data))
            if not zf.namelist():
                continue
        files.append((f"outputs-run{r}.zip", buf.getvalue()))
    return [Submission("all runs", files)] if files else []
