"""Scoring runs: register an agent's submission against a release, score it outside any page, keep the record.

A run is registered in one transaction (:func:`register_run`): the submission files are checked (size, JSON,
BLADE format, datasets the release has), the release is verified against its manifest, and the run's provenance
(submission hash, release version and ground-truth hashes, evaluator version, judge, mode, k) is written once.
:func:`execute_run` then does the work in its own short transactions, so a browser page can leave and come back
(the app's :class:`curation.services.run_worker.RunWorker` calls it in a background thread; ``forkpaths score``
calls it in the foreground): it records progress and a heartbeat after every analysis, stops when a cancel is
requested, and ends the run ``succeeded`` (result file written atomically under the data dir), ``cancelled`` or
``failed`` with a sentence. A crash of one run never touches another.

Transform credit: :func:`_transform_matching_for` is the ONE place where the transform matcher and the ground
truth's expanded units are chosen for a release dataset.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from curation.db import session_scope
from curation.errors import BlindingViolation, NotFoundError, ScoringError
from curation.models import ReleaseRecord, Role, RunStatus, ScoringRun, User, utcnow
from curation.services import releases as _releases
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import withheld_ground_truth
from curation.services.run_lifecycle import (
    Heartbeat,
    ScoringHere,
    beat,
    claim_run,
    executor_alive,
    interrupt_dead_runs,
    this_executor,
)
from evaluation.groundtruth.runner import GroundTruthLimits
from evaluation.judges import make_judge
from evaluation.judges.base import Judge
from evaluation.llm import LLMClient, LLMConfig
from evaluation.mcq_scoring import dump_mcq_report, read_answers, score_answers
from evaluation.metrics import DatasetRuns, score_runs
from evaluation.records import UnitRef
from evaluation.results import EVALUATOR_VERSION, EvaluationResult, build_result, dump_result
from evaluation.scoring import RunBudget, TransformMatcher, score_submission
from evaluation.submissions import Submission, TooManyAnalyses, parse_submission, printable
from evaluation.transform_credit import MATCHER_NAME as TRANSFORM_MATCHER_NAME
from evaluation.transform_credit import transform_credit
from exports.native import release_data_path
from exports.schema import DatasetRelease, Release

__all__ = [
    "SCORING_ROLES",
    "JudgeSettings",
    "ScoringLimits",
    "RunCancelled",
    "TransformMatching",
    "cancel_run",
    "dataset_gt_hash",
    "execute_run",
    "claim_run",
    "interrupt_dead_runs",
    "get_run",
    "list_runs",
    "register_run",
    "verified_release_folder",
    "release_by_record",
    "release_gt_hashes",
    "rescore_run",
    "run_dir",
    "scorable_releases",
    "scores_summary",
    "set_official",
    "stored_submissions",
]

log = logging.getLogger(__name__)

SCORING_ROLES = (Role.EVALUATOR, Role.CURATOR, Role.ADMIN)
MODES = ("default", "blade")
JUDGE_NAMES = ("offline", "llm")
FINISHED = {RunStatus.SUCCEEDED.value, RunStatus.FAILED.value, RunStatus.CANCELLED.value,
            RunStatus.INTERRUPTED.value}



# ------------------------------------------------------------------------------------ transform matching


@dataclass(frozen=True)
class TransformMatching:
    """What scores the transform side of one release dataset: the matcher, the ground truth's expanded units
    (ROOT excluded) and how to describe both in the result's provenance."""

    matcher: TransformMatcher
    units: Sequence[UnitRef] = ()
    description: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoringLimits:
    """What bounds a scoring run (settings ``FORKPATHS_SCORE_ANALYSIS_TIMEOUT_S``, ``_SCORE_RUN_BUDGET_S``,
    ``_MAX_ANALYSES_PER_SUBMISSION`` and ``_SANDBOX_MEMORY_MB``)."""

    analysis_timeout_s: float = 60.0
    run_budget_s: float = 7200.0
    max_analyses: int = 2000
    memory_mb: int = 4096

    @classmethod
    def from_settings(cls, settings: Any) -> ScoringLimits:
        return cls(analysis_timeout_s=settings.score_analysis_timeout_s, run_budget_s=settings.score_run_budget_s,
                   max_analyses=settings.max_analyses_per_submission, memory_mb=settings.sandbox_memory_mb)

    def describe(self) -> dict[str, Any]:
        return {"analysis_timeout_s": self.analysis_timeout_s, "run_budget_s": self.run_budget_s,
                "max_analyses": self.max_analyses, "memory_mb": self.memory_mb}


#: How long building a dataset's ground truth (the experts' code, once per release dataset) may take at most.
GROUND_TRUTH_TIMEOUT_S = 300.0


def _transform_matching_for(release_dataset: DatasetRelease, release_folder: Path, *, cache_dir: Path | None,
                            mode: str, limits: ScoringLimits | None = None,
                            budget: RunBudget | None = None) -> TransformMatching:
    """THE seam for transform credit: the dataset's ground truth (built once, then from the cache in the data
    folder, keyed by its content, the evaluator and library versions) and the value + graph matcher, which
    converts each analysis's transform code into units in the sandbox, within ``limits``. ``blade`` mode matches
    as BLADE does (only the last isomorphism class per WL bucket). The ground truth's build counts against the
    run's ``budget``."""
    limits = limits or ScoringLimits()
    left = budget.remaining() if budget is not None else None
    build = GroundTruthLimits(timeout_s=max(min(GROUND_TRUTH_TIMEOUT_S, left), 0.001) if left is not None
                              else GROUND_TRUTH_TIMEOUT_S)
    credit = transform_credit(release_dataset, release_data_path(release_folder, release_dataset),
                              cache_dir=cache_dir, blade_compat=mode == "blade", limits=build,
                              analysis_limits=GroundTruthLimits(timeout_s=limits.analysis_timeout_s,
                                                                memory_mb=limits.memory_mb))
    return TransformMatching(matcher=credit.match, units=tuple(credit.units), description=credit.description)


# ------------------------------------------------------------------------------------ release access


def _release_for_scoring(session: Session, version: str, releases_root: Path) -> Release:
    """THE place scoring reads a release: its record by version (NotFoundError naming the known ones), then the
    release checked against the hashes recorded when it was cut (ReleaseError with the reason when it fails).
    Who may see which dataset's ground truth is decided where it is shown (registering a run, Run details)."""
    return _releases._verified(session, _releases._record(session, version), releases_root).release


@judges_actor
def verified_release_folder(*, session: Session, actor: User, release_version: str, releases_root: Path) -> Path:
    """The folder of release ``release_version``, after the same checks scoring makes (scoring roles only): its
    record, its MANIFEST against the hash recorded at the cut, every file and zip member against the MANIFEST.

    Raises:
        NotFoundError: no release of that version is recorded (a folder without a record is never used).
        ReleaseError: the release was modified after it was cut (the message names the files).
    """
    require_role(actor, *SCORING_ROLES)
    record = _releases._record(session, release_version)
    _releases._verified(session, record, releases_root)
    return _releases.release_dir(record, releases_root)


@judges_actor
def mcq_release(*, session: Session, actor: User, release_version: str, releases_root: Path) -> Release:
    """The verified release whose MCQs a model under test is asked (scoring roles only)."""
    require_role(actor, *SCORING_ROLES)
    release = _release_for_scoring(session, release_version, releases_root)
    _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=release.version,
                                        names=[d.name for d in release.datasets if d.mcqs])
    if withheld:
        raise BlindingViolation(f"{withheld} Asking a model its MCQs would show them; nothing was asked.")
    if not any(d.mcqs for d in release.datasets):
        raise ScoringError(f"Release {release_version} holds no MCQs; generate and accept them before cutting it.")
    return release


def _asked_model(data: bytes) -> dict[str, Any]:
    """The model-under-test provenance an answers file made by ``score-mcq --ask-model`` carries, if any."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return {}
    source = parsed.get("source") if isinstance(parsed, dict) else None
    return {"asked": source} if isinstance(source, dict) and source.get("kind") == "model" else {}


def release_by_record(session: Session, record: ReleaseRecord, releases_root: Path) -> Release:
    """A release from its record, checked like :func:`_release_for_scoring`."""
    return _releases._verified(session, record, releases_root).release


# ------------------------------------------------------------------------------------ hashes and paths


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def dataset_gt_hash(ds: DatasetRelease) -> str:
    """Content hash of what a dataset's scores depend on: its data table and its decisions."""
    payload = {"data_sha256": ds.data_sha256, "variables": [v.model_dump(mode="json") for v in ds.variables],
               "transforms": [t.model_dump(mode="json") for t in ds.transforms],
               "models": [m.model_dump(mode="json") for m in ds.models]}
    return hashlib.sha256(_canonical(payload)).hexdigest()


def release_gt_hashes(release: Release) -> dict[str, str]:
    return {d.name: dataset_gt_hash(d) for d in release.datasets}


def _combined(hashes: dict[str, str]) -> str:
    return hashlib.sha256(_canonical(sorted(hashes.items()))).hexdigest()


def run_dir(runs_root: Path, run_id: int) -> Path:
    return runs_root / str(run_id)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ------------------------------------------------------------------------------------ registration


@dataclass(frozen=True)
class JudgeSettings:
    """How to build the judges: the LLM client's configuration (from settings, read at the edge)."""

    llm: LLMConfig = field(default_factory=LLMConfig)

    @classmethod
    def from_settings(cls, settings: Any) -> JudgeSettings:
        """From :class:`curation.settings.Settings`: the one LLM configuration (endpoint, timeout, retries, cache)."""
        return cls(llm=settings.llm_config())

    def configuration(self, name: str) -> dict[str, Any]:
        if name == "offline":
            return make_judge("offline").configuration()
        if name == "llm":
            if not self.llm.configured:
                raise ScoringError("The llm judge needs an endpoint: set FORKPATHS_LLM_BASE_URL and "
                                   "FORKPATHS_LLM_MODEL, or choose the offline judge.")
            return {"name": "llm", "model": self.llm.model, "base_url": self.llm.base_url}
        raise ScoringError(f"Unknown judge '{name}'; choose {' or '.join(JUDGE_NAMES)}.")

    def build(self, name: str) -> Judge:
        if name == "llm":
            self.configuration(name)
            return make_judge("llm", client=LLMClient(self.llm))
        return make_judge(name)


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} kB"


def _check_files(files: Sequence[tuple[str, bytes]], release: Release, max_bytes: int, kind: str,
                 max_analyses: int | None = None) -> list[tuple[str, bytes, Submission | None]]:
    if not files:
        raise ScoringError("Choose a submission file to score.")
    total = sum(len(b) for _, b in files)
    if total > max_bytes:
        big = max(files, key=lambda f: len(f[1]))
        raise ScoringError(f"The submission is {_size(total)} (largest file: {big[0]}, {_size(len(big[1]))}); the "
                           f"limit is {_size(max_bytes)} (FORKPATHS_MAX_SUBMISSION_MB). Nothing was stored.")
    if kind == "mcq":
        if len(files) != 1:
            raise ScoringError("An MCQ run takes exactly one answers file (question id → letter).")
        read_answers(files[0][1], label=files[0][0])
        return [(files[0][0], files[0][1], None)]
    names = [d.name for d in release.datasets]
    out: list[tuple[str, bytes, Submission | None]] = []
    seen: dict[str, str] = {}
    for name, data in files:
        try:
            sub = parse_submission(data, label=name, max_analyses=max_analyses)  # SubmissionError when unreadable
        except TooManyAnalyses as exc:
            raise ScoringError(f"{exc} Split it into several runs, or ask an administrator to raise "
                               "FORKPATHS_MAX_ANALYSES_PER_SUBMISSION. Nothing was stored.") from exc
        shown, dataset = printable(name), printable(sub.dataset_name)
        if sub.dataset_name not in names:
            raise ScoringError(f"{shown} is a submission for dataset '{dataset}', which release "
                               f"{release.version} does not have (it has: {', '.join(names) or 'no datasets'}). "
                               "Nothing was stored.")
        if sub.dataset_name in seen:
            raise ScoringError(f"{shown} and {printable(seen[sub.dataset_name])} are both for dataset '{dataset}'; "
                               "a run holds one submission per dataset.")
        seen[sub.dataset_name] = name
        if not sub.analyses:
            raise ScoringError(f"{shown} has no analyses to score.")
        out.append((name, data, sub))
    return out


@judges_actor
def register_run(*, session: Session, actor: User, release_version: str, files: Sequence[tuple[str, bytes]],
                 agent: str, model_name: str = "", judge: str = "offline", mode: str = "default", k: int = 10,
                 kind: str = "analyses", runs_root: Path, releases_root: Path, max_bytes: int,
                 judges: JudgeSettings | None = None, source: str = "web",
                 rescore_of_id: int | None = None, limits: ScoringLimits | None = None) -> ScoringRun:
    """Check everything and record a queued run with its provenance and its stored submission files.

    Raises:
        PermissionDenied: not an evaluator, curator or admin.
        ScoringError / SubmissionError / AnswersFileError: bad input, with the file and what is wrong.
        ReleaseError: the release fails verification (its message says which file).
    """
    require_role(actor, *SCORING_ROLES)
    agent, model_name = agent.strip(), model_name.strip()
    if not agent:
        raise ScoringError("Name the agent that produced the submission.")
    if len(agent) > 128 or len(model_name) > 128:
        raise ScoringError("Agent and model names are limited to 128 characters.")
    for what, text in (("agent", agent), ("model", model_name)):
        bad = next((i for i, ch in enumerate(text) if not ch.isprintable()), None)
        if bad is not None:
            raise ScoringError(f"The {what} name '{printable(text)}' holds a control or invisible character "
                               f"({ascii(text[bad])[1:-1]} at position {bad + 1}); use printable text.")
    if mode not in MODES:
        raise ScoringError(f"Unknown mode '{mode}'; choose default or blade.")
    if kind not in ("analyses", "mcq"):
        raise ScoringError(f"Unknown run kind '{kind}'.")
    if not 1 <= k <= 1000:
        raise ScoringError(f"k must be between 1 and 1000 (got {k}).")
    judge_config = (judges or JudgeSettings()).configuration(judge) if kind == "analyses" else {}
    release = _release_for_scoring(session, release_version, releases_root)  # refuses a failing release
    checked = _check_files(files, release, max_bytes, kind, (limits or ScoringLimits()).max_analyses)
    hashes = release_gt_hashes(release)
    datasets = [s.dataset_name for _, _, s in checked if s is not None] or sorted(hashes)
    # the result shows the ground truth of every dataset scored: withheld from whoever is blind to it
    _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=release.version, names=datasets)
    if withheld:
        raise BlindingViolation(f"{withheld} Scoring against it would show it; nothing was stored.")
    used = {d: hashes[d] for d in datasets}
    digest = hashlib.sha256()
    for _name, data, _ in sorted(checked, key=lambda c: c[0]):
        digest.update(hashlib.sha256(data).digest())
    run = ScoringRun(
        kind=kind, agent=agent, model_name=model_name, release_version=release.version,
        ground_truth_hash=_combined(used), dataset_hashes=used, submission_sha256=digest.hexdigest(),
        evaluator_version=EVALUATOR_VERSION, judge=judge_config,
        mode=mode, k=k, source=source, rescore_of_id=rescore_of_id, created_by_id=actor.id,
        progress_total=sum(len(s.analyses) for _, _, s in checked if s is not None) or 1,
        stage="queued")
    session.add(run)
    session.flush()
    folder = run_dir(runs_root, run.id or 0)
    stored = []
    try:
        for i, (name, data, sub) in enumerate(checked):
            rel = f"{run.id}/submission-{i}.json"
            _write_atomic(runs_root / rel, data)
            stored.append({"name": Path(name).name, "path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                           "bytes": len(data), "dataset": sub.dataset_name if sub else None,
                           "format": sub.format if sub else "answers",
                           "analyses": len(sub.analyses) if sub else None})
    except OSError as exc:  # nothing half-stored: the transaction rolls back, the files go too
        shutil.rmtree(folder, ignore_errors=True)
        raise ScoringError(f"The submission could not be stored in {runs_root}: {exc.strerror or exc}.") from exc
    run.submission_files = stored
    session.add(run)
    session.flush()
    log.info("registered scoring run %s (%s on %s, %s files) in %s", run.id, agent, release.version, len(stored),
             folder)
    return run


def stored_submissions(run: ScoringRun, runs_root: Path) -> list[tuple[str, bytes]]:
    """The run's submission files as stored at registration (checked against their recorded hashes)."""
    out = []
    for f in run.submission_files:
        data = (runs_root / f["path"]).read_bytes()
        if hashlib.sha256(data).hexdigest() != f["sha256"]:
            raise ScoringError(f"Run {run.id}: the stored submission {f['name']} no longer matches its hash; "
                               "it was changed on disk.")
        out.append((f["name"], data))
    return out


# ------------------------------------------------------------------------------------ execution


class RunCancelled(Exception):
    """Raised inside a run when an evaluator asked to cancel it."""


class RunTakenOver(Exception):
    """Raised inside a run when another scorer took it over (this one was presumed dead): stop, write nothing."""


def scores_summary(result: EvaluationResult, n_bootstrap: int | None = None) -> dict[str, Any]:
    """What the leaderboard reads: the overall scores and each dataset's own scores (with bootstrap CIs)."""
    p = result.provenance
    nb = p.n_bootstrap if n_bootstrap is None else n_bootstrap
    overall = score_runs([DatasetRuns(counts=d.counts, runs=[a.record for a in d.analyses]) for d in result.datasets],
                         mode=p.mode, k=p.k, n_bootstrap=nb, seed=p.seed)
    per = {d.dataset: score_runs([DatasetRuns(counts=d.counts, runs=[a.record for a in d.analyses])], mode=p.mode,
                                 k=p.k, n_bootstrap=nb, seed=p.seed).model_dump(mode="json")
           for d in result.datasets}
    return {"overall": overall.model_dump(mode="json"), "datasets": per}


def _update(engine: Engine, run_id: int, **values: Any) -> ScoringRun:
    """Write the run's outcome, only while this process still holds it (locked: a scorer presumed dead whose run
    was taken over, or cancelled, writes nothing)."""
    with session_scope(engine) as s:
        run = s.get(ScoringRun, run_id, with_for_update=True)
        if run is None:
            raise NotFoundError(f"There is no scoring run {run_id}.")
        if run.status != RunStatus.RUNNING.value or run.executor != this_executor():
            log.warning("scoring run %s is %s, held by %s: this process keeps its outcome to itself", run_id,
                        run.status, run.executor or "nobody")
            return run
        for key, value in values.items():
            setattr(run, key, value)
        s.add(run)
        return run


def _progress(engine: Engine, run_id: int, done: int, total: int, stage: str) -> None:
    with session_scope(engine) as s:
        run = s.get(ScoringRun, run_id)
        if run is None:
            raise RunCancelled("the run record disappeared")
        if run.executor != this_executor() or run.status != RunStatus.RUNNING.value:
            raise RunTakenOver(f"run {run_id} is now {run.status}, held by {run.executor or 'nobody'}")
        run.progress_done, run.progress_total, run.stage, run.heartbeat_at = done, total, stage[:256], utcnow()
        s.add(run)
        if run.cancel_requested:
            raise RunCancelled()


def _score_analyses(engine: Engine, run: ScoringRun, release: Release, subs: list[Submission],
                    judges: JudgeSettings, on_progress: Callable[[int, int, str], None] | None, *,
                    release_folder: Path, gt_cache: Path | None, limits: ScoringLimits,
                    budget: RunBudget) -> EvaluationResult:
    judge = judges.build(run.judge.get("name", "offline"))
    by_name = {d.name: d for d in release.datasets}
    total = sum(len(s.analyses) for s in subs)
    done_before = 0
    results = []
    described: dict[str, dict[str, Any]] = {}
    for sub in subs:
        ds = by_name[sub.dataset_name]
        matching = _transform_matching_for(ds, release_folder, cache_dir=gt_cache, mode=run.mode, limits=limits,
                                           budget=budget)
        described[ds.name] = matching.description

        def tick(done: int, _total: int, *, base: int = done_before, name: str = ds.name) -> None:
            stage = f"{name}: analysis {done} of {_total}"
            _progress(engine, run.id or 0, base + done, total, stage)
            if on_progress:
                on_progress(base + done, total, stage)

        scored = score_submission(ds, sub, judge=judge, transform_matcher=matching.matcher, units=matching.units,
                                  progress=tick, budget=budget)
        scored.transform_matcher = matching.description
        results.append(scored)
        done_before += len(sub.analyses)
    return build_result(results, release_version=release.version, ground_truth_hash=run.ground_truth_hash,
                        judge=judge.configuration(),
                        transform_matcher={**matcher_summary(described, run.mode), "limits": limits.describe()},
                        mode=run.mode, k=run.k)  # type: ignore[arg-type]


def matcher_summary(described: dict[str, dict[str, Any]], mode: str) -> dict[str, Any]:
    """The run's transform matcher: its name and mode, and which datasets' transforms could not be scored (each
    dataset's own description, with its ground-truth build, is in its DatasetResult)."""
    not_run = sorted(n for n, d in described.items() if d.get("status") == "not_run")
    out: dict[str, Any] = {"name": TRANSFORM_MATCHER_NAME, "blade_compat": mode == "blade",
                           "datasets": sorted(described)}
    if not_run:
        out |= {"status": "not_run" if len(not_run) == len(described) else "partial", "not_run": not_run,
                "reason": " ".join(str(described[n].get("reason", "")) for n in not_run)}
    return out


def execute_run(engine: Engine, run_id: int, *, runs_root: Path, releases_root: Path,
                judges: JudgeSettings | None = None, gt_cache: Path | None = None,
                on_progress: Callable[[int, int, str], None] | None = None,
                limits: ScoringLimits | None = None) -> ScoringRun:
    """Score a queued run to the end; never raises for what happens inside the run (the record says it).

    ``limits`` bound it: each analysis's code runs at most ``analysis_timeout_s`` (status ``timeout``), and
    once ``run_budget_s`` has passed since the start the analyses not reached get ``budget_exhausted``; the run
    then succeeds with what was scored and says so in its message."""
    judges = judges or JudgeSettings()
    limits = limits or ScoringLimits()
    budget = RunBudget(analysis_s=limits.analysis_timeout_s, total_s=limits.run_budget_s)
    # the ground truth's cache sits in the data folder, beside the runs (as `forkpaths gt build` keeps it)
    gt_cache = gt_cache or runs_root.parent / "cache" / "groundtruth"
    run = claim_run(engine, run_id)
    if run.status != RunStatus.RUNNING.value or run.executor != this_executor():
        return run  # another process holds it, or it ended (cancelled before it started)
    try:
        with ScoringHere(run_id), Heartbeat(lambda: beat(engine, run_id)):
            return _execute_claimed(engine, run, runs_root=runs_root, releases_root=releases_root, judges=judges,
                                    gt_cache=gt_cache, on_progress=on_progress, limits=limits, budget=budget)
    except KeyboardInterrupt:  # Ctrl-C on `forkpaths score`: the record says so, then the command stops
        _update(engine, run_id, status=RunStatus.CANCELLED.value, finished_at=utcnow(),
                message="Interrupted from the terminal; no scores were kept.")
        raise


def _execute_claimed(engine: Engine, run: ScoringRun, *, runs_root: Path, releases_root: Path,
                     judges: JudgeSettings, gt_cache: Path,
                     on_progress: Callable[[int, int, str], None] | None, limits: ScoringLimits,
                     budget: RunBudget) -> ScoringRun:
    run_id = run.id or 0
    try:
        with session_scope(engine) as s:
            release = _release_for_scoring(s, run.release_version, releases_root)
            release_folder = _releases.release_dir(_releases._record(s, run.release_version), releases_root)
        files = stored_submissions(run, runs_root)
        folder = run_dir(runs_root, run_id)
        if run.kind == "mcq":
            report = score_answers(release.datasets, read_answers(files[0][1], label=files[0][0]),
                                   release_version=release.version,
                                   source={"kind": "answers_file", "file": files[0][0],
                                           **_asked_model(files[0][1])})
            path = folder / "mcq-report.json"
            _write_atomic(path, dump_mcq_report(report).encode("utf-8"))
            overall = next((g for g in report.groups if g.dataset == "all" and g.kind == "all"), None)
            scores: dict[str, Any] = {"mcq": {
                "accuracy": overall.accuracy if overall else None, "chance": overall.chance if overall else None,
                "unparseable": overall.unparseable if overall else 0,
                "datasets": {g.dataset: g.accuracy for g in report.groups if g.kind == "all" and g.dataset != "all"}}}
            done = total = 1
        else:
            subs = [parse_submission(data, label=name, known_datasets=[d.name for d in release.datasets])
                    for name, data in files]
            result = _score_analyses(engine, run, release, subs, judges, on_progress, release_folder=release_folder,
                                     gt_cache=gt_cache, limits=limits, budget=budget)
            path = folder / "result.json"
            _write_atomic(path, dump_result(result).encode("utf-8"))
            scores = scores_summary(result)
            done = total = sum(len(s.analyses) for s in subs)
            # what scored the transforms is known once the matcher for each dataset was chosen
            _update(engine, run_id, transform_matcher=result.provenance.transform_matcher)
            note = _limits_note(result, limits)
        return _update(engine, run_id, status=RunStatus.SUCCEEDED.value, finished_at=utcnow(),
                       result_path=path.relative_to(runs_root).as_posix(), scores=scores, scores_effective=scores,
                       progress_done=done, progress_total=total, stage="done",
                       message=note if run.kind != "mcq" else "")
    except RunTakenOver as exc:
        log.warning("scoring run %s stopped here: %s", run_id, exc)
        with session_scope(engine) as s:
            return s.get(ScoringRun, run_id) or run
    except RunCancelled:
        with session_scope(engine) as s:
            current = s.get(ScoringRun, run_id)
            where = f" after {current.progress_done} of {current.progress_total} analyses" if current else ""
        log.info("scoring run %s cancelled", run_id)
        return _update(engine, run_id, status=RunStatus.CANCELLED.value, finished_at=utcnow(),
                       message=f"Cancelled{where}; no scores were kept.")
    except Exception as exc:  # noqa: BLE001 - one run's crash is recorded on that run and ends there
        log.exception("scoring run %s crashed", run_id)
        with session_scope(engine) as s:
            current = s.get(ScoringRun, run_id)
            where = f" after {current.progress_done} of {current.progress_total} analyses" if current else ""
        return _update(engine, run_id, status=RunStatus.FAILED.value, finished_at=utcnow(),
                       message=f"Scoring failed{where}: {type(exc).__name__}: {exc}"[:2000])


def _limits_note(result: EvaluationResult, limits: ScoringLimits) -> str:
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


# ------------------------------------------------------------------------------------ queries and actions


@judges_actor
def get_run(*, session: Session, actor: User, run_id: int) -> ScoringRun:
    require_role(actor, *SCORING_ROLES)
    run = session.get(ScoringRun, run_id)
    if run is None:
        raise NotFoundError(f"There is no scoring run {run_id}.")
    return run


@judges_actor
def scorable_releases(*, session: Session, actor: User) -> list[ReleaseRecord]:
    """The releases a run can be scored against, newest first (evaluators included)."""
    require_role(actor, *SCORING_ROLES)
    rows = session.exec(select(ReleaseRecord)).all()
    return sorted(rows, key=lambda r: tuple(int(x) for x in r.version.split(".") if x.isdigit()), reverse=True)


@judges_actor
def list_runs(*, session: Session, actor: User, release_version: str | None = None,
              kind: str | None = None) -> list[ScoringRun]:
    """Runs, newest first."""
    require_role(actor, *SCORING_ROLES)
    stmt = select(ScoringRun)
    if release_version:
        stmt = stmt.where(ScoringRun.release_version == release_version)
    if kind:
        stmt = stmt.where(ScoringRun.kind == kind)
    return list(session.exec(stmt.order_by(col(ScoringRun.id).desc())).all())


@judges_actor
def cancel_run(*, session: Session, actor: User, run_id: int) -> ScoringRun:
    """Stop a run: a queued one at once; a running one after the analysis it is scoring (the scorer, wherever it
    runs, reads the flag); one whose scorer died (or was found dead: ``interrupted``) at once."""
    run = get_run(session=session, actor=actor, run_id=run_id)
    if run.status in FINISHED - {RunStatus.INTERRUPTED.value}:
        raise ScoringError(f"Run {run_id} has already {run.status}; there is nothing to cancel.")
    run.cancel_requested = True
    now = utcnow()
    if run.status == RunStatus.QUEUED.value:
        run.status, run.finished_at, run.message = RunStatus.CANCELLED.value, now, "Cancelled before it started."
    elif run.status == RunStatus.INTERRUPTED.value or not executor_alive(run.executor, run.heartbeat_at, now):
        run.status, run.finished_at = RunStatus.CANCELLED.value, now
        run.message = (f"Cancelled after the process scoring it stopped ({run.progress_done} of "
                       f"{run.progress_total} analyses done); no scores were kept.")
    session.add(run)
    return run


@judges_actor
def set_official(*, session: Session, actor: User, run_id: int, official: bool) -> ScoringRun:
    """Curators and admins mark a succeeded run as an official leaderboard entry (or take the mark back)."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    run = get_run(session=session, actor=actor, run_id=run_id)
    if official and run.status != RunStatus.SUCCEEDED.value:
        raise ScoringError(f"Run {run_id} has {run.status}; only a succeeded run can be official.")
    run.official = official
    run.official_by_id, run.official_at = (actor.id, utcnow()) if official else (None, None)
    session.add(run)
    return run


@judges_actor
def rescore_run(*, session: Session, actor: User, run_id: int, release_version: str | None = None,
                runs_root: Path, releases_root: Path, max_bytes: int,
                judges: JudgeSettings | None = None, limits: ScoringLimits | None = None) -> ScoringRun:
    """Register the same submission, agent, judge and mode again, as a new queued run (the old run is kept): on
    another release, or on its own (``release_version`` None) after it was interrupted, failed or cancelled."""
    old = get_run(session=session, actor=actor, run_id=run_id)
    if old.status not in FINISHED:
        raise ScoringError(f"Run {run_id} is still {old.status}; cancel it or wait for it before re-scoring it.")
    release_version = release_version or old.release_version
    judge = str(old.judge.get("name", "offline")) if old.kind == "analyses" else "offline"
    return register_run(session=session, actor=actor, release_version=release_version,
                        files=stored_submissions(old, runs_root), agent=old.agent, model_name=old.model_name,
                        judge=judge, mode=old.mode, k=old.k, kind=old.kind, runs_root=runs_root,
                        releases_root=releases_root, max_bytes=max_bytes, judges=judges, source=old.source,
                        rescore_of_id=old.id, limits=limits)
