"""The one JSON reader behind every JSON file forkpaths reads (``info.json``, ``mcq_dataset.json``, the JSON
cells of ``annotations.csv``, ``release.json``), so that every path treats the same bad input the same way:

- a UTF-8 byte-order mark is accepted (Excel and Notepad write one), other undecodable bytes are named;
- syntax errors give the line and column;
- an integer longer than Python's digit limit (4,300) is refused with its place, not a ``ValueError``;
- nesting deeper than :data:`MAX_DEPTH` is refused with the place where it happens. Python's ``json``
  would raise ``RecursionError`` a little under 1,000 levels, and a document just under that limit
  would crash the validators and writers downstream; no legitimate file comes near 100 levels
  (BLADE's deepest is under 10).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from typing import Any

from exports.errors import FormatError

__all__ = ["MAX_DEPTH", "JsonTextError", "RepeatedKey", "load_json", "refuse_repeated_keys"]

#: Deepest nesting of objects and lists accepted in any JSON file.
MAX_DEPTH = 100

_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JsonTextError(FormatError):
    """A JSON text could not be read. ``reason`` is the sentence without the file's label (for callers that
    place it in their own message, e.g. a cell of ``annotations.csv``)."""

    def __init__(self, label: str, reason: str) -> None:
        super().__init__(f"{label} {reason}.")
        self.label = label
        self.reason = reason


def _deep_point(text: str, limit: int) -> tuple[int, int] | None:
    """Line and column where the nesting first goes deeper than ``limit`` (strings skipped), or None."""
    depth = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                start = match.start()
                line = text.count("\n", 0, start) + 1
                return line, start - (text.rfind("\n", 0, start) + 1) + 1
        elif token in "]}":
            depth -= 1
    return None


def _too_deep(value: Any, limit: int) -> bool:
    """Whether a parsed value nests deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _depth_reason(text: str, limit: int) -> str:
    point = _deep_point(text, limit)
    where = f" (level {limit + 1} opens at line {point[0]}, column {point[1]})" if point else ""
    return (
        f"nests objects and lists more than {limit} levels deep{where}; no BLADE or forkpaths file does that, "
        "so this is probably not the file you meant"
    )


class RepeatedKey(ValueError):
    """An object names ``key`` twice (raised by :func:`refuse_repeated_keys`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def refuse_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An ``object_pairs_hook`` for :func:`load_json`: ``json.loads`` would keep the last of two equal keys and
    silently drop the first, so refuse instead."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise RepeatedKey(key)
        result[key] = value
    return result


class _HookRaised(Exception):
    """The caller's ``object_pairs_hook`` raised: its exception must reach the caller unchanged, even a
    ``ValueError``, which :func:`load_json` otherwise reads as Python's integer digit limit."""

    def __init__(self, original: Exception) -> None:
        super().__init__(original)
        self.original = original


def _long_number_reason(text: str, exc: ValueError) -> str:
    limit = sys.get_int_max_str_digits()
    match = re.search(rf"-?\d{{{limit + 1},}}", text) if limit else None
    if match is None:
        return f"cannot be read: {exc}"
    start = match.start()
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    digits = len(match.group().lstrip("-"))
    return (
        f"holds a number of {digits:,} digits at line {line}, column {column}; numbers longer than {limit:,} "
        "digits are not read (write it as a string if it is an identifier)"
    )


def load_json(
    content: bytes | str,
    *,
    label: str,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """Decode and parse a JSON text.

    Args:
        content: the file's bytes (UTF-8, with or without a byte-order mark) or its text.
        label: how to name the file in messages (a path, ``upload.zip:affairs/info.json``...).
        object_pairs_hook: passed to :func:`json.loads` (e.g. to refuse repeated keys); exceptions it raises
            propagate unchanged.
        max_depth: deepest nesting accepted.

    Raises:
        JsonTextError: not UTF-8, empty, not JSON (with line and column), a number too long to read, or nested
            too deeply.
    """
    if isinstance(content, bytes):
        try:
            text = content.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonTextError(
                label, f"is not UTF-8 text (undecodable byte at offset {exc.start}); save it as UTF-8"
            ) from exc
    else:
        text = content.removeprefix("\ufeff")
    if not text.strip():
        raise JsonTextError(label, "is empty")
    hook = None
    if object_pairs_hook is not None:
        caller_hook = object_pairs_hook

        def hook(pairs: list[tuple[str, Any]]) -> Any:
            try:
                return caller_hook(pairs)
            except Exception as exc:  # carried past the ValueError clause below, re-raised unchanged
                raise _HookRaised(exc) from exc

    try:
        data = json.loads(text, object_pairs_hook=hook)
    except _HookRaised as carried:
        raise carried.original from carried.original.__cause__
    except json.JSONDecodeError as exc:
        raise JsonTextError(
            label, f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from exc
    except RecursionError as exc:
        raise JsonTextError(label, _depth_reason(text, max_depth)) from exc
    except ValueError as exc:  # Python refuses integers of more than sys.get_int_max_str_digits() digits
        raise JsonTextError(label, _long_number_reason(text, exc)) from exc
    if _too_deep(data, max_depth):
        raise JsonTextError(label, _depth_reason(text, max_depth))
    return data
