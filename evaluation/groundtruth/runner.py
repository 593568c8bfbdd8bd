"""The one place where ground-truth code execution meets the sandbox.

Everything else in :mod:`evaluation.groundtruth` calls :func:`run_groundtruth_job`; the jobs themselves
(:func:`evaluation.groundtruth.jobs.execute_paths_job`, :func:`evaluation.groundtruth.convert_job.convert_code_job`)
are registered sandbox jobs, JSON in and JSON out, so experts' and agents' code runs behind the same operating-
system boundary as the stage-1 sanity check (:mod:`evaluation.sandbox`): its own namespaces, a read-only copy of
the one data file, no network, no inherited environment, resource limits. Frames never leave the job.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evaluation.errors import EvaluationError
from evaluation.groundtruth.jobs import JOB_NAME
from evaluation.sandbox import SandboxLimits, run_job

__all__ = ["GroundTruthLimits", "JobFailed", "checked_result", "run_groundtruth_job", "sandbox_limits_of"]


class GroundTruthLimits(BaseModel):
    """Resource limits of one ground-truth execution job (one dataset, every path)."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(default=300.0, gt=0, description="wall clock for the whole dataset")
    memory_mb: int = Field(default=4096, gt=0, description="address space of the job (RLIMIT_AS)")
    max_file_mb: int = Field(default=64, gt=0, description="largest file the job may write")


class JobFailed(EvaluationError):
    """The job died, timed out or answered something that is not its JSON result.

    ``kind`` is the sandbox's error kind (``timeout``, ``memory``, ``crashed``...) and ``reason`` the sentence
    without this module's prefix, for callers that word their own message (scoring an agent's code)."""

    def __init__(self, message: str, *, kind: str | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.kind, self.reason = kind, reason or message


def _reason(result: dict[str, Any], limits: SandboxLimits) -> str:
    """The job's sentence; a job that died without one (a memory failure reported by the sandbox) gets one."""
    if result.get("error"):
        return str(result["error"])
    kind = result.get("error_kind")
    if kind == "memory":
        return (f"The code tried to use more than the {limits.memory_mb} MB memory limit (for example a frame "
                "of tens of millions of rows) and was stopped.")
    if result.get("exc_message"):
        return str(result["exc_message"])
    return f"The job stopped without a result ({kind or 'no reason given'})."


def run_groundtruth_job(payload: dict[str, Any], *, data_path: Path, limits: GroundTruthLimits,
                        job: str = JOB_NAME, fast_copy: Path | None = None) -> dict[str, Any]:
    """Run a ground-truth sandbox job (execution by default, or the code → units converter) on ``data_path``
    (``fast_copy``: the table's fast copy, when the caller made one; see :func:`evaluation.sandbox.run_job`).

    Raises:
        JobFailed: the job died (time, memory, a crash) or answered something that is not its result.
        SandboxError: the sandbox itself could not run (isolation unavailable and not waived).
    """
    sandbox_limits = sandbox_limits_of(limits)
    result = run_job(job, payload, data_path=Path(data_path), limits=sandbox_limits, fast_copy=fast_copy)
    return checked_result(result, sandbox_limits)


def sandbox_limits_of(limits: GroundTruthLimits) -> SandboxLimits:
    """The sandbox's limits of a ground-truth job."""
    return SandboxLimits(timeout_s=limits.timeout_s, memory_mb=limits.memory_mb, max_file_mb=limits.max_file_mb)


def checked_result(result: dict[str, Any], limits: SandboxLimits) -> dict[str, Any]:
    """A job's result (or one item's of a batch) without ``stdout`` and ``seconds``.

    Raises:
        JobFailed: it says the job died (time, memory, a crash) or failed.
    """
    if result.get("ok") is False:
        sentence = _reason(result, limits)
        kind = result.get("error_kind")
        if kind == "timeout":
            raise JobFailed(f"executing the ground truth took longer than {limits.timeout_s:g} s: {sentence}",
                            kind=kind, reason=sentence)
        raise JobFailed(f"the ground-truth job failed: {sentence}", kind=kind, reason=sentence)
    for key in ("stdout", "seconds"):
        result.pop(key, None)
    return result
