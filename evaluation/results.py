"""The evaluation result file: versioned, self-describing, re-aggregatable from the file alone.

One JSON document (keys sorted, indent 2, UTF-8, trailing newline)::

    format_version      bump on any field change; readers refuse versions they do not know
    provenance          release version, ground-truth content hash, evaluator version, judge configuration,
                        transform matcher, mode, k, bootstrap size and seed, library versions, created_at
    datasets[]          per dataset: its metric constants (GroundTruthCounts) and, per analysis, its status and
                        sentence (``judge_error`` with the judge's sentence when the judge failed), the run record the metrics used (matched variables, models, matched_value_units
                        / matched_graph_units with unit ids and names, agent unit counts), the judge's matches
                        with who made them and why, the model read from the code, and the per-run precisions
    scores              what :func:`evaluation.metrics.score_runs` computed in ``provenance.mode``

:func:`reaggregate` recomputes the scores from ``datasets`` alone, in either mode and with any k, so a published
figure can be checked, or re-stated in BLADE's definitions, without the release or the submission.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from evaluation.errors import EvaluationError
from evaluation.judges.model_code import AgentModel
from evaluation.metrics import DECISION_TYPES, PRECISION_METRICS, DatasetRuns, Mode, Scores, score_runs
from evaluation.records import GroundTruthCounts, ModelMatchRecord, RunRecord, VariableMatchRecord

__all__ = [
    "EVALUATOR_VERSION",
    "RESULT_FORMAT_VERSION",
    "SUPPORTED_RESULT_VERSIONS",
    "AnalysisResult",
    "DatasetResult",
    "EvaluationResult",
    "Provenance",
    "ResultFormatError",
    "build_result",
    "dump_result",
    "library_versions",
    "parse_result",
    "read_result",
    "reaggregate",
    "run_precisions",
    "write_result",
]

# 1.1: per-dataset transform matcher (DatasetResult.transform_matcher), the converter's units and the column
# lineage of each analysis (TransformMatch.agent_units / column_lineage). 1.0 files read as they are.
RESULT_FORMAT_VERSION = "1.1"
SUPPORTED_RESULT_VERSIONS = frozenset({"1.0", "1.1"})
EVALUATOR_VERSION = "0.2.0"  # bump when a change to matching or metrics can change a number (0.2: column lineage)

_LIBRARIES = ("pandas", "numpy", "networkx", "statsmodels", "patsy", "scipy", "scikit-learn", "rapidfuzz", "pydantic",
              "openai")


class ResultFormatError(EvaluationError):
    """A result file that is not a forkpaths result, or of a version this reader does not know."""


class Provenance(BaseModel):
    release_version: str
    ground_truth_hash: str = Field(description="content hash of the ground truth the analyses were scored on")
    evaluator_version: str = EVALUATOR_VERSION
    judge: dict[str, Any] = Field(default_factory=dict, description="name and parameters of the judge")
    transform_matcher: dict[str, Any] = Field(default_factory=dict)
    mode: Mode = "default"
    k: int = 10
    n_bootstrap: int = 1000
    seed: int = 0
    library_versions: dict[str, str] = Field(default_factory=dict)
    created_at: datetime


class AnalysisResult(BaseModel):
    key: str
    status: str
    message: str = ""
    transform_status: str | None = None
    model_status: str | None = None
    record: RunRecord
    variables: list[VariableMatchRecord] = Field(default_factory=list)
    models: list[ModelMatchRecord] = Field(default_factory=list)
    agent_model: AgentModel | None = None
    metrics: dict[str, float] = Field(default_factory=dict, description="per-run precision per decision type")


class DatasetResult(BaseModel):
    dataset: str
    submission: str = Field(default="", description="the submission file's label")
    counts: GroundTruthCounts
    analyses: list[AnalysisResult] = Field(default_factory=list)
    transform_matcher: dict[str, Any] = Field(
        default_factory=dict, description="what matched this dataset's transforms (and its ground-truth build)")


class EvaluationResult(BaseModel):
    format_version: str = RESULT_FORMAT_VERSION
    provenance: Provenance
    datasets: list[DatasetResult] = Field(default_factory=list)
    scores: Scores


@functools.cache
def _library_versions() -> tuple[tuple[str, str], ...]:
    """Versions of the libraries that can change a number (hashing, fitting, parsing), and Python's."""
    out = {"python": platform.python_version()}
    for name in _LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return tuple(out.items())


def library_versions() -> dict[str, str]:
    """Versions of the libraries that can change a number (hashing, fitting, parsing), and Python's."""
    # Read once per process (importlib.metadata parses every installed package's metadata: tens of ms per run);
    # a process goes on importing the versions it started with anyway.
    return dict(_library_versions())


def run_precisions(record: RunRecord, mode: Mode) -> dict[str, float]:
    """The per-run precision of every decision type, as the metrics compute it."""
    return {t: PRECISION_METRICS[t](record, mode) for t in DECISION_TYPES}


def _runs(datasets: Sequence[DatasetResult]) -> list[DatasetRuns]:
    return [DatasetRuns(counts=d.counts, runs=[a.record for a in d.analyses]) for d in datasets]


def build_result(datasets: Sequence[DatasetResult], *, release_version: str, ground_truth_hash: str,
                 judge: dict[str, Any], transform_matcher: dict[str, Any] | None = None, mode: Mode = "default",
                 k: int = 10, n_bootstrap: int = 1000, seed: int = 0, created_at: datetime | None = None,
                 libraries: dict[str, str] | None = None) -> EvaluationResult:
    """Score the analyses and wrap everything with its provenance; fills each analysis's per-run metrics."""
    for d in datasets:
        for a in d.analyses:
            a.metrics = run_precisions(a.record, mode)
    provenance = Provenance(release_version=release_version, ground_truth_hash=ground_truth_hash, judge=judge,
                            transform_matcher=transform_matcher or {}, mode=mode, k=k, n_bootstrap=n_bootstrap,
                            seed=seed, library_versions=libraries if libraries is not None else library_versions(),
                            created_at=created_at or datetime.now(UTC))
    scores = score_runs(_runs(datasets), mode=mode, k=k, n_bootstrap=n_bootstrap, seed=seed)
    return EvaluationResult(provenance=provenance, datasets=list(datasets), scores=scores)


def reaggregate(result: EvaluationResult, *, mode: Mode | None = None, k: int | None = None,
                n_bootstrap: int | None = None, seed: int | None = None) -> Scores:
    """Recompute the scores from the file's run records alone (by default with the file's own parameters)."""
    p = result.provenance
    return score_runs(_runs(result.datasets), mode=mode or p.mode, k=k if k is not None else p.k,
                      n_bootstrap=n_bootstrap if n_bootstrap is not None else p.n_bootstrap,
                      seed=seed if seed is not None else p.seed)


def dump_result(result: EvaluationResult) -> str:
    """The file's text: keys sorted, indent 2, trailing newline (stable, diffable)."""
    data = result.model_dump(mode="json")
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def parse_result(text: str | bytes, *, label: str = "result file") -> EvaluationResult:
    """Read a result file's text.

    Raises:
        ResultFormatError: not JSON, no or an unknown ``format_version``, or fields that do not fit.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultFormatError(f"{label} is not JSON: {exc}.") from exc
    if not isinstance(data, dict) or "format_version" not in data:
        raise ResultFormatError(f"{label} is not a forkpaths evaluation result (no format_version).")
    version = data["format_version"]
    if version not in SUPPORTED_RESULT_VERSIONS:
        raise ResultFormatError(f"{label} has format_version {version!r}; this forkpaths reads "
                                f"{', '.join(sorted(SUPPORTED_RESULT_VERSIONS))}. Upgrade forkpaths to read it.")
    try:
        return EvaluationResult.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise ResultFormatError(f"{label}: {where}: {first.get('msg')} ({exc.error_count()} problem(s)).") from exc


def write_result(path: Path, result: EvaluationResult) -> None:
    """Write atomically (a temporary sibling renamed into place)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(dump_result(result))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_result(path: Path) -> EvaluationResult:
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise ResultFormatError(f"cannot read {path}: {exc.strerror or exc}.") from exc
    return parse_result(text, label=str(path))
