"""An inspect_ai log (``.eval`` or ``.json``) read with inspect's own reader, as forkpaths needs it: which kind and
release it evaluated, with which model, its id and hash, and each sample's final answer and transcript.

inspect_ai is imported only when a log is read. Bad input is an :class:`InspectError` whose sentence names the log
(and the sample): a log that cannot be read, one of a task that is not forkpaths's.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.inspect_bridge.answers import PREFIX, InspectError, inspect_kinds, kind_of_task
from evaluation.submissions import printable

__all__ = ["InspectLog", "LogSample", "read_log"]

SUFFIXES = (".eval", ".json")


@dataclass(frozen=True)
class LogSample:
    """One sample of one epoch: the task it answered, its final answer, its transcript (forkpaths's message
    form), what it cost, and the error inspect recorded for it (None: it ran to the end)."""

    key: str
    epoch: int  # 1-based, as inspect counts
    completion: str
    transcript: list[dict[str, Any]]
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: int = 0
    seconds: float = 0.0


@dataclass(frozen=True)
class InspectLog:
    name: str
    sha256: str
    eval_id: str
    run_id: str
    task: str
    kind: str
    release: str
    model: str
    base_url: str
    status: str
    epochs: int
    task_args: dict[str, Any] = field(default_factory=dict)
    samples: list[LogSample] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        """What a run records about the log it came from."""
        return {"log": self.name, "log_sha256": self.sha256, "eval_id": self.eval_id, "run_id": self.run_id,
                "task": self.task, "model": self.model, "epochs": self.epochs, "status": self.status,
                "task_args": self.task_args}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for c in content or []:
        text = getattr(c, "text", None) or getattr(c, "reasoning", None)
        parts.append(str(text) if text else f"[{getattr(c, 'type', 'content')}]")
    return "\n".join(parts)


def _transcript(messages: list[Any]) -> list[dict[str, Any]]:
    """inspect's chat messages in the form agent runs' transcripts are stored in (role, content, tool calls)."""
    out = []
    for m in messages:
        entry: dict[str, Any] = {"role": m.role, "content": _text(m.content)}
        calls = getattr(m, "tool_calls", None)
        if calls:
            entry["tool_calls"] = [{"id": c.id, "name": c.function, "arguments": json.dumps(c.arguments)}
                                   for c in calls]
        if m.role == "tool":
            entry["tool_call_id"] = getattr(m, "tool_call_id", None)
            entry["name"] = getattr(m, "function", None)
            if getattr(m, "error", None) is not None:
                entry["content"] = (entry["content"] + "\n" if entry["content"] else "") + str(m.error.message)
        out.append(entry)
    return out


def _sample(s: Any) -> LogSample:
    usage = s.model_usage or {}
    prompt = sum(int(u.input_tokens or 0) for u in usage.values())
    completion = sum(int(u.output_tokens or 0) for u in usage.values())
    messages = list(s.messages or [])
    error = s.error.message if s.error is not None else None
    return LogSample(key=str(s.id), epoch=int(s.epoch or 1),
                     completion=(s.output.completion if s.output is not None else "") or "",
                     transcript=_transcript(messages), error=error, prompt_tokens=prompt, completion_tokens=completion,
                     tool_calls=sum(len(getattr(m, "tool_calls", None) or []) for m in messages
                                    if m.role == "assistant"),
                     seconds=float(s.total_time or 0.0))


def read_log(name: str, data: bytes) -> InspectLog:
    """The inspect log ``name`` (its bytes), read by :func:`inspect_ai.log.read_eval_log`.

    Raises:
        InspectError: not a ``.eval`` or ``.json`` log, not readable (a truncated ``.eval`` zip, not JSON), a log of
            a task that is not ``forkpaths/<kind>``, or one that says nothing of the release.
    """
    shown = printable(Path(name).name)
    suffix = Path(name).suffix.lower()
    if suffix not in SUFFIXES:
        raise InspectError(f"{shown} is not an inspect_ai log: give a .eval or .json file written by inspect eval.")
    from inspect_ai.log import read_eval_log

    with tempfile.TemporaryDirectory(prefix="forkpaths-inspect-") as tmp:
        path = Path(tmp) / f"log{suffix}"
        path.write_bytes(data)
        try:
            log = read_eval_log(str(path))
        except Exception as exc:  # noqa: BLE001 - inspect's reader raises many kinds; all mean "cannot be read"
            why = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            whole = " (a .eval log is a zip file: this one is cut short or damaged)" if suffix == ".eval" else ""
            raise InspectError(f"The inspect log {shown} cannot be read{whole}: {why}. Nothing was imported.") from exc
    spec = log.eval
    kind = kind_of_task(spec.task)
    if kind is None:
        known = ", ".join(f"{PREFIX}/{k}" for k in inspect_kinds())
        raise InspectError(f"The inspect log {shown} is a log of task '{printable(spec.task)}', which is not a "
                           f"forkpaths task; forkpaths imports logs of {known}. Nothing was imported.")
    meta = (spec.metadata or {}).get("forkpaths") or {}
    release = str(meta.get("release") or "")
    if not release:
        raise InspectError(f"The inspect log {shown} does not say which forkpaths release it evaluated (its task's "
                           "metadata has no release); run the task from this version of forkpaths. Nothing was "
                           "imported.")
    samples = [_sample(s) for s in (log.samples or [])]
    if not samples:
        raise InspectError(f"The inspect log {shown} holds no sample (status {log.status}); nothing was imported.")
    return InspectLog(name=Path(name).name, sha256=hashlib.sha256(data).hexdigest(), eval_id=spec.eval_id,
                      run_id=spec.run_id, task=spec.task, kind=kind, release=release, model=spec.model,
                      base_url=str(spec.model_base_url or ""), status=str(log.status),
                      epochs=int(spec.config.epochs or 1), task_args=dict(spec.task_args or {}), samples=samples)
