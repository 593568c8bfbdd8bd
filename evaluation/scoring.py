"""Score one submission against one release dataset: the glue between reading, transform matching, judging and
the result file. Nothing here raises on a bad analysis: each gets a status and a sentence.

The transform side is plugged in as a :data:`TransformMatcher` (``SubmittedAnalysis -> TransformMatch``), the
function that executes the agent's transform in the sandbox, converts it to units and matches them against the
ground truth (``evaluation/matching/transforms.py``). Without one, transforms are ``not_run`` and score 0.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from evaluation.judges.analysis import judge_analysis
from evaluation.judges.base import Judge
from evaluation.judges.decisions import GroundTruthDecisions, decisions_from_release, ground_truth_counts
from evaluation.records import FailureCategory, TransformMatch, UnitRef
from evaluation.results import AnalysisResult, DatasetResult
from evaluation.submissions import AnalysisStatus, Submission, SubmittedAnalysis
from exports.schema import DatasetRelease

__all__ = ["JUDGE_ERROR", "TransformMatcher", "score_submission"]

log = logging.getLogger(__name__)

TransformMatcher = Callable[[SubmittedAnalysis], TransformMatch]
JUDGE_ERROR = "judge_error"  # an analysis's status when its judge failed; the message is the judge's sentence


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
        return TransformMatch(status="failed",
                              message=f"analysis {analysis.key}: transform matching failed: "
                                      f"{exc.__class__.__name__}: {exc}")


def score_submission(dataset: DatasetRelease, submission: Submission, *, judge: Judge,
                     transform_matcher: TransformMatcher | None = None, units: Sequence[UnitRef] = (),
                     decisions: GroundTruthDecisions | None = None,
                     progress: Callable[[int, int], None] | None = None) -> DatasetResult:
    """Judge every analysis of ``submission`` against ``dataset``.

    Args:
        dataset: the release dataset (variables, models, transforms).
        submission: the parsed submission (its analyses may carry problems already).
        judge: the variable/model judge.
        transform_matcher: see the module docstring.
        units: the ground truth's expanded transform units (ROOT excluded), for the metric constants.
        decisions: the judges' view of the dataset, when already built.
        progress: called with (done, total) after each analysis.
    """
    gt = decisions or decisions_from_release(dataset)
    results: list[AnalysisResult] = []
    total = len(submission.analyses)
    for done, analysis in enumerate(submission.analyses, start=1):
        transform = _transform(analysis, transform_matcher)
        columns = sorted(transform.column_lineage) or None
        judged = judge_analysis(gt, analysis, judge, transform=transform, frame_columns=columns)
        status, message = analysis.status.value, analysis.message
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
