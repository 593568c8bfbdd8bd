"""Run a programmatic task's checks on one output folder (in the sandbox) and score each outcome 0 / 1 / 2.

The outcome of a check (DataSciBench's per-function score, evaluation-seeds-reference §2.5, with one change):

* **2** — it returned ``True`` (after its rule, if any);
* **1** — it ran and returned ``False``;
* **0** — an error: it does not parse, defines no function, raised (a missing output file is the usual cause),
  ran past its time limit, ran out of memory, was refused by the sandbox, changed the folders it may only read,
  interfered with the measurement, or returned something that is not a boolean. Upstream counts a non-boolean
  as correct with a warning; here it is an error and never counts as correct.

Pickled files (the agent's outputs and the ground-truth artifacts) never reach a check as they are: each is
loaded in a sandbox job that holds nothing else and replaced by a clean pickle of the plain data it holds, or
withheld with a sentence when it holds something else (a fitted model); see :mod:`evaluation.programmatic.plain`.
A check that reads a withheld file scores 0 with that sentence.

Checks run where upstream runs them: the working directory holds the outputs, inside a folder that holds the
task's input files at their paths and ``gt/`` (so ``../input.csv``, ``../data/*.xlsx`` and ``../gt/x.csv`` are
where DataSciBench's checks find them), all read-only; the ground-truth path handed to the function is
upstream's (``<task>/gt/<ground_truth>``, or ``<task>/gt/`` with its slash).

Two scoring modes:

* ``default`` (above): a check must return a boolean (after its rule); the function is the last public
  top-level ``def``; every check counts.
* ``datascibench``: upstream's rule (deeppavlov/DataSciBench ``experiments/evaluate.py``, ``src/schemas/dag.py``,
  ``src/utils.py``): checks are keyed by ``metric``, a later one replacing an earlier one with the same metric
  (keeping the earlier one's place); the function is the first callable the code binds at its top level, which
  runs with upstream's separate globals (a top-level import is not seen inside the function); a float scores 2
  from 3 on and 1 below; an int other than 0 or 1 is an error; anything else counts through ``bool()``, so a
  non-boolean such as the string ``"False"`` passes, as upstream has it. Where upstream's script stops
  altogether (the code or the rule raising while checks are built; a NaN or infinite float) the check is an
  error here: the one intended difference. (A metric literally named ``test_bool``, ``test_int`` or ``CR``,
  which upstream routes to other evaluators in ``src/evaluator/evaluator_dict.py``, is scored as any other.)

Every outcome carries a status and a sentence for the person reading the drill-down.
"""

from __future__ import annotations

import ast
import base64
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from exports.programmatic_part import ProgrammaticCheck, ProgrammaticTaskRelease

log = logging.getLogger(__name__)

__all__ = [
    "MODES",
    "ERROR_STATUSES",
    "DEFAULT_CHECK_LIMITS",
    "CheckLimits",
    "CheckResult",
    "TaskOutcome",
    "artifact_files",
    "check_code_problem",
    "clean_ground_truth",
    "completion_rate",
    "run_checks",
    "run_many",
]

Status = Literal["true", "false", "syntax", "no_function", "raised", "missing_file", "refused", "not_boolean",
                 "rule_error", "timeout", "memory", "crashed", "interfered", "tampered", "no_output", "sandbox"]
MODES = ("default", "datascibench")
ERROR_STATUSES: tuple[str, ...] = ("syntax", "no_function", "raised", "missing_file", "refused", "not_boolean",
                                   "rule_error", "timeout", "memory", "crashed", "interfered", "tampered",
                                   "no_output", "sandbox")


@dataclass(frozen=True)
class CheckLimits:
    """Per check: wall clock; per folder: the sandbox job's memory; sandbox jobs at a time. A scoring run takes
    them from its scoring limits (``FORKPATHS_SCORE_ANALYSIS_TIMEOUT_S`` capped at 30 s per check,
    ``FORKPATHS_SANDBOX_MEMORY_MB``), with two workers."""

    check_timeout_s: float = 10.0
    memory_mb: int = 2048
    workers: int = 2

    def describe(self) -> dict[str, Any]:
        return {"check_timeout_s": self.check_timeout_s, "memory_mb": self.memory_mb, "workers": self.workers}


DEFAULT_CHECK_LIMITS = CheckLimits()


class CheckResult(BaseModel):
    """One check's outcome on one output folder."""

    check_id: str
    task_type: str
    function: str
    metric: str
    status: Status
    score: int = Field(description="0 error, 1 ran and returned False, 2 returned True")
    sentence: str
    detail: str = Field(default="", description="what else the reader needs (never a traceback: those are logged)")
    stdout: str = ""
    seconds: float = 0.0


class TaskOutcome(BaseModel):
    """A task's checks on one output folder (one run of the agent)."""

    task: str
    run: str = ""
    files: list[dict[str, Any]] = Field(default_factory=list, description="the output folder's files: path, size")
    checks: list[CheckResult] = Field(default_factory=list)
    completion_rate: float | None = None
    passed: bool = False


def check_code_problem(code: str) -> str | None:
    """A sentence if the check's code cannot be a check (does not parse, defines no function), else None. Only
    parses (never runs) the code: safe outside the sandbox."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return f"The check's code does not parse: line {exc.lineno}: {exc.msg}."
    if not any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in tree.body):
        return "The check's code defines no function; it must define one function of the ground truth, " \
               "e.g. def check(ground_truth): ..."
    return None


def clean_ground_truth(path: str, artifacts: Sequence[str] | None = None) -> str:
    """A check's ground-truth path as the path inside ``gt/`` it means: ``gt/summary.csv``, ``./summary.csv`` and
    ``/summary.csv`` all mean ``summary.csv`` (an LLM, or a person reading "a file in gt/", writes the folder too;
    joined as it is, it named ``gt/gt/summary.csv``, which no check could open). A path that is an artifact's
    own (one of ``artifacts``) is kept. '..' is left for the caller to refuse."""
    import posixpath

    text = path.strip().replace("\\", "/")
    if not text:
        return ""
    clean = posixpath.normpath(text).lstrip("/")
    while clean.startswith("./"):
        clean = clean[2:]
    if clean in (".", ""):
        return ""
    if artifacts is not None and clean in artifacts:
        return clean
    if clean == "gt":
        return ""
    if clean.startswith("gt/"):
        return clean[3:]
    return clean


def _score(status: str) -> int:
    return 2 if status == "true" else 1 if status == "false" else 0


def _withheld(error: str, withheld: Mapping[str, str]) -> str | None:
    """The sentence of a withheld pickle that a check's error names (by its path or file name), if any."""
    for path, sentence in withheld.items():
        name = path.rsplit("/", 1)[-1]
        if path in error or f"'{name}'" in error or f"/{name}" in error or f" {name}" in error:
            return sentence
    return None


def _at_line(raw: Mapping[str, Any]) -> str:
    line = raw.get("line")
    return f" at line {line} of the check's code" if isinstance(line, int) and not isinstance(line, bool) else ""


def _sentence(raw: Mapping[str, Any], check: ProgrammaticCheck,
              withheld: Mapping[str, str] | None = None) -> tuple[Status, str, str]:
    """(status, the sentence for the reader, detail). The check's traceback is never part of them: it names files
    of the server; it is logged (:func:`run_checks`), and the sentence says the line of the check's own code."""
    status = str(raw.get("status"))
    error = str(raw.get("error") or "")
    where = _at_line(raw)
    if status == "raised" and withheld:
        why = _withheld(error, withheld)
        if why is not None:
            return "refused", f"Error: {why}", ""
    if status == "value" and raw.get("basis"):  # datascibench mode: upstream's rule decided
        value = bool(raw.get("value"))
        via = f" through its rule {check.rule}" if check.rule else ""
        what = f"the check returned {raw.get('repr')} ({raw.get('type')}){via}; DataSciBench's rule: {raw['basis']}"
        return ("true", f"Passed: {what}.", "") if value else ("false", f"Failed: {what}.", "")
    if status == "raised" and raw.get("upstream") == "crash":
        return ("raised", f"Error: {error}{where}. Upstream's scoring would stop here for every task; forkpaths scores "
                "this check as an error instead.", "")
    if status == "value":
        value = bool(raw.get("value"))
        via = f" through its rule {check.rule}" if check.rule else ""
        return ("true", f"Passed: the check returned True{via}.", "") if value else \
               ("false", f"Failed: the check ran and returned False{via}.", "")
    if status == "raised" and error.startswith(("FileNotFoundError", "IsADirectoryError")):
        return ("missing_file", "Error: a file the check reads is missing from the output folder "
                f"({error}){where}.", "")
    sentences = {
        "syntax": f"Error: the check's code does not parse ({error}).",
        "no_function": f"Error: {error}.",
        "raised": f"Error: the check raised {error}{where} (a missing or malformed output file is the usual cause).",
        "refused": f"Error: the sandbox refused what the check tried{where}: {error}.",
        "not_boolean": (f"Error: the check returned {raw.get('repr')} ({raw.get('type')}), not a boolean; a result "
                        "that is not a boolean is a check error and never counts as correct."),
        "rule_error": f"Error: the rule {check.rule!r} failed on the check's result {raw.get('raw_repr')}: {error}.",
        "timeout": f"Error: {error}.",
        "memory": "Error: the check ran out of memory.",
        "crashed": f"Error: {error}.",
        "interfered": f"Error: {error}.",
        "tampered": f"Error: {error}.",
    }
    if status not in sentences:
        return "interfered", "Error: the check's process handed back an unknown status.", ""
    return status, sentences[status], ""  # type: ignore[return-value]


def artifact_files(task: ProgrammaticTaskRelease) -> dict[str, bytes]:
    """The task's ground-truth artifacts as {path inside gt/: bytes}."""
    return {a.path: base64.b64decode(a.content_b64) for a in task.artifacts}


def completion_rate(checks: Sequence[CheckResult]) -> float | None:
    """DataSciBench's CR for one task and run: the sum of scores over twice the number of checks."""
    return sum(c.score for c in checks) / (2 * len(checks)) if checks else None


def _outcome(task: str, run: str, outputs: Mapping[str, bytes], checks: Sequence[ProgrammaticCheck],
             results: Sequence[CheckResult], notes: Mapping[str, str] | None = None) -> TaskOutcome:
    cr = completion_rate(results)
    files = [{"path": p, "size": len(b), **({"note": notes[p]} if notes and p in notes else {})}
             for p, b in sorted(outputs.items())]
    return TaskOutcome(task=task, run=run, files=files, checks=list(results), completion_rate=cr, passed=cr == 1.0)


def _plain(files: Mapping[str, bytes], limits: CheckLimits) -> Any:
    """``files`` with every pickle replaced by a clean one, or withheld (:func:`evaluation.programmatic.plain.
    make_plain`), converted in a sandbox job of their own."""
    from evaluation.programmatic.job import CONVERT_JOB
    from evaluation.programmatic.plain import make_plain
    from evaluation.sandbox import SandboxLimits, run_job

    def run(payload: dict[str, Any]) -> dict[str, Any]:
        sandbox = SandboxLimits(timeout_s=limits.check_timeout_s * len(payload["files"]) + 15.0,
                                memory_mb=limits.memory_mb)
        return run_job(CONVERT_JOB, payload, data_path=None, limits=sandbox)

    return make_plain(files, run=run)


def _error_results(checks: Sequence[ProgrammaticCheck], status: Status, sentence: str) -> list[CheckResult]:
    return [CheckResult(check_id=c.id, task_type=c.task_type, function=c.function, metric=c.metric, status=status,
                        score=0, sentence=sentence) for c in checks]


def by_metric(checks: Sequence[ProgrammaticCheck]) -> tuple[list[ProgrammaticCheck], dict[str, list[str]]]:
    """Upstream's keying (``{item["metric"]: item for item in data_list}``, deeppavlov/DataSciBench
    ``src/utils.py:16``): one check per metric, the last one with that metric, in the place of the first; and
    {kept check id: ids of the checks it replaced}."""
    kept: dict[str, ProgrammaticCheck] = {}
    replaced: dict[str, list[str]] = {}
    for c in checks:
        if c.metric in kept:
            replaced.setdefault(c.id, []).extend([kept[c.metric].id, *replaced.pop(kept[c.metric].id, [])])
        kept[c.metric] = c
    return list(kept.values()), replaced


def run_checks(task: ProgrammaticTaskRelease, outputs: Mapping[str, bytes] | None, *,
               checks: Sequence[ProgrammaticCheck] | None = None, gt: Mapping[str, bytes] | None = None,
               inputs: Mapping[str, bytes] | None = None, mode: str = "default",
               limits: CheckLimits = DEFAULT_CHECK_LIMITS, run: str = "") -> TaskOutcome:
    """Run ``checks`` (default: the task's accepted checks) on one output folder, all in one sandbox job.

    ``outputs`` None means the run has no folder for the task: every check scores 0 with status ``no_output``.
    ``gt`` overrides the task's artifacts (the release gate runs a proposed check against candidate artifacts).
    ``inputs``: the task's input files by their path in the task's folder (reachable as ``../<path>``).
    ``mode``: ``default`` or ``datascibench`` (see the module's docstring).

    Raises:
        SandboxError: the sandbox itself could not run (isolation unavailable).
        ValueError: an unknown mode.
    """
    from evaluation.programmatic.job import JOB_NAME
    from evaluation.sandbox import SandboxLimits, run_job

    if mode not in MODES:
        raise ValueError(f"Unknown mode {mode!r} for programmatic checks; choose {' or '.join(MODES)}.")
    chosen = list(checks) if checks is not None else [c for c in task.checks if c.status == "accepted"]
    replaced: dict[str, list[str]] = {}
    if mode == "datascibench":
        chosen, replaced = by_metric(chosen)
    if outputs is None:
        return _outcome(task.key, run, {}, chosen, _error_results(
            chosen, "no_output", "Error: the run has no output folder for this task, so no check could run."))
    if not chosen:
        return _outcome(task.key, run, outputs, chosen, [])
    plain_outputs = _plain(outputs, limits)
    plain_gt = _plain(gt if gt is not None else artifact_files(task), limits)
    withheld = {**plain_outputs.refused, **{f"gt/{p}": why for p, why in plain_gt.refused.items()}}
    notes = {**{p: "a pickle: the checks read a clean copy of the plain data it holds" for p in plain_outputs.converted},
             **plain_outputs.refused}
    payload = {
        "outputs": {p: base64.b64encode(b).decode("ascii") for p, b in plain_outputs.files.items()},
        "gt": {p: base64.b64encode(b).decode("ascii") for p, b in plain_gt.files.items()},
        "inputs": {p: base64.b64encode(b).decode("ascii") for p, b in (inputs or {}).items()},
        "checks": [{"id": c.id, "code": c.code, "rule": c.rule, "ground_truth": c.ground_truth,
                    "timeout_s": limits.check_timeout_s, "mode": mode} for c in chosen],
        "labels": [f"check {c.id}" for c in chosen],
    }
    sandbox = SandboxLimits(timeout_s=limits.check_timeout_s * len(chosen) + 15.0, memory_mb=limits.memory_mb)
    raw = run_job(JOB_NAME, payload, data_path=None, limits=sandbox)
    items = raw.get("checks") if raw.get("ok") else None
    if not isinstance(items, list) or len(items) != len(chosen):
        why = raw.get("error") or "the sandbox job ended without a result"
        return _outcome(task.key, run, outputs, chosen, _error_results(
            chosen, "sandbox", f"Error: the checks could not run in the sandbox: {why}"), notes)
    results = []
    for check, item in zip(chosen, items, strict=True):
        status, sentence, detail = _sentence(item, check, withheld)
        if item.get("traceback"):  # for whoever runs the server; the reader gets the sentence
            log.info("check %s of task %s (%s): %s\n%s", check.id, task.key, run or "a folder", sentence,
                     item["traceback"])
        if check.id in replaced:
            detail = (f"It replaces check{'s' if len(replaced[check.id]) > 1 else ''} "
                      f"{', '.join(replaced[check.id])} with the same metric (upstream keys checks by metric). "
                      + detail).strip()
        results.append(CheckResult(check_id=check.id, task_type=check.task_type, function=check.function,
                                   metric=check.metric, status=status, score=_score(status), sentence=sentence,
                                   detail=detail, stdout=str(item.get("stdout") or ""),
                                   seconds=float(item.get("seconds") or 0.0)))
    return _outcome(task.key, run, outputs, chosen, results, notes)


def run_many(jobs: Sequence[tuple[ProgrammaticTaskRelease, Mapping[str, bytes] | None, str]], *,
             limits: CheckLimits = DEFAULT_CHECK_LIMITS,
             progress: Callable[[int, int], None] = lambda done, total: None,
             inputs: Mapping[str, Mapping[str, bytes]] | None = None, mode: str = "default") -> list[TaskOutcome]:
    """Run many (task, output folder, run label) jobs, ``limits.workers`` sandbox jobs at a time, in order;
    ``inputs`` by task key."""
    out: list[TaskOutcome | None] = [None] * len(jobs)
    done = 0

    def one(index: int) -> None:
        nonlocal done
        task, outputs, run = jobs[index]
        out[index] = run_checks(task, outputs, limits=limits, run=run, mode=mode,  # SandboxError: no sandbox
                                inputs=(inputs or {}).get(task.key))
        done += 1
        progress(done, len(jobs))

    with ThreadPoolExecutor(max_workers=max(1, limits.workers)) as pool:
        list(pool.map(one, range(len(jobs))))
    return [o for o in out if o is not None]
