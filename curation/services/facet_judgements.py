"""Experts check the judge of a kind scored by facets (hypotheses: context, variables, relationship).

An evaluator judges one facet of one pair of one query of a run (:func:`judge_facet`). The judgement is an expert
label beside the judge's own (a :class:`~curation.models.JudgeLabel` with categorical labels, which feeds the
judge-validation card per facet, :func:`facet_agreement`), and, when it differs from the judge's (or the judge
gave none), an override (:class:`~curation.models.ScoreOverride`, with the value and the judge's original in its
``detail``) after which the run's effective scores are recomputed from the result file with every override
applied (no LLM). One transaction: the label, the override and the new scores are kept together or not at all.

Nothing here names a kind: the run's kind declares ``facets`` and the engine functions that read its result and
apply the judgements (:mod:`evaluation.tasks.hypotheses` is the one that does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.errors import OverrideConflict, ScoringError
from curation.models import JudgeLabel, RunStatus, ScoreOverride, ScoringRun, User, utcnow
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import blind_datasets, refuse_if_blind, release_holding
from curation.services.scoring import SCORING_ROLES, get_run, kind_of, stored_result
from evaluation.agreement import AgreementReport, cohens_kappa, confusion_matrix
from evaluation.hms import FacetOverride, OverrideRefused
from evaluation.tasks import FacetJudging, SubmissionCheckError, TaskKind

__all__ = ["FacetOutcome", "facet_agreement", "facet_overrides", "judge_facet", "viewable_facets"]


@dataclass(frozen=True)
class FacetOutcome:
    """What an expert's judgement did: ``override`` None when it agreed with the judge (a confirmation)."""

    label: JudgeLabel
    override: ScoreOverride | None
    description: str


def _facet_kind(run: ScoringRun) -> TaskKind:
    task = kind_of(run.kind)
    if not task.facets:
        raise ScoringError(f"Run {run.id} is a {run.kind} run; its items have no facets to judge.")
    return task


def _judging(task: TaskKind) -> FacetJudging:
    assert task.facet_judging is not None  # a kind with facets declares how they are judged (kind_problems)
    return task.facet_judging


def _result(task: TaskKind, run: ScoringRun, artifacts: ArtifactStore) -> Any:
    if run.status != RunStatus.SUCCEEDED.value or not run.result_sha256:
        raise ScoringError(f"Run {run.id} has {run.status}; only a succeeded run's judgements can be checked.")
    try:
        return _judging(task).read_result(stored_result(run, artifacts))
    except OSError as exc:
        raise ScoringError(f"Run {run.id}: its result file {run.result_path} cannot be read ({exc.strerror}).") from exc


def facet_overrides(*, session: Session, run_id: int) -> list[FacetOverride]:
    """The run's facet overrides, as the engine applies them (in the order they were made)."""
    rows = session.exec(select(ScoreOverride).where(ScoreOverride.run_id == run_id)
                        .order_by(col(ScoreOverride.id))).all()
    out = []
    for o in rows:
        if o.detail and isinstance(o.detail.get("value"), dict):
            author = session.get(User, o.author_id)
            out.append(FacetOverride(task=o.analysis_key, facet=o.kind, pair=o.item,  # type: ignore[arg-type]
                                     value=o.detail["value"], reason=o.reason,
                                     author=(author.display_name or author.username) if author else ""))
    return out


@judges_actor
def viewable_facets(*, session: Session, actor: User, run_id: int,
                    artifacts: ArtifactStore) -> tuple[Any, dict[str, str]]:
    """The run's result with every expert judgement applied, without the queries of datasets ``actor`` is blind
    to (their names with the reason come second)."""
    require_role(actor, *SCORING_ROLES)
    run = get_run(session=session, actor=actor, run_id=run_id)
    task = _facet_kind(run)
    result = _judging(task).effective(_result(task, run, artifacts), facet_overrides(session=session, run_id=run_id))
    withheld = blind_datasets(session=session, actor=actor, names={i.dataset for i in result.items},
                              holding=release_holding(session=session, version=run.release_version))
    if withheld:
        result = result.model_copy(update={"items": [i for i in result.items if i.dataset not in withheld]})
    return result, withheld


def _positive(facet: str, value: dict[str, Any] | None) -> bool:
    if value is None:
        return False
    if facet == "context":
        return bool(value.get("match"))
    if facet == "variables":
        return int(value.get("intersection") or 0) > 0
    return value.get("level") != "C"


@judges_actor
def judge_facet(*, session: Session, actor: User, run_id: int, task_key: str, pair: str, facet: str,
                value: dict[str, Any], reason: str, artifacts: ArtifactStore) -> FacetOutcome:
    """Record an evaluator's judgement of ``facet`` of ``pair`` of query ``task_key`` and recompute the run.

    Raises:
        PermissionDenied: not an evaluator, curator or admin.
        BlindingViolation: the query's dataset holds stage-1 work ``actor`` is blind to.
        OverrideConflict: someone already judged this facet of this pair (who, when, why).
        ScoringError: no reason, a run without facets, a query, pair or value that does not fit.
    """
    require_role(actor, *SCORING_ROLES)
    reason = reason.strip()
    if not reason:
        raise ScoringError("Give a reason for your judgement; it is kept with the run.")
    run = session.exec(select(ScoringRun).where(ScoringRun.id == run_id).with_for_update()).first()
    if run is None:
        raise ScoringError(f"There is no scoring run {run_id}.")
    task = _facet_kind(run)
    if facet not in task.facets:
        raise ScoringError(f"'{facet}' is not a facet of {run.kind} runs; choose "
                           f"{', '.join(task.facets)}.")
    result = _result(task, run, artifacts)
    spec = FacetOverride(task=task_key, facet=facet, pair=pair, value=value, reason=reason,  # type: ignore[arg-type]
                         author=actor.username)
    try:
        description = _judging(task).check_facet(result, spec)
        item = _judging(task).find_item(result, task_key)
    except (OverrideRefused, SubmissionCheckError) as exc:
        raise ScoringError(f"Cannot record the judgement: {exc}") from exc
    refuse_if_blind(session=session, actor=actor, dataset=item.dataset,
                    what="Judging its facets would show its ground truth.",
                    holding=release_holding(session=session, version=run.release_version))
    existing = session.exec(select(JudgeLabel).where(
        JudgeLabel.run_id == run_id, JudgeLabel.analysis_key == task_key, JudgeLabel.kind == facet,
        JudgeLabel.item == pair, col(JudgeLabel.expert_label).is_not(None))).first()
    if existing is not None:
        who = session.get(User, existing.expert_id) if existing.expert_id else None
        raise OverrideConflict(
            f"{(who.display_name or who.username) if who else 'Someone'} already judged the {facet} of {pair} of "
            f"this query on {existing.labelled_at or existing.created_at:%Y-%m-%d %H:%M} UTC ('{existing.expert_label}'"
            f"; reason: {existing.reason or '—'}); their judgement stands and yours was not saved.")
    original = _judging(task).facet_value(item, facet, pair)
    judge_label = _judging(task).facet_label(facet, original)
    expert_label = _judging(task).facet_label(facet, value)
    label = JudgeLabel(run_id=run_id, dataset=item.dataset, analysis_key=task_key, kind=facet, item=pair,
                       judge=str(run.judge.get("name", "")), ground_truth=item.gold_hypothesis[:2000],
                       agent=item.predicted_hypothesis[:2000], judge_rationale=_rationale(item, facet, pair),
                       judge_value=_positive(facet, original), judge_label=judge_label,
                       expert_value=_positive(facet, value), expert_label=expert_label, reason=reason,
                       expert_id=actor.id, labelled_at=utcnow())
    session.add(label)
    override = None
    if original is None or judge_label != expert_label:
        override = ScoreOverride(run_id=run_id, dataset=item.dataset, analysis_key=task_key, kind=facet, item=pair,
                                 label=description, original=_positive(facet, original),
                                 value=_positive(facet, value), reason=reason, author_id=actor.id or 0,
                                 detail={"value": value, "original": original})
        session.add(override)
    try:
        session.flush()
    except IntegrityError as exc:
        session.rollback()
        raise OverrideConflict("Another evaluator judged this facet a moment ago; reload the query to see their "
                               "judgement. Yours was not saved.") from exc
    if override is not None:
        effective = _judging(task).effective(result, facet_overrides(session=session, run_id=run_id))
        run.scores_effective = effective.scores
        session.add(run)
    return FacetOutcome(label=label, override=override, description=description)


def _rationale(item: Any, facet: str, pair: str) -> str:
    p, _, g = pair.partition("|")
    i, j = int(p[1:]), int(g[1:])
    if facet == "context":
        c = next((c for c in item.contexts if c.pred == i and c.gold == j), None)
        return f"{c.how}: {c.explanation}" if c else ""
    f = next((f for f in item.facets if f.pred == i and f.gold == j), None)
    part = getattr(f, facet, None) if f else None
    return part.explanation if part is not None else ""


@judges_actor
def facet_agreement(*, session: Session, actor: User, kind: str) -> list[AgreementReport]:
    """Per facet of ``kind`` (and judge): the judge's labels against the experts', with agreement and Cohen's κ
    over the judgements where both gave one."""
    require_role(actor, *SCORING_ROLES)
    facets = kind_of(kind).facets
    run_ids = select(ScoringRun.id).where(ScoringRun.kind == kind)
    rows = session.exec(select(JudgeLabel).where(col(JudgeLabel.run_id).in_(run_ids),
                                                 col(JudgeLabel.expert_label).is_not(None),
                                                 col(JudgeLabel.kind).in_(facets))).all()
    groups: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for r in rows:
        if r.judge_label and r.judge_label != "not judged":
            groups.setdefault((r.kind, r.judge), []).append((str(r.expert_label), r.judge_label))
    out = []
    for facet in facets:
        for (k, judge), pairs in sorted(groups.items()):
            if k != facet:
                continue
            labels = sorted({x for p in pairs for x in p})
            n = len(pairs)
            out.append(AgreementReport(kind=facet, judge=judge, n=n,
                                       percent_agreement=sum(1 for a, b in pairs if a == b) / n if n else None,
                                       kappa=cohens_kappa(pairs), labels=labels,
                                       matrix=confusion_matrix(pairs, labels)))
    return out
