"""Typed domain errors.

Every error carries a sentence written for the person who caused it: what is wrong, where (file, row, field)
and, where it helps, what to do. The UI shows ``str(error)`` as it is.
"""

from __future__ import annotations

__all__ = [
    "AccountError",
    "AuthenticationError",
    "BlindingViolation",
    "CurationError",
    "DatasetImportError",
    "DecisionValidationError",
    "NotFoundError",
    "PermissionDenied",
    "ReleaseError",
    "SandboxError",
    "SessionExpired",
    "SubmittedAnalysisLocked",
]


class CurationError(Exception):
    """Base class of every error a user can cause; the message is meant to be shown to them."""


class PermissionDenied(CurationError):
    """The caller's role or assignment does not allow the action."""


class AuthenticationError(CurationError):
    """Wrong user name or password, or an inactive account."""


class SessionExpired(CurationError):
    """A signed-in session outlived its account (deactivated, password reset, or deleted)."""


class AccountError(CurationError):
    """An account could not be created or changed (duplicate name, weak password, last admin...)."""


class NotFoundError(CurationError):
    """A referenced record does not exist (or is not visible to the caller)."""


class BlindingViolation(PermissionDenied):
    """An analyst asked for a peer's stage-1 work before submitting their own."""


class DatasetImportError(CurationError):
    """A dataset (folder, info.json, CSV, dictionary) could not be registered; nothing was stored."""


class DecisionValidationError(CurationError):
    """A conceptual variable, transform or model was rejected; the message names the field."""


class SubmittedAnalysisLocked(CurationError):
    """The analyst's stage-1 analysis has been submitted and can no longer be edited."""


class SandboxError(CurationError):
    """The sandbox itself could not run (not the user's code failing, which is a result, not an error)."""


class ReleaseError(CurationError):
    """A release could not be cut, read or exported (bad version, tampered files, ...)."""
