"""The programmatic kind's part of a release (``DatasetRelease.parts["programmatic"]``), as the release format's
shared readers see it, beside its model (its kind declares it; :mod:`exports.upgrade` declares it to every reader
of a release)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field

from exports.parts import ReleasePart
from exports.schema import KindPart, Release, StrictModel

__all__ = [
    "PROGRAMMATIC_TASK_TYPES",
    "RELEASE_PART",
    "ProgrammaticArtifact",
    "ProgrammaticCheck",
    "ProgrammaticPart",
    "ProgrammaticTaskRelease",
    "task_input_paths",
]


PROGRAMMATIC_TASK_TYPES: tuple[str, ...] = (
    "data cleaning & preprocessing",
    "data exploration & statistics understanding",
    "data visualization",
    "predictive modeling",
    "data mining & pattern recognition",
    "interpretability & report generation",
)
"""DataSciBench's six task types (evaluation-seeds-reference §2.1), in its order."""


class ProgrammaticArtifact(StrictModel):
    """A ground-truth artifact of a programmatic task (a table, a figure, a number), carried inline so that a
    release alone rescores a run. ``path`` is relative to the task's ``gt/`` folder."""

    path: str
    sha256: str
    size: int
    content_b64: str = Field(description="the file's bytes, base64")


class ProgrammaticCheck(StrictModel):
    """One task-function-code check (DataSciBench's TFC entry): a function ``f(ground_truth)`` run in the agent's
    output folder (its working directory, read-only) that returns a boolean, optionally through ``rule``."""

    id: str
    task_type: str = Field(description="one of PROGRAMMATIC_TASK_TYPES")
    function: str = Field(description="the aggregate-function label, e.g. 'Data Completeness'")
    metric: str = Field(description="the metric's name, e.g. 'Data Completeness Ratio'")
    code: str = Field(description="Python source defining one function of the ground-truth path")
    rule: str | None = Field(default=None, description="optional lambda (as text) applied to the result")
    ground_truth: str = Field(default="", description="path inside gt/ handed to the function ('' = gt/ itself)")
    status: str = Field(default="accepted", description="accepted (scored) | proposed | refused")
    gate: dict[str, Any] = Field(default_factory=dict, description="the release gate's evidence: its outcome on "
                                 "the accepted artifact and on a known wrong output")
    provenance: dict[str, Any] = Field(default_factory=dict)


class ProgrammaticTaskRelease(StrictModel):
    """A programmatic task: a prompt, its input files (the dataset's), ground-truth artifacts and checks."""

    key: str = Field(description="the task's id, also its folder name in an outputs zip")
    prompt: str
    input_files: list[str] = Field(default_factory=list, description="names of the dataset files it reads")
    data_source_type: str = ""
    artifacts: list[ProgrammaticArtifact] = Field(default_factory=list)
    checks: list[ProgrammaticCheck] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


class ProgrammaticPart(KindPart):
    """The programmatic kind's part of a dataset: DataSciBench-style checked tasks (format 1.x:
    ``programmatic_tasks``)."""

    kind: ClassVar[str] = "programmatic"
    tasks: list[ProgrammaticTaskRelease] = Field(default_factory=list)


def _items(part: ProgrammaticPart) -> list[tuple[str, str, Any]]:
    return [(t.key, f"`{t.key}` ({len(t.checks)} check{'' if len(t.checks) == 1 else 's'})",
             t.model_dump(mode="json")) for t in part.tasks]


def task_input_paths(release: Release, release_folder: Path) -> dict[str, dict[str, Path]]:
    """Where each task's input files are in the release's folder: {task key: {path in the task's folder: file}}
    (a task may read a dataset file under another name, ``extra["input_map"]``). A file the release lacks is
    left out (a check that reads it fails with the missing file)."""
    out: dict[str, dict[str, Path]] = {}
    for ds in release.datasets:
        by_name = {f.name: f.path for f in ds.files}
        for t in ProgrammaticPart.of(ds).tasks:
            mapped = t.extra.get("input_map") or {}
            files: dict[str, Path] = {}
            for name in t.input_files:
                source = str(mapped.get(name, name))
                rel = by_name.get(source) or (ds.data_file if source in ("data.csv", ds.data_file.rsplit("/", 1)[-1])
                                              else None)
                path = release_folder / rel if rel else None
                if path is not None and path.is_file():
                    files[name] = path
            out[t.key] = files
    return out


# ------------------------------------------------------------------------------------ its Hugging Face table

def _hf_rows(release: Release) -> dict[str, list[dict[str, Any]]]:
    import base64

    from exports.hf.tables import DEFAULT_SPLIT, file_path, json_text

    return {DEFAULT_SPLIT: [{
        "dataset": d.name, "key": t.key, "prompt": t.prompt, "input_files": [file_path(d, n) for n in t.input_files],
        "data_source_type": t.data_source_type,
        "task_types": sorted({c.task_type for c in t.checks}),
        "checks": [{"id": c.id, "task_type": c.task_type, "function": c.function, "metric": c.metric, "code": c.code,
                    "rule": c.rule, "ground_truth": c.ground_truth, "status": c.status} for c in t.checks],
        "artifacts": [{"path": a.path, "sha256": a.sha256, "size": a.size, "content": base64.b64decode(a.content_b64)}
                      for a in t.artifacts],
        "record_json": json_text({k: v for k, v in t.model_dump(mode="json").items() if k != "artifacts"})}
        for d in release.datasets for t in ProgrammaticPart.of(d).tasks]}


def _hf_tables() -> tuple[Any, ...]:
    import pyarrow as pa

    from exports.hf.tables import DATASET_FIELD, HFConfig

    text, integer, texts = pa.string(), pa.int64(), pa.list_(pa.string())
    return (
        HFConfig(
            "programmatic", "Programmatic tasks (DataSciBench-style)", "a data-science task whose output files are "
            "checked by code, with its checks and ground-truth artifacts", "no programmatic task",
            ("text-generation",), {
                "dataset": DATASET_FIELD, "key": (text, "the task's id (its folder in an outputs zip)"),
                "prompt": (text, "the task's prompt"),
                "input_files": (texts, "paths of the files it reads, in this repository"),
                "data_source_type": (text, "where its data comes from"),
                "task_types": (texts, "DataSciBench task types its checks cover"),
                "checks": (pa.list_(pa.struct([("id", text), ("task_type", text), ("function", text), ("metric", text),
                                               ("code", text), ("rule", text), ("ground_truth", text), ("status", text)])),
                           "its checks: a Python function of the ground-truth path, run in the output folder"),
                "artifacts": (pa.list_(pa.struct([("path", text), ("sha256", text), ("size", integer), ("content", pa.binary())])),
                              "ground-truth artifacts (path under gt/, SHA-256, bytes)"),
                "record_json": (text, "the task as in `release.json`, without the artifacts' bytes")}, _hf_rows),
    )


#: A dataset's programmatic tasks, whole (prompt, ground-truth artifacts, checks): they are in the hash of every
#: run on the dataset (format 1.x's rule). A blind reader keeps them, as format 1.x's blinding did: their checks
#: are reviewed in curation, but what a release holds of them is the task's definition, not annotators' votes.
RELEASE_PART = ReleasePart(
    model=ProgrammaticPart, noun="programmatic tasks", one="programmatic task",
    counts=lambda part: {"programmatic tasks": len(part.tasks), "checks": sum(len(t.checks) for t in part.tasks)},
    hash_input=lambda part: {"programmatic_tasks": [t.model_dump(mode="json") for t in part.tasks]}
    if part.tasks else {},
    blind=lambda part: part, in_every_hash=True, items=_items,
    targets=lambda part: {("prog_check", c.id): f"{c.metric or c.function} of task {t.key}"
                          for t in part.tasks for c in t.checks},
    hf_tables=_hf_tables)
