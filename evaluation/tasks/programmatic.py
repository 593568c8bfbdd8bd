"""The programmatic kind ("programmatic"): DataSciBench-style tasks scored by checks run in the sandbox.

A run is one or more zip files, each the output folders of **one run of the agent** over the release's
programmatic tasks (one top-level folder per task, named by its key; see :mod:`evaluation.programmatic.outputs`).
Every accepted check of every task runs on the matching folder (a task without a folder scores 0 on each of its
checks, status ``no_output``); outcomes are 0 / 1 / 2 (:mod:`evaluation.programmatic.runner`) and aggregate into
the completion rate, the success rate (pass@1 over the runs) and per function and per task type, with CIs
(:mod:`evaluation.programmatic.metrics`). Its result file is a :class:`ProgrammaticResult`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evaluation.agents import programmatic as agent_hook
from evaluation.programmatic.metrics import aggregate
from evaluation.programmatic.outputs import OutputLimits, OutputsError, read_outputs_zip, split_by_task
from evaluation.programmatic.runner import CheckLimits, TaskOutcome, run_many
from evaluation.tasks.base import (
    VERDICT,
    CheckedFile,
    Column,
    CuratedShape,
    ItemKind,
    JobKind,
    LeaderboardSpec,
    RunView,
    ScoredRun,
    ScoringContext,
    SubmissionCheckError,
    TaskKind,
    VoteQuestion,
    fmt_score,
)
from exports.programmatic_part import (
    PROGRAMMATIC_TASK_TYPES,
    RELEASE_PART,
    ProgrammaticArtifact,
    ProgrammaticPart,
    ProgrammaticTaskRelease,
    task_input_paths,
)
from exports.schema import Release

__all__ = ["ARTIFACT", "CHECK", "CURATED", "CheckPayload", "RESULT_FORMAT", "TaskPayload", "ProgrammaticResult", "check_files", "dump_result", "leaderboard_values",
           "read_result", "release_tasks", "score", "summary_line"]

name = ProgrammaticPart.kind
label = "Programmatic checks (one zip of output folders per agent run, a folder per task)"
item_noun = "task folders"
uses_judge = False
accepts_overrides = False
view: str | None = "programmatic"
#: ``default``: a check must return a boolean; ``datascibench``: upstream's rule (see evaluation.programmatic.runner)
modes = ("default", "datascibench")
#: a task's candidate check and ground-truth artifact (issue 20), shown on a meeting's agenda by the kind's own
#: component; votes name a candidate (a curated candidate of that role) by the target kind ``prog_<role>``
CHECK = ItemKind("check", subject="Task", agenda_view="programmatic", candidate_target="prog_check",
                 unjustifiable="this check should not be part of the ground truth", questions=(
                     VoteQuestion("is_faithful", "Does the check test what the task asks for?"),
                     VoteQuestion("is_code_correct",
                                  "Is the check's code correct (it reads the right files, no false alarms)?"),
                     VoteQuestion(VERDICT, "Overall: should this check be part of the ground truth?",
                                  "Yes: a correct output passes it and a wrong one can fail it. No needs a reason.",
                                  answers=("yes", "no"))))
ARTIFACT = ItemKind("artifact", subject="Task", agenda_view="programmatic", candidate_target="prog_artifact",
                    unjustifiable="this artifact should not be the ground truth", questions=(
                        VoteQuestion("is_correct", "Is this the correct output for the task?"),
                        VoteQuestion(VERDICT, "Overall: should this artifact be the ground truth?",
                                     "Yes: the checks may compare agents' outputs with it. No needs a reason.",
                                     answers=("yes", "no"))))
item_kinds = (CHECK, ARTIFACT)


class TaskPayload(BaseModel):
    """A programmatic task as a curated item keeps it (its key is the item's ``key``): what a release carries of it
    besides its checks and artifacts, which are its candidates."""

    model_config = ConfigDict(extra="forbid")

    prompt: str
    input_files: list[str] = Field(default_factory=list)
    data_source_type: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)


class CheckPayload(BaseModel):
    """A candidate check as a curated candidate keeps it (its id, gate and provenance are the candidate's)."""

    model_config = ConfigDict(extra="forbid")

    task_type: str
    function: str
    metric: str
    code: str
    rule: str | None = None
    ground_truth: str = ""

    @field_validator("task_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in PROGRAMMATIC_TASK_TYPES:
            raise ValueError(f"{value!r} is none of DataSciBench's six task types")
        return value


#: its tasks are curated items; their candidates are checks and ground-truth artifacts (carried as a release does)
CURATED = CuratedShape(item=TaskPayload, candidates={CHECK.name: CheckPayload, ARTIFACT.name: ProgrammaticArtifact})

_TYPE_LABELS = {"data cleaning & preprocessing": "cleaning", "data exploration & statistics understanding":
                "exploration", "data visualization": "visualization", "predictive modeling": "modeling",
                "data mining & pattern recognition": "mining", "interpretability & report generation": "report"}
leaderboard = LeaderboardSpec(
    role="ranked", sort_key="success_rate",
    columns=(Column("success_rate", "SR (pass@1)", "ci", "share of (task, run) pairs whose every check passed"),
             Column("completion_rate", "CR", "ci", "mean of check scores / 2 over tasks and runs"),
             *(Column(f"type.{t}", f"CR {lab}", "ci") for t, lab in _TYPE_LABELS.items()),
             Column("check_errors", "check errors", "count", "check outcomes scored 0 (an error)"),
             Column("agent_runs", "agent runs", "count")))

RESULT_FORMAT = "forkpaths-programmatic-result"
RESULT_VERSION = "1.1"
READABLE_VERSIONS = ("1.0", "1.1")  # 1.1: the scoring mode


class ProgrammaticResult(BaseModel):
    """The result file of a programmatic run: every (task, run) outcome and the scores."""

    format: Literal["forkpaths-programmatic-result"] = "forkpaths-programmatic-result"
    format_version: str = RESULT_VERSION
    release_version: str
    ground_truth_hash: str
    runs: list[str] = Field(description="the zip files, one per agent run, in order")
    limits: dict[str, Any] = Field(default_factory=dict)
    mode: str = Field(default="default", description="default, or datascibench (upstream's scoring rule)")
    outcomes: list[TaskOutcome]
    scores: dict[str, Any]


def dump_result(result: ProgrammaticResult) -> str:
    return result.model_dump_json(indent=1)


def read_result(data: bytes | str) -> ProgrammaticResult:
    """Read a result file, refusing one of another format or version."""
    result = ProgrammaticResult.model_validate_json(data)
    if result.format_version not in READABLE_VERSIONS:
        raise ValueError(f"programmatic result format {result.format_version} is none of "
                         f"{', '.join(READABLE_VERSIONS)}")
    return result


def release_tasks(release: Release) -> dict[str, ProgrammaticTaskRelease]:
    """Every programmatic task of the release, by key."""
    return {t.key: t for d in release.datasets for t in ProgrammaticPart.of(d).tasks}


def check_files(files: Sequence[tuple[str, bytes]], release: Release, *,
                max_items: int | None) -> list[CheckedFile]:
    """Each file a zip of output folders (one agent run), each top-level folder a task of the release.

    Raises:
        SubmissionCheckError: the release has no programmatic task, or a zip is unreadable, dangerous (zip bomb,
            path traversal, symlink), too large, or has a folder that names no task (which file, which entry).
    """
    tasks = release_tasks(release)
    if not tasks:
        raise SubmissionCheckError(f"Release {release.version} has no programmatic tasks; choose a release that "
                                   "has some (the starter release does).")
    out = []
    for fname, data in files:
        try:
            by_task = split_by_task(read_outputs_zip(data, label=fname), tasks, label=fname)
        except OutputsError as exc:
            raise SubmissionCheckError(f"{exc} Nothing was stored.") from exc
        if not by_task:
            raise SubmissionCheckError(f"{fname} holds no output folder for any task; name each folder by its task "
                                       f"key ({', '.join(sorted(tasks))}).")
        out.append(CheckedFile(fname, data, format="outputs-zip", items=len(by_task)))
    return out


def _limits(ctx: ScoringContext) -> CheckLimits:
    return CheckLimits(check_timeout_s=min(ctx.limits.analysis_timeout_s, 30.0),
                       memory_mb=min(ctx.limits.memory_mb, 4096), workers=2)


def task_inputs(release: Release, release_folder: Path) -> dict[str, dict[str, bytes]]:
    """Each task's input files, read from the release's folder: {task key: {path in the task's folder: bytes}}
    (:func:`task_input_paths`)."""
    return {key: {name: path.read_bytes() for name, path in files.items()}
            for key, files in task_input_paths(release, release_folder).items()}


def score(ctx: ScoringContext) -> ScoredRun:
    """Every accepted check of every task on every run's folder, two sandbox jobs at a time, in the run's mode
    (``default`` or ``datascibench``), the task's input files beside each folder."""
    if ctx.mode not in modes:
        raise SubmissionCheckError(f"Unknown mode '{ctx.mode}' for programmatic runs; choose {' or '.join(modes)}.")
    tasks = release_tasks(ctx.release)
    jobs = []
    runs = []
    for index, (fname, data) in enumerate(ctx.files):
        run = f"run {index + 1} ({fname})"
        runs.append(fname)
        by_task = split_by_task(read_outputs_zip(data, label=fname, limits=OutputLimits()), tasks, label=fname)
        jobs += [(task, by_task.get(key), run) for key, task in sorted(tasks.items())]
    limits = _limits(ctx)
    outcomes = run_many(jobs, limits=limits, inputs=task_inputs(ctx.release, ctx.release_folder), mode=ctx.mode,
                        progress=lambda done, total: ctx.progress(done, total, f"task folder {done} of {total}"))
    scores = {"programmatic": aggregate(outcomes)}
    result = ProgrammaticResult(release_version=ctx.release.version, ground_truth_hash=ctx.ground_truth_hash,
                                runs=runs, limits=limits.describe(), mode=ctx.mode, outcomes=outcomes, scores=scores)
    errors = scores["programmatic"]["errors"]
    note = (f"{errors} check outcome{'s' if errors != 1 else ''} scored 0 as errors (see the run details for "
            "each one's reason)." if errors else "")
    return ScoredRun(result_name="programmatic-result.json", result_bytes=dump_result(result).encode("utf-8"),
                     scores=scores, items=len(jobs), message=note)


def _ci(row: dict[str, Any], key: str, est: Mapping[str, Any] | None) -> None:
    est = est or {}
    row[key], row[f"{key}.low"], row[f"{key}.high"] = est.get("point"), est.get("ci_low"), est.get("ci_high")


def leaderboard_values(run: RunView, dataset: str | None) -> dict[str, Any] | None:
    """SR and CR with their intervals, CR per task type, the count of error outcomes and of agent runs."""
    p = (run.scores_effective or {}).get("programmatic")
    if p is None or dataset is not None:
        return None
    row: dict[str, Any] = {"check_errors": p.get("errors"), "agent_runs": p.get("runs")}
    _ci(row, "success_rate", p.get("success_rate"))
    _ci(row, "completion_rate", p.get("completion_rate"))
    for t in PROGRAMMATIC_TASK_TYPES:
        _ci(row, f"type.{t}", p.get("task_types", {}).get(t))
    return row


def summary_line(scores: Mapping[str, Any]) -> str:
    p = scores.get("programmatic", {})
    sr, cr = p.get("success_rate", {}), p.get("completion_rate", {})
    return (f"SR {fmt_score(sr.get('point'))} [{fmt_score(sr.get('ci_low'))}, {fmt_score(sr.get('ci_high'))}]  "
            f"CR {fmt_score(cr.get('point'))}  tasks {p.get('tasks', 0)}  runs {p.get('runs', 0)}  "
            f"errors {p.get('errors', 0)}")


def planned_items(checked: Sequence[CheckedFile], release: Release) -> int:
    """Every task of the release is scored on every run's zip (a task without a folder fails its checks)."""
    return len(checked) * len(release_tasks(release))


KIND = TaskKind(name=name, label=label, item_noun=item_noun, leaderboard=leaderboard, check_files=check_files,
                score=score, leaderboard_values=leaderboard_values, summary_line=summary_line, uses_judge=uses_judge,
                accepts_overrides=accepts_overrides, view=view, order=40, release_part=RELEASE_PART,
                item_kinds=item_kinds, modes=modes, planned_items=planned_items, agent=agent_hook,
                jobs=(JobKind("prog_generation", "curation.services.programmatic_generation:run_candidate_job"),),
                curation="curation.services.programmatic", curated=CURATED, engine_modules=("evaluation.programmatic.job",))
