"""The BLADE-analysis kind ("analyses"): BLADE single- or multi-run files, one per dataset, scored per analysis
against the release's decisions (variables, transforms by value and graph, models), aggregated into BLADE's
metrics with bootstrap CIs (:mod:`evaluation.metrics`), written as an :class:`~evaluation.results.EvaluationResult`.

Transform credit: :func:`transform_matching_for` is the ONE place where the transform matcher and the ground
truth's expanded units are chosen for a release dataset.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.agents import analyses as agent_hook
from evaluation.tasks.base import (
    VERDICT,
    CheckedFile,
    Column,
    FanOutParts,
    ItemKind,
    JobKind,
    LeaderboardSpec,
    RunView,
    ScoredRun,
    ScoringContext,
    ScoringLimits,
    SubmissionCheckError,
    TaskKind,
    VoteQuestion,
    fmt_score,
)
from exports.schema import DatasetRelease, Release

if TYPE_CHECKING:  # the engine (pandas, networkx, numpy) is imported by the functions that score, not to list kinds
    from evaluation.records import UnitRef
    from evaluation.results import EvaluationResult
    from evaluation.scoring import RunBudget, TransformBatch, TransformMatcher
    from evaluation.submissions import Submission

__all__ = [
    "GROUND_TRUTH_TIMEOUT_S",
    "TransformMatching",
    "check_files",
    "combine",
    "leaderboard_values",
    "limits_note",
    "matcher_summary",
    "part_count",
    "score",
    "score_part",
    "scores_summary",
    "summary_line",
    "transform_matching_for",
    "transforms_scored",
]

name = "analyses"
label = "Analyses (BLADE single- or multi-run file, one per dataset)"
item_noun = "analyses"
uses_judge = True
accepts_overrides = True
view: str | None = "analyses"
#: BLADE's review questions (blade-reference 1.5.5, 1.5.6), with the keys the BLADE import uses, so votes cast
#: here export to BLADE's ``annotate_*`` rows unchanged; the first "no" skips the second question
_VERDICT_Q = VoteQuestion(VERDICT, "Overall: is this decision justifiable?",
                          "Justifiable: a reasonable expert could make it. Unjustifiable needs a reason.",
                          answers=("yes", "no"))
_VARIABLE_QUESTIONS = (
    VoteQuestion("can_derive_from_data", "Can this variable be derived from the data?",
                 "Can it be operationalised with the columns of this dataset?"),
    VoteQuestion("is_reasonable", "Is it a reasonable variable to include in the analysis?",
                 skipped_unless="can_derive_from_data"),
    VoteQuestion("is_rationale_reasonable", "Is the rationale sound?"),
    _VERDICT_Q,
)
_TRANSFORM_QUESTIONS = (
    VoteQuestion("is_suited_to_cv", "Does this transform operationalise the conceptual variable?"),
    VoteQuestion("is_steps_reasonable", "Are the steps sound?", skipped_unless="is_suited_to_cv"),
    VoteQuestion("is_rationale_reasonable", "Is the rationale sound?"),
    _VERDICT_Q,
)
#: BLADE's decisions: the conceptual variables and the transforms that operationalise them (a transform is the
#: last step of its path in the graph); analysts write them in stage 1 as rows of their analysis
item_kinds = (
    ItemKind("variable", in_decision_graph=True, subject="Variable", questions=_VARIABLE_QUESTIONS,
             stage1_table="conceptualvariable"),
    ItemKind("transform", in_decision_graph=True, subject="Variable", questions=_TRANSFORM_QUESTIONS,
             stage1_table="transform", step_of_its_path=True),
)
#: an agent run's advice (optional attribute of a kind): BLADE's coverage@10 needs k + 1 = 11 runs per dataset
min_runs_per_task: tuple[int, str] | None = (11, "BLADE's coverage@10 needs at least 11 runs per dataset")

#: decision types in the order the pages show them, with their labels
_SHOWN = {"cvar": "variables", "value": "transforms (value)", "graph": "transforms (graph)",
          "model": "models", "model_cvar": "models + variables"}
leaderboard = LeaderboardSpec(
    role="ranked", sort_key="weighted",
    columns=(Column("weighted", "weighted", "ci"),
             *(Column(f"f1.{t}", f"F1 {lab}", "ci") for t, lab in _SHOWN.items()),
             *(Column(f"precision.{t}", f"precision {lab}") for t, lab in _SHOWN.items()),
             *(Column(f"coverage.{t}", f"coverage@k {lab}") for t, lab in _SHOWN.items()),
             Column("failures", "failures", "text"), Column("analyses", "analyses", "count")))

#: How long building a dataset's ground truth (the experts' code, once per release dataset) may take at most.
GROUND_TRUTH_TIMEOUT_S = 300.0


# ------------------------------------------------------------------------------------ submission format


def check_files(files: Sequence[tuple[str, bytes]], release: Release, *,
                max_items: int | None) -> list[CheckedFile]:
    """Each file a BLADE submission for a dataset of ``release``, one per dataset, each with analyses.

    Raises:
        SubmissionError: a file is not a readable BLADE submission (which file, where).
        SubmissionCheckError: too many analyses, a dataset the release lacks, two files for one dataset, none
            to score.
    """
    from evaluation.submissions import TooManyAnalyses, parse_submission, printable

    names = [d.name for d in release.datasets]
    out: list[CheckedFile] = []
    seen: dict[str, str] = {}
    for fname, data in files:
        try:
            sub = parse_submission(data, label=fname, max_analyses=max_items)  # SubmissionError when unreadable
        except TooManyAnalyses as exc:
            raise SubmissionCheckError(f"{exc} Split it into several runs, or ask an administrator to raise "
                                       "FORKPATHS_MAX_ANALYSES_PER_SUBMISSION. Nothing was stored.") from exc
        shown, dataset = printable(fname), printable(sub.dataset_name)
        if sub.dataset_name not in names:
            raise SubmissionCheckError(
                f"{shown} is a submission for dataset '{dataset}', which release {release.version} does not have "
                f"(it has: {', '.join(names) or 'no datasets'}). Nothing was stored.")
        if sub.dataset_name in seen:
            raise SubmissionCheckError(f"{shown} and {printable(seen[sub.dataset_name])} are both for dataset "
                                       f"'{dataset}'; a run holds one submission per dataset.")
        seen[sub.dataset_name] = fname
        if not sub.analyses:
            raise SubmissionCheckError(f"{shown} has no analyses to score.")
        out.append(CheckedFile(fname, data, dataset=sub.dataset_name, format=sub.format, items=len(sub.analyses)))
    return out


# ------------------------------------------------------------------------------------ transform matching


@dataclass(frozen=True)
class TransformMatching:
    """What scores the transform side of one release dataset: the matcher, the ground truth's expanded units
    (ROOT excluded) and how to describe both in the result's provenance."""

    matcher: TransformMatcher
    units: Sequence[UnitRef] = ()
    description: dict[str, Any] = field(default_factory=dict)
    batch: TransformBatch | None = None
    """The same matcher for many analyses in few sandbox jobs (what scoring uses)."""


def transform_matching_for(release_dataset: DatasetRelease, release_folder: Path, *, cache_dir: Path | None,
                           mode: str, limits: ScoringLimits | None = None,
                           budget: RunBudget | None = None) -> TransformMatching:
    """THE seam for transform credit: the dataset's ground truth (built once, then from the cache in the data
    folder, keyed by its content, the evaluator and library versions) and the value + graph matcher, which
    converts each analysis's transform code into units in the sandbox, within ``limits``. ``blade`` mode matches
    as BLADE does (only the last isomorphism class per WL bucket). The ground truth's build counts against the
    run's ``budget``."""
    from evaluation.groundtruth.runner import GroundTruthLimits
    from evaluation.transform_credit import transform_credit
    from exports.native import release_data_path

    limits = limits or ScoringLimits()
    left = budget.remaining() if budget is not None else None
    build = GroundTruthLimits(timeout_s=max(min(GROUND_TRUTH_TIMEOUT_S, left), 0.001) if left is not None
                              else GROUND_TRUTH_TIMEOUT_S)
    credit = transform_credit(release_dataset, release_data_path(release_folder, release_dataset),
                              cache_dir=cache_dir, blade_compat=mode == "blade", limits=build,
                              analysis_limits=GroundTruthLimits(timeout_s=limits.analysis_timeout_s,
                                                                memory_mb=limits.memory_mb))
    return TransformMatching(matcher=credit.match, units=tuple(credit.units), description=credit.description,
                             batch=credit.match_batch)


def matcher_summary(described: dict[str, dict[str, Any]], mode: str) -> dict[str, Any]:
    """The run's transform matcher: its name and mode, and which datasets' transforms could not be scored (each
    dataset's own description, with its ground-truth build, is in its DatasetResult)."""
    from evaluation.transform_credit import MATCHER_NAME as TRANSFORM_MATCHER_NAME

    not_run = sorted(n for n, d in described.items() if d.get("status") == "not_run")
    out: dict[str, Any] = {"name": TRANSFORM_MATCHER_NAME, "blade_compat": mode == "blade",
                           "datasets": sorted(described)}
    if not_run:
        out |= {"status": "not_run" if len(not_run) == len(described) else "partial", "not_run": not_run,
                "reason": " ".join(str(described[n].get("reason", "")) for n in not_run)}
    return out


# ------------------------------------------------------------------------------------ scoring and aggregation


def score(ctx: ScoringContext) -> ScoredRun:
    """Score every analysis of every file, dataset after dataset, reporting progress after each analysis: the
    same parts a fanned-out run scores on several workers (:func:`score_part`), combined the same way
    (:func:`combine`), so both give the same result file."""
    # each file is read once: the count for the progress, then the scoring, from the same parsed submission
    subs = [_parse(ctx, index) for index in range(len(ctx.files))]
    total = sum(len(sub.analyses) for sub in subs)
    parts: list[str] = []
    done_before = 0
    for index, sub in enumerate(subs):
        def tick(done: int, _total: int, stage: str, *, base: int = done_before) -> None:
            ctx.progress(base + done, total, stage)

        parts.append(score_part(ctx, index, progress=tick, submission=sub))
        done_before += len(sub.analyses)
    return combine(ctx, parts)


def _parse(ctx: ScoringContext, index: int) -> Submission:
    from evaluation.submissions import parse_submission

    fname, data = ctx.files[index]
    return parse_submission(data, label=fname, known_datasets=[d.name for d in ctx.release.datasets])


def part_count(ctx: ScoringContext) -> int:
    """How many parts a run of this kind fans out into: one per submission file (one dataset each)."""
    return len(ctx.files)


def score_part(ctx: ScoringContext, index: int,
               progress: Callable[[int, int, str], None] | None = None, *,
               submission: Submission | None = None) -> str:
    """Score the run's ``index``-th file (one dataset) on its own: what one worker does for a fanned-out run.
    Returns the part's result as text (its DatasetResult), which :func:`combine` reads back. ``submission``:
    that file already parsed (by :func:`score`), else it is parsed here."""
    from evaluation.scoring import score_submission

    sub = submission if submission is not None else _parse(ctx, index)
    ds = next(d for d in ctx.release.datasets if d.name == sub.dataset_name)
    report = progress or ctx.progress
    matching = transform_matching_for(ds, ctx.release_folder, cache_dir=ctx.gt_cache, mode=ctx.mode,
                                      limits=ctx.limits, budget=ctx.budget)

    def tick(done: int, total: int) -> None:
        report(done, total, f"{ds.name}: analysis {done} of {total}")

    scored = score_submission(ds, sub, judge=ctx.judge(), transform_matcher=matching.matcher, units=matching.units,
                              progress=tick, budget=ctx.budget, transform_batch=matching.batch)
    scored.transform_matcher = matching.description
    return scored.model_dump_json()


def combine(ctx: ScoringContext, parts: Sequence[str]) -> ScoredRun:
    """The run's result from its parts, taken in the order of its files whatever order they were scored in."""
    from evaluation.results import DatasetResult, build_result, dump_result

    results = [DatasetResult.model_validate_json(p) for p in parts]
    judge = ctx.judge()
    described = {r.dataset: r.transform_matcher for r in results}
    result = build_result(results, release_version=ctx.release.version, ground_truth_hash=ctx.ground_truth_hash,
                          judge=judge.configuration(),
                          transform_matcher={**matcher_summary(described, ctx.mode), "limits": ctx.limits.describe()},
                          mode=ctx.mode, k=ctx.k)  # type: ignore[arg-type]
    return ScoredRun(result_name="result.json", result_bytes=dump_result(result).encode("utf-8"),
                     scores=scores_summary(result, fresh_overall=True), items=sum(len(r.analyses) for r in results),
                     message=limits_note(result, ctx.limits),
                     run_fields={"transform_matcher": result.provenance.transform_matcher})


def scores_summary(result: EvaluationResult, n_bootstrap: int | None = None, *,
                   fresh_overall: bool = False) -> dict[str, Any]:
    """What the leaderboard reads: the overall scores and each dataset's own scores (with bootstrap CIs).

    ``fresh_overall``: ``result.scores`` were just computed from these very analyses with the result's own
    parameters (:func:`build_result`), so they are the overall scores and are not bootstrapped again. A result
    of one dataset has the overall scores as that dataset's own (the same inputs)."""
    from evaluation.metrics import DatasetRuns, score_runs

    p = result.provenance
    nb = p.n_bootstrap if n_bootstrap is None else n_bootstrap

    def scored(datasets: list[Any]) -> dict[str, Any]:
        return score_runs([DatasetRuns(counts=d.counts, runs=[a.record for a in d.analyses]) for d in datasets],
                          mode=p.mode, k=p.k, n_bootstrap=nb, seed=p.seed).model_dump(mode="json")

    reuse = fresh_overall and nb == p.n_bootstrap
    overall = result.scores.model_dump(mode="json") if reuse else scored(list(result.datasets))
    per = {d.dataset: copy.deepcopy(overall) if len(result.datasets) == 1 else scored([d]) for d in result.datasets}
    return {"overall": overall, "datasets": per}


def limits_note(result: EvaluationResult, limits: ScoringLimits) -> str:
    """A sentence for the run's record when its limits cost analyses their scores ("" otherwise)."""
    statuses = [a.status for d in result.datasets for a in d.analyses]
    timed_out, not_reached = statuses.count("timeout"), statuses.count("budget_exhausted")
    parts = []
    if timed_out:
        parts.append(f"{timed_out} {'analysis' if timed_out == 1 else 'analyses'} ran longer than the "
                     f"{limits.analysis_timeout_s:g} s limit per analysis (FORKPATHS_SCORE_ANALYSIS_TIMEOUT_S) and "
                     f"{'has' if timed_out == 1 else 'have'} the status 'timeout'")
    if not_reached:
        parts.append(f"the run's time budget of {limits.run_budget_s:g} s (FORKPATHS_SCORE_RUN_BUDGET_S) ran out "
                     f"with {not_reached} of {len(statuses)} analyses not scored (status 'budget_exhausted', "
                     "counted as scoring 0)")
    if not parts:
        return ""
    text = "; ".join(parts) + "."
    return text[0].upper() + text[1:]


# ------------------------------------------------------------------------------------ leaderboard and terminal


def transforms_scored(matcher: dict[str, Any], dataset: str | None) -> bool:
    """Whether a run's transform credit was computed (for ``dataset``, or for every dataset of the run): a run
    where some datasets' ground truth could not be built says which (status ``partial``)."""
    status = matcher.get("status")
    if dataset:
        return status != "not_run" and dataset not in (matcher.get("not_run") or [])
    return status not in ("not_run", "partial")


def _estimate(scores: Mapping[str, Any], key: str) -> tuple[float | None, float | None, float | None]:
    e = scores.get("bootstrap", {}).get(key) or {}
    return e.get("point"), e.get("ci_low"), e.get("ci_high")


def leaderboard_values(run: RunView, dataset: str | None) -> dict[str, Any] | None:
    """Per decision type F1 with its 95 % bootstrap interval, precision and coverage@k; the weighted score with
    its interval; failures by category; how many analyses. ``dataset`` restricts them to that dataset."""
    from evaluation.metrics import DECISION_TYPES

    summary = run.scores_effective or {}
    scores = summary.get("datasets", {}).get(dataset) if dataset else summary.get("overall")
    if scores is None:
        return None
    row: dict[str, Any] = {"transforms_scored": transforms_scored(run.transform_matcher, dataset),
                           "analyses": sum(d["runs_submitted"] for d in scores.get("datasets", []))}
    for t in DECISION_TYPES:
        point, lo, hi = _estimate(scores, f"f1.{t}")
        row[f"f1.{t}"] = scores["f1"].get(t) if point is None else point
        row[f"f1.{t}.low"], row[f"f1.{t}.high"] = lo, hi
        row[f"precision.{t}"] = scores["precision"].get(t)
        row[f"coverage.{t}"] = scores["coverage"].get(t)
    w = scores.get("weighted", {})
    row["weighted"], row["weighted.low"], row["weighted.high"] = w.get("point"), w.get("ci_low"), w.get("ci_high")
    row["failures"] = ", ".join(f"{k}: {v}" for k, v in sorted(scores.get("failures", {}).items())) or ""
    return row


def summary_line(scores: Mapping[str, Any]) -> str:
    o = scores.get("overall", {})
    f1 = o.get("f1", {})
    w = o.get("weighted", {})
    point, low, high = (fmt_score(w.get(x)) for x in ("point", "ci_low", "ci_high"))
    return (f"weighted {point} [{low}, {high}]  "
            + "  ".join(f"F1 {t} {fmt_score(f1.get(t))}" for t in ("cvar", "value", "graph", "model", "model_cvar")))


KIND = TaskKind(name=name, label=label, item_noun=item_noun, leaderboard=leaderboard, check_files=check_files,
                score=score, leaderboard_values=leaderboard_values, summary_line=summary_line, uses_judge=uses_judge,
                accepts_overrides=accepts_overrides, view=view, order=10, stages="analyses_stages",
                min_runs_per_task=min_runs_per_task, item_kinds=item_kinds, modes=("default", "blade"), uses_k=True,
                fan_out=FanOutParts(count=part_count, score_part=score_part, combine=combine), agent=agent_hook,
                jobs=(JobKind("llm_alternatives", "curation.services.analyses.llm_alternatives:run_generation_job"),),
                judged={"variable": "variable matching", "model": "model matching"},
                engine_modules=("evaluation.groundtruth.jobs", "evaluation.groundtruth.convert_job"))
