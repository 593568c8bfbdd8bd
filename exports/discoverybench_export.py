"""Write a release in DiscoveryBench's layout: the tree its DiscoveryBench datasets were imported from.

Each dataset imported from a DiscoveryBench folder carries every file of that folder (``DatasetRelease.files``,
metadata and data, byte for byte as imported) and its queries as hypothesis tasks with their gold. The export
puts the folder back at ``<kind>/<split>/<folder>/`` and writes the answer keys:

- a gold hypothesis that came from the metadata (train, dev) stays where it is: the metadata file is written
  back byte for byte;
- a gold hypothesis that came from an answer key (test) is a row of ``answer_key_<kind>.csv``;
- a gold hypothesis decided by consensus replaces the query's ``true_hypothesis`` when its metadata has one,
  and is otherwise a row of the answer key (that is how a test query, or a train query shipped without gold,
  gets the gold the experts decided);
- a task still to be curated (no gold) keeps its query and gets no answer-key row.

Answer-key rows are written in the order the import read them (recorded per dataset in its ``extra``), else in
upstream's order (dataset, ``metadataid``, ``query_id``, compared as text), with CRLF line ends and upstream's
four columns; an export of an unchanged import therefore equals upstream's files.
Datasets that are not DiscoveryBench folders (BLADE datasets) are not part of this layout: they are named in
``NOT_EXPORTED.md`` at the top of the export. ``ATTRIBUTION.md`` carries the release's licence and
attribution (DiscoveryBench's data is ODC-By: the attribution travels with it).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from exports.discoverybench import (
    AnswerKey,
    AnswerKeyRow,
    DiscoveryBenchTree,
    TaskFolder,
    read_task_folder,
    write_discoverybench,
)
from exports.errors import DiscoveryBenchFormatError, FormatError
from exports.hypotheses_part import HypothesesPart, HypothesisTaskRelease, is_hypothesis_dataset
from exports.schema import DatasetRelease, Release

__all__ = [
    "ATTRIBUTION_NAME",
    "NOT_EXPORTED_NAME",
    "DiscoveryBenchExport",
    "discoverybench_source",
    "not_in_layout",
    "write_discoverybench_release",
]

NOT_EXPORTED_NAME = "NOT_EXPORTED.md"
ATTRIBUTION_NAME = "ATTRIBUTION.md"
Layout = Literal["blade", "discoverybench"]


@dataclass(frozen=True)
class DiscoveryBenchExport:
    """What an export wrote: the folder, the task folders, answer-key rows per kind, and what was left out."""

    path: Path
    folders: list[str] = field(default_factory=list)
    answer_key_rows: dict[str, int] = field(default_factory=dict)
    rewritten_metadata: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)


def discoverybench_source(ds: DatasetRelease) -> tuple[Literal["real", "synth"], str, str] | None:
    """``(kind, split, folder)`` of a dataset imported from DiscoveryBench, or ``None``."""
    source = ds.extra.get("discoverybench")
    if not isinstance(source, Mapping):
        return None
    kind, split, folder = source.get("kind"), source.get("split"), source.get("folder")
    if kind not in ("real", "synth") or not isinstance(split, str) or not isinstance(folder, str):
        return None
    return kind, split, folder


def not_in_layout(release: Release, layout: Layout) -> dict[str, str]:
    """The datasets of ``release`` that ``layout`` cannot hold, each with a sentence saying why."""
    skipped: dict[str, str] = {}
    for ds in release.datasets:
        if layout == "blade" and is_hypothesis_dataset(ds):
            skipped[ds.name] = (f"'{ds.name}' is a dataset of hypothesis tasks (DiscoveryBench), which BLADE's layout "
                                "has no place for; export the release with --format discoverybench to get it.")
        elif layout == "discoverybench" and discoverybench_source(ds) is None:
            skipped[ds.name] = (f"'{ds.name}' is not a DiscoveryBench folder (a BLADE dataset of analysis "
                                "decisions); export the release with --format blade or native to get it.")
    return skipped


def not_exported_note(release: Release, layout: Layout, skipped: Mapping[str, str]) -> str:
    """The Markdown of ``NOT_EXPORTED.md``: what an export in ``layout`` left out of release ``release``."""
    lines = [f"# Not in this export of release {release.version}", "",
             f"This is release {release.version} in {'BLADE' if layout == 'blade' else 'DiscoveryBench'}'s layout. "
             "These datasets of the release are not in it:", ""]
    lines += [f"- {why}" for why in skipped.values()]
    return "\n".join([*lines, ""])


def _attribution(release: Release) -> str:
    lines = [f"# Release {release.version}: licence and attribution", ""]
    if release.licence.strip():
        lines += ["## Licence", "", release.licence.strip(), ""]
    if release.attribution.strip():
        lines += ["## Attribution", "", release.attribution.strip(), ""]
    return "\n".join(lines)


def _gold_target(task: HypothesisTaskRelease, folder: TaskFolder) -> Literal["metadata", "answer_key"] | None:
    """Where a task's gold hypothesis goes: the query's ``true_hypothesis`` or a row of the answer key."""
    if task.gold is None:
        return None
    if task.gold.source == "metadata":
        return "metadata"
    if task.gold.source == "answer_key":
        return "answer_key"
    query = _query(folder, task)
    return "metadata" if query is not None and query.true_hypothesis is not None else "answer_key"


def _query(folder: TaskFolder, task: HypothesisTaskRelease) -> Any:
    for file in folder.metadata:
        if file.k == task.metadata_k:
            return next((q for _, q in file.metadata.query_list() if q.qid == task.qid), None)
    return None


def _task_folder(ds: DatasetRelease, release_dir: Path) -> TaskFolder:
    """The dataset's folder as imported, read from the release's copy of its files (``data/<dataset>/``)."""
    source = discoverybench_source(ds)
    assert source is not None
    kind, split, name = source
    home = f"data/{ds.name}"
    # a DiscoveryBench folder is flat: a file in a subfolder (or elsewhere) would be silently left behind
    stray = [f.path for f in ds.files if f.path != f"{home}/{f.name}" or "/" in f.name]
    if stray:
        raise FormatError(f"dataset {ds.name!r}: file(s) {', '.join(stray)} are not where a DiscoveryBench folder "
                          f"keeps them ({home}/<name>); this release cannot be written in DiscoveryBench's layout.")
    try:
        read = read_task_folder(release_dir / home, label=f"release file {home}", kind=kind, split=split)
    except DiscoveryBenchFormatError as exc:
        raise FormatError(f"dataset {ds.name!r} cannot be written in DiscoveryBench's layout: {exc}") from exc
    return read.model_copy(update={"name": name})


def _in_order(rows: list[AnswerKeyRow], recorded: Mapping[tuple[str, int, int], int]) -> list[AnswerKeyRow]:
    """Answer-key rows in the order they were read where the import recorded it (each dataset's rows together,
    from its first recorded row), else upstream's: dataset, ``metadataid``, ``query_id`` compared as text. A row
    with no recorded place (gold decided by consensus) goes after its dataset's recorded rows."""
    first: dict[str, int] = {}
    for (dataset, _, _), row in recorded.items():
        first[dataset] = min(row, first.get(dataset, row))
    never = 1 << 62
    return sorted(rows, key=lambda r: (first.get(r.dataset, never), r.dataset, recorded.get(r.key, never),
                                       str(r.metadataid), str(r.query_id)))


def write_discoverybench_release(release: Release, release_dir: Path, out: Path) -> DiscoveryBenchExport:
    """Write the DiscoveryBench datasets of an (unpacked, verified) release in DiscoveryBench's layout at ``out``.

    Args:
        release: the release document.
        release_dir: its verified folder (the files are read from there).
        out: the folder to create (it must not exist, or be empty).

    Returns:
        What was written and what was left out (datasets that are not DiscoveryBench folders).

    Raises:
        FormatError: the release holds no DiscoveryBench dataset; two datasets are the same upstream folder; a
            dataset's files no longer read as a DiscoveryBench folder; a task of the release is not a query of
            its folder's metadata.
        FileExistsError: ``out`` exists and is not empty.
    """
    skipped = not_in_layout(release, "discoverybench")
    datasets = [ds for ds in release.datasets if ds.name not in skipped]
    if not datasets:
        raise FormatError(f"release {release.version} holds no DiscoveryBench dataset, so there is nothing to write "
                          "in DiscoveryBench's layout; export it with --format native or blade.")
    with tempfile.TemporaryDirectory(prefix="forkpaths-discoverybench-") as tmp:
        staging = Path(tmp)
        folders: list[TaskFolder] = []
        rows: dict[str, list[AnswerKeyRow]] = {}
        rewritten: list[str] = []
        places: dict[str, str] = {}
        order: dict[str, dict[tuple[str, int, int], int]] = {}
        problems: list[str] = []
        for ds in datasets:
            folder = _task_folder(ds, release_dir)
            if folder.relative in places:
                raise FormatError(f"datasets {places[folder.relative]!r} and {ds.name!r} are both the DiscoveryBench "
                                  f"folder {folder.relative}; a tree holds it once.")
            places[folder.relative] = ds.name
            folders.append(folder)
            recorded = (ds.extra.get("discoverybench") or {}).get("answer_key_rows") or {}
            for place, row in recorded.items():
                k, _, qid = str(place).removeprefix("metadata_").partition("/q")
                if isinstance(row, int) and k.isdigit() and qid.isdigit():
                    order.setdefault(folder.kind, {})[(folder.name, int(k), int(qid))] = row
            changed: set[int] = set()
            for task in HypothesesPart.of(ds).tasks:
                query = _query(folder, task)
                if query is None:
                    problems.append(f"dataset {ds.name!r}: hypothesis task {task.key} is not a query of "
                                    f"metadata_{task.metadata_k}.json (no qid {task.qid})")
                    continue
                target = _gold_target(task, folder)
                if target is None or task.gold is None:
                    continue
                if target == "answer_key":
                    rows.setdefault(folder.kind, []).append(AnswerKeyRow(
                        dataset=folder.name, metadataid=task.metadata_k, query_id=task.qid,
                        gold_hypo=task.gold.hypothesis))
                elif query.true_hypothesis != task.gold.hypothesis:
                    query.true_hypothesis = task.gold.hypothesis  # consensus gold replaces the shipped one
                    changed.add(task.metadata_k)
            rewritten += [f"{folder.relative}/metadata_{k}.json" for k in sorted(changed)]
        if problems:
            raise FormatError("; ".join(problems))
        keys = {kind: AnswerKey(kind=kind, rows=_in_order(found, order.get(kind, {})))  # type: ignore[arg-type]
                for kind, found in rows.items()}
        notices = []
        attribution = _attribution(release)
        if attribution.strip().count("\n") > 1:
            (staging / ATTRIBUTION_NAME).write_text(attribution, encoding="utf-8")
            notices.append(staging / ATTRIBUTION_NAME)
        if skipped:
            (staging / NOT_EXPORTED_NAME).write_text(not_exported_note(release, "discoverybench", skipped),
                                                    encoding="utf-8")
            notices.append(staging / NOT_EXPORTED_NAME)
        tree = DiscoveryBenchTree(root=release_dir, folders=folders, answer_keys=keys, tasks=[], notices=notices)
        write_discoverybench(tree, out)
    return DiscoveryBenchExport(path=out, folders=[f.relative for f in folders],
                                answer_key_rows={kind: len(found) for kind, found in rows.items()},
                                rewritten_metadata=rewritten, skipped=skipped)
