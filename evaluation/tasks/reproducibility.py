"""The reproducibility kind ("reproducibility", AIRepr's facet): can an inspector redo an analysis from its
workflow alone?

Why a kind of its own, and a companion: reproducibility is a property of the *same* submission a ranked kind
scores (a BLADE submission whose analyses carry ``workflow``, a hypotheses submission with code, an agent run made
with ``--workflow``), judged by an LLM on a different question with its own outcomes. Folding it into the
analyses kind would tie BLADE's scoring to an LLM and to one submission format; as a companion kind its runs are
registered from the same files (``forkpaths reproduce RUN`` copies a scored run's files; the Runs page takes the
files directly), judged and overridden on their own, and its latest run per agent and model adds its columns
(the rate with its CI, and the other outcomes counted beside it) to that agent's ranked rows, as the MCQ kind does.

Its items, outcomes, sandbox runs and the inspector are in :mod:`evaluation.reproducibility`; this module is the
registry's face of it: file checks, scoring a run, leaderboard values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.errors import EvaluationError
from evaluation.reproducibility.items import ItemsError, items_of_files
from evaluation.reproducibility.models import ReproResult
from evaluation.tasks.base import (
    CheckedFile,
    Column,
    LeaderboardSpec,
    RunView,
    ScoredRun,
    ScoringContext,
    SubmissionCheckError,
    TaskKind,
    fmt_score,
)
from exports.schema import Release

__all__ = ["check_files", "leaderboard_values", "score", "summary_line"]

name = "reproducibility"
label = "Reproducibility (an inspector redoes each analysis from its workflow)"
item_noun = "workflow items"
uses_judge = False
accepts_overrides = False  # its overrides are of outcomes, kept by curation.services.reproducibility
view: str | None = "reproducibility"
llm_role = "inspector"
leaderboard = LeaderboardSpec(role="companion", columns=(
    Column("repro_rate", "reproducibility", "ci",
           help="reproducible / (reproducible + not reproducible), 95 % bootstrap CI"),
    Column("repro_not", "not reproducible", "count"),
    Column("repro_original_failed", "original code does not run", "count"),
    Column("repro_inspector_failed", "inspector failed", "count"),
    Column("repro_accuracy", "accuracy (gold)", "number", help="final answers graded correct, where a gold exists"),
))


def check_files(files: Sequence[tuple[str, bytes]], release: Release, *,
                max_items: int | None) -> list[CheckedFile]:
    """BLADE submissions, hypotheses files or AIRepr's result files, with at least one qualifying item.

    Raises:
        SubmissionCheckError: a file cannot be read (which file, where), or nothing in them qualifies.
        SubmissionError: a BLADE file that cannot be read.
    """
    try:
        parts = items_of_files(files, release, max_items=max_items)
    except ItemsError as exc:
        raise SubmissionCheckError(f"{exc} Nothing was stored.") from exc
    total = sum(len(p.items) for p in parts)
    if total == 0:
        raise SubmissionCheckError(
            "None of these files holds an item with a workflow to reproduce: a BLADE analysis needs a 'workflow' "
            "field, a hypotheses answer needs 'code' (and a 'workflow'). Nothing was stored.")
    counts = {p.name: len(p.items) for p in parts}
    return [CheckedFile(n, d, dataset=None, format="reproducibility", items=counts.get(n)) for n, d in files]


def score(ctx: ScoringContext) -> ScoredRun:
    """Judge every qualifying item (both codes in the sandbox, at most three inspector calls each)."""
    from evaluation.reproducibility.inspector import Inspector, judge_item
    from evaluation.reproducibility.script_job import run_script
    from evaluation.reproducibility.summary import scores_of  # numpy: loaded to score, not to list the kinds
    from evaluation.sandbox import SandboxLimits

    if ctx.llm is None:
        raise EvaluationError("A reproducibility run needs the inspector model: set FORKPATHS_LLM_BASE_URL and "
                              "FORKPATHS_LLM_MODEL.")
    inspector = Inspector(ctx.llm())
    parts = items_of_files(ctx.files, ctx.release)
    items = [i for p in parts for i in p.items]
    limits = SandboxLimits(timeout_s=ctx.limits.analysis_timeout_s, memory_mb=ctx.limits.memory_mb)

    def runner(code: str, files: Any, who: str) -> dict[str, Any]:
        return run_script(code, files, limits=limits, who=who)

    results, unjudged = [], []
    for n, item in enumerate(items):
        ctx.progress(n, len(items), f"item {n + 1} of {len(items)}: {item.key}")
        if ctx.budget.exhausted():  # not an outcome of the item: it was never judged, and the run says so
            unjudged.append(f"{item.key}: not judged, the run's time budget ran out")
            continue
        results.append(judge_item(item, inspector=inspector, runner=runner, release_folder=ctx.release_folder))
    ctx.progress(len(items), len(items), "done")
    result = ReproResult(release_version=ctx.release.version, inspector=inspector.describe(),
                         limits={"timeout_s": limits.timeout_s, "memory_mb": limits.memory_mb},
                         items=results, skipped=[s for p in parts for s in p.skipped] + unjudged)
    calls = sum(r.calls for r in results)
    budget_note = (f" The run's time budget of {ctx.limits.run_budget_s:g} s (FORKPATHS_SCORE_RUN_BUDGET_S) ran "
                   f"out: {len(unjudged)} of {len(items)} items were not judged." if unjudged else "")
    return ScoredRun(result_name="reproducibility.json", result_bytes=result.model_dump_json(indent=1).encode(),
                     scores=scores_of(result), items=len(results),
                     message=f"{calls} inspector call(s) sent, {sum(r.cached for r in results)} answered from the "
                             "cache." + budget_note,
                     run_fields={"judge": {"name": llm_role, **inspector.describe()}})


def leaderboard_values(run: RunView, dataset: str | None) -> dict[str, Any] | None:
    r = (run.scores_effective or {}).get("reproducibility") or {}
    if dataset:
        r = r.get("datasets", {}).get(dataset) or {}
    if not r:
        return None
    rate, counts = r.get("rate") or {}, r.get("counts") or {}
    return {"repro_rate": rate.get("point"), "repro_rate.low": rate.get("ci_low"),
            "repro_rate.high": rate.get("ci_high"), "repro_not": counts.get("not_reproducible"),
            "repro_original_failed": counts.get("original_failed"),
            "repro_inspector_failed": counts.get("inspector_failed"),
            "repro_accuracy": (r.get("accuracy") or {}).get("point")}


def summary_line(scores: Mapping[str, Any]) -> str:
    r = scores.get("reproducibility", {})
    rate, counts = r.get("rate", {}), r.get("counts", {})
    acc = r.get("accuracy", {})
    return (f"reproducibility {fmt_score(rate.get('point'))} [{fmt_score(rate.get('ci_low'))}, "
            f"{fmt_score(rate.get('ci_high'))}] over {r.get('judged', 0)} judged; "
            f"reproducible {counts.get('reproducible', 0)}, not reproducible {counts.get('not_reproducible', 0)}, "
            f"original code does not run {counts.get('original_failed', 0)}, inspector failed "
            f"{counts.get('inspector_failed', 0)}"
            + (f"; accuracy {fmt_score(acc.get('point'))} ({acc.get('graded', 0)} graded, "
               f"{acc.get('not_judged', 0)} not judged)" if acc.get("graded") or acc.get("not_judged") else ""))


KIND = TaskKind(name=name, label=label, item_noun=item_noun, leaderboard=leaderboard, check_files=check_files,
                score=score, leaderboard_values=leaderboard_values, summary_line=summary_line, uses_judge=uses_judge,
                accepts_overrides=accepts_overrides, view=view, order=50,
                llm_role=llm_role, judged={name: "reproducibility verdicts (inspector)"},
                engine_modules=("evaluation.reproducibility.script_job",))
