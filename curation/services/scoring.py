"""Scoring runs: register an agent's submission against a release, score it outside any page, keep the record.

A run is registered in one transaction (:func:`register_run`): the submission files are checked (size, JSON,
BLADE format, datasets the release has), the release is verified against its manifest, and the run's provenance
(submission hash, release version and ground-truth hashes, evaluator version, judge, mode, k) is written once.
:func:`execute_run` then does the work in its own short transactions, so a browser page can leave and come back
(the app's :class:`curation.services.run_worker.RunWorker` calls it in a background thread; ``forkpaths score``
calls it in the foreground): it records progress after analyses (at most once a second, and at the end) beside its heartbeat, stops when a cancel is
requested, and ends the run ``succeeded`` (result file written to the artifact store), ``cancelled`` or
``failed`` with a sentence. A crash of one run never touches another.

Submissions, results and releases live in the artifact store (:mod:`curation.artifacts`), addressed by their
SHA-256, which the run's row records: a job needs only the run's id, and runs on any machine that reaches the
database and mounts the store.

What is specific to a kind of task (its submission format, how it is scored, its result file and scores) is in
its module under :mod:`evaluation.tasks`, looked up by the run's ``kind``; nothing here names a kind.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.db import transactions
from curation.errors import ArtifactError, BlindingViolation, NotFoundError, ReleaseError, ScoringError
from curation.models import ReleaseRecord, Role, RunStatus, ScoringRun, User, utcnow
from curation.services import releases as _releases
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import withheld_ground_truth
from curation.services.lifecycle import RunCancelled, RunTakenOver
from curation.services.run_lifecycle import (
    Heartbeat,
    ScoringHere,
    beat,
    claim_run,
    executor_alive,
    interrupt_dead_runs,
    this_executor,
)
from curation.services.run_records import SCORING_ROLES, get_run, list_runs
from evaluation.judges import judge_names, judge_needs_llm, make_judge
from evaluation.judges.base import Judge
from evaluation.llm import LLMClient, LLMConfig
from evaluation.submissions import printable
from evaluation.tasks import (
    CheckedFile,
    ScoringContext,
    ScoringLimits,
    SubmissionCheckError,
    TaskKind,
    UnknownKind,
    companion_kinds,
    kind_names,
    kinds_with,
    ranked_kinds,
)
from evaluation.tasks import task_kind as _registered_kind

# the BLADE-analysis kind's helpers, re-exported where callers knew them before the kinds moved to evaluation.tasks
from evaluation.tasks.analyses import (  # noqa: F401
    GROUND_TRUTH_TIMEOUT_S,
    TransformMatching,
    matcher_summary,
    scores_summary,
)
from evaluation.tasks.analyses import transform_matching_for as _transform_matching_for  # noqa: F401
from evaluation.tasks.parts import part_of
from exports.schema import DatasetRelease, Release

if TYPE_CHECKING:  # the engine (pandas, networkx, numpy) is imported to score: registering and queueing a run do not
    from evaluation.scoring import RunBudget

__all__ = [
    "SCORING_ROLES",
    "JudgeSettings",
    "ScoringLimits",
    "RunCancelled",
    "TransformMatching",
    "cancel_run",
    "dataset_gt_hash",
    "default_judge",
    "judge_choices",
    "kind_of",
    "execute_run",
    "claim_run",
    "interrupt_dead_runs",
    "companion_kinds",
    "judge_names",
    "kind_names",
    "ranked_kinds",
    "get_run",
    "list_runs",
    "register_run",
    "verified_release",
    "release_by_record",
    "release_gt_hashes",
    "rescore_run",
    "score_parts",
    "stored_result",
    "scorable_releases",
    "scores_summary",
    "set_official",
    "stored_submissions",
]

log = logging.getLogger(__name__)

MODES = ("default", "blade")
FINISHED = {RunStatus.SUCCEEDED.value, RunStatus.FAILED.value, RunStatus.CANCELLED.value,
            RunStatus.INTERRUPTED.value}



# ------------------------------------------------------------------------------------ kinds


def kind_of(name: str) -> TaskKind:
    """The registered task kind ``name`` (ScoringError naming the known ones when there is none)."""
    try:
        return _registered_kind(name)
    except UnknownKind as exc:
        raise ScoringError(str(exc)) from exc


def items_noun(kind: str) -> str:
    """What a run of ``kind`` counts its progress in, in the kind's words ("analyses", "task folders", ...)."""
    try:
        return str(_registered_kind(kind).item_noun)
    except UnknownKind:
        return "items"


def _kind_only_judges(kind: str) -> set[str]:
    """Judges that other kinds claim as their own (``judges`` of a kind), which kind ``kind`` cannot use."""
    from evaluation.tasks import KINDS

    return {j for k in KINDS.values() if k.name != kind for j in k.judges}


def default_judge(kind: str) -> str:
    """The judge a run of ``kind`` uses when none is named: the kind's own, else ``offline``."""
    return kind_of(kind).default_judge


def judge_choices(kind: str) -> list[str]:
    """The judges a run of ``kind`` may be scored with, its default first: the kind's own where it names some,
    else every registered judge no other kind claims; none for a kind scored without a judge."""
    task = kind_of(kind)
    if not task.uses_judge:
        return []
    names = list(task.judges) or [n for n in judge_names() if n not in _kind_only_judges(kind)]
    return sorted(names, key=lambda n: n != task.default_judge)


# ------------------------------------------------------------------------------------ release access


def _scoring_release(session: Session, version: str, artifacts: ArtifactStore,
                     manifest_sha256: str | None = None) -> tuple[Release, Path]:
    """THE place scoring reads a release: its record by version (NotFoundError naming the known ones), then the
    release from the artifact store by its MANIFEST hash (the run's, else the one recorded at the cut), every
    file checked (ArtifactMissing / ArtifactCorrupted / ReleaseError with the reason when it fails). Who may see
    which dataset's ground truth is decided where it is shown (registering a run, Run details)."""
    return _releases.stored_release(_releases.release_record(session=session, version=version), artifacts,
                                    manifest_sha256)


def release_for_scoring(*, session: Session, version: str, artifacts: ArtifactStore) -> Release:
    """Release ``version`` as scoring reads it (record, MANIFEST and files checked; no role check: the caller's
    service checked the actor and the blinding)."""
    return _scoring_release(session, version, artifacts)[0]


@judges_actor
def verified_release(*, session: Session, actor: User, release_version: str,
                     artifacts: ArtifactStore) -> tuple[Release, Path]:
    """Release ``release_version`` and its folder, after the same checks scoring makes (scoring roles only): its
    record, its MANIFEST against the hash recorded at the cut, every file against the MANIFEST (the folder is
    this machine's copy materialised from the artifact store). The release is read once: callers use it rather
    than read the folder again.

    Raises:
        NotFoundError: no release of that version is recorded (a folder without a record is never used).
        ReleaseError: the release was modified after it was cut (the message names the files).
    """
    require_role(actor, *SCORING_ROLES)
    return _scoring_release(session, release_version, artifacts)


@judges_actor
def mcq_release(*, session: Session, actor: User, release_version: str, artifacts: ArtifactStore) -> Release:
    """The verified release whose MCQs a model under test is asked (scoring roles only)."""
    require_role(actor, *SCORING_ROLES)
    release = release_for_scoring(session=session, version=release_version, artifacts=artifacts)
    mcq = kind_of("mcq")
    holding = [d.name for d in release.datasets if part_of(d, mcq)]
    _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=release.version,
                                        names=holding)
    if withheld:
        raise BlindingViolation(f"{withheld} Asking a model its MCQs would show them; nothing was asked.")
    if not holding:
        raise ScoringError(f"Release {release_version} holds no MCQs; generate and accept them before cutting it.")
    return release


def release_by_record(*, session: Session, record: ReleaseRecord, artifacts: ArtifactStore) -> Release:
    """A release from its record, read like :func:`_scoring_release`."""
    return _releases.stored_release(record, artifacts)[0]


# ------------------------------------------------------------------------------------ hashes and paths


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def dataset_gt_hash(ds: DatasetRelease, kind: str | None = None) -> str:
    """Content hash of what the scores of a run of ``kind`` on a dataset depend on: its data table, its decisions,
    and each kind's part as the kind declares it (:attr:`ReleasePart.hash_input`): the parts hashed for every run
    (``in_every_hash``), and the run's own kind's part. ``kind`` None: every part (the dataset's whole ground
    truth, whatever runs read it).

    A part that is absent or empty adds nothing, so that the hashes of datasets without it stay as they were. A
    kind's hash input that is a mapping is merged into the payload (the kinds of format 1.x keep their keys, so
    the hashes runs recorded then still match); any other value is kept under the kind's name."""
    payload = {"data_sha256": ds.data_sha256, "variables": [v.model_dump(mode="json") for v in ds.variables],
               "transforms": [t.model_dump(mode="json") for t in ds.transforms],
               "models": [m.model_dump(mode="json") for m in ds.models]}
    for k in kinds_with("release_part"):
        spec = k.release_part
        assert spec is not None
        if kind is not None and not (spec.in_every_hash or k.name == kind):
            continue
        part = part_of(ds, k)
        value = None if part is None else spec.hash_input(part)
        if isinstance(value, Mapping):
            payload.update(value)
        elif value not in (None, [], {}, ()):
            payload[k.name] = value
    return hashlib.sha256(_canonical(payload)).hexdigest()


def release_gt_hashes(release: Release, kind: str | None = None) -> dict[str, str]:
    """Each dataset's ground-truth hash for the runs of ``kind`` (see :func:`dataset_gt_hash`)."""
    return {d.name: dataset_gt_hash(d, kind) for d in release.datasets}


def combined_hash(hashes: dict[str, str]) -> str:
    """A run's ground-truth hash: one SHA-256 over its datasets' hashes (dataset name → hash), in name order."""
    return hashlib.sha256(_canonical(sorted(hashes.items()))).hexdigest()


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
        """What a run records about judge ``name`` (registered in :mod:`evaluation.judges`); a judge that asks an
        LLM records the endpoint and model, and needs them configured."""
        if name not in judge_names():
            raise ScoringError(f"Unknown judge '{name}'; choose {' or '.join(judge_names())}.")
        if not judge_needs_llm(name):
            return make_judge(name).configuration()
        if not self.llm.configured:
            offline = next((n for n in judge_names() if not judge_needs_llm(n)), "offline")
            raise ScoringError(f"The {name} judge needs an endpoint: set FORKPATHS_LLM_BASE_URL and "
                               f"FORKPATHS_LLM_MODEL, or choose the {offline} judge.")
        return {"name": name, "model": self.llm.model, "base_url": self.llm.base_url}

    def llm_configuration(self, role: str, model: str = "") -> dict[str, Any]:
        """What a run records about the model a kind asks in ``role`` (the reproducibility inspector): the
        configured endpoint and ``model`` (default: the configured model)."""
        if not self.llm.configured:
            raise ScoringError(f"This kind of run asks an LLM (its {role}): set FORKPATHS_LLM_BASE_URL and "
                               "FORKPATHS_LLM_MODEL.")
        model = model.strip() or self.llm.model or ""
        if len(model) > 128 or not model.isprintable():
            raise ScoringError("The model name must be printable text of at most 128 characters.")
        return {"name": role, "model": model, "base_url": (self.llm.base_url or "").rstrip("/")}

    def client(self, recorded: dict[str, Any]) -> LLMClient:
        """The client of the model a run recorded at registration (the endpoint and key from the settings)."""
        return LLMClient(self.llm.model_copy(update={"model": recorded.get("model") or self.llm.model}))

    def build(self, name: str) -> Judge:
        self.configuration(name)
        return make_judge(name, client=LLMClient(self.llm)) if judge_needs_llm(name) else make_judge(name)


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{n / 1024:.0f} kB"


def _check_files(files: Sequence[tuple[str, bytes]], release: Release, max_bytes: int, kind: TaskKind,
                 max_analyses: int | None = None) -> list[CheckedFile]:
    if not files:
        raise ScoringError("Choose a submission file to score.")
    total = sum(len(b) for _, b in files)
    if total > max_bytes:
        big = max(files, key=lambda f: len(f[1]))
        raise ScoringError(f"The submission is {_size(total)} (largest file: {big[0]}, {_size(len(big[1]))}); the "
                           f"limit is {_size(max_bytes)} (FORKPATHS_MAX_SUBMISSION_MB). Nothing was stored.")
    try:
        return kind.check_files(files, release, max_items=max_analyses)
    except SubmissionCheckError as exc:
        raise ScoringError(str(exc)) from exc


@judges_actor
def register_run(*, session: Session, actor: User, release_version: str, files: Sequence[tuple[str, bytes]],
                 agent: str, model_name: str = "", judge: str = "offline", mode: str = "default", k: int = 10,
                 kind: str = "analyses", artifacts: ArtifactStore, max_bytes: int,
                 judges: JudgeSettings | None = None, source: str = "web",
                 rescore_of_id: int | None = None, limits: ScoringLimits | None = None,
                 llm_model: str = "") -> ScoringRun:
    """Check everything and record a queued run with its provenance and its stored submission files.

    Raises:
        PermissionDenied: not an evaluator, curator or admin.
        ScoringError / SubmissionError / AnswersFileError: bad input, with the file and what is wrong.
        ReleaseError: the release fails verification (its message says which file).
    """
    from evaluation.results import EVALUATOR_VERSION  # numpy: its metrics (imported when a run is registered)

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
    task = kind_of(kind)
    modes = task.modes or MODES  # a kind may score in modes of its own
    if mode not in modes:
        raise ScoringError(f"Unknown mode '{mode}' for {task.name} runs; choose {' or '.join(modes)}.")
    allowed = task.judges  # a kind that needs judges of its own names them
    if task.uses_judge and allowed and judge not in allowed:
        raise ScoringError(f"The {judge} judge cannot score {task.name} runs; choose {' or '.join(allowed)}.")
    if task.uses_judge and not allowed and judge in _kind_only_judges(task.name):
        raise ScoringError(f"The {judge} judge scores other kinds of task; choose a judge for {task.name} runs "
                           f"({', '.join(n for n in judge_names() if n not in _kind_only_judges(task.name))}).")
    if not 1 <= k <= 1000:
        raise ScoringError(f"k must be between 1 and 1000 (got {k}).")
    judge_config = (judges or JudgeSettings()).configuration(judge) if task.uses_judge else {}
    llm_role = task.llm_role  # a kind that asks a model of its own (the reproducibility inspector)
    if llm_role:
        judge_config = (judges or JudgeSettings()).llm_configuration(llm_role, llm_model)
    record = _releases.release_record(session=session, version=release_version)
    release = _releases.stored_release(record, artifacts)[0]  # refuses a failing release
    checked = _check_files(files, release, max_bytes, task, (limits or ScoringLimits()).max_analyses)
    hashes = release_gt_hashes(release, task.name)
    datasets = [c.dataset for c in checked if c.dataset is not None] or sorted(hashes)
    # the result shows the ground truth of every dataset scored: withheld from whoever is blind to it
    _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=release.version, names=datasets)
    if withheld:
        raise BlindingViolation(f"{withheld} Scoring against it would show it; nothing was stored.")
    used = {d: hashes[d] for d in datasets}
    digest = hashlib.sha256()
    for c in sorted(checked, key=lambda c: c.name):
        digest.update(hashlib.sha256(c.data).digest())
    run = ScoringRun(
        kind=kind, agent=agent, model_name=model_name, release_version=release.version,
        ground_truth_hash=combined_hash(used), dataset_hashes=used, submission_sha256=digest.hexdigest(),
        evaluator_version=EVALUATOR_VERSION, judge=judge_config,
        mode=mode, k=k, source=source, rescore_of_id=rescore_of_id, created_by_id=actor.id,
        release_sha256=record.manifest_sha256,
        progress_total=(task.planned_items(checked, release) if task.planned_items is not None
                        else sum(c.items or 0 for c in checked)) or 1,
        stage="queued")
    session.add(run)
    session.flush()
    stored = []
    try:
        for c in checked:  # into the artifact store, by content: a file stored twice is kept once
            stored.append({"name": Path(c.name).name, "sha256": artifacts.put_bytes(c.data),
                           "bytes": len(c.data), "dataset": c.dataset, "format": c.format, "analyses": c.items})
    except OSError as exc:  # nothing half-stored: the run's row rolls back (a whole object left is harmless)
        raise ScoringError(f"The submission could not be stored in the artifact store at {artifacts.root}: "
                           f"{exc.strerror or exc}. Nothing was registered.") from exc
    run.submission_files = stored
    session.add(run)
    session.flush()
    log.info("registered scoring run %s (%s on %s, %s files)", run.id, agent, release.version, len(stored))
    return run


def stored_submissions(run: ScoringRun, artifacts: ArtifactStore) -> list[tuple[str, bytes]]:
    """The run's submission files as stored at registration, read from the artifact store by their recorded
    hashes (ArtifactMissing / ArtifactCorrupted naming the file, the run and the hash)."""
    return [(f["name"], artifacts.get_bytes(str(f["sha256"]), what=f"the submission {f['name']} of run {run.id}"))
            for f in run.submission_files]


def stored_result(run: ScoringRun, artifacts: ArtifactStore) -> bytes:
    """The result file of a succeeded run, read from the artifact store by its recorded hash."""
    if not run.result_sha256:
        raise ScoringError(f"Run {run.id} has no result ({run.status}).")
    return artifacts.get_bytes(run.result_sha256, what=f"the result of run {run.id}")


# ------------------------------------------------------------------------------------ execution


def _update(engine: Engine, run_id: int, **values: Any) -> ScoringRun:
    """Write the run's outcome, only while this process still holds it (locked: a scorer presumed dead whose run
    was taken over, or cancelled, writes nothing)."""
    with transactions(engine)() as s:
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


PROGRESS_WRITE_S = 1.0  # a run's progress (and its cancel flag) is written (read) at most this often


def _progress(engine: Engine, run_id: int, done: int, total: int, stage: str) -> None:
    """Record progress and a heartbeat after an analysis, while this process still holds the run: one
    conditional UPDATE that also reads the cancel flag (a cancel requested rolls the write back and stops the
    run; a run that is no longer this process's is read again only to say why)."""
    with transactions(engine)() as s:
        held = s.connection().execute(
            update(ScoringRun).where(col(ScoringRun.id) == run_id, col(ScoringRun.executor) == this_executor(),
                                     col(ScoringRun.status) == RunStatus.RUNNING.value)
            .values(progress_done=done, progress_total=total, stage=stage[:256], heartbeat_at=utcnow())
            .returning(col(ScoringRun.cancel_requested))).first()
        if held is None:
            run = s.get(ScoringRun, run_id)
            if run is None:
                raise RunCancelled("the run record disappeared")
            raise RunTakenOver(f"run {run_id} is now {run.status}, held by {run.executor or 'nobody'}")
        if held[0]:
            raise RunCancelled()


def execute_run(engine: Engine, run_id: int, *, artifacts: ArtifactStore,
                judges: JudgeSettings | None = None, gt_cache: Path | None = None,
                on_progress: Callable[[int, int, str], None] | None = None,
                limits: ScoringLimits | None = None, fan_out: Callable[[int, int], Any] | None = None,
                raise_when_database_lost: bool = False) -> ScoringRun:
    """Score a queued run to the end; never raises for what happens inside the run (the record says it).

    ``raise_when_database_lost`` (a queue worker's): when the database goes away mid-run, the error is raised
    instead of recorded (it could not be), so the queue retries the job once the database is back; the retry
    takes the run over from this process (:func:`curation.services.run_lifecycle.take_over_run_if_dead`).

    ``fan_out`` (a queue worker's): the run is scored in parts (:mod:`curation.services.fanout`), and
    ``fan_out(run_id, n)`` asks for ``n`` helper jobs that score parts on other workers.

    ``limits`` bound it: each analysis's code runs at most ``analysis_timeout_s`` (status ``timeout``), and
    once ``run_budget_s`` has passed since the start the analyses not reached get ``budget_exhausted``; the run
    then succeeds with what was scored and says so in its message.
    It spans transactions: progress, heartbeat and the end are each written in a short one of their own, so a
    page can follow the run and cancel it."""
    from evaluation.scoring import RunBudget

    judges = judges or JudgeSettings()
    limits = limits or ScoringLimits()
    budget = RunBudget(analysis_s=limits.analysis_timeout_s, total_s=limits.run_budget_s)
    # the ground truth's cache sits in this machine's data folder (as `forkpaths gt build` keeps it)
    gt_cache = gt_cache or artifacts.gt_cache
    run = claim_run(engine, run_id)
    if run.status != RunStatus.RUNNING.value or run.executor != this_executor():
        return run  # another process holds it, or it ended (cancelled before it started)
    try:
        with ScoringHere(run_id), Heartbeat(lambda: beat(engine, run_id)):
            return _execute_claimed(engine, run, artifacts=artifacts, judges=judges,
                                    gt_cache=gt_cache, on_progress=on_progress, limits=limits, budget=budget,
                                    fan_out=fan_out, raise_when_database_lost=raise_when_database_lost)
    except KeyboardInterrupt:  # Ctrl-C on `forkpaths score`: the record says so, then the command stops
        _update(engine, run_id, status=RunStatus.CANCELLED.value, finished_at=utcnow(),
                message="Interrupted from the terminal; no scores were kept.")
        raise


def _execute_claimed(engine: Engine, run: ScoringRun, *, artifacts: ArtifactStore, judges: JudgeSettings, gt_cache: Path,
                     on_progress: Callable[[int, int, str], None] | None, limits: ScoringLimits,
                     budget: RunBudget, fan_out: Callable[[int, int], Any] | None = None,
                     raise_when_database_lost: bool = False) -> ScoringRun:
    run_id = run.id or 0
    last_write = [float("-inf")]
    reached: list[int] = []  # the latest (done, total), which the database may not have yet

    try:
        with transactions(engine)() as s:
            release, release_folder = _scoring_release(s, run.release_version, artifacts, run.release_sha256)
        task = kind_of(run.kind)

        ticking = threading.Lock()

        def tick(done: int, total: int, stage: str) -> None:
            # at most one progress write (and cancel-flag read) a second, and the last one always: a write per
            # analysis was a tenth of a worker's time, mostly waiting on the database. A kind that scores on
            # several threads (programmatic checks) ticks from each: one tick at a time, so a later count never
            # goes in before an earlier one, and a cancel asked during one tick is read by the next.
            with ticking:
                reached[:] = [done, total]
                now = time.monotonic()
                if now - last_write[0] >= PROGRESS_WRITE_S or done >= total:
                    _progress(engine, run_id, done, total, stage)
                    last_write[0] = now
                if on_progress:
                    on_progress(done, total, stage)

        ctx = ScoringContext(
            release=release, release_folder=release_folder, files=stored_submissions(run, artifacts),
            judge=lambda: judges.build(run.judge.get("name", "offline")), mode=run.mode, k=run.k,
            ground_truth_hash=run.ground_truth_hash, limits=limits, budget=budget, gt_cache=gt_cache,
            progress=tick, llm=_llm_of(task, run, judges))
        if fan_out is not None:
            from curation.services.fanout import can_fan_out, score_fanned_out

            scored = (score_fanned_out(engine, run, task, ctx, fan_out) if can_fan_out(task, ctx)
                      else task.score(ctx))
        else:
            scored = task.score(ctx)
        result_sha = artifacts.put_bytes(scored.result_bytes)
        # with the provenance known once scoring chose it (e.g. the transform matcher), in the same write
        return _update(engine, run_id, **{
            **(scored.run_fields or {}), "status": RunStatus.SUCCEEDED.value, "finished_at": utcnow(),
            "result_path": scored.result_name, "result_sha256": result_sha, "scores": scored.scores,
            "scores_effective": scored.scores, "progress_done": scored.items, "progress_total": scored.items,
            "stage": "done", "message": scored.message})
    except RunTakenOver as exc:
        log.warning("scoring run %s stopped here: %s", run_id, exc)
        with transactions(engine)() as s:
            return s.get(ScoringRun, run_id) or run
    except RunCancelled:
        done, total = _reached(engine, run_id, reached)
        log.info("scoring run %s cancelled", run_id)
        return _update(engine, run_id, status=RunStatus.CANCELLED.value, finished_at=utcnow(),
                       progress_done=done, progress_total=total,
                       message=f"Cancelled after {done} of {total} {items_noun(run.kind)}; no scores were kept.")
    except (OperationalError, InterfaceError) as exc:
        if raise_when_database_lost:  # the database went away: the queue retries the job when it is back
            log.warning("scoring run %s: the database went away (%s); the job is retried", run_id, exc)
            raise
        return _record_crash(engine, run_id, exc, reached, run.kind)
    except (ScoringError, ReleaseError, ArtifactError) as exc:  # an artifact missing or altered: its sentence
        log.warning("scoring run %s failed: %s", run_id, exc)
        return _update(engine, run_id, status=RunStatus.FAILED.value, finished_at=utcnow(),
                       message=f"Scoring failed: {exc}"[:2000])
    except Exception as exc:  # noqa: BLE001 - one run's crash is recorded on that run and ends there
        return _record_crash(engine, run_id, exc, reached, run.kind)


def _reached(engine: Engine, run_id: int, reached: list[int]) -> tuple[int, int]:
    """How far a run got: what it last reported, or what its record says (progress is written once a second)."""
    if reached:
        return reached[0], reached[1]
    with transactions(engine)() as s:
        current = s.get(ScoringRun, run_id)
        return (current.progress_done, current.progress_total) if current else (0, 0)


def _record_crash(engine: Engine, run_id: int, exc: Exception, reached: list[int], kind: str) -> ScoringRun:
    log.exception("scoring run %s crashed", run_id)
    done, total = _reached(engine, run_id, reached)
    return _update(engine, run_id, status=RunStatus.FAILED.value, finished_at=utcnow(),
                   message=f"Scoring failed after {done} of {total} {items_noun(kind)}: {type(exc).__name__}: "
                           f"{exc}"[:2000])




def score_parts(engine: Engine, run_id: int, *, artifacts: ArtifactStore,
                judges: JudgeSettings | None = None, limits: ScoringLimits | None = None) -> int:
    """A helper job of a fanned-out run: score its queued parts here (see :mod:`curation.services.fanout`).
    Returns how many parts it scored; a part's crash is recorded on the part, and the run fails with it.
    It spans transactions: each part is claimed and stored in one of its own."""
    from curation.services.fanout import help_score_parts
    from evaluation.scoring import RunBudget

    judges = judges or JudgeSettings()
    limits = limits or ScoringLimits()
    gt_cache = artifacts.gt_cache

    def build(run: ScoringRun) -> tuple[TaskKind, ScoringContext]:
        with transactions(engine)() as s:
            release, release_folder = _scoring_release(s, run.release_version, artifacts, run.release_sha256)
        elapsed = (utcnow() - run.started_at).total_seconds() if run.started_at else 0.0
        budget = RunBudget(analysis_s=limits.analysis_timeout_s, total_s=limits.run_budget_s - elapsed)
        return kind_of(run.kind), ScoringContext(
            release=release, release_folder=release_folder, files=stored_submissions(run, artifacts),
            judge=lambda: judges.build(run.judge.get("name", "offline")), mode=run.mode, k=run.k,
            ground_truth_hash=run.ground_truth_hash, limits=limits, budget=budget, gt_cache=gt_cache,
            llm=_llm_of(kind_of(run.kind), run, judges))

    return help_score_parts(engine, run_id, build)


def _llm_of(task: TaskKind, run: ScoringRun, judges: JudgeSettings) -> Callable[[], Any] | None:
    """The client of the model a run recorded, for a kind that asks one (None for the others)."""
    if not task.llm_role or not judges.llm.configured:
        return None
    recorded = dict(run.judge)
    return lambda: judges.client(recorded)


# ------------------------------------------------------------------------------------ queries and actions


@judges_actor
def scorable_releases(*, session: Session, actor: User) -> list[ReleaseRecord]:
    """The releases a run can be scored against, newest first (evaluators included)."""
    require_role(actor, *SCORING_ROLES)
    rows = session.exec(select(ReleaseRecord)).all()
    return sorted(rows, key=lambda r: tuple(int(x) for x in r.version.split(".") if x.isdigit()), reverse=True)


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
                       f"{run.progress_total} {items_noun(run.kind)} done); no scores were kept.")
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
                artifacts: ArtifactStore, max_bytes: int,
                judges: JudgeSettings | None = None, limits: ScoringLimits | None = None) -> ScoringRun:
    """Register the same submission, agent, judge and mode again, as a new queued run (the old run is kept): on
    another release, or on its own (``release_version`` None) after it was interrupted, failed or cancelled."""
    old = get_run(session=session, actor=actor, run_id=run_id)
    if old.status not in FINISHED:
        raise ScoringError(f"Run {run_id} is still {old.status}; cancel it or wait for it before re-scoring it.")
    release_version = release_version or old.release_version
    judge = str(old.judge.get("name", "offline")) if kind_of(old.kind).uses_judge else "offline"
    return register_run(session=session, actor=actor, release_version=release_version,
                        files=stored_submissions(old, artifacts), agent=old.agent, model_name=old.model_name,
                        judge=judge, mode=old.mode, k=old.k, kind=old.kind, artifacts=artifacts,
                        max_bytes=max_bytes, judges=judges, source=old.source,
                        rescore_of_id=old.id, limits=limits, llm_model=str(old.judge.get("model", "")))
