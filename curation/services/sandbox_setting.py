"""The sandbox setting applied at start-up, and how strongly code is isolated here.

Kept apart from :mod:`curation.services.checks` (which imports pandas and the annotation services) so that
start-up, which every CLI command runs, stays light. :mod:`curation.services.checks` re-exports both.
"""

from __future__ import annotations

import logging
from pathlib import Path

from evaluation import sandbox
from evaluation.sandbox import IsolationStatus, SandboxMode

__all__ = ["configure_sandbox", "sandbox_isolation"]

log = logging.getLogger("curation.services.checks")  # the name these start-up lines have always carried


def configure_sandbox(*, mode: SandboxMode, data_dir: Path) -> IsolationStatus:
    """Apply the sandbox setting at start-up and log how strongly analysts' code is isolated here."""
    sandbox.configure(mode=mode, hidden_paths=[data_dir])
    status = sandbox.isolation_status()
    if status.weak:
        log.warning("%s", status.sentence())
    else:
        log.info("%s", status.sentence())
    return status


def sandbox_isolation() -> IsolationStatus:
    """How strongly code is isolated on this machine (for the admin page)."""
    return sandbox.isolation_status()
