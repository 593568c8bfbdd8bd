"""The two strategies: one-shot (one answer, repaired once) and ReAct (a loop whose one tool runs Python in the
sandbox). Both end with one answer validated by the kind's hook, or a status and a sentence saying why not:

========================  ==============================================================================
``answered``              a valid answer (ReAct: after running code)
``answered_without_code`` ReAct: a valid answer given without ever running code (kept, and said)
``invalid_answer``        the answer is not JSON, or not the shape asked for, even after one repair
``step_limit``            ReAct: the model kept calling the tool and never answered
``endpoint_error``        the endpoint is down, too slow, rate-limited or answers something that is not a chat
                          completion (an HTML page), after the client's retries
``cancelled``             the run was cancelled while the task was under way (checked before every model turn
                          and every tool call, and while a tool call runs): not a finished task run
``failed``                anything else (the sentence says what)
========================  ==============================================================================

A task's failure never raises: the run goes on with the next task. Every model call goes through
:meth:`evaluation.llm.LLMClient.chat`, cached as it came, so re-running a finished run replays it from the cache.
A *strict* kind (MCQs: BLADE's protocol) gets no repair turn, and an answer it cannot use is kept as it came
(``TaskOutcome.raw``) and not cached.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evaluation.agents import prompts
from evaluation.agents.base import CANCELLED, AgentKind, AgentSettings, AgentTask, TaskFile, TaskOutcome
from evaluation.errors import EvaluationError
from evaluation.llm import LLMCallError, LLMClient
from evaluation.llm.client import ChatReply
from evaluation.llm.parsing import ParseError, extract_json

__all__ = ["run_python_tool", "run_task", "task_bundle", "validate_answer"]

log = logging.getLogger(__name__)

Stop = Callable[[], bool]
STOP_POLL_S = 0.2  # while a tool call runs, how often a cancel is looked for


class _Cancelled(Exception):
    """The run was cancelled while this task was under way."""


class _Tally:
    def __init__(self, client: LLMClient, stop: Stop | None = None) -> None:
        self.client = client
        self.stop = stop
        self.calls0, self.hits0 = client.calls, client.cache_hits
        self.outcome = TaskOutcome(status="failed", message="", answer=None)
        self.started = time.monotonic()

    def chat(self, template: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
             keep: Callable[[ChatReply], bool] | None = None) -> ChatReply:
        if self.stop is not None and self.stop():
            raise _Cancelled
        reply = self.client.chat(template=template, messages=messages, tools=tools, keep=keep)
        r = reply.result
        o = self.outcome
        o.prompt_tokens += int(r.usage.get("prompt_tokens", 0))
        o.completion_tokens += int(r.usage.get("completion_tokens", 0))
        o.model_seconds += r.seconds
        o.transcript.append({"role": "assistant", "content": reply.content,
                             "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments}
                                            for c in reply.tool_calls],
                             "template": template, "cached": r.cached, "usage": r.usage,
                             "seconds": round(r.seconds, 3)})
        return reply

    def say(self, message: dict[str, Any]) -> None:
        self.outcome.transcript.append({k: v for k, v in message.items() if k != "tool_call_id"}
                                       | ({"tool_call_id": message["tool_call_id"]} if "tool_call_id" in message
                                          else {}))

    def end(self, status: str, message: str, answer: dict[str, Any] | None = None, raw: str | None = None
            ) -> TaskOutcome:
        o = self.outcome
        o.status, o.message, o.answer, o.raw = status, message, answer, raw
        o.calls = self.client.calls - self.calls0
        o.cache_hits = self.client.cache_hits - self.hits0
        o.seconds = time.monotonic() - self.started
        return o


def _validate(kind: AgentKind, task: AgentTask, text: str, workflow: bool) -> tuple[dict[str, Any] | None, str]:
    """The answer in ``text`` validated by the kind, or (None, what is wrong)."""
    if not text.strip():
        return None, "the answer is empty."
    own = getattr(kind, "validate_text", None)
    if own is not None:  # the kind reads the text itself (MCQs: a bare letter is an answer)
        try:
            return own(text, task, workflow=workflow), ""
        except (ValueError, TypeError) as exc:
            return None, str(exc)
    try:
        value, _repairs = extract_json(text)
    except ParseError as exc:
        return None, f"it is not JSON ({exc})"
    try:
        return kind.validate(value, task, workflow=workflow), ""
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'the answer'}: {e['msg']}"
                             for e in exc.errors()[:8])
        return None, f"it is not the shape asked for ({problems})"
    except (ValueError, TypeError) as exc:
        return None, f"it is not the shape asked for ({exc})"


def validate_answer(kind: AgentKind, task: AgentTask, text: str, workflow: bool
                    ) -> tuple[dict[str, Any] | None, str]:
    """The final answer ``text`` validated as a strategy validates it: (the answer, "") or (None, what is wrong).
    Also how an answer given elsewhere (an inspect_ai log) becomes the kind's answer."""
    return _validate(kind, task, text, workflow)


def _oneshot(client: LLMClient, kind: AgentKind, task: AgentTask, settings: AgentSettings, tally: _Tally
             ) -> TaskOutcome:
    shape = kind.answer_shape(task, workflow=settings.workflow)
    messages = prompts.oneshot_messages(task, shape, workflow=settings.workflow)
    for m in messages:
        tally.say(m)
    if getattr(kind, "strict", False):  # the first answer is the answer; one that cannot be used is not cached
        reply = tally.chat(prompts.ONESHOT_TEMPLATE, messages,
                           keep=lambda r: _validate(kind, task, r.content, settings.workflow)[0] is not None)
        answer, problem = _validate(kind, task, reply.content, settings.workflow)
        if answer is not None:
            return tally.end("answered", "Answered in one shot.", answer)
        return tally.end("invalid_answer", f"The model's answer could not be used: {problem}", raw=reply.content)
    reply = tally.chat(prompts.ONESHOT_TEMPLATE, messages)
    answer, problem = _validate(kind, task, reply.content, settings.workflow)
    if answer is not None:
        return tally.end("answered", "Answered in one shot.", answer)
    repair = prompts.repair_message(problem, shape)
    messages = [*messages, {"role": "assistant", "content": reply.content}, repair]
    tally.say(repair)
    reply = tally.chat(prompts.ONESHOT_TEMPLATE, messages)
    answer, again = _validate(kind, task, reply.content, settings.workflow)
    if answer is not None:
        return tally.end("answered", f"Answered after one repair (the first answer: {problem}).", answer)
    return tally.end("invalid_answer", f"The model's answer could not be used, even after one repair: {again}",
                     raw=reply.content)


@contextlib.contextmanager
def task_bundle(files: tuple[TaskFile, ...]) -> Iterator[Path | None]:
    """The task's files packed into one zip (the sandbox hands a job one read-only file; the job unpacks it into
    its working folder): text tables re-encoded in UTF-8, the rest byte for byte. Removed when the task ends."""
    if not files:
        yield None
        return
    fd, name = tempfile.mkstemp(prefix="forkpaths-agent-", suffix=".zip")
    try:
        with os.fdopen(fd, "wb") as raw, zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_STORED) as zf:
            for f in files:
                if not f.path.is_file():
                    continue  # the code's FileNotFoundError names it; the prompt listed what there is
                if f.format in ("csv", "tsv") and f.encoding and f.encoding.lower() not in ("utf-8", "utf8", "ascii"):
                    zf.writestr(f.name, f.path.read_bytes().decode(f.encoding, errors="replace").encode("utf-8"))
                else:
                    zf.write(f.path, arcname=f.name)
        yield Path(name)
    finally:
        Path(name).unlink(missing_ok=True)


def _table_spec(files: tuple[TaskFile, ...]) -> dict[str, str] | None:
    first = next((f for f in files if f.table and f.path.is_file()), None)
    return None if first is None else {"name": first.name, "format": first.format}


def run_python_tool(code: str, data_path: Path | None, settings: AgentSettings, *,
                    files: tuple[TaskFile, ...] = (), bundle: Path | None = None, stop: Stop | None = None
                    ) -> tuple[str, bool]:
    """Run ``code`` in the sandbox on the task's data; the observation (truncated) and whether it ran cleanly.

    With ``files`` (and their ``bundle``, from :func:`task_bundle`) every file is in the working folder by name
    and ``df`` is the first table; else ``data_path`` is loaded as ``df``. ``stop`` is asked every few tenths of a
    second while the code runs: when it says so, the code is killed and :class:`_Cancelled` raised.
    """
    from evaluation.sandbox import SandboxLimits

    limits = SandboxLimits(timeout_s=settings.step_timeout_s, memory_mb=settings.memory_mb,
                           max_output_chars=settings.observation_chars, max_file_mb=64)
    payload: dict[str, Any] = {"code": code}
    if files:
        with contextlib.ExitStack() as stack:
            if bundle is None:
                bundle = stack.enter_context(task_bundle(files))
            payload["table"] = _table_spec(files)
            return _run_tool(payload, bundle, limits, stop)
    return _run_tool(payload, data_path, limits, stop)


def _run_tool(payload: dict[str, Any], data_path: Path | None, limits: Any, stop: Stop | None) -> tuple[str, bool]:
    from evaluation.sandbox.server import generic_result, start_job

    handle = start_job("agent.run_python", payload, data_path=data_path, limits=limits,
                       finish=lambda outcome: generic_result(outcome, limits))
    while True:
        try:
            result = handle.result(timeout=STOP_POLL_S if stop is not None else None)
            break
        except TimeoutError:
            if stop is not None and stop():
                handle.cancel()
                raise _Cancelled from None
    out = str(result.get("stdout") or "")
    if result.get("ok"):
        text = out or "(the code ran and printed nothing)"
    else:
        text = (out + "\n" if out else "") + str(result.get("error") or "the code failed")
        if result.get("refusal"):
            text += f"\n({result['refusal']})"
    limit = limits.max_output_chars
    if len(text) > limit:
        text = text[:limit] + f"\n… [observation truncated: {len(text) - limit} more characters]"
    return text, bool(result.get("ok"))


def _react(client: LLMClient, kind: AgentKind, task: AgentTask, settings: AgentSettings, tally: _Tally
           ) -> TaskOutcome:
    with task_bundle(task.files) as bundle:
        return _react_loop(kind, task, settings, tally, bundle)


def _react_loop(kind: AgentKind, task: AgentTask, settings: AgentSettings, tally: _Tally, bundle: Path | None
                ) -> TaskOutcome:
    shape = kind.answer_shape(task, workflow=settings.workflow)
    messages = prompts.react_messages(task, shape, workflow=settings.workflow, max_steps=settings.max_steps)
    for m in messages:
        tally.say(m)
    steps = 0
    nudged = repaired = False
    problem = ""
    while True:
        tools = [prompts.TOOL] if steps < settings.max_steps else None
        reply = tally.chat(prompts.REACT_TEMPLATE, messages, tools)
        messages.append(reply.message())
        if reply.tool_calls:
            if steps >= settings.max_steps:
                return tally.end("step_limit", f"The model used its {settings.max_steps} tool calls and kept "
                                 "calling the tool instead of answering.")
            for call in reply.tool_calls:
                if steps >= settings.max_steps:  # many calls in one turn: those past the limit are not run
                    obs = f"Not run: the limit of {settings.max_steps} tool calls was reached."
                else:
                    steps += 1
                    obs = _observe(call.name, call.arguments, task, settings, tally, bundle)
                msg = {"role": "tool", "tool_call_id": call.id, "content": obs}
                messages.append(msg)
                tally.say(msg | {"name": call.name})
            if steps >= settings.max_steps:
                final = prompts.final_message(shape)
                messages.append(final)
                tally.say(final)
            continue
        answer, problem_now = _validate(kind, task, reply.content, settings.workflow)
        if answer is not None:
            if steps == 0:
                return tally.end("answered_without_code", "Answered without running any code (the tool was "
                                 "offered and never called).", answer)
            return tally.end("answered", f"Answered after {steps} tool call{'s' if steps != 1 else ''}"
                             + (f" and one repair (the first answer: {problem})." if repaired else "."), answer)
        looks_like_json = reply.content.lstrip().startswith(("{", "```", "["))
        if not looks_like_json and not nudged and steps < settings.max_steps:
            nudged = True  # prose instead of a tool call or an answer: one nudge
            nudge = prompts.nudge_message()
            messages.append(nudge)
            tally.say(nudge)
            continue
        if repaired:
            return tally.end("invalid_answer", "The model's answer could not be used, even after one repair: "
                             f"{problem_now}" + (" It never called the tool." if steps == 0 else ""),
                             raw=reply.content)
        repaired, problem = True, problem_now
        repair = prompts.repair_message(problem_now, shape)
        messages.append(repair)
        tally.say(repair)


def _observe(name: str, arguments: str, task: AgentTask, settings: AgentSettings, tally: _Tally,
             bundle: Path | None = None) -> str:
    if tally.stop is not None and tally.stop():
        raise _Cancelled
    started = time.monotonic()
    tally.outcome.tool_calls += 1
    try:
        if name != prompts.TOOL["function"]["name"]:
            return f"There is no tool called {name!r}; the only tool is run_python(code)."
        try:
            args = json.loads(arguments or "{}")
        except ValueError as exc:
            return f"The tool's arguments are not JSON ({exc}); call run_python with {{\"code\": \"...\"}}."
        code = args.get("code") if isinstance(args, dict) else None
        if not isinstance(code, str) or not code.strip():
            return "run_python needs its argument \"code\": the Python code to run, as a string."
        text, _ok = run_python_tool(code, task.data_path, settings, files=task.files, bundle=bundle,
                                    stop=tally.stop)
        return text
    except EvaluationError as exc:  # the sandbox could not run it at all
        return f"The code could not be run: {exc}"
    finally:
        tally.outcome.tool_seconds += time.monotonic() - started


def run_task(client: LLMClient, kind: AgentKind, task: AgentTask, settings: AgentSettings, *,
             should_stop: Stop | None = None) -> TaskOutcome:
    """Run one task with the chosen strategy; never raises for the model's or the endpoint's faults.

    ``should_stop`` (the run's "was a cancel asked?") is asked before every model turn and tool call, and while
    a tool call runs; when it says so the task ends at once with status ``cancelled``."""
    tally = _Tally(client, should_stop)
    try:
        if settings.strategy == "react":
            return _react(client, kind, task, settings, tally)
        return _oneshot(client, kind, task, settings, tally)
    except _Cancelled:
        return tally.end(CANCELLED, f"Cancelled while the task was under way (after {tally.outcome.tool_calls} "
                         "tool call(s)).")
    except LLMCallError as exc:
        return tally.end("endpoint_error", str(exc))
    except Exception as exc:  # noqa: BLE001 - one task's crash is that task's status; the run goes on
        log.exception("agent task %s failed", task.key)
        return tally.end("failed", f"The task failed unexpectedly: {type(exc).__name__}: {exc}"[:1000])
