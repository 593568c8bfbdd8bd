"""What the reproducibility facet reads and writes: the items that qualify, the four outcomes, each item's
side-by-side record, and the result file of a run (format ``forkpaths-reproducibility`` 1.0).

The four outcomes are kept apart and never averaged as numbers (AIRepr averaged 1, 0 and -1, and counted an
unparseable inspector reply as -1 too, evaluation-seeds-reference §3.5):

* ``reproducible``: both codes ran and the inspector found the same statistics with the same values and the
  same conclusion;
* ``not_reproducible``: both codes ran and they differ, or the workflow gave nothing to reproduce from (empty,
  or only code), or the inspector's code written from it raised an error;
* ``original_failed``: the analysis's own code does not run (an error, a file it needs is not there);
* ``inspector_failed``: the inspector could not be asked, answered garbage, or wrote code that attacked the
  sandbox or ran past its limits: the item says nothing about the analysis.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "OUTCOME_LABELS",
    "RESULT_FORMAT",
    "RESULT_FORMAT_VERSION",
    "Accuracy",
    "CodeRun",
    "DataFile",
    "ItemResult",
    "Outcome",
    "ReproItem",
    "ReproResult",
]

RESULT_FORMAT = "forkpaths-reproducibility"
RESULT_FORMAT_VERSION = "1.0"


class Outcome(StrEnum):
    REPRODUCIBLE = "reproducible"
    NOT_REPRODUCIBLE = "not_reproducible"
    ORIGINAL_FAILED = "original_failed"
    INSPECTOR_FAILED = "inspector_failed"


OUTCOME_LABELS = {Outcome.REPRODUCIBLE: "reproducible", Outcome.NOT_REPRODUCIBLE: "not reproducible",
                  Outcome.ORIGINAL_FAILED: "original code does not run",
                  Outcome.INSPECTOR_FAILED: "inspector failed"}


class DataFile(BaseModel):
    """One file both codes may read, by the name they read it under (in their working directory)."""

    name: str
    path: str = Field(description="inside the release folder")


class ReproItem(BaseModel):
    """One qualifying item: an analysis or answer that carries a workflow and code."""

    key: str = Field(description="unique in the run: '<dataset>/<analysis key>', the task key, or 'airepr/<i>'")
    source: Literal["blade", "hypotheses", "airepr"]
    dataset: str | None = Field(default=None, description="the release dataset it belongs to, when known")
    question: str = ""
    dictionary: list[dict[str, Any]] = Field(default_factory=list, description="column names and descriptions")
    files: list[DataFile] = Field(default_factory=list)
    workflow: str = ""
    code: str = Field(default="", description="the original analysis as one script that prints its results")
    answer: str = Field(default="", description="the analyst's final answer or hypothesis")
    gold: str | None = Field(default=None, description="the gold answer, where the task has one")
    problem: str = Field(default="", description="why the original cannot run here, known before running it")
    published: dict[str, Any] = Field(default_factory=dict, description="AIRepr's own record of the item")


class CodeRun(BaseModel):
    """One code run in the sandbox: did it run, what it printed, and a sentence when it did not."""

    ok: bool
    stdout: str = ""
    error_kind: str | None = None
    error: str = ""
    seconds: float = Field(default=0.0, description="wall time of the sandbox job")
    code_seconds: float = Field(default=0.0, description="of which the code itself ran")
    ran: bool = Field(default=True, description="False: imported, the output is the published one")


class Accuracy(BaseModel):
    """The final answer against the gold answer. ``correct`` is None when the judge failed: never counted
    as correct (AIRepr counted a content-filter error as 1, §3.5)."""

    correct: bool | None
    reason: str = ""
    tolerance: dict[str, Any] = Field(default_factory=dict)
    judge: dict[str, Any] = Field(default_factory=dict)


class ItemResult(BaseModel):
    """One item side by side: both codes, both outputs, both conclusions, the inspector's reasoning."""

    key: str
    source: str
    dataset: str | None = None
    question: str = ""
    workflow: str = ""
    outcome: Outcome
    sentence: str = Field(description="why this outcome, for a person")
    original_code: str = ""
    original_run: CodeRun | None = None
    original_answer: str = ""
    inspector_code: str = ""
    inspector_run: CodeRun | None = None
    inspector_conclusion: str = ""
    reasoning: str = Field(default="", description="the inspector's comparison, in its words")
    same_statistics: bool | None = None
    same_conclusion: bool | None = None
    calls: int = Field(default=0, description="LLM requests sent for the item (cache hits not counted)")
    cached: int = Field(default=0, description="LLM answers served from the cache")
    accuracy: Accuracy | None = None
    gold: str | None = None
    published: dict[str, Any] = Field(default_factory=dict)


class ReproResult(BaseModel):
    """A reproducibility run's result file."""

    format: Literal["forkpaths-reproducibility"] = "forkpaths-reproducibility"
    format_version: str = RESULT_FORMAT_VERSION
    release_version: str = ""
    inspector: dict[str, Any] = Field(default_factory=dict, description="model, base URL, parameters, templates")
    limits: dict[str, Any] = Field(default_factory=dict)
    origin: str = Field(default="scored", description="scored here, or imported from AIRepr's published files")
    items: list[ItemResult] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list, description="items without a workflow, and why")
