"""Judge validation: sample a run's judge decisions into a queue, let experts label them, and report agreement
(percent agreement, Cohen's κ, confusion matrix) per decision kind and judge, next to BLADE's reported accuracies.
"""

from __future__ import annotations

import random

from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.errors import ScoringError
from curation.models import JudgeLabel, User, utcnow
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import blind_datasets, refuse_if_blind
from curation.services.leaderboard import run_result, withhold_blind
from curation.services.scoring import SCORING_ROLES, get_run
from evaluation.agreement import AgreementReport, agreement
from evaluation.judges.base import MATCH_THRESHOLD

#: the decisions this queue shows (variable and model matches); the reproducibility inspector's verdicts are
#: labelled beside its items (curation.services.reproducibility), and their agreement shows in the card too
MATCH_KINDS = ("variable", "model")

__all__ = ["agreement_card", "label_decision", "next_to_label", "queue_counts", "sample_judge_decisions"]


@judges_actor
def sample_judge_decisions(*, session: Session, actor: User, run_id: int, n: int, artifacts: ArtifactStore,
                           seed: int = 0) -> int:
    """Add up to ``n`` of the run's judge decisions not yet queued, half matches and half non-matches where the
    run has both (so κ is informative); returns how many were added."""
    require_role(actor, *SCORING_ROLES)
    if not 1 <= n <= 500:
        raise ScoringError("Sample between 1 and 500 decisions at a time.")
    run = get_run(session=session, actor=actor, run_id=run_id)
    result, _ = withhold_blind(session=session, actor=actor, result=run_result(
        session=session, actor=actor, run_id=run_id, artifacts=artifacts))
    queued = {(q.dataset, q.analysis_key, q.kind, q.item)
              for q in session.exec(select(JudgeLabel).where(JudgeLabel.run_id == run_id)).all()}
    candidates: list[JudgeLabel] = []
    for d in result.datasets:
        for a in d.analyses:
            seen: set[str] = set()
            for v in a.variables:
                item = f"{v.gt_id}|{v.agent_index}"
                if item in seen or (d.dataset, a.key, "variable", item) in queued:
                    continue
                seen.add(item)
                candidates.append(JudgeLabel(run_id=run_id, dataset=d.dataset, analysis_key=a.key, kind="variable",
                                             item=item, judge=v.judge, ground_truth=v.gt_text, agent=v.agent_text,
                                             judge_rationale=v.rationale, judge_value=v.similarity >= MATCH_THRESHOLD))
            for m in a.models:
                if (d.dataset, a.key, "model", m.gt_id) in queued:
                    continue
                agent_model = a.agent_model.specification if a.agent_model else ""
                candidates.append(JudgeLabel(run_id=run_id, dataset=d.dataset, analysis_key=a.key, kind="model",
                                             item=m.gt_id, judge=m.judge, ground_truth=m.specification,
                                             agent=agent_model, judge_rationale=m.rationale, judge_value=True))
    rng = random.Random(f"{run.id}:{seed}")
    rng.shuffle(candidates)
    yes = [c for c in candidates if c.judge_value]
    no = [c for c in candidates if not c.judge_value]
    chosen = no[: n // 2] + yes[: n - min(len(no), n // 2)]
    chosen += no[n // 2: n // 2 + n - len(chosen)]
    for c in chosen[:n]:
        session.add(c)
    session.flush()
    return len(chosen[:n])


@judges_actor
def queue_counts(*, session: Session, actor: User) -> tuple[int, int]:
    """(labelled, waiting) over the whole queue."""
    require_role(actor, *SCORING_ROLES)
    rows = session.exec(select(JudgeLabel.expert_value).where(col(JudgeLabel.kind).in_(MATCH_KINDS))).all()
    return sum(1 for r in rows if r is not None), sum(1 for r in rows if r is None)


@judges_actor
def next_to_label(*, session: Session, actor: User) -> JudgeLabel | None:
    require_role(actor, *SCORING_ROLES)
    stmt = select(JudgeLabel).where(col(JudgeLabel.expert_value).is_(None), col(JudgeLabel.kind).in_(MATCH_KINDS)
                                    ).order_by(col(JudgeLabel.id))
    waiting = list(session.exec(stmt).all())
    blind = blind_datasets(session=session, actor=actor, names={w.dataset for w in waiting})
    return next((w for w in waiting if w.dataset not in blind), None)  # never a blind dataset's decision


@judges_actor
def label_decision(*, session: Session, actor: User, label_id: int, value: bool) -> JudgeLabel:
    """An expert's answer; a decision someone labelled meanwhile is refused, not overwritten."""
    require_role(actor, *SCORING_ROLES)
    row = session.exec(select(JudgeLabel).where(JudgeLabel.id == label_id).with_for_update()).first()
    if row is None:
        raise ScoringError(f"There is no queued decision {label_id}.")
    refuse_if_blind(session=session, actor=actor, dataset=row.dataset)
    if row.expert_value is not None:
        who = session.get(User, row.expert_id) if row.expert_id else None
        raise ScoringError(f"{who.username if who else 'Someone'} labelled this decision meanwhile; yours was not "
                           "saved. The next one is shown.")
    row.expert_value, row.expert_id, row.labelled_at = value, actor.id, utcnow()
    session.add(row)
    return row


@judges_actor
def agreement_card(*, session: Session, actor: User) -> list[AgreementReport]:
    """Per decision kind and judge: agreement of the judge with the experts' labels."""
    require_role(actor, *SCORING_ROLES)
    # categorical labels (hypothesis facets) have their own card: curation.services.facet_judgements
    rows = session.exec(select(JudgeLabel).where(col(JudgeLabel.expert_value).is_not(None),
                                                 col(JudgeLabel.judge_label).is_(None))).all()
    groups: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    for r in rows:
        groups.setdefault((r.kind, r.judge), []).append((bool(r.expert_value), r.judge_value))
    return [agreement(kind, judge, pairs) for (kind, judge), pairs in sorted(groups.items())]
