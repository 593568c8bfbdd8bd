"""Errors of the analysis engine; each message is written for the person who caused it."""

from __future__ import annotations

__all__ = ["EvaluationError", "SandboxError"]


class EvaluationError(Exception):
    """Base class of the engine's errors; the message is meant to be shown to a user."""


class SandboxError(EvaluationError):
    """The sandbox itself could not run (not the user's code failing, which is a result, not an error)."""
