"""Score one submission against one release dataset: the glue between reading, transform matching, judging and
the result file. Nothing here raises on a bad analysis: each gets a status and a sentence.

The transform side is plugged in as a :data:`TransformMatcher` (``SubmittedAnalysis -> TransformMatch``), the
function that executes the agent's transform in the sandbox, converts it to units and matches them against the
ground truth (``evaluation/matching/transforms.py``). Without one, transforms are ``not_run`` and score 0.
A :data:`TransformBatch` does the same for all the analyses of the file at once, each analysis's code still in a
process of its own with its own limits (:mod:`evaluation.sandbox.batch`), and is used when given: one sandbox
job instead of one per analysis, the next analysis's code running while this one is judged.

Time is bounded by a :class:`RunBudget`: the matcher is then called with ``timeout_s`` (the per-analysis limit,
or what is left of the run's budget if that is less). An analysis whose code ran past its limit gets the status
``timeout`` (its variables and model still score); once the run's budget has run out, the analyses not reached
(and one whose code the budget cut short) get ``budget_exhausted`` and are not judged, so a file of endless
loops cannot hold a worker past its budget.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from evaluation.judges.analysis import judge_analysis
from evaluation.judges.base import Judge
from evaluation.judges.decisions import GroundTruthDecisions, decisions_from_release, ground_truth_counts
from evaluation.records import BLADE_EXECUTION_FAILED, FailureCategory, RunRecord, TransformMatch, UnitRef
from evaluation.results import AnalysisResult, DatasetResult
from evaluation.submissions import AnalysisStatus, Submission, SubmittedAnalysis, printable
from evaluation.transform_credit import BatchMatch
from exports.schema import DatasetRelease

__all__ = ["JUDGE_ERROR", "RunBudget", "TransformBatch", "TransformMatcher", "score_submission"]

log = logging.getLogger(__name__)

TransformMatcher = Callable[..., TransformMatch]
"""``matcher(analysis) -> TransformMatch``; under a :class:`RunBudget` it is called ``matcher(analysis,
timeout_s=seconds)`` and should give ``status="timeout"`` when the code ran past that limit."""
TransformBatch = Callable[..., Iterator[BatchMatch]]
"""``batch(analyses, timeout_s=..., run_deadline=...) -> Iterator[BatchMatch]``: the matcher of many analyses
(:meth:`evaluation.transform_credit.TransformCredit.match_batch`), one item per analysis, in order."""
JUDGE_ERROR = "judge_error"  # an analysis's status when its judge failed; the message is the judge's sentence


def _seconds(s: float) -> str:
    return f"{s:g} s" if s < 120 else f"{s / 60:g} min"


@dataclass
class RunBudget:
    """The time limits of one scoring run.

    Attributes:
        analysis_s: wall clock an analysis's code may run (converting its transform in the sandbox).
        total_s: wall clock of the whole run from ``started`` (``None``: unbounded); once it has passed, no
            further analysis is scored.
        started: :func:`time.monotonic` when the run started (the ground truth's build counts too).
    """

    analysis_s: float = 60.0
    total_s: float | None = None
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float | None:
        return None if self.total_s is None else self.total_s - (time.monotonic() - self.started)

    def deadline(self) -> float | None:
        """:func:`time.monotonic` when the run's budget runs out (``None``: unbounded)."""
        return None if self.total_s is None else self.started + self.total_s

    def exhausted(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def analysis_timeout(self) -> tuple[float, bool]:
        """The time the next analysis may take, and whether the run's budget (not the per-analysis limit) sets it."""
        left = self.remaining()
        if left is not None and left < self.analysis_s:
            return max(left, 0.001), True
        return self.analysis_s, False

    def ran_out(self, done: int, total: int) -> str:
        return (f"the run's time budget of {_seconds(self.total_s or 0)} ran out after {done} of {total} analyses, "
                "so it was not scored")


def _not_reached(analysis: SubmittedAnalysis, reason: str) -> AnalysisResult:
    message = f"analysis {printable(analysis.key)}: {reason}."
    return AnalysisResult(
        key=analysis.key, status=AnalysisStatus.BUDGET_EXHAUSTED.value, message=message,
        record=RunRecord(key=analysis.key, failure=FailureCategory.BUDGET_EXHAUSTED, failure_message=message,
                         blade_status=BLADE_EXECUTION_FAILED))


def _timed_transform(analysis: SubmittedAnalysis, matcher: TransformMatcher | None,
                     budget: RunBudget | None) -> tuple[TransformMatch, bool]:
    """The transform side, and whether the run's budget cut the code short."""
    if budget is None or matcher is None:
        return _transform(analysis, matcher), False
    timeout, by_budget = budget.analysis_timeout()
    found = _transform(analysis, lambda a: matcher(a, timeout_s=timeout))
    if found.status != "timeout":
        return found, False
    if by_budget:
        return found, True
    return found.model_copy(update={"message": (
        f"analysis {printable(analysis.key)}: its transform code ran longer than the {_seconds(timeout)} limit per "
        "analysis and was stopped; its variables and model are still scored, its transforms score nothing.")}), False


def _reaches_matcher(analysis: SubmittedAnalysis) -> bool:
    return not (analysis.analysis is None or analysis.status == AnalysisStatus.UNKNOWN_DATASET
                or analysis.transform is None)


def _matching_failed(analysis: SubmittedAnalysis, exc: BaseException) -> TransformMatch:
    return TransformMatch(status="failed", message=f"analysis {analysis.key}: transform matching failed: "
                                                   f"{exc.__class__.__name__}: {exc}")


def _batched_transform(analysis: SubmittedAnalysis, item: BatchMatch,
                       budget: RunBudget | None) -> tuple[TransformMatch, bool]:
    """What :func:`_timed_transform` makes of the same analysis, from its item of a batch."""
    if item.error is not None:
        log.error("transform matching failed for analysis %s", analysis.key, exc_info=item.error)
        return _matching_failed(analysis, item.error), False
    if item.match is None:  # the run's deadline came before its code could start
        return TransformMatch(status="timeout", message=""), True
    found = item.match
    if budget is None or found.status != "timeout":
        return found, False
    if item.by_deadline:
        return found, True
    return found.model_copy(update={"message": (
        f"analysis {printable(analysis.key)}: its transform code ran longer than the {_seconds(item.limit_s)} limit "
        "per analysis and was stopped; its variables and model are still scored, its transforms score nothing.")}), False


def _transform(analysis: SubmittedAnalysis, matcher: TransformMatcher | None) -> TransformMatch:
    if analysis.analysis is None or analysis.status == AnalysisStatus.UNKNOWN_DATASET:
        return TransformMatch(status="not_run", message="the analysis was not scored")
    if analysis.transform is None:
        return TransformMatch(status="empty" if analysis.transform_status == "empty" else "failed",
                              message=analysis.transform_message)
    if matcher is None:
        return TransformMatch(status="not_run", message="no transform matcher was configured")
    try:
        return matcher(analysis)
    except Exception as exc:  # noqa: BLE001 - a matcher bug must cost one analysis its transform credit, not the run
        log.exception("transform matching failed for analysis %s", analysis.key)
        return _matching_failed(analysis, exc)


def score_submission(dataset: DatasetRelease, submission: Submission, *, judge: Judge,
                     transform_matcher: TransformMatcher | None = None, units: Sequence[UnitRef] = (),
                     decisions: GroundTruthDecisions | None = None,
                     progress: Callable[[int, int], None] | None = None,
                     budget: RunBudget | None = None,
                     transform_batch: TransformBatch | None = None) -> DatasetResult:
    """Judge every analysis of ``submission`` against ``dataset``.

    Args:
        dataset: the release dataset (variables, models, transforms).
        submission: the parsed submission (its analyses may carry problems already).
        judge: the variable/model judge.
        transform_matcher: see the module docstring.
        units: the ground truth's expanded transform units (ROOT excluded), for the metric constants.
        decisions: the judges' view of the dataset, when already built.
        progress: called with (done, total) after each analysis.
        budget: the run's time limits (see the module docstring); ``None``: the matcher's own limits only.
        transform_batch: the matcher of many analyses at once (see the module docstring), used instead of
            ``transform_matcher`` for the analyses that reach it; same results, far fewer sandbox jobs.
    """
    gt = decisions or decisions_from_release(dataset)
    results: list[AnalysisResult] = []
    total = len(submission.analyses)
    batch: Iterator[BatchMatch] | None = None
    if transform_batch is not None and transform_matcher is not None:
        reaching = [a for a in submission.analyses if _reaches_matcher(a)]
        if reaching:
            batch = transform_batch(reaching, timeout_s=budget.analysis_s if budget else None,
                                    run_deadline=budget.deadline() if budget else None)
    try:
        return _score_each(dataset, submission, gt=gt, judge=judge, matcher=transform_matcher, batch=batch,
                           units=units, progress=progress, budget=budget, results=results, total=total)
    finally:
        if batch is not None:
            close = getattr(batch, "close", None)
            if close is not None:
                close()  # a run stopped early (cancelled) stops the sandbox job too


def _score_each(dataset: DatasetRelease, submission: Submission, *, gt: GroundTruthDecisions, judge: Judge,
                matcher: TransformMatcher | None, batch: Iterator[BatchMatch] | None, units: Sequence[UnitRef],
                progress: Callable[[int, int], None] | None, budget: RunBudget | None,
                results: list[AnalysisResult], total: int) -> DatasetResult:
    out_of_time = ""
    for done, analysis in enumerate(submission.analyses, start=1):
        if not out_of_time and budget is not None and budget.exhausted():
            out_of_time = budget.ran_out(done - 1, total)
        if out_of_time:
            results.append(_not_reached(analysis, out_of_time))
            if progress:
                progress(done, total)
            continue
        if batch is not None and _reaches_matcher(analysis):
            transform, cut = _batched_transform(analysis, next(batch), budget)
        else:
            transform, cut = _timed_transform(analysis, matcher, budget)
        if cut and budget is not None:
            out_of_time = budget.ran_out(done - 1, total)
            results.append(_not_reached(analysis, out_of_time.replace(
                "so it was not scored", "while its transform code ran, so it was not scored")))
            if progress:
                progress(done, total)
            continue
        columns = sorted(transform.column_lineage) or None
        judged = judge_analysis(gt, analysis, judge, transform=transform, frame_columns=columns)
        timed_out = transform.status == "timeout"
        status = AnalysisStatus.TIMEOUT.value if timed_out else analysis.status.value
        message = " ".join(m for m in (analysis.message, transform.message if timed_out else "") if m)
        if judged.record.failure == FailureCategory.JUDGE_FAILED:  # never "ok" with an empty message
            status, message = JUDGE_ERROR, judged.record.failure_message
        results.append(AnalysisResult(
            key=analysis.key, status=status, message=message,
            transform_status=analysis.transform_status.value if analysis.transform_status else None,
            model_status=analysis.model_status.value if analysis.model_status else None,
            record=judged.record, variables=judged.variables, models=judged.models,
            agent_model=judged.agent_model))
        if progress:
            progress(done, total)
    return DatasetResult(dataset=dataset.name, submission=submission.label,
                         counts=ground_truth_counts(dataset, units), analyses=results)
