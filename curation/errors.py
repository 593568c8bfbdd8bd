"""Typed domain errors.

Every error carries a sentence written for the person who caused it: what is wrong, where (file, row, field)
and, where it helps, what to do. The UI shows ``str(error)`` as it is.
"""

from __future__ import annotations

from evaluation.errors import EvaluationError, SandboxError

__all__ = [
    "AccountError",
    "ArtifactCorrupted",
    "ArtifactError",
    "ArtifactMissing",
    "AuthenticationError",
    "BlindingViolation",
    "CurationError",
    "DatasetImportError",
    "DecidedElsewhere",
    "DecisionValidationError",
    "NotFoundError",
    "PermissionDenied",
    "ReleaseError",
    "SandboxError",
    "ScoringError",
    "OverrideConflict",
    "SessionExpired",
    "SSOError",
    "SignInThrottled",
    "StageError",
    "SubmittedAnalysisLocked",
    "VoteError",
    "USER_ERRORS",
    "JobError",
]


class CurationError(Exception):
    """Base class of every error a user can cause; the message is meant to be shown to them."""


class PermissionDenied(CurationError):
    """The caller's role or assignment does not allow the action."""


class AuthenticationError(CurationError):
    """Wrong user name or password, or an inactive account."""


class SignInThrottled(AuthenticationError):
    """Too many failed sign-ins for an account name or from a client; the message says when to try again."""


class SSOError(AuthenticationError):
    """Single sign-on failed: the identity provider is unreachable or its answer is refused."""


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


class DecidedElsewhere(DecisionValidationError):
    """Two people decided the same thing at once and the other one's decision landed first; nothing of the later
    one was stored. The message says who decided, when and what, and what to do."""


class SubmittedAnalysisLocked(CurationError):
    """The analyst's stage-1 analysis has been submitted and can no longer be edited."""


class StageError(CurationError):
    """The dataset is not in the stage the action needs (e.g. a vote while stage 2 is not open)."""


class VoteError(CurationError):
    """A vote was refused: one's own proposal, a missing reason, a question that does not apply..."""


class ReleaseError(CurationError):
    """A release could not be cut, read or exported (bad version, tampered files, ...)."""


class ScoringError(CurationError):
    """A scoring run could not be registered or changed (bad submission, too large, wrong state...)."""


class ArtifactError(CurationError):
    """An object of the artifact store (a release's file, a submission, a result) cannot be used; the sentence
    says which one (what it is and its SHA-256) and where the store is."""


class ArtifactMissing(ArtifactError):
    """The object is not in the artifact store (never stored here, or the store is not mounted)."""


class ArtifactCorrupted(ArtifactError):
    """The object's bytes do not match its SHA-256: it was set aside and not used."""


class OverrideConflict(ScoringError):
    """Another evaluator already overrode the same match; nothing was changed."""


# Errors whose message is written for the user: the domain's own and the analysis engine's (the sandbox).
USER_ERRORS: tuple[type[Exception], ...] = (CurationError, EvaluationError)


class JobError(CurationError):
    """A background job cannot be started or changed (e.g. one of its kind already runs for that dataset)."""
