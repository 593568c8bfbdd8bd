"""Structured output from a model's text: parsed with pydantic, repaired when the damage is mechanical
(a Markdown fence, prose around the JSON, a truncated tail), or rejected with the reason. Never ``eval``'d."""

from __future__ import annotations

import json
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from evaluation.errors import EvaluationError

__all__ = ["ParseError", "extract_json", "parse_structured"]

M = TypeVar("M", bound=BaseModel)
_CLOSERS = {"{": "}", "[": "]"}


class ParseError(EvaluationError):
    """The model's answer is not the JSON asked for, even after repair."""


def _close_truncated(text: str) -> str:
    """Close the strings, arrays and objects a truncated answer left open (drops a dangling key or comma)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in _CLOSERS:
            stack.append(_CLOSERS[ch])
        elif ch in "}]" and stack:
            stack.pop()
    out = text + ('"' if in_string else "")
    out = out.rstrip()
    while out.endswith((",", ":")):
        out = out[:-1].rstrip()
        if out.endswith('"') and not out.endswith('\\"'):  # a key with no value: drop the key too
            start = out.rfind('"', 0, len(out) - 1)
            if start >= 0 and out[:start].rstrip().endswith((",", "{")):
                out = out[:start].rstrip()
    return out + "".join(reversed(stack))


def extract_json(text: str) -> tuple[object, list[str]]:
    """The JSON value in ``text`` and the repairs that were needed (empty when it parsed as given)."""
    repairs: list[str] = []
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0] if "```" in body else body
        repairs.append("removed a Markdown code fence")
    try:
        return json.loads(body), repairs
    except json.JSONDecodeError:
        pass
    starts = [i for i in (body.find("{"), body.find("[")) if i >= 0]
    if not starts:
        raise ParseError("the answer holds no JSON object")
    start = min(starts)
    end = max(body.rfind("}"), body.rfind("]"))
    if start > 0 or (0 <= end < len(body) - 1):
        candidate = body[start:end + 1] if end > start else body[start:]
        try:
            value = json.loads(candidate)
            return value, [*repairs, "removed text around the JSON"]
        except json.JSONDecodeError:
            pass
    closed = _close_truncated(body[start:])
    try:
        return json.loads(closed), [*repairs, "closed a truncated answer"]
    except json.JSONDecodeError as exc:
        raise ParseError(f"the answer is not valid JSON even after repair ({exc.msg} at character {exc.pos})") from None


def parse_structured(text: str, model: type[M]) -> tuple[M, list[str]]:
    """Parse ``text`` into ``model``; returns the object and the repairs made.

    Raises:
        ParseError: no JSON, or JSON that does not fit ``model`` (the message says which field).
    """
    value, repairs = extract_json(text)
    try:
        return model.model_validate(value), repairs
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        raise ParseError(f"the JSON does not have the expected shape: {where}: {first['msg']}") from None
