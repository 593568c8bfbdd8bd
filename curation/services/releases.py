"""Benchmark releases: cut (immutable, versioned, with checksums and a changelog), list, read, diff (exporting one
to a layout or a zip: :mod:`curation.services.release_exports`).

Every service here is for curators and admins, and applies the stage-1 blinding rule itself
(:mod:`curation.services.blinding`): a dataset whose stage-1 work the actor may not see yet is withheld from
what they read or compare (with a sentence saying why), and a release holding such a dataset cannot be
downloaded or exported by them (a release is published whole).

Every read checks the release's folder and zip against the MANIFEST hash (and zip hash) recorded when it was
cut (:mod:`exports.published`); a release that does not match is refused.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import SessionTransaction
from sqlmodel import Session, col, select

from curation.artifacts import ArtifactStore
from curation.db import one_snapshot
from curation.errors import NotFoundError, ReleaseError
from curation.models import Dataset, HypothesisTask, ReleaseRecord, Role, User, utcnow
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import (
    blind_datasets,
    datasets_holding_work,
)
from curation.services.mcq_store import unreviewed_mcqs
from curation.services.release_data import (
    RELEASE_TABLES,
    ReleasePartHook,
    dataset_release,
)
from curation.services.release_records import (  # the light half of this module, re-exported
    get_release,
    list_release_records,
    release_record,
    semver_key,
    withheld_in_release,
)
from curation.services.release_store import WriterLock, acquire_writer_lock, set_aside_unrecorded
from evaluation.tasks import KINDS, TaskKind, kinds_with
from evaluation.tasks.parts import part_of
from exports.card import render_card
from exports.changelog import ReleaseDiff, diff_releases, render_changelog
from exports.errors import FormatError
from exports.manifest import MANIFEST_NAME, sha256_file
from exports.native import read_release, write_release
from exports.parts import counts_text
from exports.published import PublishedRelease, read_published_release, release_zip_path
from exports.release_folder import set_aside
from exports.schema import FORMAT_VERSION, DatasetRelease, Release
from exports.upgrade import upgrade_summary

__all__ = [
    "SEMVER",
    "WITHHELD_FIELDS",
    "dataset_summary",
    "summary_sentence",
    "summary_totals",
    "ReleaseComparison",
    "ReleaseView",
    "app_version",
    "cut_release",
    "diff_release_versions",
    "release_dataset_rows",
    "release_documents",
    "get_release",
    "list_release_records",
    "next_version",
    "read_release_for",
    "release_candidates",
    "release_dir",
    "stored_release",
    "withheld_in_release",
]

log = logging.getLogger(__name__)
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
Progress = Callable[[str, float], None]

#: What a dataset withheld from a blind reader loses of the fields every kind shares: everything annotators
#: recorded about it, at any stage. Of each kind's part it keeps what the kind's ``ReleasePart.blind`` keeps.
WITHHELD_FIELDS = ("annotators", "variables", "transforms", "models", "alternatives", "votes", "consensus")



@dataclass(frozen=True)
class ReleaseView:
    """A verified release as one reader may see it.

    Attributes:
        record: the release's record.
        release: the release document, with the withheld datasets' recorded work left out.
        withheld: dataset name → the sentence saying why its work is withheld from this reader.
    """

    record: ReleaseRecord
    release: Release
    withheld: dict[str, str]


@dataclass(frozen=True)
class ReleaseComparison:
    """What changed between two releases, as one reader may see it.

    Attributes:
        diff: the structured diff, computed with the withheld datasets' work left out of both sides.
        withheld: dataset name → the sentence saying why its changes are not shown.
    """

    diff: ReleaseDiff
    withheld: dict[str, str]

    def changelog(self) -> str:
        """The changelog of what this reader may see (without the notes on withheld datasets)."""
        text = render_changelog(self.diff)
        if self.withheld and not self.diff.has_changes:
            text = text.replace("\nNo changes.\n", "\nNo changes outside the withheld datasets.\n")
        return text

    def markdown(self) -> str:
        """The changelog, preceded by one quoted line per withheld dataset."""
        notes = "\n>\n".join(f"> **`{name}` withheld:** {why}" for name, why in self.withheld.items())
        changelog = self.changelog()
        if not notes:
            return changelog
        title, _, rest = changelog.partition("\n\n")
        return f"{title}\n\n{notes}\n\n{rest}"


def app_version() -> str:
    try:
        return package_version("forkpaths")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


def release_dir(record: ReleaseRecord, releases_root: Path) -> Path:
    return releases_root / record.path


def published_release(*, session: Session, record: ReleaseRecord, releases_root: Path,
                      zip_data: bytes | None = None) -> PublishedRelease:
    """The release's folder and zip, checked against the hashes recorded when it was cut (or refused).

    A release cut before zip hashes were recorded gets its zip's hash on its first complete check.
    """
    try:
        published = read_published_release(release_dir(record, releases_root), record.version,
                                           manifest_sha256=record.manifest_sha256, zip_sha256=record.zip_sha256,
                                           zip_data=zip_data)
    except FormatError as exc:
        log.error("release %s refused: %s", record.version, exc)
        raise ReleaseError(f"Release {record.version} cannot be used: {exc}") from exc
    if record.zip_sha256 is None:
        record.zip_sha256 = published.zip_sha256
        session.add(record)
        log.warning("release %s was cut before zip hashes were recorded; its folder and every member of its zip "
                    "match its recorded MANIFEST, so the zip's SHA-256 %s is recorded now and checked from now on",
                    record.version, published.zip_sha256)
    return published


def stored_release(record: ReleaseRecord, artifacts: ArtifactStore, manifest_sha256: str | None = None
                   ) -> tuple[Release, Path]:
    """Release ``record`` as scoring reads it, on any machine: from the artifact store by its MANIFEST hash,
    materialised in this machine's cache, every file checked against the MANIFEST recorded when it was cut.

    A release published in this data folder but not yet in the store (cut before the store existed) is put
    there first. A cached copy that no longer matches is made again from the store once.

    Returns:
        The release document and the folder holding its files.

    Raises:
        ArtifactMissing / ArtifactCorrupted: the release (or one of its files) is not in the store, or damaged.
        ReleaseError: the release does not read as the release of its version.
    """
    sha = manifest_sha256 or record.manifest_sha256
    what = f"release {record.version}"
    if not artifacts.has(sha):
        import_published_release(record, artifacts)
    for attempt in (1, 2):
        folder = artifacts.release_folder(sha, what=what)
        try:
            release = read_release(folder, manifest_sha256=sha)
            if release.version != record.version:
                raise ReleaseError(f"Release {record.version} cannot be used: the release stored under its "
                                   f"MANIFEST hash {sha[:12]}… declares version {release.version}.")
            return release, folder
        except FormatError as exc:
            artifacts.forget_release_folder(sha)  # the cached copy was changed: make it again from the store
            if attempt == 2:
                raise ReleaseError(f"Release {record.version} cannot be used: {exc}") from exc
            log.warning("the cached copy of release %s in %s was changed; it is made again from the store",
                        record.version, folder)
    raise AssertionError("unreachable")


def import_published_release(record: ReleaseRecord, artifacts: ArtifactStore) -> bool:
    """Put a release published in this data folder (cut before the artifact store) into the store, when its
    folder's MANIFEST is the one recorded at the cut. Returns whether it is in the store now."""
    folder = release_dir(record, artifacts.releases_root)
    try:
        if sha256_file(folder / MANIFEST_NAME) != record.manifest_sha256:
            log.error("release %s: the MANIFEST in %s is not the one recorded when it was cut; not imported",
                      record.version, folder)
            return False
        artifacts.put_tree(folder)
    except FileNotFoundError:
        return False
    except (OSError, ValueError) as exc:
        log.error("release %s could not be put in the artifact store from %s: %s", record.version, folder, exc)
        return False
    log.info("release %s put in the artifact store from %s", record.version, folder)
    return True


def _blinded(release: Release, withheld: Mapping[str, str]) -> Release:
    """``release`` with the withheld datasets' decisions, alternatives, votes, consensus and MCQs left out.

    What remains of such a dataset is what every annotator sees anyway: its question, description,
    dictionary and data table.
    """
    if not withheld:
        return release
    empty: dict[str, Any] = {name: [] for name in WITHHELD_FIELDS}

    def blind(d: DatasetRelease) -> DatasetRelease:
        # a DiscoveryBench folder's provenance (kind, split, folder) is imported, not annotators' work
        extra = {k: v for k, v in d.extra.items() if k == "discoverybench"}
        parts = {}  # each kind keeps what it declares a blind reader may see; a part of an unknown kind: nothing
        for kind in kinds_with("release_part"):
            part = part_of(d, kind)
            if part is not None and kind.release_part is not None:
                kept = kind.release_part.blind(part)
                if kept is not None:
                    parts[kind.name] = kept.model_dump(mode="json")
        return d.model_copy(update=empty | {"extra": extra, "parts": parts})

    return release.model_copy(update={"datasets": [blind(d) if d.name in withheld else d for d in release.datasets]})


def _holds_work(d: DatasetRelease) -> bool:
    """Recorded work a blind reader may not see: decisions, votes... or what a kind's part keeps from him."""
    if any(getattr(d, f) for f in WITHHELD_FIELDS) or any(name not in KINDS for name in d.parts):
        return True
    for kind in kinds_with("release_part"):
        part = part_of(d, kind)
        if part is not None and kind.release_part is not None:
            kept = kind.release_part.blind(part)
            if kept is None or kept.model_dump(mode="json") != part.model_dump(mode="json"):
                return True
    return False


@judges_actor
def read_release_for(*, session: Session, actor: User, version: str, artifacts: ArtifactStore) -> ReleaseView:
    """Release ``version`` as ``actor`` may see it: curators and admins, blind datasets withheld.

    Raises:
        PermissionDenied: the actor is not a curator or admin.
        NotFoundError: no such release.
        ReleaseError: the release's folder or zip was modified after it was cut.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    record = release_record(session=session, version=version)
    release = published_release(session=session, record=record, releases_root=artifacts.releases_root).release
    # The verified document's dataset names, not only the record's summary: what is shown is what is checked.
    names = {*record.summary, *(d.name for d in release.datasets)}
    holding = {d.name for d in release.datasets if _holds_work(d)}
    withheld = blind_datasets(session=session, actor=actor, names=names, holding=holding)
    return ReleaseView(record=record, release=_blinded(release, withheld), withheld=withheld)


def _licence_and_attribution(datasets: Sequence[Dataset]) -> tuple[str, str]:
    blade = any(d.extra.get("blade") for d in datasets)
    licence = ("Decisions, votes and MCQs: as set by the curators of this release. Data tables keep the licence "
               "of their source (see each dataset's description).")
    attribution = ""
    if blade:
        attribution = ('Includes BLADE ground truth: Gu et al., "BLADE: Benchmarking Language Model Agents for '
                       'Data-Driven Science", EMNLP 2024 Findings; data under ODC-By 1.0.')
    if any((d.extra or {}).get("discoverybench") for d in datasets):
        attribution = " ".join(filter(None, [attribution, (
            'Includes DiscoveryBench tasks and data: Majumder et al., "DiscoveryBench: Towards Data-Driven Discovery '
            'with Large Language Models", 2024 (github.com/allenai/discoverybench); data under ODC-By 1.0.')]))
    return licence, attribution


def _with_gold_parts(datasets: Sequence[Dataset]) -> set[int]:
    """Those of ``datasets`` whose stored kind parts (imported with their gold, ``forkpaths import-<kind>``) hold
    recorded work: a count its kind's release part calls work (its gold); a part of a kind not known here, or one
    that does not read, counts too (the cut then says what is wrong with it)."""
    found: set[int] = set()
    for d in datasets:
        for name, raw in (d.parts or {}).items():
            spec = KINDS[name].release_part if name in KINDS else None
            try:
                counts = spec.counts(spec.model.model_validate(raw)) if spec is not None else None
            except ValueError:
                counts = None
            if counts is None or any(counts.get(label) for label in spec.work):  # type: ignore[union-attr]
                found.add(d.id or 0)
    return found


def ground_truth_nouns() -> list[str]:
    """What makes a dataset's ground truth, for a person: the shared sections, then the items of each kind whose
    part holds recorded work."""
    return ["decisions", "alternatives", "votes", *(k.release_part.noun for k in kinds_with("release_part")
                                                    if k.release_part is not None and k.release_part.work)]


def _holding(session: Session, datasets: Sequence[Dataset]) -> set[int]:
    """Those of ``datasets`` that have ground truth: recorded work in the database, hypothesis tasks, or kind
    parts imported with their gold."""
    ids = [d.id or 0 for d in datasets]
    return (datasets_holding_work(session=session, dataset_ids=ids) | _with_hypothesis_tasks(session, ids)
            | _with_gold_parts(datasets))


def _with_hypothesis_tasks(session: Session, dataset_ids: Sequence[int]) -> set[int]:
    """Those of ``dataset_ids`` that hold hypothesis tasks: ground truth to release, imported or curated."""
    if not dataset_ids:
        return set()
    stmt = select(HypothesisTask.dataset_id).where(col(HypothesisTask.dataset_id).in_(list(dataset_ids))).distinct()
    return set(session.exec(stmt).all())


def _one_moment(fn: Callable[..., ReleaseRecord]) -> Callable[..., ReleaseRecord]:
    """A cut reads its whole release from one snapshot, taken before anything else is read (the actor too).

    Read in separate statements at READ COMMITTED, a vote committed mid-cut made a release whose consensus
    tallies disagreed with its own votes (3–0 justifiable next to 2–1 votes).
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> ReleaseRecord:
        one_snapshot(session=kwargs["session"], tables=RELEASE_TABLES)
        return fn(*args, **kwargs)

    return wrapper


@_one_moment
@judges_actor
def cut_release(
    *,
    session: Session,
    actor: User,
    version: str,
    notes: str,
    artifacts: ArtifactStore,
    store: Path,
    dataset_names: Sequence[str] | None = None,
    include_empty: bool = False,
    progress: Progress | None = None,
    release_parts: Mapping[str, ReleasePartHook] | None = None,
) -> ReleaseRecord:
    """Cut release ``version`` of the chosen datasets: curators and admins only.

    By default a release holds every dataset that has ground truth (see :func:`release_candidates`); datasets
    that hold nothing but their data table are left out unless ``include_empty`` or named in ``dataset_names``.

    Everything released is read from one snapshot of the database (:func:`curation.db.one_snapshot`): votes
    cast during the cut are in the next release, never half in this one.
    The files are written to a temporary folder and renamed into place when complete. A release exists
    exactly when its record does: if recording the release fails here, the files are removed again; if the
    caller's transaction rolls back later, they are set aside (see :mod:`curation.services.release_store`).
    The writer lock is held from before writing until that transaction ends. The release's files and its
    MANIFEST are put in the artifact store too (where workers read it, by the MANIFEST's hash).

    A dataset with hypothesis tasks (imported from DiscoveryBench) has ground truth; it is released with every
    file of its folder and every task, gold or still to curate. A kind that curates its items in the database
    builds its part of each dataset (:mod:`curation.services.kind_curation`), unless ``release_parts`` names
    another builder for it (a test standing in for stages 1-3).
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    version = version.strip()
    if not SEMVER.match(version):
        raise ReleaseError(f"'{version}' is not a semantic version; use MAJOR.MINOR.PATCH such as 1.0.0.")
    records = session.exec(select(ReleaseRecord)).all()
    if any(r.version == version for r in records):
        raise ReleaseError(f"Release {version} already exists; releases never change. Choose a new version.")
    newer = [r.version for r in records if semver_key(r.version) >= semver_key(version)]
    if newer:
        raise ReleaseError(f"Version {version} must be higher than the latest release ({max(newer, key=semver_key)}).")
    datasets = list(session.exec(select(Dataset).order_by(Dataset.name)).all())
    archived = sorted(d.name for d in datasets if d.archived_at is not None)
    if dataset_names is not None and set(dataset_names) & set(archived):
        raise ReleaseError(f"Archived datasets are not released: {sorted(set(dataset_names) & set(archived))}; "
                           "restore them on the Datasets page first.")
    datasets = [d for d in datasets if d.archived_at is None]  # archived: kept, but out of new releases
    if dataset_names is not None and not dataset_names:
        raise ReleaseError("Choose at least one dataset to release.")
    if dataset_names is not None:
        unknown = sorted(set(dataset_names) - {d.name for d in datasets})
        if unknown:
            raise NotFoundError(f"No dataset called {', '.join(unknown)}.")
        datasets = [d for d in datasets if d.name in set(dataset_names)]
    if not datasets:
        raise ReleaseError("There is nothing to release: no datasets are registered"
                           + (f" (archived: {', '.join(archived)})." if archived else "."))
    if dataset_names is None and not include_empty:
        holding = _holding(session, datasets)
        empty = [d.name for d in datasets if (d.id or 0) not in holding]
        datasets = [d for d in datasets if (d.id or 0) in holding]
        if not datasets:
            raise ReleaseError(f"There is nothing to release: no dataset has ground truth yet (empty: "
                               f"{', '.join(empty)}). Include the empty datasets to release their data alone.")
    previous_record = max(records, key=lambda r: semver_key(r.version)) if records else None
    releases_root = artifacts.releases_root
    previous = published_release(session=session, record=previous_record,
                                 releases_root=releases_root).release if previous_record else None
    licence, attribution = _licence_and_attribution(datasets)
    release = Release(version=version, created_at=utcnow(), app_version=app_version(), notes=notes.strip(),
                      previous_version=previous_record.version if previous_record else None, licence=licence,
                      attribution=attribution, datasets=[
                          dataset_release(session=session, dataset=d, release_parts=release_parts)
                          for d in datasets])
    unreviewed = {d.name: unreviewed_mcqs(session=session, dataset_id=d.id or 0) for d in datasets}
    data_files = {d.name: store / d.data_relpath for d in datasets}
    folder_files = {d.name: {str(f["name"]): store / str(f["relpath"]) for f in d.files} for d in datasets if d.files}
    writer = _session_writer(session, releases_root)
    path: Path | None = None
    try:
        # Under the lock, files of this version without a record are a dead writer's: set them aside.
        set_aside_unrecorded(session=session, releases_root=releases_root, versions=[version])
        try:
            path = write_release(release, data_files, releases_root, previous=previous, progress=progress,
                                 dataset_files=folder_files)
            # Check the published folder and every member of the zip once; from now on the zip's hash says it all.
            manifest = sha256_file(path / MANIFEST_NAME)
            published = read_published_release(path, version, manifest_sha256=manifest)
        except FormatError as exc:
            raise ReleaseError(f"Release {version} could not be written: {exc}") from exc
        try:
            stored = artifacts.put_tree(path)
        except (OSError, ValueError) as exc:
            raise ReleaseError(f"Release {version} could not be put in the artifact store at {artifacts.root}: "
                               f"{getattr(exc, 'strerror', None) or exc}. Nothing was released.") from exc
        assert stored == manifest, "the stored tree is addressed by the MANIFEST written"
        record = ReleaseRecord(
            version=version, format_version=FORMAT_VERSION, previous_version=release.previous_version,
            notes=release.notes, created_at=release.created_at, created_by_id=actor.id,
            path=path.relative_to(releases_root).as_posix(), manifest_sha256=manifest,
            zip_sha256=published.zip_sha256,
            summary={d.name: dataset_summary(d, unreviewed.get(d.name, 0)) for d in release.datasets},
        )
        session.add(record)
        session.flush()
    except BaseException:
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)
            release_zip_path(path).unlink(missing_ok=True)
        writer.release_if_idle()
        raise
    writer.versions.append(version)
    return record


def dataset_summary(d: DatasetRelease, unreviewed_mcqs: int = 0) -> dict[str, Any]:
    """The counts a release record keeps about a dataset: the shared ones (decisions, alternatives, votes, the
    files of a folder), and under ``parts`` each kind's counts of the part it holds, as the kind labels them
    (a record cut under format 1.x is read through :func:`exports.upgrade.upgrade_summary`)."""
    counts: dict[str, Any] = {"variables": len(d.variables), "transforms": len(d.transforms), "models": len(d.models),
                              "alternatives": len(d.alternatives), "votes": len(d.votes),
                              "mcqs_unreviewed": unreviewed_mcqs}
    if d.files:
        counts["files"] = len(d.files)
    parts = {}
    for kind in kinds_with("release_part"):
        part = part_of(d, kind)
        if part is not None and kind.release_part is not None and any(kind.release_part.counts(part).values()):
            parts[kind.name] = kind.release_part.counts(part)
    counts["parts"] = parts
    return counts


class _SessionWriter:
    """The writer lock a session holds from its first cut until its transaction ends, and what it cut.

    One lock per session and releases folder, so that one transaction may cut several releases. When the
    transaction ends without committing, the files it published are set aside: they never became releases.
    """

    def __init__(self, session: Session, releases_root: Path) -> None:
        self.key = ("forkpaths.release_writer", str(releases_root))
        self.session = session
        self.releases_root = releases_root
        self.lock: WriterLock = acquire_writer_lock(releases_root)
        self.versions: list[str] = []
        self.committed = False
        self.done = False
        session.info[self.key] = self
        event.listen(session, "after_commit", self._after_commit)
        event.listen(session, "after_transaction_end", self._after_transaction_end)

    def _after_commit(self, _session: Session) -> None:
        self.committed = True

    def _after_transaction_end(self, _session: Session, transaction: SessionTransaction) -> None:
        if transaction.parent is not None or self.done:
            return  # a savepoint, or a later transaction of the same session
        self.done = True
        self.session.info.pop(self.key, None)
        try:
            if not self.committed:
                for version in self.versions:
                    for name in (version, f"{version}.zip"):
                        if (self.releases_root / name).exists():
                            set_aside(self.releases_root, name, "The transaction that was to record this release "
                                                                "was rolled back, so it was never released.")
        finally:
            self.lock.release()

    def release_if_idle(self) -> None:
        """After a failed cut: let go of the lock unless an earlier cut of this transaction still needs it."""
        if not self.versions:
            self.done = True
            self.session.info.pop(self.key, None)
            self.lock.release()


def _session_writer(session: Session, releases_root: Path) -> _SessionWriter:
    writer = session.info.get(("forkpaths.release_writer", str(releases_root)))
    return writer if isinstance(writer, _SessionWriter) else _SessionWriter(session, releases_root)


@judges_actor
def release_candidates(*, session: Session, actor: User) -> tuple[list[str], list[str]]:
    """What a new release would hold by default: (datasets with ground truth, empty datasets left out).

    A dataset has ground truth once it holds a submitted analysis, an alternative, a vote, a consensus decision,
    or a kind's items (MCQs, hypothesis tasks, questions imported with their gold...); an empty one holds only its
    data table. Archived datasets are in neither list.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    datasets = [d for d in session.exec(select(Dataset).order_by(Dataset.name)).all() if d.archived_at is None]
    holding = _holding(session, datasets)
    return ([d.name for d in datasets if (d.id or 0) in holding],
            [d.name for d in datasets if (d.id or 0) not in holding])


@judges_actor
def diff_release_versions(*, session: Session, actor: User, old: str, new: str,
                          artifacts: ArtifactStore) -> ReleaseComparison:
    """What changed from release ``old`` to ``new``, as ``actor`` may see it (blind datasets withheld)."""
    a = read_release_for(session=session, actor=actor, version=old, artifacts=artifacts)
    b = read_release_for(session=session, actor=actor, version=new, artifacts=artifacts)
    withheld = {**a.withheld, **b.withheld}
    diff = diff_releases(_blinded(a.release, withheld), _blinded(b.release, withheld))
    return ReleaseComparison(diff=diff, withheld=dict(sorted(withheld.items())))


@dataclass(frozen=True)
class ReleaseDocuments:
    """A release's dataset card (its README.md) and its changelog against the release before it, as one reader
    may see them (blind datasets withheld from both)."""

    card: str
    changelog: str
    previous: str | None


@judges_actor
def release_documents(*, session: Session, actor: User, version: str, artifacts: ArtifactStore) -> ReleaseDocuments:
    """The dataset card and the changelog of release ``version`` for the Releases page: the changelog is against
    the release before it (by version), or says it is the first."""
    view = read_release_for(session=session, actor=actor, version=version, artifacts=artifacts)
    key = semver_key(version)
    older = [r for r in list_release_records(session=session, actor=actor) if semver_key(r.version) < key]
    previous = older[0].version if older else None
    if previous is None:
        changelog = render_changelog(diff_releases(None, view.release))
    else:
        changelog = diff_release_versions(session=session, actor=actor, old=previous, new=version,
                                          artifacts=artifacts).changelog()
    return ReleaseDocuments(card=render_card(view.release), changelog=changelog, previous=previous)


def summary_sentence(counts: Mapping[str, Any]) -> str:
    """What one dataset of a release holds, from its record's counts: "4 decisions, 12 MCQs, 30 votes" or
    "2 programmatic tasks (5 checks)" (each kind's counts as the kind labels them)."""
    c = upgrade_summary(dict(counts))
    known = {k.name: k.release_part for k in kinds_with("release_part") if k.release_part is not None}
    out = []
    decisions = sum(int(c.get(k, 0) or 0) for k in ("variables", "transforms", "models"))
    if decisions:
        out.append(f"{decisions} decision{'' if decisions == 1 else 's'}")
    for kind, part in (c.get("parts") or {}).items():
        values = list(part.items())
        if values:
            spec = known.get(kind)
            noun = values[0][0] if spec is None else spec.singular if values[0][1] == 1 else spec.noun
            out.append(counts_text(part, noun))
    if c.get("votes"):
        out.append(f"{c['votes']} vote{'' if c['votes'] == 1 else 's'}")
    return ", ".join(out) or "its data alone"


def summary_totals(summary: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    """A release record's counts summed over its datasets, for the list of releases: decisions, votes, then the
    number of items of every kind that keeps a part (by its noun); only the counts the release holds (a release
    of questions has no "0 decisions")."""
    known = [k for k in kinds_with("release_part") if k.release_part is not None]
    totals = {"decisions": 0, "votes": 0, **{k.release_part.noun: 0 for k in known if k.release_part}}
    for raw in summary.values():
        c = upgrade_summary(dict(raw))
        totals["decisions"] += sum(int(c.get(k, 0) or 0) for k in ("variables", "transforms", "models"))
        totals["votes"] += int(c.get("votes", 0) or 0)
        for k in known:
            counts = (c.get("parts") or {}).get(k.name) or {}
            if k.release_part is not None and counts:
                totals[k.release_part.noun] += int(next(iter(counts.values()), 0) or 0)
    return {k: n for k, n in totals.items() if n}


@judges_actor
def release_dataset_rows(*, session: Session, actor: User, version: str) -> list[dict[str, Any]]:
    """One row per dataset of release ``version`` with what it holds, for a person: ``holds`` names it (its
    decisions, then each kind's part by the kind's noun: "analysis decisions, MCQs", "hypothesis tasks",
    "programmatic tasks"; "nothing curated yet"), ``about`` is what the kinds say about such datasets, then the counts that
    apply to it: ``decisions`` where it holds some, each part's counts as its kind labels them, ``files`` for a
    folder of several files, and ``votes`` where experts vote on what it holds (decisions, or a part its kind
    curates; not a dataset of imported questions). Rows of datasets that hold the same things have the same keys."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    kinds = {k.name: k for k in kinds_with("release_part")}
    known = {name: k.release_part for name, k in kinds.items() if k.release_part is not None}
    rows = []
    for name, raw in sorted(release_record(session=session, version=version).summary.items()):
        c = upgrade_summary(dict(raw))
        decisions = sum(int(c.get(k, 0) or 0) for k in ("variables", "transforms", "models"))
        parts: dict[str, dict[str, int]] = c.get("parts") or {}
        held = (["analysis decisions"] if decisions else []) + [known[k].noun if k in known else k for k in parts]
        row: dict[str, Any] = {"dataset": name, "holds": ", ".join(held) or "nothing curated yet",
                               "about": " ".join(known[k].about for k in parts if k in known and known[k].about)}
        if decisions:
            row["decisions"] = decisions
        for counts in parts.values():
            row.update(counts)
        if c.get("files"):
            row["files"] = c["files"]
        votes = int(c.get("votes", 0) or 0)
        if votes or decisions or not parts or any(_curates(kinds.get(k)) for k in parts):
            row["votes"] = votes
        rows.append(row)
    return rows


def _curates(kind: TaskKind | None) -> bool:
    """Whether experts vote on the items of a kind's part (it brings decision items or curates its part); a kind
    not known here: as if it did. A dataset of imported questions has no votes to count."""
    return kind is None or bool(kind.item_kinds) or kind.curation is not None


def unreviewed_note(summary: Mapping[str, Mapping[str, int]]) -> str:
    """The sentence a curator needs after a cut that left generated MCQs out because nobody reviewed them."""
    left = {name: n for name, counts in summary.items() if (n := counts.get("mcqs_unreviewed", 0))}
    if not left:
        return ""
    where = ", ".join(f"{n} of {name}" for name, n in sorted(left.items()))
    return (f"Generated MCQs not yet reviewed were left out of this release ({where}): accept or edit them on the "
            "MCQs page, then cut the next release.")


def next_version(records: Sequence[ReleaseRecord]) -> str:
    """The next patch version after the latest release (1.0.0 for the first)."""
    if not records:
        return "1.0.0"
    major, minor, patch = semver_key(max((r.version for r in records), key=semver_key))
    return f"{major}.{minor}.{patch + 1}"
