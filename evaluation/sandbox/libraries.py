"""The libraries analysis code can import in the sandbox, and the sentence for one that is not there.

Analysis code (experts' ground-truth transforms, analysts' sanity checks, agents' submissions) runs with the
engine's own Python environment mounted read-only, so it can import what forkpaths depends on. The ones meant
for analysis are listed here (and in the README); an import of anything else that is not installed fails that
analysis with a sentence naming the library. Imported inside sandbox jobs: standard library only.
"""

from __future__ import annotations

import importlib.util
import re

__all__ = ["ANALYSIS_LIBRARIES", "MISSING_LIBRARY_MARK", "missing_library", "missing_library_sentence"]

ANALYSIS_LIBRARIES: dict[str, str] = {
    # import name -> distribution name (what pip installs)
    "pandas": "pandas",
    "numpy": "numpy",
    "scipy": "scipy",
    "statsmodels": "statsmodels",
    "patsy": "patsy",
    "sklearn": "scikit-learn",
}
"""What analysis code can import besides Python's standard library (``pd`` and ``np`` are bound already)."""


def offered() -> str:
    return ", ".join(f"{dist} ({name})" if dist != name else name for name, dist in ANALYSIS_LIBRARIES.items())


def missing_library(exc: BaseException) -> str | None:
    """The top-level name of the library whose import failed, when ``exc`` is (or wraps) a missing module."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ModuleNotFoundError) and current.name:
            top = current.name.split(".")[0]
            # a missing module of a library that is there (sklearn.nonexistent_mod) is not a missing library
            return top if top == current.name or importlib.util.find_spec(top) is None else None
        current = current.__cause__ or current.__context__
    return None


def missing_library_sentence(name: str) -> str:
    """``the library 'x' is not installed in the sandbox ...``: what to say when ``import x`` failed (the name
    comes from the code, so control and formatting characters in it are escaped)."""
    name = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in name[:120])
    if name in ANALYSIS_LIBRARIES:
        return (f"the library '{name}' ({ANALYSIS_LIBRARIES[name]}) should be installed in the sandbox but is "
                f"missing: an administrator must reinstall forkpaths with its dependencies")
    return (f"the library '{name}' is not installed in the sandbox; analysis code can import {offered()} "
            "and Python's standard library")


MISSING_LIBRARY_MARK = re.compile(r"the library '([A-Za-z0-9_]+)'")
"""Finds the library's name in a sentence made by :func:`missing_library_sentence` (outside the job)."""
