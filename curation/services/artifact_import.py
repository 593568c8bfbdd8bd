"""Data folders from before the artifact store keep working: their files are put in the store at start.

Before :mod:`curation.artifacts`, a run kept its submission files and result under ``<data_dir>/runs/<id>/``
(paths on its row) and scoring read releases from ``<data_dir>/releases/<version>/``. At every start
(:func:`curation.bootstrap.initialise`) :func:`import_old_layout` puts what the database still refers to by path
into the store, each file checked against the hash recorded for it, and records the result's hash on its run.
It is idempotent and cheap once done: a run whose files are imported no longer refers to them by path, and a
release whose MANIFEST is in the store is skipped. The old files are left where they are (nothing is deleted);
a release published in this data folder but missing from the store is also imported the first time scoring
asks for it (:func:`curation.services.releases.stored_release`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from sqlmodel import Session, select

from curation.artifacts import ArtifactStore
from curation.models import ReleaseRecord, ScoringRun

__all__ = ["OldLayoutImport", "import_old_layout"]

log = logging.getLogger(__name__)


@dataclass
class OldLayoutImport:
    """What one start imported from the old layout, and what it could not (one sentence each)."""

    releases: int = 0
    submissions: int = 0
    results: int = 0
    problems: list[str] = field(default_factory=list)


def _put_checked(artifacts: ArtifactStore, path: Path, expected: str | None, what: str,
                 report: OldLayoutImport) -> str | None:
    """Put ``path`` in the store; its hash, or None (with a problem noted) when it is gone or was altered."""
    if not path.is_file():
        return None  # not on this machine (a worker's own data folder): the app that has it imports it
    try:
        sha = artifacts.put_file(path)
    except OSError as exc:
        report.problems.append(f"{what} ({path}) could not be put in the artifact store: {exc.strerror or exc}.")
        return None
    if expected is not None and sha != expected:
        report.problems.append(f"{what} ({path}) no longer matches the sha256 recorded for it ({expected[:12]}…); "
                               "it was changed on disk and is not used.")
        return None
    return sha


def import_old_layout(*, session: Session, artifacts: ArtifactStore, runs_root: Path) -> OldLayoutImport:
    """Put the old layout's run files and release folders into the artifact store (see the module's text)."""
    report = OldLayoutImport()
    for record in session.exec(select(ReleaseRecord)).all():
        if artifacts.has(record.manifest_sha256):
            continue
        # imported only when a release is missing from the store: the releases service reads releases (pandas),
        # and every start of the app and of each command runs this import
        from curation.services import releases as _releases

        if _releases.import_published_release(record, artifacts):
            report.releases += 1
    for run in session.exec(select(ScoringRun)).all():
        changed = False
        if any("path" in f for f in run.submission_files):
            files = []
            for f in run.submission_files:
                if "path" in f and (artifacts.has(f["sha256"]) or _put_checked(
                        artifacts, runs_root / f["path"], f["sha256"],
                        f"the submission {f['name']} of run {run.id}", report)):
                    report.submissions += 1
                    f = {k: v for k, v in f.items() if k != "path"}
                    changed = True
                files.append(f)
            run.submission_files = files
        if run.result_path and not run.result_sha256:
            sha = _put_checked(artifacts, runs_root / run.result_path, None, f"the result of run {run.id}", report)
            if sha is not None:
                run.result_sha256, run.result_path = sha, Path(run.result_path).name
                report.results += 1
                changed = True
        if run.release_sha256 is None:
            of_run = session.exec(select(ReleaseRecord).where(ReleaseRecord.version == run.release_version)).first()
            if of_run is not None:
                run.release_sha256 = of_run.manifest_sha256
                changed = True
        if changed:
            session.add(run)
    if report.releases or report.submissions or report.results:
        log.info("put the old layout in the artifact store at %s: %s releases, %s submission files, %s results",
                 artifacts.root, report.releases, report.submissions, report.results)
    for problem in report.problems:
        log.error("%s", problem)
    return report
