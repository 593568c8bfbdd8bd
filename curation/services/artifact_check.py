"""``forkpaths artifacts check``: is everything the database refers to in the artifact store, and intact?

Every object is read and checked against its name (a damaged one is set aside, as any read would), then every
artifact the database records is looked up: each run's submission files and result, each release's MANIFEST and
the files it lists. One sentence per problem, naming the artifact as a failing job would.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.errors import ArtifactError
from curation.models import ReleaseRecord, Role, ScoringRun, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from exports.manifest import parse_manifest

__all__ = ["ArtifactCheck", "check_artifacts"]


@dataclass
class ArtifactCheck:
    """What ``forkpaths artifacts check`` found."""

    objects: int = 0
    referenced: int = 0
    problems: list[str] = field(default_factory=list)


@judges_actor
def check_artifacts(*, session: Session, actor: User, artifacts: ArtifactStore) -> ArtifactCheck:
    """Check every object, then every artifact the database refers to (curators and admins)."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    report = ArtifactCheck()
    report.objects, report.problems = artifacts.verify_objects()

    def need(sha: str | None, what: str) -> None:
        if not sha:
            return
        report.referenced += 1
        if not artifacts.has(sha):
            try:
                artifacts.check(sha, what=what)
            except ArtifactError as exc:
                report.problems.append(str(exc))

    for record in session.exec(select(ReleaseRecord).order_by(col(ReleaseRecord.id))).all():
        what = f"release {record.version}"
        need(record.manifest_sha256, f"the MANIFEST of {what}")
        if artifacts.has(record.manifest_sha256):
            text = artifacts.get_bytes(record.manifest_sha256, what=f"the MANIFEST of {what}").decode("utf-8", "replace")
            for rel, sha in sorted(parse_manifest(text)[0].items()):
                need(sha, f"the file {rel} of {what}")
    for run in session.exec(select(ScoringRun).order_by(col(ScoringRun.id))).all():
        for f in run.submission_files:
            need(str(f.get("sha256") or ""), f"the submission {f.get('name')} of run {run.id}")
        need(run.result_sha256, f"the result of run {run.id}")
    return report
