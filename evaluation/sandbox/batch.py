"""Many items of code in one sandbox job, each in a fresh process of its own, each with its own time limit.

A job pays for its namespaces, its filesystem and loading its table; scoring paid that once per analysis. A
*batch* pays it once per run of items: the job (the *measurer*, which never runs the code) loads the table,
then forks one child per item (:func:`evaluation.sandbox.handoff.split`) from that same warm state. What holds
for a single job holds for each item:

* the item's code runs in a child that holds neither the result channel nor the data file, and hands over only
  data, which the measurer checks and measures; its child is killed once it has handed over its result;
* the item has its own time limit: the parent watches the wall clock of each item (``item_start`` to ``item``
  events, which only the measurer writes) and kills the job when an item runs past it; each child also gets a
  CPU limit of its own;
* one item cannot change another's result: it runs after the previous item's child is gone, starts from the
  measurer's state (which no code ever ran in), and finds the job's scratch space (``/tmp``, ``/dev/shm``, its
  working directory) emptied of whatever the previous item left there.

An item that kills its process (a crash, the CPU limit), or runs past its time limit, ends the job: it fails
alone with the sentence a job of its own would have had (:func:`evaluation.sandbox.describe.describe_death`),
and the items after it run in a fresh job. So a file of endless loops costs what it cost before, and an honest
file costs one job.

Job side: a registered job calls :func:`run_items`. Parent side: :func:`run_batch` yields one
:class:`ItemOutcome` per item, in order, as they come (the caller can score item 1 while item 2 runs).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import resource
import shutil
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluation.sandbox.results import SandboxLimits
    from evaluation.sandbox.runtime import JobContext
    from evaluation.sandbox.server import Outcome

__all__ = ["MAX_ITEMS_PER_JOB", "ItemOutcome", "child_limits", "run_batch", "run_items"]

MAX_ITEMS_PER_JOB = 200
"""A long batch is cut into jobs of this many items, so the measurer's memory never drifts far from a fresh one."""
_TRIM_EVERY = 10  # items between two returns of freed heap memory to the system (a millisecond each)


# ------------------------------------------------------------------------------------------------- job side


def child_limits(cpu_s: float) -> Callable[[], None]:
    """What a batch's child does before anything untrusted: a CPU limit of its own (the item's time limit plus
    a few seconds, as a single job's), and fresh numpy randomness (as a process of its own would have)."""

    def prepare() -> None:
        import numpy as np

        usage = resource.getrusage(resource.RUSAGE_SELF)
        soft = int(math.ceil(usage.ru_utime + usage.ru_stime + cpu_s + 5))
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 5 if hard == resource.RLIM_INFINITY else
                                                 min(soft + 5, hard)))
        np.random.seed()

    return prepare


def _reap() -> None:
    """Wait until the children of earlier items (killed once they had handed over) are gone: the next item
    starts only then, and the job's process limit is never reached."""
    with contextlib.suppress(ChildProcessError):
        while True:
            os.waitpid(-1, 0)


def _empty(folder: Path, keep: Path | None = None) -> None:
    """Remove everything in ``folder`` (but ``keep`` and the folders leading to it), whatever its modes."""
    with contextlib.suppress(OSError):
        os.chmod(folder, stat.S_IRWXU)
    for entry in list(os.scandir(folder)):
        path = Path(entry.path)
        if keep is not None and (path == keep or path in keep.parents):
            if path != keep:
                _empty(path, keep)
            continue
        if entry.is_dir(follow_symlinks=False):
            for root, dirs, _files in os.walk(path):
                for name in dirs:
                    with contextlib.suppress(OSError):
                        os.chmod(os.path.join(root, name), stat.S_IRWXU, follow_symlinks=False)
            with contextlib.suppress(OSError):
                os.chmod(path, stat.S_IRWXU)
            shutil.rmtree(path)
        else:
            path.unlink()


def _fresh_scratch(ctx: JobContext) -> None:
    """What the previous item's code left in the job's scratch space and its streams goes (raises if it
    cannot)."""
    ctx.fresh_streams()
    _empty(ctx.work)
    if ctx.isolated:  # /tmp and /dev/shm are the job's own tmpfs (in process mode they are the machine's)
        for folder in (Path("/tmp"), Path("/dev/shm")):
            if folder.is_dir():
                _empty(folder, keep=ctx.work)
    os.chdir(ctx.work)


def _trim() -> None:
    """Give the memory the last item's frames took back to the system, so the next child starts as lean."""
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)


def run_items(ctx: JobContext, count: int, item: Callable[[int, bool], dict[str, Any]]) -> dict[str, Any]:
    """In a batch job: ``item(index, last)`` for each item in order, announced (``item_start``) and reported
    (``item``) on the result channel as it goes. ``item`` forks the item's child (``ctx.split(...,
    last=last)``) and returns its JSON result. Returns the job's result: how many items it reported.

    After a memory failure in this process the job stops (the parent runs the items left in a fresh job)."""
    for index in range(count):
        _reap()
        if index:
            try:
                _fresh_scratch(ctx)
            except OSError:
                return {"ok": True, "reported": index, "stopped": "the scratch space could not be emptied"}
        ctx.send({"event": "item_start", "index": index})
        try:
            result = item(index, index == count - 1)
        except MemoryError:
            ctx.send({"event": "item", "index": index,
                      "result": {"ok": False, "error_kind": "memory", "phase": "sandbox"}})
            return {"ok": True, "reported": index + 1, "stopped": "memory"}
        ctx.send({"event": "item", "index": index, "result": result})
        if index % _TRIM_EVERY == _TRIM_EVERY - 1:
            _trim()
    return {"ok": True, "reported": count}


# ---------------------------------------------------------------------------------------------- parent side


@dataclass
class ItemOutcome:
    """What became of one item of a batch.

    Attributes:
        index: the item's position in the batch.
        result: the job's result for the item (what a job of its own would have returned), or, when it died,
            ``{"ok": False, "error_kind": ..., "error": <sentence>}`` as :func:`run_job` words a death.
        error: the sandbox itself failed on this item (a job of its own would have raised it).
        by_deadline: the run's deadline, not the item's own limit, stopped it (or it was not started).
        limit_s: the time limit the item had.
    """

    index: int
    result: dict[str, Any] | None = None
    error: BaseException | None = None
    by_deadline: bool = False
    limit_s: float = 0.0


@dataclass
class _Watch:
    """The parent's view of one batch job, fed by the collecting thread (``on_event``)."""

    base: int
    count: int
    limit_s: float
    run_deadline: float | None
    inbox: queue.SimpleQueue[tuple[str, Any]] = field(default_factory=queue.SimpleQueue)
    current: int | None = None
    started_at: float = 0.0
    item_limit: float = 0.0
    by_deadline: bool = False
    reported: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    def on_event(self, event: dict[str, Any]) -> float | None:
        kind = event.get("event")
        now = time.monotonic()
        if kind == "item_start":
            index = event.get("index")
            if index != self.reported or self.current is not None:
                return None  # not in order: ignored (only the measurer writes these)
            self.current, self.started_at, self.events = self.reported, now, []
            self.item_limit, self.by_deadline = self.limit_s, False
            if self.run_deadline is not None:
                left = self.run_deadline - now
                if left < self.limit_s:
                    self.item_limit, self.by_deadline = max(left, 0.0), True
            return now + self.item_limit
        if kind == "item":
            result = event.get("result")
            if event.get("index") != self.current or not isinstance(result, dict):
                return None
            self.inbox.put(("item", ItemOutcome(self.base + self.reported, result=result, limit_s=self.item_limit)))
            self.reported += 1
            self.current, self.by_deadline = None, False
            return now + self.limit_s  # until the next item starts (the measurer's own work between items)
        if self.current is not None:
            self.events.append(event)
        return None


def _death(watch: _Watch, outcome: Outcome, limits: SandboxLimits) -> ItemOutcome:
    """The item the job died on (or, when it died before its first item, that item), as its own job's death."""
    from evaluation.errors import SandboxError
    from evaluation.sandbox.server import Outcome, generic_result

    index = watch.base + watch.reported
    started = watch.current is not None
    limit = watch.item_limit
    mine = Outcome(events=watch.events if started else list(outcome.events), timed_out=outcome.timed_out,
                   returncode=outcome.returncode, stderr=outcome.stderr, output=outcome.output,
                   seconds=time.monotonic() - watch.started_at if started else outcome.seconds)
    item_limits = limits.model_copy(update={"timeout_s": max(limit, 0.001)})
    try:
        result = generic_result(mine, item_limits)
    except SandboxError as exc:
        return ItemOutcome(index, error=exc, limit_s=limit)
    return ItemOutcome(index, result=result, by_deadline=watch.by_deadline and outcome.timed_out, limit_s=limit)


def run_batch(name: str, payload: dict[str, Any], items: Sequence[Any], *, data_path: Path | None,
              limits: SandboxLimits, run_deadline: float | None = None,
              max_items_per_job: int = MAX_ITEMS_PER_JOB) -> Iterator[ItemOutcome]:
    """Run the registered batch job ``name`` on ``items`` (its payload is ``payload`` plus ``items``, a slice of
    them, and ``item_limits``); yield one :class:`ItemOutcome` per item, in order, as soon as it is known.

    Args:
        name: a job that calls :func:`run_items` over ``ctx.payload["items"]``.
        payload: what every job of the batch gets besides its items (JSON).
        items: the items (JSON each).
        data_path: the one file the job may read (handed over read-only).
        limits: the limits of ONE item (its time limit, memory, output, file size): what a job of its own has.
        run_deadline: :func:`time.monotonic` after which no item may run: an item started with less time left
            than its limit gets what is left (``by_deadline`` when that stops it); items not started by then
            are not run (``by_deadline``, no result).
        max_items_per_job: a longer batch runs as several jobs, one after the other.

    Closing the iterator early cancels the job that runs.
    """
    from evaluation.errors import SandboxError
    from evaluation.sandbox.server import start_job

    start = 0
    while start < len(items):
        if run_deadline is not None and time.monotonic() >= run_deadline:
            for index in range(start, len(items)):
                yield ItemOutcome(index, by_deadline=True)
            return
        stop = min(len(items), start + max_items_per_job)
        watch = _Watch(base=start, count=stop - start, limit_s=limits.timeout_s, run_deadline=run_deadline)
        # until its first item starts, the job loads its table: within one item's limit, as a job of its own
        first = limits.timeout_s
        if run_deadline is not None and run_deadline - time.monotonic() < first:
            first, watch.by_deadline = max(run_deadline - time.monotonic(), 0.001), True
        watch.item_limit = first
        job_limits = limits.model_copy(update={"timeout_s": limits.timeout_s * (stop - start + 1)})

        def finish(outcome: Outcome, inbox: queue.SimpleQueue[tuple[str, Any]] = watch.inbox) -> Outcome:
            inbox.put(("end", outcome))
            return outcome

        job_payload = {**payload, "items": list(items[start:stop]), "item_limits": limits.model_dump()}
        try:
            handle = start_job(name, job_payload, data_path=data_path, limits=job_limits, finish=finish,
                               on_event=watch.on_event, timeout_s=first)
        except SandboxError as exc:
            yield ItemOutcome(start, error=exc, limit_s=limits.timeout_s)
            start += 1
            continue
        outcome: Outcome | None = None
        try:
            while outcome is None:
                try:
                    kind, value = watch.inbox.get(timeout=0.5)
                except queue.Empty:
                    if handle.done() and watch.inbox.empty():
                        break  # the sandbox failed before the job could end (no outcome)
                    continue
                if kind == "end":
                    outcome = value
                else:
                    yield value
        finally:
            if not handle.done():
                handle.cancel()  # the caller stopped listening: the job goes now
        try:
            handle.result()
        except Exception as exc:  # noqa: BLE001 - the sandbox could not run the job: this item fails, as alone
            yield ItemOutcome(start + watch.reported, error=exc, limit_s=limits.timeout_s)
            start += watch.reported + 1
            continue
        if outcome is None:  # pragma: no cover - a job that ended without an outcome raised above
            raise SandboxError("The sandbox's batch job ended without an outcome.")
        if watch.reported == stop - start:
            start = stop
            continue
        if watch.current is None and watch.reported:
            # it ended between two items (on purpose, or its clean-up failed): no item's code was running, so
            # none is blamed; the rest run in a fresh job (each job reports at least one item: this ends)
            start += watch.reported
            continue
        yield _death(watch, outcome, limits)  # the item that was running, or the first when loading failed
        start += watch.reported + 1
