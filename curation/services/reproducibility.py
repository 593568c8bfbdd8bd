"""The reproducibility facet's services: check a scored run's reproducibility, read a run's items side by side,
override an outcome (with who, why and when), sample the inspector's verdicts for expert labels and report the
agreement, and import AIRepr's published result files.

A reproducibility run is a scoring run of the kind ``reproducibility`` (:mod:`evaluation.tasks.reproducibility`):
registered, executed and listed like any run. Its overrides are rows of their own
(:class:`~curation.models.ReproducibilityOverride`); the run's result file is never changed, and its effective
scores are recomputed from the result with every override applied. Expert labels of the inspector's verdicts are
:class:`~curation.models.JudgeLabel` rows of kind ``reproducibility``, labelled like any judge decision
(:func:`curation.services.judge_validation.label_decision`).
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.errors import BlindingViolation, NotFoundError, OverrideConflict, ScoringError
from curation.models import JudgeLabel, ReproducibilityOverride, RunStatus, ScoringRun, User, utcnow
from curation.services import releases as _releases
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import blind_datasets, refuse_if_blind, release_holding, withheld_ground_truth
from curation.services.scoring import (
    SCORING_ROLES,
    JudgeSettings,
    ScoringLimits,
    combined_hash,
    get_run,
    register_run,
    release_for_scoring,
    release_gt_hashes,
    scorable_releases,
    stored_result,
    stored_submissions,
    verified_release,
)
from evaluation.agreement import AgreementReport, agreement
from evaluation.errors import EvaluationError
from evaluation.reproducibility.airepr import AIReprError, is_airepr_name, read_airepr_files, run_name
from evaluation.reproducibility.models import (
    OUTCOME_LABELS,
    Accuracy,
    CodeRun,
    ItemResult,
    Outcome,
    ReproResult,
)
from evaluation.reproducibility.summary import scores_of
from evaluation.results import EVALUATOR_VERSION
from evaluation.submissions import printable
from evaluation.tasks import reproducibility as repro_kind
from exports.schema import Release

__all__ = [
    "AIREPR_INSPECTOR",
    "RunItems",
    "import_airepr",
    "inspector_agreement",
    "list_outcome_overrides",
    "next_verdict_to_label",
    "override_outcome",
    "reproduce_run",
    "run_items",
    "sample_inspector_verdicts",
]

KIND = repro_kind.name
#: AIRepr's inspector, hard-coded in its eval code and recorded nowhere per run (evaluation-seeds-reference §3.3)
AIREPR_INSPECTOR = {"name": "inspector", "model": "gpt-4o-2024-11-20", "temperature": 0,
                    "source": "AIRepr's published results (the inspector is fixed in AIRepr's code, not recorded "
                              "per run)"}
MAX_IMPORT_BYTES = 200 * 2**20


def _repro_run(session: Session, actor: User, run_id: int) -> ScoringRun:
    run = get_run(session=session, actor=actor, run_id=run_id)
    if run.kind != KIND:
        raise ScoringError(f"Run {run_id} is a {run.kind} run, not a reproducibility run.")
    if run.status != RunStatus.SUCCEEDED.value or not run.result_path:
        raise ScoringError(f"Run {run_id} has {run.status}; its items show once it succeeded.")
    return run


def _result(run: ScoringRun, artifacts: ArtifactStore) -> ReproResult:
    return ReproResult.model_validate_json(stored_result(run, artifacts))


# ------------------------------------------------------------------------------------ running the facet


@judges_actor
def reproduce_run(*, session: Session, actor: User, run_id: int, artifacts: ArtifactStore,
                  max_bytes: int, judges: JudgeSettings | None = None, limits: ScoringLimits | None = None,
                  inspector_model: str = "") -> ScoringRun:
    """Register a reproducibility run over the files of run ``run_id`` (any kind: a BLADE run with workflows, a
    hypotheses run, an imported AIRepr run to re-judge), for the same agent, model and release; it is then
    executed like any run. ``inspector_model``: the model to ask (default: the configured one)."""
    old = get_run(session=session, actor=actor, run_id=run_id)
    if old.status != RunStatus.SUCCEEDED.value:
        raise ScoringError(f"Run {run_id} has {old.status}; check the reproducibility of a run that succeeded.")
    return register_run(session=session, actor=actor, release_version=old.release_version,
                        files=stored_submissions(old, artifacts), agent=old.agent, model_name=old.model_name,
                        kind=KIND, artifacts=artifacts, max_bytes=max_bytes,
                        judges=judges, source=old.source if old.source in ("web", "cli") else "cli",
                        limits=limits, llm_model=inspector_model)


# ------------------------------------------------------------------------------------ reading and overrides


class RunItems:
    """A run's items as an evaluator sees them: overrides applied (``items``), the engine's outcome kept beside
    (``engine``), the overrides themselves, and the datasets withheld from this evaluator (with why)."""

    def __init__(self, result: ReproResult, items: list[ItemResult], engine: dict[str, Outcome],
                 overrides: list[ReproducibilityOverride], withheld: dict[str, str]) -> None:
        self.result, self.items, self.engine, self.overrides, self.withheld = result, items, engine, overrides, withheld


@judges_actor
def list_outcome_overrides(*, session: Session, actor: User, run_id: int) -> list[ReproducibilityOverride]:
    require_role(actor, *SCORING_ROLES)
    stmt = select(ReproducibilityOverride).where(ReproducibilityOverride.run_id == run_id)
    return list(session.exec(stmt.order_by(col(ReproducibilityOverride.id))).all())


@judges_actor
def run_items(*, session: Session, actor: User, run_id: int, artifacts: ArtifactStore) -> RunItems:
    """The run's items side by side (both codes, outputs, conclusions, reasoning), overrides applied; items of
    datasets ``actor`` is blind to are left out (their gold answers are peers' work), with the reason."""
    run = _repro_run(session, actor, run_id)
    result = _result(run, artifacts)
    overrides = list_outcome_overrides(session=session, actor=actor, run_id=run_id)
    withheld = blind_datasets(session=session, actor=actor, names={i.dataset for i in result.items if i.dataset},
                              holding=release_holding(session=session, version=run.release_version))
    by_item = {o.item: Outcome(o.value) for o in overrides}
    engine = {i.key: i.outcome for i in result.items}
    items = [i.model_copy(update={"outcome": by_item.get(i.key, i.outcome)}) for i in result.items
             if i.dataset not in withheld]
    return RunItems(result, items, engine, [o for o in overrides if o.item in {i.key for i in items}], withheld)


@judges_actor
def override_outcome(*, session: Session, actor: User, run_id: int, item: str, outcome: str, reason: str,
                     artifacts: ArtifactStore) -> ReproducibilityOverride:
    """Record that ``item``'s outcome is ``outcome`` (one of the four), and recompute the run's effective scores.

    Raises:
        ScoringError: no reason, an unknown outcome or item, or the engine's own outcome.
        OverrideConflict: another evaluator already overrode this item (their name, time and reason given).
        BlindingViolation: the item's dataset is one ``actor`` is blind to.
    """
    require_role(actor, *SCORING_ROLES)
    reason = reason.strip()
    if not reason:
        raise ScoringError("Give a reason for the override; it is kept with the run.")
    try:
        value = Outcome(outcome)
    except ValueError:
        raise ScoringError(f"Unknown outcome '{printable(outcome)}'; choose "
                           f"{', '.join(o.value for o in Outcome)}.") from None
    run = session.exec(select(ScoringRun).where(ScoringRun.id == run_id).with_for_update()).first()
    if run is None:
        raise NotFoundError(f"There is no scoring run {run_id}.")
    run = _repro_run(session, actor, run_id)
    result = _result(run, artifacts)
    found = next((i for i in result.items if i.key == item), None)
    if found is None:
        raise ScoringError(f"Run {run_id} has no item '{printable(item)}'.")
    if found.dataset:
        refuse_if_blind(session=session, actor=actor, dataset=found.dataset,
                        what="The override was not saved.",
                        holding=release_holding(session=session, version=run.release_version))
    existing = session.exec(select(ReproducibilityOverride).where(
        ReproducibilityOverride.run_id == run_id, ReproducibilityOverride.item == item)).first()
    if existing is not None:
        author = session.get(User, existing.author_id)
        who = (author.display_name or author.username) if author else "someone"
        raise OverrideConflict(f"{who} already overrode item '{printable(item)}' to "
                               f"'{OUTCOME_LABELS[Outcome(existing.value)]}' on {existing.created_at:%Y-%m-%d %H:%M} "
                               f"UTC (reason: {existing.reason}); their decision stands and yours was not saved.")
    if value == found.outcome:
        raise ScoringError(f"The engine already gave item '{printable(item)}' the outcome "
                           f"'{OUTCOME_LABELS[value]}'; there is nothing to override.")
    row = ReproducibilityOverride(run_id=run_id, item=item, original=found.outcome.value, value=value.value,
                                  reason=reason, author_id=actor.id or 0)
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        session.rollback()
        raise OverrideConflict("Another evaluator overrode this item a moment ago; reload it to see their "
                               "decision. Yours was not saved.") from exc
    overrides = {o.item: Outcome(o.value) for o in list_outcome_overrides(session=session, actor=actor,
                                                                          run_id=run_id)}
    run.scores_effective = scores_of(result, overrides)
    session.add(run)
    return row


# ------------------------------------------------------------------------------------ validating the inspector


@judges_actor
def sample_inspector_verdicts(*, session: Session, actor: User, run_id: int, n: int, artifacts: ArtifactStore,
                              seed: int = 0) -> int:
    """Queue up to ``n`` of the run's inspector verdicts (items where both codes ran and the inspector compared
    them) for blind expert labels, half "reproducible" and half "not" where the run has both; returns how many."""
    require_role(actor, *SCORING_ROLES)
    if not 1 <= n <= 500:
        raise ScoringError("Sample between 1 and 500 verdicts at a time.")
    got = run_items(session=session, actor=actor, run_id=run_id, artifacts=artifacts)
    queued = {q.item for q in session.exec(select(JudgeLabel).where(JudgeLabel.run_id == run_id,
                                                                    JudgeLabel.kind == KIND)).all()}
    judge = str(got.result.inspector.get("model") or "inspector")[:32]
    candidates = []
    for i in got.result.items:
        if i.dataset in got.withheld or i.key in queued or i.same_statistics is None or i.same_conclusion is None:
            continue
        candidates.append(JudgeLabel(
            run_id=run_id, dataset=i.dataset or "", analysis_key=i.key[:64], kind=KIND, item=i.key[:256],
            judge=judge, ground_truth=i.original_answer, agent=i.inspector_conclusion,
            judge_rationale=i.reasoning, judge_value=bool(i.same_statistics and i.same_conclusion)))
    rng = random.Random(f"{run_id}:{seed}")
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
def next_verdict_to_label(*, session: Session, actor: User) -> JudgeLabel | None:
    """The next queued inspector verdict ``actor`` may label (never one of a dataset they are blind to)."""
    require_role(actor, *SCORING_ROLES)
    stmt = select(JudgeLabel).where(col(JudgeLabel.expert_value).is_(None), JudgeLabel.kind == KIND)
    waiting = list(session.exec(stmt.order_by(col(JudgeLabel.id))).all())
    blind = blind_datasets(session=session, actor=actor, names={w.dataset for w in waiting if w.dataset})
    return next((w for w in waiting if w.dataset not in blind), None)


@judges_actor
def inspector_agreement(*, session: Session, actor: User) -> tuple[list[AgreementReport], int]:
    """Per inspector model: agreement of its verdicts with the experts' labels; and how many wait for a label."""
    require_role(actor, *SCORING_ROLES)
    rows = session.exec(select(JudgeLabel).where(JudgeLabel.kind == KIND)).all()
    groups: dict[str, list[tuple[bool, bool]]] = {}
    for r in rows:
        if r.expert_value is not None:
            groups.setdefault(r.judge, []).append((bool(r.expert_value), r.judge_value))
    waiting = sum(1 for r in rows if r.expert_value is None)
    # the verdicts are "reproducible" or not (agreement() names its labels for matches)
    reports = [agreement(KIND, judge, pairs).model_copy(update={"labels": ["reproducible", "not reproducible"]})
               for judge, pairs in sorted(groups.items())]
    return reports, waiting


# ------------------------------------------------------------------------------------ importing AIRepr's files


def _airepr_files(path: Path) -> list[tuple[str, bytes]]:
    if not path.exists():
        raise ScoringError(f"{printable(str(path))} does not exist.")
    if path.is_file():
        candidates = [path]
    else:
        root = path / "results" if (path / "results").is_dir() else path
        candidates = sorted(p for p in root.iterdir() if p.is_file() and p.suffix == ".json")
    files = [p for p in candidates if is_airepr_name(p.name)]
    if not files:
        raise ScoringError(f"{printable(str(path))} holds no AIRepr result file "
                           "(results/{model}_{dataset}_{agent}*.json).")
    total = sum(p.stat().st_size for p in files)
    if total > MAX_IMPORT_BYTES:
        raise ScoringError(f"The AIRepr files under {printable(str(path))} are {total / 2**20:.0f} MB; the limit "
                           f"is {MAX_IMPORT_BYTES / 2**20:.0f} MB.")
    from evaluation.reproducibility.airepr import MAX_FILE_BYTES

    for p in files:
        if p.stat().st_size > MAX_FILE_BYTES:  # before it is read: each file is parsed whole
            raise ScoringError(f"{printable(p.name)} is {p.stat().st_size:,} bytes; an AIRepr file may be at most "
                               f"{MAX_FILE_BYTES:,} bytes. Nothing was imported.")
    return [(p.name, p.read_bytes()) for p in files]


def _published_item(dataset: str, s: Any) -> ItemResult:
    p = s.published
    score = p.get("reproducibility_score")
    outcome, sentence = {
        1: (Outcome.REPRODUCIBLE, "AIRepr's inspector scored it 1: the same statistics and conclusion."),
        0: (Outcome.NOT_REPRODUCIBLE, "AIRepr's inspector scored it 0: different statistics or conclusion, or "
                                      "its own code did not run."),
        -1: (Outcome.ORIGINAL_FAILED, "AIRepr scored it -1: the analyst's code did not run, or the inspector's "
                                      "reply could not be parsed (AIRepr gives both -1); re-judge it to tell them "
                                      "apart."),
    }[score]
    acc = p.get("accuracy_score")
    accuracy = None if acc is None else Accuracy(
        correct=bool(acc), reason="Published by AIRepr, whose judge counted a content-filter error as correct; "
                                  "re-judge to check.",
        tolerance={"source": "AIRepr: within 1 % for DiscoveryBench numeric answers"}, judge=AIREPR_INSPECTOR)
    return ItemResult(
        key=f"{dataset}/{s.index}", source="airepr", question="", workflow=s.workflow, outcome=outcome,
        sentence=sentence, original_code=s.code, original_answer=s.final_answer,
        original_run=CodeRun(ok=score != -1, stdout=s.output, ran=False),
        inspector_code=p.get("inspector_code", ""), reasoning=p.get("reason", ""), accuracy=accuracy, gold=s.gold,
        published={k: v for k, v in p.items() if k != "inspector_code"})


@judges_actor
def import_airepr(*, session: Session, actor: User, path: Path, artifacts: ArtifactStore,
                  release_version: str | None = None) -> list[ScoringRun]:
    """Import AIRepr's result files under ``path`` (its ``results/`` folder, a folder holding it, or one file):
    one succeeded reproducibility run per (model, dataset, agent), with the published outcomes, workflows, code,
    outputs, inspector code and reasons, on ``release_version`` (default: the newest release). Its stored files
    are AIRepr's, so ``reproduce_run`` re-judges it with forkpaths' inspector. One transaction: a bad file stores
    nothing (the message names the file and the field).
    """
    require_role(actor, *SCORING_ROLES)
    files = _airepr_files(path)
    try:
        runs = read_airepr_files(files)
    except AIReprError as exc:
        raise ScoringError(f"Nothing was imported: {exc}") from exc
    if release_version is None:
        records = scorable_releases(session=session, actor=actor)
        if not records:
            raise ScoringError("There is no release yet: cut one before importing AIRepr's results.")
        release_version = records[0].version
    release = release_for_scoring(session=session, version=release_version, artifacts=artifacts)
    _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=release.version)
    if withheld:
        raise BlindingViolation(f"{withheld} Nothing was imported.")
    for r in runs:
        if not r.evaluated:
            raise ScoringError(f"Nothing was imported: {r.stem}.json has no results file "
                               f"({r.stem}_results_<YYYYmmdd_HHMMSS>.json), so there are no published judgments to "
                               "view. Score it with 'forkpaths score --kind reproducibility' instead.")
    hashes = release_gt_hashes(release, KIND)
    _, folder = verified_release(session=session, actor=actor, release_version=release.version, artifacts=artifacts)
    out: list[ScoringRun] = []
    for r in runs:  # nothing half-stored: the transaction rolls back (whole objects left in the store are harmless)
        accuracy = _accuracy(r, release, folder)
        out.append(_import_one(session, actor, r, files, release.version, hashes, artifacts, accuracy))
    session.flush()
    return out


def _accuracy(r: Any, release: Release, folder: Path) -> dict[str, Any] | None:
    """The accuracy of an AIRepr run's final answers against the release's gold, by the rules of the kind AIRepr's
    dataset is (a kind declaring ``airepr``), with which kind scored it; None for a benchmark no kind declares, or
    whose questions the release does not hold."""
    from evaluation.tasks import KINDS

    kind = next((k for k in KINDS.values() if k.airepr is not None and k.airepr.dataset.lower() == r.dataset.lower()),
                None)
    if kind is None or kind.airepr is None:
        return None
    answers = {str(s.index): s.final_answer for s in r.samples}
    try:
        scored = kind.airepr.score(release, folder, answers)
    except EvaluationError as exc:
        raise ScoringError(f"Nothing was imported: the final answers of {r.stem}.json cannot be scored as "
                           f"{kind.name} answers: {exc}") from exc
    return None if scored is None else {**scored, "kind": kind.name}


def _import_one(session: Session, actor: User, r: Any, files: list[tuple[str, bytes]], version: str,
                hashes: dict[str, str], artifacts: ArtifactStore,
                accuracy: dict[str, Any] | None = None) -> ScoringRun:
    mine = [(n, d) for n, d in files if run_name(n)[0] == r.stem]
    result = ReproResult(release_version=version, inspector=AIREPR_INSPECTOR, origin="airepr",
                         items=[_published_item(r.dataset, s) for s in r.samples])
    scores = scores_of(result)
    note = ""
    if accuracy is not None:
        scores["reproducibility"]["kind_accuracy"] = accuracy  # beside AIRepr's own published "accuracy"
        note = (f" Accuracy of the final answers against release {version}'s gold, by the {accuracy['kind']} "
                f"rules: {accuracy['point']:.3f} over {accuracy['questions']} questions"
                + (f" ({len(accuracy['not_in_release'])} samples not in the release)"
                   if accuracy["not_in_release"] else "") + ".")
    digest = hashlib.sha256()
    for _, d in sorted(mine):
        digest.update(hashlib.sha256(d).digest())
    run = ScoringRun(kind=KIND, agent=f"AIRepr {r.agent}", model_name=r.model[:128],
                     release_version=version, ground_truth_hash=combined_hash(hashes), dataset_hashes=hashes,
                     submission_sha256=digest.hexdigest(), evaluator_version=EVALUATOR_VERSION,
                     judge=AIREPR_INSPECTOR, source="import", created_by_id=actor.id,
                     status=RunStatus.SUCCEEDED.value,
                     progress_done=len(result.items), progress_total=len(result.items), stage="imported",
                     started_at=utcnow(), finished_at=utcnow(), scores=scores, scores_effective=scores,
                     message=f"Imported from AIRepr's published files ({len(result.items)} samples).{note}")
    session.add(run)
    session.flush()
    stored = []
    for name, data in sorted(mine):
        stored.append({"name": name, "sha256": artifacts.put_bytes(data),
                       "bytes": len(data), "dataset": None, "format": "airepr", "analyses": None})
    run.result_sha256 = artifacts.put_bytes(result.model_dump_json(indent=1).encode())
    run.submission_files, run.result_path = stored, "reproducibility.json"
    run.release_sha256 = _releases.release_record(session=session, version=version).manifest_sha256
    session.add(run)
    return run
