"""Releases handed out: exported to a layout (the native folder and zip, BLADE's, DiscoveryBench's, a Hugging Face
dataset) or zipped for a download, from the verified published release (:mod:`curation.services.releases`).

Curators and admins who are not blind to any of the release's datasets: a release is handed out whole, so one
holding a dataset whose stage-1 work the actor may not see yet is refused with a sentence saying why.
"""

from __future__ import annotations

import io
import secrets
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from sqlmodel import Session

from curation.artifacts import ArtifactStore
from curation.errors import BlindingViolation, ReleaseError
from curation.models import ReleaseRecord, Role, User
from curation.services.accounts import require_role
from curation.services.actor import judges_actor
from curation.services.blinding import refusal_sentences, summary_holding
from curation.services.release_records import release_record
from curation.services.releases import published_release, release_dir
from exports.errors import FormatError
from exports.published import read_published_release, release_zip_path

__all__ = ["EXPORT_FORMATS", "export_release", "export_skips", "release_archive"]

#: The layouts a release exports to: the native folder and zip, BLADE's, DiscoveryBench's, a Hugging Face dataset.
EXPORT_FORMATS = ("native", "blade", "discoverybench", "hf")


def _refuse_if_blind(session: Session, actor: User, record: ReleaseRecord, what: str) -> None:
    names, why = refusal_sentences(session=session, actor=actor, names=record.summary,
                                   holding=summary_holding(record.summary))
    if names:
        which = ", ".join(f"'{n}'" for n in names)
        raise BlindingViolation(
            f"Release {record.version} cannot be {what} by you: it holds peers' stage-1 work on {which}. "
            + " ".join(why)
            + f" A release is handed out whole, never in parts: it can be {what} by you once your analysis is"
              " submitted, or by a curator or admin who is not annotating these datasets.")


def _layout_skips(summary: Mapping[str, Mapping[str, int]], fmt: str) -> dict[str, str]:
    """From a release record's summary: the datasets an export in ``fmt`` leaves out, each with why."""
    if fmt not in ("blade", "discoverybench"):
        return {}
    # a DiscoveryBench folder lists its files in the summary; a BLADE dataset (one table) has none
    hypotheses = {name for name, counts in summary.items() if counts.get("files")}
    if fmt == "blade":
        return {name: f"'{name}' is a dataset of hypothesis tasks (DiscoveryBench), which BLADE's layout has no "
                      "place for; export the release with --format discoverybench to get it."
                for name in sorted(hypotheses)}
    return {name: f"'{name}' is not a DiscoveryBench folder (a BLADE dataset of analysis decisions); export the "
                  "release with --format blade or native to get it." for name in sorted(set(summary) - hypotheses)}


@judges_actor
def export_skips(*, session: Session, actor: User, version: str, fmt: str) -> dict[str, str]:
    """The datasets of release ``version`` that an export in ``fmt`` leaves out (BLADE's layout has no place for
    hypothesis tasks, DiscoveryBench's none for BLADE datasets), each with a sentence saying why."""
    require_role(actor, Role.CURATOR, Role.ADMIN)
    return _layout_skips(release_record(session=session, version=version).summary, fmt)


@judges_actor
def export_release(*, session: Session, actor: User, version: str, fmt: str, out: Path,
                   artifacts: ArtifactStore) -> Path:
    """Write release ``version`` to ``out``: ``native`` (the verified folder and its zip), ``blade`` layout,
    ``discoverybench`` layout or ``hf``, a Hugging Face dataset folder (``<version>-blade``,
    ``<version>-discoverybench``, ``<version>-hf`` under ``out``; see :mod:`exports.hf`).

    Curators and admins who are not blind to any of its datasets. A native copy is checked again where it
    was written: what the user gets is what was cut. A layout that has no place for some datasets of the release
    (:func:`export_skips`) leaves them out and names them in ``NOT_EXPORTED.md`` at the top of the export; a
    release with no dataset the layout can hold is refused.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    if fmt not in EXPORT_FORMATS:
        raise ReleaseError(f"Unknown export format '{fmt}'; use {', '.join(EXPORT_FORMATS[:-1])} or {EXPORT_FORMATS[-1]}.")
    record = release_record(session=session, version=version)
    _refuse_if_blind(session, actor, record, "exported")
    published = published_release(session=session, record=record, releases_root=artifacts.releases_root)
    if fmt == "native":
        dest = out / version
        for target in (dest, release_zip_path(dest)):
            if target.exists():
                raise ReleaseError(f"{target} already exists; choose another --out.")
        try:
            shutil.copytree(published.folder, dest)
            shutil.copy2(published.zip_path, release_zip_path(dest))
            read_published_release(dest, version, manifest_sha256=record.manifest_sha256,
                                   zip_sha256=record.zip_sha256)
        except (FormatError, OSError) as exc:
            shutil.rmtree(dest, ignore_errors=True)
            release_zip_path(dest).unlink(missing_ok=True)
            raise ReleaseError(f"Release {version} could not be exported to {out}: {exc}") from exc
        return dest
    dest = out / f"{version}-{fmt}"
    if dest.exists():
        raise ReleaseError(f"{dest} already exists; choose another --out.")
    release = published.release
    # each layout's writer is imported for its export (pandas, pyarrow: not for reading a release to score it)
    from exports.blade_export import write_blade_release
    from exports.discoverybench_export import (
        NOT_EXPORTED_NAME,
        not_exported_note,
        not_in_layout,
        write_discoverybench_release,
    )
    from exports.hf import write_hf_release

    if fmt == "hf":
        try:
            write_hf_release(release, published.folder, dest, manifest_sha256=record.manifest_sha256)
        except (FormatError, OSError) as exc:
            raise ReleaseError(f"Release {version} could not be written as a Hugging Face dataset: {exc}") from exc
        return dest
    skipped = not_in_layout(release, "blade" if fmt == "blade" else "discoverybench")
    if fmt == "discoverybench":
        try:
            write_discoverybench_release(release, published.folder, dest)
        except (FormatError, FileExistsError) as exc:
            raise ReleaseError(f"Release {version} could not be written in DiscoveryBench's layout: {exc}") from exc
        return dest
    if len(skipped) == len(release.datasets):
        raise ReleaseError(f"Release {version} holds only datasets of hypothesis tasks (DiscoveryBench), which "
                           "BLADE's layout has no place for; export it with --format discoverybench (or native).")
    kept = release.model_copy(update={"datasets": [d for d in release.datasets if d.name not in skipped]})
    partial = out / f".{dest.name}.partial-{secrets.token_hex(4)}"
    try:
        write_blade_release(kept, published.folder, partial)
        if skipped:
            (partial / NOT_EXPORTED_NAME).write_text(not_exported_note(release, "blade", skipped), encoding="utf-8")
        partial.rename(dest)
    except (FormatError, OSError) as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise ReleaseError(f"Release {version} could not be written in BLADE's layout: {exc}") from exc
    return dest


@judges_actor
def release_archive(*, session: Session, actor: User, version: str, fmt: str,
                    artifacts: ArtifactStore) -> tuple[str, bytes]:
    """A downloadable zip of release ``version``: the native zip as cut, or BLADE's, DiscoveryBench's or the
    Hugging Face layout built from it (see :func:`export_release`).

    Curators and admins who are not blind to any of its datasets. The native zip's bytes are read once,
    checked, and exactly those bytes are handed out.
    """
    require_role(actor, Role.CURATOR, Role.ADMIN)
    if fmt not in EXPORT_FORMATS:
        raise ReleaseError(f"Unknown export format '{fmt}'; use {', '.join(EXPORT_FORMATS[:-1])} or {EXPORT_FORMATS[-1]}.")
    record = release_record(session=session, version=version)
    _refuse_if_blind(session, actor, record, "downloaded")
    if fmt == "native":
        zip_path = release_zip_path(release_dir(record, artifacts.releases_root))
        try:
            data = zip_path.read_bytes()
        except FileNotFoundError:
            data = None  # published_release names the missing zip
        published_release(session=session, record=record, releases_root=artifacts.releases_root,
                          zip_data=data)
        assert data is not None
        return f"forkpaths-{version}.zip", data
    with tempfile.TemporaryDirectory(prefix=f"forkpaths-{fmt}-") as tmp:
        folder = export_release(session=session, actor=actor, version=version, fmt=fmt, out=Path(tmp),
                                artifacts=artifacts)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for file in sorted(folder.rglob("*")):
                if file.is_file():
                    zf.write(file, file.relative_to(folder.parent).as_posix())
        return f"forkpaths-{version}-{fmt}.zip", buffer.getvalue()
