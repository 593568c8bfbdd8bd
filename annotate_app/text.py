"""Text that must reach the reader literally: user input, code, output and error messages.

Streamlit renders every label, caption, alert and markdown body as Markdown with emoji shortcodes (``:x:``)
and LaTeX (``$...$``), which scrambles values, hashes and column names. :func:`md` escapes a string so it is
shown exactly as written; code and program output go in ``st.code`` blocks instead.
"""

from __future__ import annotations

import re

__all__ = ["UNDEFINED", "md", "plural", "stat_text"]

UNDEFINED = "—"

# Any ASCII punctuation may be backslash-escaped in CommonMark and Streamlit then shows it as is (an escaped
# colon starts no emoji shortcode, an escaped dollar no LaTeX). Quotes, commas, slashes, '=', '?', '@', '%'
# and ';' never start markup, so they stay readable in the raw string.
_PUNCTUATION = re.compile(r"""([!#$&()*+\-.:<>\[\\\]^_`{|}~])""")


def md(text: object) -> str:
    """``text`` escaped for Streamlit Markdown; line breaks are kept."""
    escaped = _PUNCTUATION.sub(r"\\\1", str(text))
    return escaped.replace("\r\n", "\n").replace("\n", "  \n")


def plural(n: int, singular: str, plural_form: str | None = None) -> str:
    """``1 model``, ``2 models``, ``0 analyses`` (with ``plural_form``)."""
    return f"{n:,} {singular if n == 1 else (plural_form or singular + 's')}"


def stat_text(value: float | None, places: int = 3) -> str:
    """A statistic for a table: ``places`` decimals, or a dash where it is undefined (None or NaN), never "None"."""
    return UNDEFINED if value is None or value != value else f"{float(value):.{places}f}"
