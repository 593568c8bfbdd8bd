"""The one LLM client: an OpenAI-compatible chat-completions endpoint, with retries and an on-disk cache.

Every LLM feature of forkpaths (stage-2 alternatives, the ``llm`` judge, the MCQ model under test, and what
comes next) calls :meth:`LLMClient.ask` with a prompt-template version, the messages, and a ``parse`` function
that turns the answer's text into what the caller needs (raising :class:`ParseError` when it cannot):

* the cache key is (model, base URL, prompt-template version, messages, parameters); the raw response is kept
  next to the answer, so any stored result can be traced to the exact reply;
* an answer is cached only once ``parse`` accepted it, and a cached answer is parsed again before it is served:
  a garbage reply is never served from the cache, so re-asking after the endpoint recovers sends the request;
* each attempt has a wall-clock deadline of ``timeout_s`` from connecting to the answer's last byte
  (:mod:`evaluation.llm.deadline`): an endpoint that drips a byte a second times out like a silent one;
* 429, 5xx, timeouts, refused connections and an HTTP 200 whose body is not a chat completion (a proxy's HTML
  error page) are retried with exponential backoff (``max_retries``, ``timeout_s`` from :class:`LLMConfig`);
  other errors (401, 404, 400...) fail at once with the endpoint's own message. Every failure is an
  :class:`LLMCallError` whose message is a sentence for the person running forkpaths.

Configuration is an explicit :class:`LLMConfig` built from the settings at the edge (``Settings.llm_config()``);
nothing here reads the environment. A new LLM feature (a judge, an agent run, an inspector) needs three things:

    client = LLMClient(settings.llm_config())              # raises LLMNotConfigured with how to set it up
    messages = [{"role": "system", "content": "... " + DATA_NOTICE},
                {"role": "user", "content": f"Item: {quote(text_someone_wrote)}"}]   # evaluation.llm.quoting
    verdict = client.ask(template="my-feature@1", messages=messages, parse=my_parser).value

where ``my_parser`` raises :class:`ParseError` for an answer that is not what was asked, including one that
names anything that was not listed; bump the template version whenever the prompt's wording changes.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field, SecretStr

from evaluation.errors import EvaluationError
from evaluation.llm.parsing import ParseError

__all__ = [
    "Answer",
    "ChatReply",
    "LLMAnswerError",
    "LLMCallError",
    "LLMClient",
    "LLMConfig",
    "LLMNotConfigured",
    "LLMResult",
    "ParseError",
    "ToolCall",
    "cache_key",
]

log = logging.getLogger(__name__)
T = TypeVar("T")


class LLMNotConfigured(EvaluationError):
    """No endpoint is set; the message says how to set one."""


class LLMCallError(EvaluationError):
    """The endpoint did not answer usefully after the retries allowed."""


class LLMAnswerError(LLMCallError):
    """The endpoint answered, but ``parse`` refused the answer; it is kept here and never cached."""

    def __init__(self, message: str, result: LLMResult) -> None:
        super().__init__(message)
        self.result = result


class LLMConfig(BaseModel):
    """Where and how to call the model (built from settings at the edge; domain code never reads the env)."""

    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    temperature: float = 0.0
    max_tokens: int = Field(default=4096, gt=0)
    timeout_s: float = Field(default=120.0, gt=0, description="wall-clock seconds one attempt may take, from "
                             "connecting to the last byte of the answer (not per read)")
    max_retries: int = Field(default=4, ge=0, description="retries on 429, 5xx, timeouts and non-completion bodies")
    backoff_s: float = Field(default=1.0, ge=0, description="first retry wait; doubles each retry")
    json_mode: bool = Field(default=True, description="ask for response_format json_object")
    seed: int | None = Field(default=None, description="sent as the request's seed when set (reproducible sampling)")
    top_p: float | None = Field(default=None, description="sent as the request's top_p when set")
    cache_dir: Path | None = None

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)

    def require(self) -> None:
        if not self.configured:
            raise LLMNotConfigured(
                "No LLM endpoint is configured. Set FORKPATHS_LLM_BASE_URL (e.g. https://api.openai.com/v1, "
                "http://localhost:11434/v1 for Ollama, http://localhost:8000/v1 for vLLM, http://localhost:1234/v1 "
                "for LM Studio), FORKPATHS_LLM_MODEL and, if the endpoint needs one, FORKPATHS_LLM_API_KEY, "
                "in the environment or in .env, then restart forkpaths.")

    def parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.top_p is not None:
            params["top_p"] = self.top_p
        if self.seed is not None:
            params["seed"] = self.seed
        if self.json_mode:
            params["response_format"] = {"type": "json_object"}
        return params

    def describe(self) -> dict[str, Any]:
        """What a result file records about the endpoint (never the key)."""
        return {"model": self.model or "", "base_url": (self.base_url or "").rstrip("/"),
                "params": self.parameters()}


class LLMResult(BaseModel):
    content: str
    raw: dict[str, Any]
    cached: bool
    cache_key: str
    model: str
    base_url: str
    template: str
    parameters: dict[str, Any]
    created_at: datetime
    attempts: int = 1
    tool_calls: list[dict[str, Any]] = Field(default_factory=list, description="as the endpoint sent them")
    usage: dict[str, int] = Field(default_factory=dict, description="prompt_tokens, completion_tokens")
    seconds: float = Field(default=0.0, description="the endpoint's time for this answer (0 from the cache)")


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool the model asked for; ``arguments`` is the raw JSON text it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ChatReply:
    """One assistant turn of a tool-using conversation: its text, its tool calls and where it came from."""

    content: str
    tool_calls: list[ToolCall]
    result: LLMResult

    def message(self) -> dict[str, Any]:
        """The turn as a chat message to send back with the conversation."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            msg["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.name, "arguments": c.arguments}} for c in self.tool_calls]
        return msg


@dataclass(frozen=True)
class Answer(Generic[T]):
    """What ``parse`` made of the answer, with the answer itself (text, raw response, provenance)."""

    value: T
    result: LLMResult


def cache_key(config: LLMConfig, template: str, messages: list[dict[str, Any]],
              extra: dict[str, Any] | None = None) -> str:
    """The cache key: model, base URL, template version, messages and parameters (``extra``: tools and the
    like, part of the parameters of a tool-using call)."""
    material = {"model": config.model, "base_url": (config.base_url or "").rstrip("/"), "template": template,
                "messages": messages, "parameters": {**config.parameters(), **(extra or {})}}
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh)  # ASCII: a lone surrogate in the raw response is kept as its escape
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _NotACompletion(Exception):
    """An HTTP 200 whose body is not a chat completion: a proxy's error page, a captive portal, a wrong URL."""


def _retryable(exc: Exception) -> bool:
    import openai

    if isinstance(exc, _NotACompletion | openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _describe(exc: Exception, config: LLMConfig) -> str:
    import openai

    if isinstance(exc, _NotACompletion):
        return str(exc)
    if isinstance(exc, openai.APITimeoutError):
        return f"no answer within {config.timeout_s:g} s"
    if isinstance(exc, openai.APIConnectionError):
        return f"cannot connect to {config.base_url} (is the server running?)"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {str(exc.message)[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _completion(status: int, content_type: str, body: str) -> dict[str, Any]:
    """The chat completion in an HTTP 200 body, or :class:`_NotACompletion` saying what came instead."""
    snippet = " ".join(body.strip().split())[:80]
    try:
        data = json.loads(body)
    except ValueError:
        kind = "an HTML page" if "html" in content_type.lower() or snippet.lower().startswith(("<!doctype", "<html")) \
            else f"a {content_type or 'body'} that is not JSON"
        raise _NotACompletion(f"HTTP {status} with {kind} instead of a chat completion ({snippet!r}; a proxy's "
                              "error page?)") from None
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise _NotACompletion(f"HTTP {status} with JSON that is not a chat completion ({snippet!r})")
    return data


class LLMClient:
    """One endpoint, one cache: ``ask(template=..., messages=..., parse=...)``.

    ``calls`` counts requests sent (retries included once per answer), ``cache_hits`` answers served from disk.
    """

    def __init__(self, config: LLMConfig) -> None:
        config.require()
        self.config = config
        self.calls = 0
        self.cache_hits = 0
        self._client: Any = None

    def describe(self) -> dict[str, Any]:
        return self.config.describe()

    def with_config(self, **update: Any) -> LLMClient:
        """A client for the same endpoint with some parameters changed (an agent run's seed per run), sharing this
        one's HTTP connection pool: building an ``openai.OpenAI`` costs a tenth of a second."""
        other = LLMClient(self.config.model_copy(update=update))
        other._client = self._openai()
        return other

    def _path(self, key: str) -> Path | None:
        return None if self.config.cache_dir is None else self.config.cache_dir / key[:2] / f"{key}.json"

    def _cached(self, path: Path | None, parse: Callable[[str], T]) -> Answer[T] | None:
        if path is None or not path.exists():
            return None
        try:
            stored = LLMResult.model_validate({**json.loads(path.read_text(encoding="utf-8")), "cached": True,
                                               "seconds": 0.0})
        except (OSError, ValueError) as exc:  # a damaged entry is refetched, not trusted
            log.warning("ignoring unreadable LLM cache entry %s: %s", path, exc)
            return None
        try:
            value = parse(stored.content)
        except ParseError as exc:  # stored by an older forkpaths, or parse rules changed: ask again
            log.warning("ignoring cached LLM answer %s that does not parse: %s", path.name, exc)
            return None
        return Answer(value, stored)

    def ask(self, *, template: str, messages: list[dict[str, str]], parse: Callable[[str], T]) -> Answer[T]:
        """Send ``messages`` (or answer from the cache) and parse the answer.

        Args:
            template: the prompt template's name and version (``"blade-judge@2/cvar_match"``); part of the key.
            messages: the chat messages.
            parse: turns the answer's text into the caller's value; raises :class:`ParseError` to refuse it.

        Raises:
            LLMCallError: the endpoint failed after the retries (the message says how), or answered without text.
            LLMAnswerError: ``parse`` refused the answer (``.result`` keeps it; nothing was cached).
        """
        key = cache_key(self.config, template, messages)
        path = self._path(key)
        hit = self._cached(path, parse)
        if hit is not None:
            self.cache_hits += 1
            return hit
        result = self._send(key, template, messages, self.config.parameters())
        try:
            value = parse(result.content)
        except ParseError as exc:
            raise LLMAnswerError(f"the LLM's answer is not usable: {exc}", result) from None
        if path is not None:
            _write_atomic(path, {**result.model_dump(mode="json", exclude={"cached"}), "messages": messages})
        return Answer(value, result)

    def chat(self, *, template: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
             keep: Callable[[ChatReply], bool] | None = None) -> ChatReply:
        """One turn of a conversation (or the cache's answer): the assistant's text and tool calls.

        ``tools`` are OpenAI function tools; they are sent (and keyed) as parameters, and JSON mode is then not
        asked for (a turn may be a tool call). Unlike :meth:`ask`, every answer is cached as it came, parsed or
        not: an agent's run is replayed from the cache turn by turn, its mistakes included, so re-running a
        finished run sends no request. An answer with neither text nor tool call is an :class:`LLMCallError`.

        ``keep``, when given, decides which answers are cached (and which cached ones are served): an answer it
        refuses is returned but not stored, so asking again re-sends it, as :meth:`ask` does with an answer its
        ``parse`` refuses (an MCQ answered without a valid letter).
        """
        extra: dict[str, Any] = {"tools": tools, "tool_choice": "auto"} if tools else {}
        params = self.config.parameters()
        if tools:
            params = {k: v for k, v in params.items() if k != "response_format"} | extra
        key = cache_key(self.config, template, messages, {"chat": True, **extra})
        path = self._path(key)
        stored = self._load(path)
        if stored is not None and (keep is None or keep(_reply(stored))):
            self.cache_hits += 1
            return _reply(stored)
        result = self._send(key, template, messages, params, allow_tools=True)
        if keep is not None and not keep(_reply(result)):
            return _reply(result)
        if path is not None:
            _write_atomic(path, {**result.model_dump(mode="json", exclude={"cached"}), "messages": messages})
        return _reply(result)

    def _load(self, path: Path | None) -> LLMResult | None:
        if path is None or not path.exists():
            return None
        try:
            return LLMResult.model_validate({**json.loads(path.read_text(encoding="utf-8")), "cached": True,
                                             "seconds": 0.0})
        except (OSError, ValueError) as exc:
            log.warning("ignoring unreadable LLM cache entry %s: %s", path, exc)
            return None

    def _openai(self) -> Any:
        if self._client is None:
            import openai  # here, not at the top: it takes half a second to import, and most commands never need it

            from evaluation.llm.deadline import bounded_http_client

            key = self.config.api_key.get_secret_value() if self.config.api_key else "not-needed"
            http = bounded_http_client(openai.DefaultHttpxClient(timeout=self.config.timeout_s))
            self._client = openai.OpenAI(base_url=self.config.base_url, api_key=key or "not-needed",
                                         timeout=self.config.timeout_s, max_retries=0, http_client=http)
        return self._client

    def _send(self, key: str, template: str, messages: list[dict[str, Any]], params: dict[str, Any], *,
              allow_tools: bool = False) -> LLMResult:
        import openai

        from evaluation.llm.deadline import deadline

        config, client = self.config, self._openai()
        attempt = 0
        self.calls += 1
        started = time.monotonic()
        while True:
            attempt += 1
            try:
                with deadline(config.timeout_s):  # the whole attempt, every byte of it, not each read
                    response = client.chat.completions.with_raw_response.create(
                        model=config.model or "", messages=messages, **params)
                    http = response.http_response
                    body = http.text
                raw = _completion(http.status_code, http.headers.get("content-type", ""), body)
                break
            except openai.BadRequestError as exc:
                if "response_format" in params and "response_format" in str(exc.message):
                    params = {k: v for k, v in params.items() if k != "response_format"}  # endpoint lacks JSON mode
                    continue
                raise LLMCallError(f"The LLM endpoint refused the request: {_describe(exc, config)}.") from None
            except Exception as exc:  # noqa: BLE001 - classified below; anything else is reported, not raised raw
                if not _retryable(exc) or attempt > config.max_retries:
                    tries = f" after {attempt} attempts" if attempt > 1 else ""
                    raise LLMCallError(f"The LLM endpoint failed{tries}: {_describe(exc, config)}.") from None
                wait = config.backoff_s * 2 ** (attempt - 1)
                log.info("LLM call failed (%s); retry %d in %.1f s", _describe(exc, config), attempt, wait)
                time.sleep(wait)
        choices = raw.get("choices") or []
        first = choices[0] if choices and isinstance(choices[0], dict) else {}
        found = first.get("message")
        message: dict[str, Any] = found if isinstance(found, dict) else {}
        content = message.get("content")
        calls = _tool_calls(message.get("tool_calls")) if allow_tools else []
        if not calls and (not isinstance(content, str) or not content.strip()):
            raise LLMCallError("The LLM endpoint answered without any text.")
        # a lone surrogate (JSON "\ud800") cannot be written as UTF-8: not to the cache, not to a result file
        content = _LONE_SURROGATE.sub("\ufffd", content if isinstance(content, str) else "")
        given = raw.get("usage")
        usage: dict[str, Any] = given if isinstance(given, dict) else {}
        tokens = {k: int(v) for k, v in usage.items()
                  if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int) and v >= 0}
        return LLMResult(content=content, raw=raw, cached=False, cache_key=key, model=config.model or "",
                         base_url=(config.base_url or "").rstrip("/"), template=template, parameters=params,
                         created_at=datetime.now(UTC), attempts=attempt, tool_calls=calls, usage=tokens,
                         seconds=time.monotonic() - started)


def _tool_calls(value: Any) -> list[dict[str, Any]]:
    """The well-formed function calls of an answer, as plain dicts (id, name, arguments text)."""
    out: list[dict[str, Any]] = []
    for i, call in enumerate(value if isinstance(value, list) else []):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            continue
        args = fn.get("arguments")
        out.append({"id": str(call.get("id") or f"call_{i}"), "name": _LONE_SURROGATE.sub("\ufffd", fn["name"]),
                    "arguments": _LONE_SURROGATE.sub("\ufffd", args if isinstance(args, str) else
                                                     json.dumps(args))})
    return out


def _reply(result: LLMResult) -> ChatReply:
    return ChatReply(content=result.content, result=result,
                     tool_calls=[ToolCall(c["id"], c["name"], c["arguments"]) for c in result.tool_calls])
