"""inspect_ai logs as scoring runs: ``forkpaths import-inspect LOG...`` and the Runs page's upload.

A log of ``inspect eval forkpaths/<kind>`` is read with inspect's own reader (:mod:`evaluation.inspect_bridge.logs`);
each sample's final answer becomes the kind's answer through the kind's agent hook, exactly as an agent run's
answer does, and the answers become the kind's submission(s) (one per epoch for a kind whose files hold one
answer per task, one holding every epoch for BLADE analyses: coverage@k). One transaction records an agent run
(strategy ``inspect``; the log's model, task, id and SHA-256 in its settings), one task run per (sample, epoch)
with its transcript (readable where agent runs' transcripts are), and the scoring runs, queued: the caller scores
them (the CLI here, the app's worker from the page).

Bad input: a log that cannot be read, of a task that is not forkpaths's, of a release this database does not
hold, or already imported (the same bytes) is refused whole with a sentence naming it. A sample that names no task of the release, that inspect
recorded an error for, or whose answer does not fit the kind gets a sentence naming the log and the sample; the
other samples are kept.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field

from sqlmodel import Session, select

from curation.artifacts import ArtifactStore
from curation.artifacts import write_atomic as _write_atomic
from curation.errors import BlindingViolation, ScoringError
from curation.models import AgentRun, AgentTaskRun, RunStatus, User, utcnow
from curation.services import releases as _releases
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import withheld_ground_truth
from curation.services.scoring import (
    SCORING_ROLES,
    JudgeSettings,
    ScoringLimits,
    default_judge,
    kind_of,
    register_run,
)
from evaluation.agents import ANSWERED, AgentKind, AgentTask, TaskAnswer, agent_kind
from evaluation.inspect_bridge.answers import answer_of
from evaluation.inspect_bridge.logs import InspectLog, LogSample, read_log
from evaluation.submissions import printable

__all__ = ["STRATEGY", "InspectImport", "import_inspect_log"]

log = logging.getLogger(__name__)

STRATEGY = "inspect"


@dataclass
class InspectImport:
    """What one log became: its agent run, the scoring runs queued for it, and a sentence per sample left out or
    answered unusably."""

    log: str
    agent_run_id: int
    scoring_run_ids: list[int]
    samples: int
    problems: list[str] = field(default_factory=list)


Answered = tuple[AgentTask, int, TaskAnswer, LogSample]


def _answers(parsed: InspectLog, tasks: dict[str, AgentTask], hook: AgentKind, workflow: bool
             ) -> tuple[list[Answered], list[str]]:
    out: list[Answered] = []
    problems: list[str] = []
    for s in parsed.samples:
        where = f"The inspect log {parsed.name}, sample {printable(s.key)} (epoch {s.epoch})"
        task = tasks.get(s.key)
        if task is None:
            problems.append(f"{where} names no {parsed.kind} task of release {parsed.release}; it was left out.")
            continue
        if s.error is not None:
            answer = TaskAnswer(s.key, s.epoch - 1, "failed", f"inspect recorded an error: {s.error}"[:2000], None)
            problems.append(f"{where} ended in an error ({s.error.splitlines()[0][:200] if s.error else ''}); it is "
                            "kept as a failed task run.")
        else:
            answer = answer_of(hook, task, s.completion, s.epoch - 1, workflow=workflow)
            if answer.status not in ANSWERED:
                problems.append(f"{where}: {answer.message}")
        out.append((task, s.epoch - 1, answer, s))
    return out, problems


@judges_actor
def import_inspect_log(*, session: Session, actor: User, name: str, data: bytes, artifacts: ArtifactStore,
                       max_bytes: int, agent: str = "", judges: JudgeSettings | None = None,
                       limits: ScoringLimits | None = None, source: str = "inspect") -> InspectImport:
    """Record the inspect log ``name`` (its bytes) as an agent run with its task runs and transcripts, and queue
    the scoring run(s) of its answers (their ids in the result; score them with ``execute_run``).

    Raises:
        PermissionDenied: not an evaluator, curator or admin.
        InspectError: the log cannot be read or is not of a forkpaths task (its sentence names the log).
        NotFoundError / ScoringError: the release it evaluated is not here, or no sample can be scored.
    """
    require_role(actor, *SCORING_ROLES)
    parsed = read_log(name, data)
    for prior in session.exec(select(AgentRun).where(AgentRun.strategy == STRATEGY,
                                                     AgentRun.release_version == parsed.release)).all():
        if ((prior.settings or {}).get("inspect") or {}).get("log_sha256") == parsed.sha256:
            raise ScoringError(f"The inspect log {parsed.name} (sha256 {parsed.sha256[:12]}…) was already imported "
                               f"as agent run {prior.id} (scoring runs {', '.join(map(str, prior.scoring_run_ids))});"
                               " nothing was imported again. Re-score its runs instead.")
    record = _releases.release_record(session=session, version=parsed.release)
    release, folder = _releases.stored_release(record, artifacts)
    hook = agent_kind(parsed.kind)
    task_kind = kind_of(parsed.kind)
    workflow = str(parsed.task_args.get("workflow", "")).lower() in ("true", "1")
    tasks = {t.key: t for t in hook.tasks(release, folder)}
    answered, problems = _answers(parsed, tasks, hook, workflow)
    if not any(a.status in ANSWERED for _, _, a, _ in answered):
        first = problems[0] if problems else ""
        raise ScoringError(f"No sample of the inspect log {parsed.name} has an answer forkpaths can score, so "
                           f"nothing was imported. {first}".strip())
    datasets = sorted({t.dataset for t, _, _, _ in answered if t.dataset})
    _, withheld = withheld_ground_truth(session=session, actor=actor, release_version=release.version,
                                        names=datasets)
    if withheld:
        raise BlindingViolation(f"{withheld} Scoring against it would show it; nothing was imported.")
    solver = str(parsed.task_args.get("solver") or "generate")
    agent = agent.strip() or f"inspect {solver}"
    epochs = max(s.epoch for s in parsed.samples)
    run = AgentRun(kind=parsed.kind, release_version=release.version, agent=agent, model=parsed.model[:128],
                   base_url=parsed.base_url[:512], strategy=STRATEGY, workflow=workflow, runs_per_task=epochs,
                   settings={"inspect": parsed.describe()}, templates={}, status=RunStatus.RUNNING.value,
                   tasks_total=len(answered), created_by_id=actor.id)
    session.add(run)
    session.flush()
    run_id = int(run.id or 0)
    for task, replicate, answer, s in answered:
        digest = hashlib.sha256(task.key.encode("utf-8")).hexdigest()[:16]
        rel = f"agent/{run_id}/transcripts/{digest}-run{replicate}.json"
        _write_atomic(artifacts.runs / rel, json.dumps(
            {"task": s.key, "run": replicate, "status": answer.status, "message": answer.message,
             "messages": s.transcript, "inspect": {"log": parsed.name, "eval_id": parsed.eval_id,
                                                    "epoch": s.epoch}}, ensure_ascii=False, indent=1).encode("utf-8"))
        session.add(AgentTaskRun(
            agent_run_id=run_id, task_key=s.key, title=task.title[:256], replicate=replicate,
            status=answer.status, message=answer.message[:4000], transcript_path=rel,
            answer=answer.answer if answer.answer is not None or answer.raw is None else {"raw": answer.raw},
            prompt_tokens=s.prompt_tokens, completion_tokens=s.completion_tokens, tool_calls=s.tool_calls,
            seconds=round(s.seconds, 3)))
        run.prompt_tokens += s.prompt_tokens
        run.completion_tokens += s.completion_tokens
    provenance = {"agent": agent, "model": parsed.model, "strategy": STRATEGY, "inspect": parsed.describe(),
                  "agent_run": run_id}
    subs = hook.submissions(release, [a for _, _, a, _ in answered], source=provenance)
    scored: list[int] = []
    judge = str(parsed.task_args.get("judge") or default_judge(parsed.kind))
    for sub in subs:
        sr = register_run(session=session, actor=actor, release_version=release.version, files=sub.files,
                          agent=agent, model_name=parsed.model[:128], kind=parsed.kind, artifacts=artifacts,
                          judge=judge if task_kind.uses_judge else "offline",
                          mode=str(parsed.task_args.get("mode") or "default"),
                          k=int(parsed.task_args.get("k") or 10), max_bytes=max_bytes, judges=judges,
                          source=source[:8], limits=limits)
        sr.agent_run_id = run_id
        session.add(sr)
        session.flush()
        scored.append(int(sr.id or 0))
    stored = []
    for i, sub in enumerate(subs):  # downloadable from the Agent runs page, as an agent run's generated ones
        files = []
        for fname, fdata in sub.files:
            rel = f"agent/{run_id}/submissions/{i}/{fname}"
            _write_atomic(artifacts.runs / rel, fdata)
            files.append({"name": fname, "path": rel, "sha256": hashlib.sha256(fdata).hexdigest(),
                          "bytes": len(fdata)})
        stored.append({"label": sub.label, "files": files})
    run.submissions = stored
    run.scoring_run_ids = scored
    run.tasks_done = len(answered)
    run.status = RunStatus.SUCCEEDED.value
    ok = sum(1 for _, _, a, _ in answered if a.status in ANSWERED)
    run.message = (f"Imported from the inspect log {parsed.name} (eval {parsed.eval_id}, sha256 {parsed.sha256[:12]}…): "
                   f"{ok} of {len(answered)} sample answers usable; scoring run{'s' if len(scored) != 1 else ''} "
                   f"{', '.join(f'#{i}' for i in scored)}.")[:4000]
    run.finished_at = utcnow()
    session.add(run)
    session.flush()
    log.info("imported inspect log %s as agent run %s (scoring runs %s)", parsed.name, run_id, scored)
    return InspectImport(log=parsed.name, agent_run_id=run_id, scoring_run_ids=scored, samples=len(answered),
                         problems=problems)

