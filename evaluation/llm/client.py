"""One call to an OpenAI-compatible chat-completions endpoint, with retries and an on-disk cache.

The cache key is (model, base URL, prompt-template version, messages, parameters): the same request is
answered from disk, so regenerating is free and reproducible; the raw response is kept with it. Retries with
exponential backoff on 429, 5xx, timeouts and refused connections; other errors (401, 404, 400...) fail at
once with the endpoint's own message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SecretStr

from evaluation.errors import EvaluationError
from evaluation.llm.parsing import ParseError

__all__ = ["LLMCallError", "LLMConfig", "LLMNotConfigured", "LLMResult", "ParseError", "cache_key", "chat_json"]

log = logging.getLogger(__name__)


class LLMNotConfigured(EvaluationError):
    """No endpoint is set; the message says how to set one."""


class LLMCallError(EvaluationError):
    """The endpoint did not answer usefully after the retries allowed."""


class LLMConfig(BaseModel):
    """Where and how to call the model (built from settings at the edge; domain code never reads the env)."""

    base_url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    temperature: float = 0.0
    max_tokens: int = Field(default=4096, gt=0)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0)
    backoff_s: float = Field(default=1.0, ge=0, description="first retry wait; doubles each retry")
    json_mode: bool = Field(default=True, description="ask for response_format json_object")
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
        if self.json_mode:
            params["response_format"] = {"type": "json_object"}
        return params


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


def cache_key(config: LLMConfig, template: str, messages: list[dict[str, str]]) -> str:
    material = {"model": config.model, "base_url": (config.base_url or "").rstrip("/"), "template": template,
                "messages": messages, "parameters": config.parameters()}
    return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _cache_path(config: LLMConfig, key: str) -> Path | None:
    return None if config.cache_dir is None else config.cache_dir / key[:2] / f"{key}.json"


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
    os.replace(tmp, path)


def _retryable(exc: Exception) -> bool:
    import openai

    if isinstance(exc, openai.APITimeoutError | openai.APIConnectionError | openai.RateLimitError):
        return True
    return isinstance(exc, openai.APIStatusError) and exc.status_code >= 500


def _describe(exc: Exception, config: LLMConfig) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return f"no answer within {config.timeout_s:g} s"
    if isinstance(exc, openai.APIConnectionError):
        return f"cannot connect to {config.base_url} (is the server running?)"
    if isinstance(exc, openai.APIStatusError):
        return f"HTTP {exc.status_code}: {str(exc.message)[:300]}"
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def chat_json(config: LLMConfig, *, template: str, messages: list[dict[str, str]]) -> LLMResult:
    """Send ``messages`` (or answer from the cache); the answer's text with its raw response and provenance.

    Raises:
        LLMNotConfigured: no base URL or model.
        LLMCallError: the endpoint failed after the retries (the message says how), or answered without text.
    """
    config.require()
    key = cache_key(config, template, messages)
    path = _cache_path(config, key)
    if path is not None and path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
            return LLMResult.model_validate({**stored, "cached": True})
        except (OSError, ValueError) as exc:  # a damaged cache entry is refetched, not trusted
            log.warning("ignoring unreadable LLM cache entry %s: %s", path, exc)
    import openai  # here, not at the top: it takes half a second to import, and most commands never call an LLM

    client = openai.OpenAI(base_url=config.base_url, api_key=(config.api_key.get_secret_value()
                                                               if config.api_key else "not-needed"),
                           timeout=config.timeout_s, max_retries=0)
    params = config.parameters()
    attempt, last = 0, None
    while True:
        attempt += 1
        try:
            response = client.chat.completions.create(model=config.model or "", messages=messages,  # type: ignore[arg-type]
                                                      **params)
            break
        except openai.BadRequestError as exc:
            if "response_format" in params and "response_format" in str(exc.message):
                params = {k: v for k, v in params.items() if k != "response_format"}  # endpoint lacks JSON mode
                continue
            raise LLMCallError(f"The LLM endpoint refused the request: {_describe(exc, config)}.") from None
        except Exception as exc:  # noqa: BLE001 - classified below; anything else is reported, not raised raw
            last = exc
            if not _retryable(exc) or attempt > config.max_retries:
                tries = f" after {attempt} attempts" if attempt > 1 else ""
                raise LLMCallError(f"The LLM endpoint failed{tries}: {_describe(exc, config)}.") from None
            wait = config.backoff_s * 2 ** (attempt - 1)
            log.info("LLM call failed (%s); retry %d in %.1f s", _describe(exc, config), attempt, wait)
            time.sleep(wait)
    del last
    raw = response.model_dump(mode="json")
    choices = raw.get("choices") or []
    content = ((choices[0].get("message") or {}).get("content") if choices else None) or ""
    if not content.strip():
        raise LLMCallError("The LLM endpoint answered without any text.")
    result = LLMResult(content=content, raw=raw, cached=False, cache_key=key, model=config.model or "",
                       base_url=(config.base_url or "").rstrip("/"), template=template, parameters=params,
                       created_at=datetime.now(UTC), attempts=attempt)
    if path is not None:
        _write_atomic(path, result.model_dump(mode="json", exclude={"cached"}))
    return result
