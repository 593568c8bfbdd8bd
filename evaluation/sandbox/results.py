"""The value objects of the sandbox: the results of the two sanity checks (and the limits, from
:mod:`evaluation.sandbox.limits`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from evaluation.inference import FrameChange
from evaluation.sandbox.limits import DEFAULT_LIMITS, SandboxLimits
from evaluation.specs import ColumnMapping

__all__ = ["DEFAULT_LIMITS", "ErrorKind", "ModelCheck", "SandboxLimits", "TransformCheck"]

ErrorKind = Literal[
    "syntax", "exception", "timeout", "memory", "network", "filesystem", "forbidden", "no_result", "crashed",
    "cancelled", "interfered",
]
"""Why a check failed.

``forbidden``: the code tried to start a process, signal another process or load a native library.
``no_result``: a model check ran but left nothing that looks like a fitted result.
``cancelled``: the analyst (or the caller) stopped the job.
``interfered``: the code tampered with what it hands over to the measuring process (forged messages, left
before handing over its result), so nothing it reported was recorded.
"""


class _CheckBase(BaseModel):
    ok: bool
    code: str = Field(default="", description="the code this result is about (a check vouches for nothing else)")
    error: str | None = Field(default=None, description="a sentence for the analyst: what failed and where")
    error_kind: ErrorKind | None = None
    failed_step: int | None = Field(
        default=None, description="0-based index in the chain (earlier steps first)"
    )
    traceback: str | None = Field(default=None, description="frames of the user's code only")
    stdout: str = ""
    code_seconds: float = Field(default=0.0, description="time spent in the user's statements")
    data_seconds: float = Field(default=0.0, description="time the child spent loading the data table")
    total_seconds: float = Field(default=0.0, description="wall time of the whole check seen by the caller")


class TransformCheck(_CheckBase):
    """What running a transform's code (after its parents) did."""

    change: FrameChange | None = None
    suggested_verb: str | None = None
    suggested_mapping: list[ColumnMapping] = Field(default_factory=list)
    preview: list[dict[str, Any]] = Field(default_factory=list, description="first 5 rows, JSON-safe")
    result_rows: int | None = Field(default=None, description="rows of the frame left in df")
    result_columns: list[str] = Field(default_factory=list, description="columns of the frame left in df")
    result_type: str | None = Field(default=None, description="type of the object left in df")
    value_hashes: dict[str, str] = Field(
        default_factory=dict, description="BLADE value hash of each created or changed column (and asked-for ones)"
    )


class ModelCheck(_CheckBase):
    """What running a model's code (after the transforms) produced."""

    summary: str | None = Field(default=None, description="text of .summary() of the result, or its repr")
    result_type: str | None = None
