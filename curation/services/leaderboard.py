"""Reading scored runs: the leaderboard per release, stale scores, drill-down, human overrides, paired comparison.

The leaderboard reads the scores stored on each run (no result file is opened), so it renders fast with many
runs. Overrides never touch the engine's result file: they are rows of their own, and the run's effective scores
are recomputed from the result with every override applied (:func:`evaluation.results.reaggregate`).
"""

from __future__ import annotations

import csv
import io
import logging
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.errors import OverrideConflict, ScoringError
from curation.models import AgentRun, ReleaseRecord, RunStatus, ScoreOverride, ScoringRun, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import blind_datasets, refuse_if_blind, release_holding
from curation.services.scoring import (
    SCORING_ROLES,
    get_run,
    kind_of,
    release_by_record,
    release_gt_hashes,
    scores_summary,
    stored_result,
    stored_submissions,
)
from evaluation.overrides import OverrideError, OverrideSpec, apply_overrides, find_item, original_value
from evaluation.paired import PairedComparison, compare_runs
from evaluation.results import EvaluationResult, parse_result
from evaluation.submissions import SubmittedAnalysis, parse_submission
from evaluation.tasks import Column, companion_kinds, ranked_kinds

__all__ = [
    "DECISION_LABELS",
    "StaleInfo",
    "add_override",
    "compare_run_results",
    "effective_result",
    "leaderboard",
    "leaderboard_columns",
    "leaderboard_csv",
    "submitted_analyses",
    "list_overrides",
    "run_result",
    "stale_scores",
    "viewable_result",
]

log = logging.getLogger(__name__)

DECISION_LABELS = {"cvar": "variables", "value": "transforms (value)", "graph": "transforms (graph)",
                   "model": "models", "model_cvar": "models + variables"}

# (manifest sha256, run kind) → dataset ground-truth hashes for runs of that kind (releases never change)
_HASHES: dict[tuple[str, str], dict[str, str]] = {}


def _release_hashes(session: Session, record: ReleaseRecord, artifacts: ArtifactStore, kind: str) -> dict[str, str]:
    key = (record.manifest_sha256, kind)
    if key not in _HASHES:
        _HASHES[key] = release_gt_hashes(release_by_record(session=session, record=record,
                                                           artifacts=artifacts), kind)
    return _HASHES[key]


def _semver(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split(".") if x.isdigit())


@dataclass(frozen=True)
class StaleInfo:
    latest_version: str
    changed: tuple[str, ...]

    @property
    def sentence(self) -> str:
        return (f"Scored on an older ground truth: {', '.join(self.changed)} changed in release "
                f"{self.latest_version}. Re-score to compare.")


def stale_scores(*, session: Session, runs: list[ScoringRun], artifacts: ArtifactStore,
                 against: str | None = None) -> dict[int, StaleInfo]:
    """Runs whose datasets' ground truth differs in release ``against`` (default: the latest); old numbers stay,
    labelled with the release they were scored on."""
    records = session.exec(select(ReleaseRecord)).all()
    if not records:
        return {}
    latest = max(records, key=lambda r: _semver(r.version))
    if against is not None:
        latest = next((r for r in records if r.version == against), latest)
    if all(run.release_version == latest.version for run in runs):
        return {}
    out: dict[int, StaleInfo] = {}
    for run in runs:
        if run.release_version == latest.version:
            continue
        try:  # a run's hashes cover what runs of its kind depend on (scoring.dataset_gt_hash)
            hashes = _release_hashes(session, latest, artifacts, run.kind)
        except Exception as exc:  # noqa: BLE001 - a broken latest release must not hide the leaderboard
            log.warning("cannot read release %s for stale checks: %s", latest.version, exc)
            return {}
        # a dataset the latest release does not hold (a release of other datasets, e.g. DiscoveryBench only) has
        # not changed: only a dataset released again with another ground truth makes the run's numbers stale
        changed = tuple(sorted(d for d, h in run.dataset_hashes.items() if d in hashes and hashes[d] != h))
        if changed:
            out[run.id or 0] = StaleInfo(latest.version, changed)
    return out


@judges_actor
def leaderboard(*, session: Session, actor: User, release_version: str, artifacts: ArtifactStore,
                dataset: str | None = None, official_only: bool = False,
                include_older: bool = False, kind: str | None = None) -> list[dict[str, Any]]:
    """One row per succeeded run of a ranked kind (``kind``, default the first registered: BLADE analyses) on
    ``release_version``, best first by the kind's sort key.

    Columns: run, agent, model, judge, mode, official, overrides, stale, then the kind's own leaderboard values
    (for analyses: per decision type F1 with its 95 % bootstrap interval, precision and coverage@k; the weighted
    score with its interval; failures by category), then the columns of the companion kinds from the agent's
    latest run of each on the same release (the MCQ accuracy). ``dataset`` restricts every figure to that dataset.
    ``include_older`` adds the runs scored on older releases, labelled with their release and, where that
    dataset's ground truth differs in ``release_version``, as stale.
    """
    require_role(actor, *SCORING_ROLES)
    stmt = select(ScoringRun).where(ScoringRun.status == RunStatus.SUCCEEDED.value)
    if not include_older:
        stmt = stmt.where(ScoringRun.release_version == release_version)
    runs = [r for r in session.exec(stmt.order_by(col(ScoringRun.id))).all()
            if _semver(r.release_version) <= _semver(release_version)]
    if dataset:
        runs = [r for r in runs if dataset in r.dataset_hashes]
    ranked = kind_of(kind) if kind else ranked_kinds()[0]
    # companion kinds (MCQs): the latest run per (agent, model) on this release adds its columns to the rows
    companion: dict[tuple[str, str], dict[str, Any]] = {}
    blanks = {c.key: None for k in companion_kinds() for c in k.leaderboard.columns}
    for r in runs:
        task = kind_of(r.kind)
        if task.leaderboard.role == "companion" and r.scores_effective and r.release_version == release_version:
            companion.setdefault((r.agent, r.model_name), {}).update(task.leaderboard_values(r, dataset) or {})
    ranked_runs = [r for r in runs if r.kind == ranked.name and r.scores_effective]
    if official_only:
        ranked_runs = [r for r in ranked_runs if r.official]
    override_counts: dict[int, int] = {}
    if ranked_runs:
        for o in session.exec(select(ScoreOverride.run_id).where(
                col(ScoreOverride.run_id).in_([r.id for r in ranked_runs]))).all():
            override_counts[o] = override_counts.get(o, 0) + 1
    stale = stale_scores(session=session, runs=ranked_runs, artifacts=artifacts)  # vs the latest
    agents = _agent_runs(session, ranked_runs)
    rows = []
    for r in ranked_runs:
        values = ranked.leaderboard_values(r, dataset)
        if values is None:
            continue
        rows.append({"run": r.id, "release": r.release_version, "agent": r.agent, "model": r.model_name,
                     "judge": r.judge.get("name", ""), "mode": r.mode, "official": r.official,
                     "overrides": override_counts.get(r.id or 0, 0),
                     "stale": stale[r.id or 0].sentence if (r.id or 0) in stale else "",
                     **agents.get(r.agent_run_id or 0, _NO_AGENT_RUN),
                     **values, **blanks, **companion.get((r.agent, r.model_name), {})})
    key = ranked.leaderboard.sort_key
    rows.sort(key=lambda x: (x.get(key) is None, -(x.get(key) or 0.0), x["run"]))
    return rows


def leaderboard_columns(rows: list[dict[str, Any]], *, kind: str | None = None) -> list[Column]:
    """The columns to show for :func:`leaderboard` rows of ``kind`` (default the first ranked kind): the kind's
    own, then each companion kind's column where some row has a value. Every row carries every companion column
    (blank where the agent never ran that kind), but a column of blanks beside a kind whose agents were never
    asked MCQs or checked for reproducibility says nothing."""
    ranked = kind_of(kind) if kind else ranked_kinds()[0]
    companions = [c for k in companion_kinds() for c in k.leaderboard.columns]
    return [*ranked.leaderboard.columns, *(c for c in companions if any(r.get(c.key) is not None for r in rows))]


_NO_AGENT_RUN: dict[str, Any] = {"strategy": "", "cost": None, "agent_run": None}


def _agent_runs(session: Session, runs: list[ScoringRun]) -> dict[int, dict[str, Any]]:
    """The strategy and cost of the agent runs that generated these runs' submissions (by agent run id)."""
    ids = {r.agent_run_id for r in runs if r.agent_run_id}
    if not ids:
        return {}
    return {a.id or 0: {"strategy": a.strategy + (" + workflow" if a.workflow else ""), "cost": a.cost,
                        "agent_run": a.id}
            for a in session.exec(select(AgentRun).where(col(AgentRun.id).in_(ids))).all()}


def leaderboard_csv(rows: list[dict[str, Any]]) -> str:
    """The leaderboard rows as CSV: one column per field of any row, in the order first seen (rows differ: a run
    with a reproducibility facet carries its rate and CI, one without does not); a field a row lacks is empty."""
    buffer = io.StringIO()
    if rows:
        fields = list(dict.fromkeys(k for r in rows for k in r))
        writer = csv.DictWriter(buffer, fieldnames=fields, lineterminator="\n", restval="")
        writer.writeheader()
        writer.writerows(rows)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------ drill-down and overrides


@judges_actor
def submitted_analyses(*, session: Session, actor: User, run_id: int, artifacts: ArtifactStore,
                       ) -> dict[tuple[str, str], SubmittedAnalysis]:
    """The run's analyses as submitted (code, variables), keyed by (dataset, analysis key)."""
    run = get_run(session=session, actor=actor, run_id=run_id)
    out: dict[tuple[str, str], SubmittedAnalysis] = {}
    if not kind_of(run.kind).accepts_overrides:
        return out
    for name, data in stored_submissions(run, artifacts):
        sub = parse_submission(data, label=name)
        for a in sub.analyses:
            out[(sub.dataset_name, a.key)] = a
    return out


@judges_actor
def run_result(*, session: Session, actor: User, run_id: int, artifacts: ArtifactStore) -> EvaluationResult:
    """The engine's result file of a succeeded run, as written (no overrides)."""
    run = get_run(session=session, actor=actor, run_id=run_id)
    if run.status != RunStatus.SUCCEEDED.value or not run.result_sha256 or not kind_of(run.kind).accepts_overrides:
        raise ScoringError(f"Run {run_id} has no analysis result ({run.kind} run, {run.status}).")
    return parse_result(stored_result(run, artifacts), label=f"the result of run {run_id}")


@judges_actor
def list_overrides(*, session: Session, actor: User, run_id: int) -> list[ScoreOverride]:
    require_role(actor, *SCORING_ROLES)
    stmt = select(ScoreOverride).where(ScoreOverride.run_id == run_id).order_by(col(ScoreOverride.id))
    return list(session.exec(stmt).all())


def _specs(overrides: list[ScoreOverride]) -> list[OverrideSpec]:
    return [OverrideSpec(dataset=o.dataset, analysis_key=o.analysis_key, kind=o.kind, item=o.item,  # type: ignore[arg-type]
                         value=o.value) for o in overrides]


@judges_actor
def effective_result(*, session: Session, actor: User, run_id: int, artifacts: ArtifactStore) -> EvaluationResult:
    """The run's result with every override applied (what its effective scores are computed from)."""
    result = run_result(session=session, actor=actor, run_id=run_id, artifacts=artifacts)
    return apply_overrides(result, _specs(list_overrides(session=session, actor=actor, run_id=run_id)))


@judges_actor
def viewable_result(*, session: Session, actor: User, run_id: int, artifacts: ArtifactStore,
                    ) -> tuple[EvaluationResult, dict[str, str]]:
    """What Run details shows: the effective result without the datasets whose stage-1 work ``actor`` is blind
    to (a curator or admin annotating one: its ground-truth variables, models and units are peers' stage-1
    decisions), and those datasets' names with the reason."""
    return withhold_blind(session=session, actor=actor, result=effective_result(
        session=session, actor=actor, run_id=run_id, artifacts=artifacts))


@judges_actor
def withhold_blind(*, session: Session, actor: User, result: EvaluationResult,
                   ) -> tuple[EvaluationResult, dict[str, str]]:
    """``result`` without the datasets ``actor`` is blind to, and those datasets' names with the reason."""
    withheld = blind_datasets(session=session, actor=actor, names=[d.dataset for d in result.datasets],
                              holding=release_holding(session=session,
                                                      version=result.provenance.release_version))
    if withheld:
        result = result.model_copy(update={"datasets": [d for d in result.datasets if d.dataset not in withheld]})
    return result, withheld


@judges_actor
def add_override(*, session: Session, actor: User, run_id: int, dataset: str, analysis_key: str, kind: str,
                 item: str, value: bool, reason: str, artifacts: ArtifactStore) -> ScoreOverride:
    """Record that ``item`` does (``value``) or does not count as a match, and recompute the run's scores.

    Raises:
        OverrideConflict: another evaluator already overrode this item (their name, time and reason given).
        ScoringError: no reason, an item the analysis does not have, or a value equal to the engine's.
    """
    require_role(actor, *SCORING_ROLES)
    refuse_if_blind(session=session, actor=actor, dataset=dataset)
    reason = reason.strip()
    if not reason:
        raise ScoringError("Give a reason for the override; it is kept with the run.")
    # lock the run row so concurrent overrides on one run recompute its scores one after the other
    run = session.exec(select(ScoringRun).where(ScoringRun.id == run_id).with_for_update()).first()
    if run is None:
        raise ScoringError(f"There is no scoring run {run_id}.")
    result = run_result(session=session, actor=actor, run_id=run_id, artifacts=artifacts)
    try:
        label = find_item(result, dataset, analysis_key, kind, item)
        original = original_value(result, dataset, analysis_key, kind, item)
    except OverrideError as exc:
        raise ScoringError(f"Cannot override: {exc}") from exc
    existing = session.exec(select(ScoreOverride).where(
        ScoreOverride.run_id == run_id, ScoreOverride.dataset == dataset, ScoreOverride.analysis_key == analysis_key,
        ScoreOverride.kind == kind, ScoreOverride.item == item)).first()
    if existing is not None:
        raise OverrideConflict(_conflict(session, existing))
    if value == original:
        raise ScoringError(f"The engine already counts '{label}' as {'a match' if value else 'no match'}; "
                           "there is nothing to override.")
    if kind == "model" and value:
        raise ScoringError("A missed model cannot be made a match here: the result holds only the rows that matched.")
    override = ScoreOverride(run_id=run_id, dataset=dataset, analysis_key=analysis_key, kind=kind, item=item,
                             label=label, original=original, value=value, reason=reason, author_id=actor.id or 0)
    session.add(override)
    try:
        session.flush()
    except IntegrityError as exc:  # another evaluator's override committed first
        session.rollback()
        raise OverrideConflict("Another evaluator overrode this match a moment ago; reload the analysis to see "
                               "their decision. Yours was not saved.") from exc
    overrides = list_overrides(session=session, actor=actor, run_id=run_id)
    effective = apply_overrides(result, _specs(overrides))
    run.scores_effective = scores_summary(effective)
    session.add(run)
    return override


def _conflict(session: Session, existing: ScoreOverride) -> str:
    author = session.get(User, existing.author_id)
    who = author.display_name or author.username if author else "someone"
    return (f"{who} already overrode '{existing.label}' on {existing.created_at:%Y-%m-%d %H:%M} UTC "
            f"(reason: {existing.reason}); their decision stands and yours was not saved.")


# ------------------------------------------------------------------------------------ paired comparison


@judges_actor
def compare_run_results(*, session: Session, actor: User, run_a: int, run_b: int, artifacts: ArtifactStore,
                        n_bootstrap: int = 1000) -> PairedComparison:
    """Paired comparison of two runs (overrides applied) on the same release."""
    a = get_run(session=session, actor=actor, run_id=run_a)
    b = get_run(session=session, actor=actor, run_id=run_b)
    if a.release_version != b.release_version:
        raise ScoringError(f"Run {run_a} was scored on release {a.release_version} and run {run_b} on "
                           f"{b.release_version}; re-score one of them on the other's release to compare.")
    ra, hidden = viewable_result(session=session, actor=actor, run_id=run_a, artifacts=artifacts)
    rb, hidden_b = viewable_result(session=session, actor=actor, run_id=run_b, artifacts=artifacts)
    comparison = compare_runs(ra, rb, n_bootstrap=n_bootstrap)
    for name, why in sorted({**hidden, **hidden_b}.items()):
        comparison.notes.append(f"{name} is left out: {why}")
    return comparison
