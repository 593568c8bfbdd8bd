"""What a generation command (``alternatives generate``, ``hypotheses generate``) prints when its job has run, and
its exit code: shared by the kinds' commands, each saying in its own words what was stored."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["generation_exit"]


def generation_exit(job: Any, report: Callable[..., Any], stored: Callable[[Any], str]) -> int:
    """Print the outcome of a generation job that ran here and return the command's exit code.

    ``report`` reads the job's result (a report with ``created``, ``already_stored``, ``rejected`` and ``errors``),
    ``stored`` says what was stored. 1 when the job recorded no result or failed, or when every request failed and
    nothing is stored (none before either); 0 otherwise, rejected answers included.
    """
    from curation.models import RunStatus

    if job.result is None:
        print(f"The generation {job.status}: {job.message}", file=sys.stderr)
        return 1
    result = report(**job.result)
    print(stored(result))
    for line in result.rejected:
        print(f"  rejected: {line}")
    for line in result.errors:
        print(f"  failed: {line}", file=sys.stderr)
    failed = result.errors and not result.created and not result.already_stored
    return 1 if failed or job.status == RunStatus.FAILED.value else 0
