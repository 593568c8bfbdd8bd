"""Agent runs: a model under test answers a release's tasks with a strategy, as a job on the queue, and each
generated submission is scored automatically (:mod:`curation.services.scoring`).

An evaluator starts a run (:func:`start_agent_run`: one transaction records the run and its background job);
the job (:func:`run_agent_job`, kind ``agent_run`` of :mod:`curation.services.background_jobs`: a procrastinate
worker on PostgreSQL, the app's thread on SQLite) answers every (task, run) with the strategy of
:mod:`evaluation.agents`. Each finished task run is stored in one transaction (its row, with the transcript file
written before it), so a crash loses at most the task under way, a cancel stops the task under way at its next
step (before the next model turn or tool call, or by killing a tool call that is running; that task is not
stored), and
:func:`resume_agent_run` (or the job retried by the queue) does only what is missing. Every model call is
cached by :class:`evaluation.llm.LLMClient` under (model, base URL, template version, messages, parameters with
the run's temperature and its seed + run index), so re-running a finished run sends no request.

When every task run is in, the kind's hook assembles its submission(s) (stored under the data folder,
downloadable), and each is registered and scored as a scoring run linked to the agent run
(``ScoringRun.agent_run_id``); the leaderboard shows the agent's strategy and cost beside it.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import zipfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy.exc
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.artifacts import write_atomic as _write_atomic
from curation.db import transactions
from curation.errors import USER_ERRORS, BlindingViolation, NotFoundError, ScoringError
from curation.models import AgentRun, AgentTaskRun, BackgroundJob, RunStatus, User, utcnow
from curation.services import releases as _releases
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.background_jobs import (
    ACTIVE,
    JobControl,
    JobOutcome,
    cancel_job,
    job_kind_of,
    start_job,
)
from curation.services.blinding import withheld_ground_truth
from curation.services.scoring import (
    SCORING_ROLES,
    JudgeSettings,
    ScoringLimits,
    default_judge,
    execute_run,
    kind_names,
    register_run,
)
from evaluation.agents import (
    ANSWERED,
    CANCELLED,
    STRATEGIES,
    TEMPLATES,
    AgentSettings,
    TaskAnswer,
    TaskOutcome,
    UnknownAgentKind,
    agent_kind,
    agent_kind_names,
    run_task,
)
from evaluation.llm import LLMClient, LLMConfig
from evaluation.submissions import printable

if TYPE_CHECKING:
    from curation.settings import Settings

__all__ = ["ACTIVE", "AGENT_JOB", "COVERAGE_RUNS", "MAX_RUNS_PER_TASK", "agent_kinds", "cancel_agent_run", "get_agent_run", "list_agent_runs",
           "resume_agent_run", "run_agent_job", "start_agent_run", "submission_download", "task_runs",
           "transcript"]

log = logging.getLogger(__name__)

AGENT_JOB = job_kind_of(f"{__name__}:run_agent_job")  # as background_jobs.KINDS declares it
COVERAGE_RUNS = 11  # BLADE's coverage@10 needs at least 11 runs per dataset (k + 1 analyses)
MAX_RUNS_PER_TASK = 100


def agent_kinds() -> list[tuple[str, str, tuple[str, ...]]]:
    """The kinds agents can answer: (name, label, strategies)."""
    return [(n, agent_kind(n).label, agent_kind(n).strategies) for n in agent_kind_names()]


def _cost(prices: Sequence[float] | None, prompt_tokens: int, completion_tokens: int) -> float | None:
    if not prices:
        return None
    return round((prompt_tokens * prices[0] + completion_tokens * prices[1]) / 1_000_000, 6)


def _scope(run_id: int) -> str:
    return f"agent_run:{run_id}"


# ------------------------------------------------------------------------------------ starting


@judges_actor
def start_agent_run(*, session: Session, actor: User, release_version: str, model: str, base_url: str,
                    strategy: str, runs_per_task: int = 1, kind: str | None = None, workflow: bool = False,
                    temperature: float = 0.0, seed: int = 0, only: Sequence[str] = (), agent: str = "",
                    settings: AgentSettings | None = None, prices: dict[str, tuple[float, float]] | None = None,
                    artifacts: ArtifactStore) -> AgentRun:
    """Record an agent run and its queued job (one transaction; the caller hands ``run.job_id`` to a worker).

    ``kind``: the kind of task the agent answers (None: the first kind agents can answer, in the registry's order).

    Raises:
        PermissionDenied: not an evaluator, curator or admin.
        ScoringError: a bad choice (kind, strategy, runs, temperature, model, URL, a dataset the release lacks).
        BlindingViolation: the release's ground truth of a chosen dataset is withheld from the actor.
        ReleaseError / NotFoundError: the release fails verification, or does not exist.
    """
    require_role(actor, *SCORING_ROLES)
    model, base_url = model.strip(), base_url.strip().rstrip("/")
    kind = kind or next(iter(agent_kind_names()), "")  # none: refused below with the list
    try:
        hook = agent_kind(kind)
    except UnknownAgentKind as exc:
        raise ScoringError(str(exc)) from exc
    if strategy not in hook.strategies:
        raise ScoringError(f"Unknown strategy '{printable(strategy)}' for {hook.label}; choose "
                           f"{' or '.join(hook.strategies)}.")
    if len(agent) > 128 or not agent.isprintable():
        raise ScoringError(f"The agent name '{printable(agent)}' must be printable text of at most 128 characters.")
    if not model or len(model) > 128 or not model.isprintable():
        raise ScoringError("Name the model under test (printable text, at most 128 characters), e.g. gpt-4o.")
    if not base_url.startswith(("http://", "https://")) or len(base_url) > 512 or not base_url.isprintable():
        raise ScoringError(f"The endpoint '{printable(base_url)}' is not an http(s) URL; give the OpenAI-compatible "
                           "base URL, e.g. http://localhost:11434/v1.")
    if not 1 <= runs_per_task <= MAX_RUNS_PER_TASK:
        raise ScoringError(f"Runs per task must be between 1 and {MAX_RUNS_PER_TASK} (got {runs_per_task}).")
    if not 0.0 <= temperature <= 2.0:
        raise ScoringError(f"The temperature must be between 0 and 2 (got {temperature:g}).")
    record = _releases.release_record(session=session, version=release_version)
    release, folder = _releases.stored_release(record, artifacts)
    tasks = hook.tasks(release, folder, only=list(only) or None)
    if only:
        known = {t.key for t in tasks} | {t.dataset for t in tasks if t.dataset}
        missing = [o for o in only if o not in known]
        if missing:
            raise ScoringError(f"Release {release.version} has no {hook.label.split(' (')[0]} task for "
                               f"{', '.join(printable(m) for m in missing)}.")
    if not tasks:
        raise ScoringError(f"Release {release.version} holds no tasks of kind {kind} ({hook.label}).")
    _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=release.version,
                                        names=sorted({t.dataset for t in tasks if t.dataset}))
    if withheld:
        raise BlindingViolation(f"{withheld} Its scores would show it; nothing was started.")
    agent_settings = (settings or AgentSettings()).model_copy(update={"strategy": strategy, "workflow": workflow})
    price = (prices or {}).get(model)
    run = AgentRun(kind=kind, release_version=release.version, agent=(agent.strip() or f"{strategy} agent")[:128],
                   model=model, base_url=base_url, strategy=strategy, workflow=workflow,
                   runs_per_task=runs_per_task, temperature=temperature, seed=seed, only=list(only),
                   settings=agent_settings.model_dump(mode="json"),
                   templates={strategy: TEMPLATES[strategy],
                              **({kind: brief} if (brief := getattr(hook, "brief_template", None)) else {})},
                   prices=list(price) if price else None, tasks_total=len(tasks) * runs_per_task,
                   created_by_id=actor.id, status=RunStatus.QUEUED.value)
    session.add(run)
    session.flush()
    if not agent.strip():
        # an unnamed agent is this run's own: the leaderboard joins a companion kind's run (an MCQ accuracy) to
        # a ranked run by (agent, model), so two unnamed runs of one model must not share a name. Naming two
        # runs alike is how an evaluator says they are one agent.
        run.agent = f"{strategy} agent #{run.id}"
    run.job_id = _new_job(session, run, actor)
    session.add(run)
    session.flush()
    log.info("agent run %s: %s with %s on release %s, %s tasks x %s runs", run.id, model, strategy,
             release.version, len(tasks), runs_per_task)
    return run


def _new_job(session: Session, run: AgentRun, actor: User) -> int:
    """The run's job, queued by the shared starter in the caller's transaction (which judges ``actor`` again and
    holds the role checked at the start until the commit; one job per run at a time)."""
    return start_job(session=session, kind=AGENT_JOB, params={"agent_run_id": run.id}, scope=_scope(run.id or 0),
                     requester=actor, total=run.tasks_total, what=f"Agent run {run.id}")


# ------------------------------------------------------------------------------------ reading


def _sync(session: Session, run: AgentRun) -> AgentRun:
    """A run whose job ended without saying so on the run (its process died: interrupted) says it now."""
    if run.status in ACTIVE and run.job_id is not None:
        job = session.get(BackgroundJob, run.job_id)
        if job is not None and job.status not in ACTIVE:
            run.status = job.status
            run.message = run.message or job.message
            run.finished_at = run.finished_at or job.finished_at or utcnow()
            session.add(run)
    return run


@judges_actor
def get_agent_run(*, session: Session, actor: User, run_id: int) -> AgentRun:
    require_role(actor, *SCORING_ROLES)
    run = session.get(AgentRun, run_id)
    if run is None:
        raise NotFoundError(f"There is no agent run {run_id}.")
    return _sync(session, run)


@judges_actor
def list_agent_runs(*, session: Session, actor: User, release_version: str | None = None) -> list[AgentRun]:
    """Agent runs, newest first."""
    require_role(actor, *SCORING_ROLES)
    stmt = select(AgentRun)
    if release_version:
        stmt = stmt.where(AgentRun.release_version == release_version)
    return [_sync(session, r) for r in session.exec(stmt.order_by(col(AgentRun.id).desc())).all()]


@judges_actor
def task_runs(*, session: Session, actor: User, run_id: int) -> list[AgentTaskRun]:
    """The finished task runs of an agent run, by task then run."""
    get_agent_run(session=session, actor=actor, run_id=run_id)
    return list(session.exec(select(AgentTaskRun).where(AgentTaskRun.agent_run_id == run_id)
                             .order_by(col(AgentTaskRun.task_key), col(AgentTaskRun.replicate))).all())


@judges_actor
def transcript(*, session: Session, actor: User, task_run_id: int, artifacts: ArtifactStore) -> list[dict[str, Any]]:
    """The transcript of one task run: every prompt, answer, tool call and observation, in order."""
    require_role(actor, *SCORING_ROLES)
    row = session.get(AgentTaskRun, task_run_id)
    if row is None:
        raise NotFoundError(f"There is no agent task run {task_run_id}.")
    path = artifacts.runs / row.transcript_path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ScoringError(f"The transcript of task {printable(row.task_key)} (run {row.replicate}) cannot be read "
                           f"from {path}: {exc}.") from exc
    return list(data.get("messages", []))


@judges_actor
def submission_download(*, session: Session, actor: User, run_id: int,
                        artifacts: ArtifactStore) -> tuple[str, bytes, str]:
    """The generated submission in the kind's own format: the file itself when there is one, else a zip of them
    (file name, bytes, MIME type)."""
    run = get_agent_run(session=session, actor=actor, run_id=run_id)
    files = [(f["name"], artifacts.runs / f["path"]) for sub in run.submissions for f in sub["files"]]
    if not files:
        raise ScoringError(f"Agent run {run_id} has no submission yet: it is written once every task is done.")
    try:
        if len(files) == 1:
            return files[0][0], files[0][1].read_bytes(), "application/json"
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, path in files:
                zf.writestr(name, path.read_bytes())
    except OSError as exc:
        raise ScoringError(f"Agent run {run_id}: a submission file is missing ({exc.strerror or exc}).") from exc
    return f"agent-run-{run_id}-submissions.zip", buffer.getvalue(), "application/zip"


# ------------------------------------------------------------------------------------ cancel, resume


@judges_actor
def cancel_agent_run(*, session: Session, actor: User, run_id: int) -> AgentRun:
    """Stop a run at the next step of the task under way (a ReAct run's running tool call is killed); the
    finished tasks are kept (resume does the rest)."""
    run = get_agent_run(session=session, actor=actor, run_id=run_id)
    if run.status not in ACTIVE or run.job_id is None:
        raise ScoringError(f"Agent run {run_id} has already ended ({run.status}); there is nothing to cancel.")
    job = cancel_job(session=session, actor=actor, job_id=run.job_id)
    if job.status == RunStatus.CANCELLED.value:
        run.status, run.finished_at = RunStatus.CANCELLED.value, utcnow()
        run.message = f"Cancelled before it started; {run.tasks_done} of {run.tasks_total} task runs are kept."
        session.add(run)
    return run


@judges_actor
def resume_agent_run(*, session: Session, actor: User, run_id: int) -> AgentRun:
    """A new job for a run that was interrupted, cancelled or failed: the task runs already finished are kept
    (and its model calls are cached); only the rest is asked."""
    run = get_agent_run(session=session, actor=actor, run_id=run_id)
    if run.status in ACTIVE:
        raise ScoringError(f"Agent run {run_id} is still {run.status}; there is nothing to resume.")
    if run.status == RunStatus.SUCCEEDED.value:
        raise ScoringError(f"Agent run {run_id} has finished; start a new run to ask the model again.")
    run.job_id = _new_job(session, run, actor)
    run.status, run.finished_at = RunStatus.QUEUED.value, None
    run.message = f"Resumed: {run.tasks_done} of {run.tasks_total} task runs were already done and are kept."
    session.add(run)
    return run


# ------------------------------------------------------------------------------------ the job


def _store_task(engine: Engine, run_id: int, key: str, title: str, replicate: int, out: TaskOutcome,
                runs_root: Path) -> None:
    """One finished task run: its transcript file, then its row and the run's totals, in one transaction."""
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    rel = f"agent/{run_id}/transcripts/{digest}-run{replicate}.json"
    _write_atomic(runs_root / rel, json.dumps({"task": key, "run": replicate, "status": out.status,
                                               "message": out.message, "messages": out.transcript},
                                              ensure_ascii=False, indent=1).encode("utf-8"))
    try:
        with transactions(engine)() as s:
            run = s.get(AgentRun, run_id, with_for_update=True)
            if run is None:
                return
            cost = _cost(run.prices, out.prompt_tokens, out.completion_tokens)
            s.add(AgentTaskRun(agent_run_id=run_id, task_key=key, title=title[:256], replicate=replicate,
                               status=out.status, message=out.message[:4000], transcript_path=rel,
                               # no usable answer: the model's own words, for a kind that scores them (MCQs)
                               answer=out.answer if out.answer is not None or out.raw is None else {"raw": out.raw},
                               prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                               calls=out.calls, cache_hits=out.cache_hits, tool_calls=out.tool_calls,
                               model_seconds=round(out.model_seconds, 3), seconds=round(out.seconds, 3), cost=cost))
            run.tasks_done += 1
            run.prompt_tokens += out.prompt_tokens
            run.completion_tokens += out.completion_tokens
            run.calls += out.calls
            run.cache_hits += out.cache_hits
            run.cost = _cost(run.prices, run.prompt_tokens, run.completion_tokens)
            s.add(run)
    except sqlalchemy.exc.IntegrityError:  # another process stored this task run first: keep theirs
        log.warning("agent run %s: task %s run %s was already stored", run_id, key, replicate)


def _set(engine: Engine, run_id: int, **values: Any) -> None:
    with transactions(engine)() as s:
        run = s.get(AgentRun, run_id)
        if run is not None:
            for k, v in values.items():
                setattr(run, k, v)
            s.add(run)


def _tally(rows: Sequence[AgentTaskRun]) -> str:
    counts = Counter(r.status for r in rows)
    answered = sum(counts[s] for s in ANSWERED)
    others = ", ".join(f"{n} {s.replace('_', ' ')}" for s, n in sorted(counts.items()) if s not in ANSWERED)
    return f"{answered} of {len(rows)} task runs answered" + (f" ({others})" if others else "")


def run_agent_job(engine: Engine, job: BackgroundJob, control: JobControl, settings: Settings) -> JobOutcome:
    """The job: answer every (task, run) not yet stored, then write the submissions and score them.

    It spans transactions (:func:`curation.db.transactions`): each task run is stored in one of its own when it
    ends, so a cancel or a crash keeps the task runs answered before it, and a retried job answers only the rest;
    the agent talks to its model and runs code between them."""
    run_id = int(job.params["agent_run_id"])
    artifacts = settings.artifact_store()
    runs_root = artifacts.runs
    with transactions(engine)() as s:
        run = s.get(AgentRun, run_id)
        if run is None:
            raise NotFoundError(f"There is no agent run {run_id}.")
        record = _releases.release_record(session=s, version=run.release_version)
        release, folder = _releases.stored_release(record, artifacts)
        done = {(t.task_key, t.replicate) for t in s.exec(select(AgentTaskRun).where(
            AgentTaskRun.agent_run_id == run_id)).all()}
        run.status, run.job_id = RunStatus.RUNNING.value, job.id
        s.add(run)
        s.flush()
        s.expunge(run)
    hook = agent_kind(run.kind)
    tasks = hook.tasks(release, folder, only=run.only or None)
    total = len(tasks) * run.runs_per_task
    agent_settings = AgentSettings.model_validate(run.settings)
    key = settings.agent_endpoint_key(run.base_url)  # the server's key goes only where it was configured
    base = LLMConfig(base_url=run.base_url, model=run.model, api_key=key, temperature=run.temperature,
                     timeout_s=settings.llm_timeout_s, max_retries=settings.llm_max_retries,
                     cache_dir=settings.llm_cache_dir)
    first = LLMClient(base)
    clients = {r: first.with_config(seed=run.seed + r) for r in range(run.runs_per_task)}
    todo = [(r, t) for r in range(run.runs_per_task) for t in tasks if (t.key, r) not in done]
    finished = total - len(todo)
    control.progress(finished, total, f"{finished} of {total} task runs done")
    for r, task in todo:
        if control.cancelled():
            message = (f"Cancelled after {finished} of {total} task runs; they are kept. Resume the run to do the "
                       "rest.")
            _set(engine, run_id, status=RunStatus.CANCELLED.value, message=message, finished_at=utcnow())
            return JobOutcome(RunStatus.CANCELLED.value, message)
        control.progress(finished, total, f"{task.title[:80]} (run {r + 1} of {run.runs_per_task})")
        out = run_task(clients[r], hook, task, agent_settings, should_stop=control.cancelled)
        if out.status == CANCELLED:  # stopped half-way: not stored; resume asks it again (its calls cached)
            message = (f"Cancelled during {task.title[:80]!r} (run {r + 1}), after {finished} of {total} task runs; "
                       "those are kept. Resume the run to do the rest.")
            _set(engine, run_id, status=RunStatus.CANCELLED.value, message=message, finished_at=utcnow())
            return JobOutcome(RunStatus.CANCELLED.value, message)
        _store_task(engine, run_id, task.key, task.title, r, out, runs_root)
        finished += 1
        control.progress(finished, total, f"{finished} of {total} task runs done")
    return _submit_and_score(engine, run_id, release, settings, control)


def _submit_and_score(engine: Engine, run_id: int, release: Any, settings: Settings, control: JobControl
                      ) -> JobOutcome:
    artifacts = settings.artifact_store()
    runs_root = artifacts.runs
    with transactions(engine)() as s:
        run = s.get(AgentRun, run_id)
        assert run is not None
        rows = list(s.exec(select(AgentTaskRun).where(AgentTaskRun.agent_run_id == run_id)).all())
        creator = s.get(User, run.created_by_id) if run.created_by_id else None
        if creator is None:
            raise ScoringError(f"Agent run {run_id} has no one who started it on record, so its submission "
                               "cannot be scored in their name.")
        s.expunge_all()
    tally = _tally(rows)
    hook = agent_kind(run.kind)
    source = {"agent": run.agent, "model": run.model, "base_url": run.base_url, "strategy": run.strategy,
              "templates": run.templates, "temperature": run.temperature, "seed": run.seed, "agent_run": run_id}
    answers = [TaskAnswer(r.task_key, r.replicate, r.status, r.message,
                          r.answer if r.status in ANSWERED else None,
                          raw=str(r.answer["raw"]) if r.status not in ANSWERED and isinstance(r.answer, dict)
                          and "raw" in r.answer else None) for r in rows]
    subs = hook.submissions(release, answers, source=source)
    stored = []
    for i, sub in enumerate(subs):
        files = []
        for name, data in sub.files:
            rel = f"agent/{run_id}/submissions/{i}/{Path(name).name}"
            _write_atomic(runs_root / rel, data)
            files.append({"name": Path(name).name, "path": rel, "sha256": hashlib.sha256(data).hexdigest(),
                          "bytes": len(data)})
        stored.append({"label": sub.label, "files": files})
    _set(engine, run_id, submissions=stored)
    # a strict kind (MCQs) scores an answer without a valid letter too (as unparseable), but only beside valid
    # ones: a run without a single valid answer says nothing of the model, only that its replies did not parse
    scorable = any(a.status in ANSWERED for a in answers)
    if not scorable:
        first = next((r.message for r in rows if r.message), "")
        message = f"No task got a usable answer, so nothing was scored: {tally}. First: {first}"[:2000]
        _set(engine, run_id, status=RunStatus.FAILED.value, message=message, finished_at=utcnow())
        return JobOutcome(RunStatus.FAILED.value, message)
    if run.kind not in kind_names():
        message = (f"{tally}. The submission is stored, but the '{run.kind}' task kind is not installed here, so "
                   "it was not scored.")
        _set(engine, run_id, status=RunStatus.SUCCEEDED.value, message=message, finished_at=utcnow())
        return JobOutcome(RunStatus.SUCCEEDED.value, message)
    scored: list[int] = list(run.scoring_run_ids)
    notes = []
    judges, limits = JudgeSettings.from_settings(settings), ScoringLimits.from_settings(settings)
    for i, sub in enumerate(subs):
        if i < len(scored):  # scored before a crash: kept, not scored twice
            continue
        control.progress(run.tasks_total, run.tasks_total, f"scoring {sub.label}")
        try:
            with transactions(engine)() as s:
                sr = register_run(session=s, actor=creator, release_version=run.release_version, files=sub.files,
                                  agent=run.agent, model_name=run.model, kind=run.kind, artifacts=artifacts,
                                  judge=default_judge(run.kind),
                                  max_bytes=settings.max_submission_bytes,
                                  judges=judges, source="agent", limits=limits)
                sr.agent_run_id = run_id
                s.add(sr)
                holder = s.get(AgentRun, run_id)
                assert holder is not None
                holder.scoring_run_ids = [*scored, int(sr.id or 0)]
                s.add(holder)
                sr_id = int(sr.id or 0)
        except USER_ERRORS as exc:
            notes.append(f"{sub.label} could not be scored: {exc}")
            scored.append(0)
            continue
        scored.append(sr_id)
        done = execute_run(engine, sr_id, artifacts=artifacts,
                           judges=judges, limits=limits)
        if done.status != RunStatus.SUCCEEDED.value:
            notes.append(f"scoring run {sr_id} {done.status}: {done.message}")
    ids = [i for i in scored if i]
    said = (f"Scored as run{'s' if len(ids) != 1 else ''} {', '.join(f'#{i}' for i in ids)}." if ids
            else "The submission is stored but was not scored.")
    message = (f"{tally}. {said}" + (" " + " ".join(notes) if notes else ""))[:4000]
    _set(engine, run_id, status=RunStatus.SUCCEEDED.value, message=message, finished_at=utcnow(),
         scoring_run_ids=scored)
    return JobOutcome(RunStatus.SUCCEEDED.value, message, {"scoring_run_ids": ids})


def strategies() -> tuple[str, ...]:
    return STRATEGIES
