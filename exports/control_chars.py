"""Control characters in imported text: refused where they are read, with the file, line and field.

A NUL byte in an answer key was stored as it was on SQLite and became a 5 KB ``psycopg.DataError`` dump on
PostgreSQL (which cannot hold NUL in a text column); the other C0 control characters (and DEL) are invisible in
every page and export and have no place in a question, a hypothesis or a check. Tab, line feed and carriage
return are ordinary text and allowed.

Every importer (DiscoveryBench metadata and answer keys, DataSciBench ``metric.yaml`` and ``prompt.json``,
AIRepr result files) calls :func:`first_control` on each text it keeps, and says where with
:func:`describe_control` and :func:`line_of`.
"""

from __future__ import annotations

import re

__all__ = ["CONTROL", "ESCAPED_CONTROL", "describe_control", "first_control", "line_of"]

#: C0 controls except tab, LF and CR, and DEL.
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

#: A JSON escape of such a character (``\\u0000``, or the short ``\\b`` and ``\\f``, after an even number of
#: backslashes), or a raw DEL: where a JSON text
#: holds one, for the line number.
ESCAPED_CONTROL = re.compile(r"(?<!\\)(?:\\\\)*\\(?:u(?:00(?:0[0-8bBcCeEfF]|1[0-9a-fA-F])|007[fF])|[bf])|\x7f")

_NAMES = {0: "a NUL byte", 0x1B: "an escape character", 0x7F: "a DEL character"}


def first_control(text: str) -> int | None:
    """The offset of the first control character in ``text``, or None."""
    match = CONTROL.search(text)
    return match.start() if match else None


def describe_control(char: str) -> str:
    """``a NUL byte (U+0000)``, ``a control character (U+0007)``."""
    code = ord(char)
    return f"{_NAMES.get(code, 'a control character')} (U+{code:04X})"


def line_of(text: str, offset: int) -> int:
    """The 1-based line of ``offset`` in ``text``."""
    return text.count("\n", 0, offset) + 1
