"""The resource limits of a sandbox job (kept apart from :mod:`evaluation.sandbox.results`, which imports pandas
through the frame-change model, so that starting the sandbox does not wait for pandas)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_LIMITS", "SandboxLimits"]


class SandboxLimits(BaseModel):
    """Resource limits of one sandbox job."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(
        default=30.0, gt=0, description="wall clock for the whole job, data loading included"
    )
    memory_mb: int = Field(
        default=2048,
        gt=0,
        description="address space (RLIMIT_AS) the job may add on top of the pre-loaded interpreter "
        "(pandas, numpy and statsmodels already map about 0.5 GB)",
    )
    max_output_chars: int = Field(
        default=20_000,
        gt=0,
        description="captured stdout/stderr, tracebacks and summaries are truncated to this",
    )
    max_file_mb: int = Field(default=512, gt=0, description="largest file the job may write (RLIMIT_FSIZE)")


DEFAULT_LIMITS = SandboxLimits()
