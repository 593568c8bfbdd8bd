"""A run fans out: its parts (one per dataset file; a kind may name other parts with ``part_labels``, e.g. the
hypotheses kind's dataset folders) are scored by whichever workers claim them, and the run's
result is combined from all of them at the end, in the files' order, so it is the same whatever order the parts
were scored in, and whichever workers scored them.

The worker holding the run (its *coordinator*, the ``score_run`` job) writes one :class:`ScoringRunPart` row per
part and defers a ``score_part`` job for each part beyond the first, so that idle workers help; then it scores
parts itself until none is left to claim, waits for the ones other workers hold, and combines. Every part is
claimed by one conditional UPDATE (two workers never score the same part), and its result is accepted only from
the process that holds it, once: a part whose worker died (``kill -9``: same host, at once; another host, when its
heartbeat is older than :data:`curation.services.run_lifecycle.LEASE_S`) goes back to the queue and is scored
again from its start, so no item counts twice. A coordinator that dies is retried by procrastinate; the parts
already done are kept.

Progress is the sum of the parts' progress, written on the run; a cancel on the run stops every part at its next
analysis. On SQLite nothing fans out: the run is scored in the app's process, part after part (the same parts).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlmodel import col, select

from curation.db import transactions
from curation.models import RunStatus, ScoringRun, ScoringRunPart, utcnow
from curation.services.run_lifecycle import Heartbeat, executor_alive, this_executor

if TYPE_CHECKING:
    from evaluation.tasks import ScoredRun, ScoringContext, TaskKind

__all__ = ["FanOut", "PART_DONE", "PART_FAILED", "can_fan_out", "help_score_parts", "score_fanned_out"]

log = logging.getLogger(__name__)

PART_DONE, PART_FAILED = "done", "failed"
WAIT_S = 0.2

#: what the coordinator calls to ask for ``n`` helper jobs on run ``run_id`` (the queue defers them)
FanOut = Callable[[int, int], Any]


class PartLost(Exception):
    """This process no longer holds the part (it was presumed dead and handed to another worker)."""


def can_fan_out(task: TaskKind, ctx: ScoringContext) -> bool:
    """Whether the kind scores in parts, and the run has more than one."""
    return task.fan_out is not None and task.fan_out.count(ctx) > 1


# ------------------------------------------------------------------------------------ the parts' rows


def _ensure_parts(engine: Engine, run_id: int, labels: list[str]) -> int:
    """The run's part rows (written once; a retried coordinator finds them); parts held by a dead process go
    back to the queue. Returns how many parts are queued."""
    with transactions(engine)() as s:
        s.get(ScoringRun, run_id, with_for_update=True)  # one coordinator writes the rows
        have = {p.idx for p in s.exec(select(ScoringRunPart).where(ScoringRunPart.run_id == run_id)).all()}
        for idx, label in enumerate(labels):
            if idx not in have:
                s.add(ScoringRunPart(run_id=run_id, idx=idx, label=label[:128]))
    _release_dead_parts(engine, run_id)
    with transactions(engine)() as s:
        return len(s.exec(select(ScoringRunPart.id).where(ScoringRunPart.run_id == run_id,
                                                          ScoringRunPart.status == RunStatus.QUEUED.value)).all())


def _release_dead_parts(engine: Engine, run_id: int) -> None:
    now = utcnow()
    with transactions(engine)() as s:
        for p in s.exec(select(ScoringRunPart).where(ScoringRunPart.run_id == run_id,
                                                     ScoringRunPart.status == RunStatus.RUNNING.value)).all():
            if p.executor == this_executor() and p.id in _held_here:
                continue
            if p.executor != this_executor() and executor_alive(p.executor, p.heartbeat_at, now):
                continue
            gone = s.connection().execute(
                update(ScoringRunPart).where(col(ScoringRunPart.id) == p.id,
                                             col(ScoringRunPart.status) == RunStatus.RUNNING.value,
                                             col(ScoringRunPart.executor) == p.executor)
                .values(status=RunStatus.QUEUED.value, progress_done=0))
            if gone.rowcount:
                log.warning("part %s of run %s was held by %s, which stopped; it is scored again", p.idx, run_id,
                            p.executor)


_held_here: set[int] = set()


def _claim_part(engine: Engine, run_id: int) -> ScoringRunPart | None:
    """Take a queued part of a running, not cancelled run for this process (one conditional UPDATE each)."""
    with transactions(engine)() as s:
        run = s.get(ScoringRun, run_id)
        if run is None or run.status != RunStatus.RUNNING.value or run.cancel_requested:
            return None
        queued = s.exec(select(ScoringRunPart).where(ScoringRunPart.run_id == run_id,
                                                     ScoringRunPart.status == RunStatus.QUEUED.value)
                        .order_by(col(ScoringRunPart.idx))).all()
    for part in queued:
        with transactions(engine)() as s:
            got = s.connection().execute(
                update(ScoringRunPart).where(col(ScoringRunPart.id) == part.id,
                                             col(ScoringRunPart.status) == RunStatus.QUEUED.value)
                .values(status=RunStatus.RUNNING.value, executor=this_executor(), heartbeat_at=utcnow(),
                        attempts=col(ScoringRunPart.attempts) + 1, progress_done=0))
            if got.rowcount == 1:
                _held_here.add(part.id or 0)
                return s.get(ScoringRunPart, part.id)
    return None


def _held(part_id: int) -> Any:
    return (col(ScoringRunPart.id) == part_id, col(ScoringRunPart.status) == RunStatus.RUNNING.value,
            col(ScoringRunPart.executor) == this_executor())


def _part_progress(engine: Engine, part: ScoringRunPart, done: int, total: int, stage: str) -> None:
    """A part's progress, and the run's (the sum of its parts'); stops the part when the run was cancelled or
    ended, or when the part was handed to another worker."""
    from curation.services.lifecycle import RunCancelled, RunTakenOver

    with transactions(engine)() as s:
        moved = s.connection().execute(update(ScoringRunPart).where(*_held(part.id or 0))
                                       .values(progress_done=done, progress_total=total, heartbeat_at=utcnow()))
        if moved.rowcount != 1:
            raise PartLost(f"part {part.idx} of run {part.run_id} is held by another process now")
        summed = (select(func.coalesce(func.sum(ScoringRunPart.progress_done), 0))
                  .where(ScoringRunPart.run_id == part.run_id).scalar_subquery())
        s.connection().execute(update(ScoringRun).where(col(ScoringRun.id) == part.run_id,
                                                        col(ScoringRun.status) == RunStatus.RUNNING.value)
                               .values(progress_done=summed, stage=stage[:256]))
        run = s.get(ScoringRun, part.run_id)
        if run is None or run.cancel_requested:
            raise RunCancelled()
        if run.status != RunStatus.RUNNING.value:
            raise RunTakenOver(f"run {part.run_id} is now {run.status}")


def _finish_part(engine: Engine, part: ScoringRunPart, status: str, result: str) -> bool:
    with transactions(engine)() as s:
        return s.connection().execute(update(ScoringRunPart).where(*_held(part.id or 0))
                                      .values(status=status, result=result)).rowcount == 1


def _beat_part(engine: Engine, part_id: int) -> None:
    with transactions(engine)() as s:
        s.connection().execute(update(ScoringRunPart).where(*_held(part_id)).values(heartbeat_at=utcnow()))


def _score_one(engine: Engine, task: TaskKind, ctx: ScoringContext, part: ScoringRunPart) -> None:
    """Score one claimed part here. A cancel, or the run or part taken away, propagates; the part's own crash is
    recorded on the part (the coordinator fails the run with it)."""
    from curation.services.lifecycle import RunCancelled, RunTakenOver

    def tick(done: int, total: int, stage: str) -> None:
        _part_progress(engine, part, done, total, stage)

    try:
        with Heartbeat(lambda: _beat_part(engine, part.id or 0)):
            assert task.fan_out is not None  # only kinds that fan out have parts
            text = task.fan_out.score_part(ctx, part.idx, progress=tick)
        _finish_part(engine, part, PART_DONE, text)
    except (RunCancelled, RunTakenOver, PartLost, OperationalError, InterfaceError):
        raise  # the database away: the job is retried when it is back, and the part scored again
    except Exception as exc:  # noqa: BLE001 - the part's crash ends the run, with its sentence
        log.exception("part %s of run %s crashed", part.idx, part.run_id)
        _finish_part(engine, part, PART_FAILED, f"{part.label}: {type(exc).__name__}: {exc}")
    finally:
        _held_here.discard(part.id or 0)


# ------------------------------------------------------------------------------------ coordinator and helpers


def score_fanned_out(engine: Engine, run: ScoringRun, task: TaskKind, ctx: ScoringContext,
                     fan_out: FanOut | None) -> ScoredRun:
    """The coordinator: write the parts, ask for helpers, score parts here too, wait for the rest, combine.
    It spans transactions: the parts are written, claimed and combined in short ones of their own while
    helpers score beside it."""
    from curation.errors import ScoringError
    from curation.services.lifecycle import RunCancelled, RunTakenOver

    run_id = run.id or 0
    assert task.fan_out is not None  # only kinds that fan out have parts
    fan = task.fan_out
    named = fan.labels  # a kind whose parts are not its files names them
    labels = ([str(x) for x in named(ctx)] if named is not None else
              [str(f.get("dataset") or f.get("name") or i) for i, f in enumerate(run.submission_files)])
    queued = _ensure_parts(engine, run_id, labels)
    if fan_out is not None and queued > 1:
        fan_out(run_id, queued - 1)
    while True:
        with transactions(engine)() as s:
            current = s.get(ScoringRun, run_id)
            parts = s.exec(select(ScoringRunPart).where(ScoringRunPart.run_id == run_id)
                           .order_by(col(ScoringRunPart.idx))).all()
        if current is None or current.cancel_requested:
            raise RunCancelled()
        if current.status != RunStatus.RUNNING.value or current.executor != this_executor():
            raise RunTakenOver(f"run {run_id} is now {current.status}, held by {current.executor or 'nobody'}")
        failed = [p for p in parts if p.status == PART_FAILED]
        if failed:
            raise ScoringError("; ".join(p.result or p.label for p in failed))
        if len(parts) == len(labels) and all(p.status == PART_DONE for p in parts):
            return fan.combine(ctx, [p.result or "" for p in parts])
        part = _claim_part(engine, run_id)
        if part is not None:
            try:
                _score_one(engine, task, ctx, part)
            except PartLost as exc:
                log.warning("%s", exc)
            continue
        _release_dead_parts(engine, run_id)
        time.sleep(WAIT_S)


def help_score_parts(engine: Engine, run_id: int, build: Callable[[ScoringRun], tuple[TaskKind, ScoringContext]]
                     ) -> int:
    """A helper (``score_part`` job): score the run's queued parts until none is left; returns how many.
    It spans transactions: each part is claimed and stored in one of its own."""
    from curation.services.lifecycle import RunCancelled, RunTakenOver

    with transactions(engine)() as s:
        run = s.get(ScoringRun, run_id)
    if run is None or run.status != RunStatus.RUNNING.value or run.cancel_requested:
        return 0
    task, ctx = build(run)
    scored = 0
    while (part := _claim_part(engine, run_id)) is not None:
        try:
            _score_one(engine, task, ctx, part)
        except (RunCancelled, RunTakenOver, PartLost) as exc:
            log.info("part %s of run %s stopped: %s", part.idx, run_id, exc or "cancelled")
            return scored
        scored += 1
    return scored
