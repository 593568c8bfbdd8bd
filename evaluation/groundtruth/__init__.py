"""Ground truth from a release (blade-reference 2.3-2.6): paths, execution, value and graph hashes.

The public names are loaded lazily, so the sandboxed job process (:mod:`.jobs`, :mod:`.convert_job`) starts
without importing networkx, pydantic models or the release readers it never uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluation.groundtruth.build import (
        EVALUATOR_VERSION,
        BuildResult,
        build_dataset,
        build_release,
        build_sources,
        cache_key,
        derive_state,
    )
    from evaluation.groundtruth.runner import GroundTruthLimits, JobFailed
    from evaluation.groundtruth.sources import DatasetSource, sources_from_blade_folders, sources_from_release
    from evaluation.groundtruth.specs import GroundTruthError
    from evaluation.groundtruth.state import DerivationState

_WHERE = {
    "EVALUATOR_VERSION": "build", "BuildResult": "build", "build_dataset": "build", "build_release": "build",
    "build_sources": "build", "cache_key": "build", "derive_state": "build",
    "GroundTruthLimits": "runner", "JobFailed": "runner",
    "DatasetSource": "sources", "sources_from_blade_folders": "sources", "sources_from_release": "sources",
    "GroundTruthError": "specs", "DerivationState": "state",
}

__all__ = ["EVALUATOR_VERSION", "BuildResult", "DatasetSource", "DerivationState", "GroundTruthError",
           "GroundTruthLimits", "JobFailed", "build_dataset", "build_release", "build_sources", "cache_key",
           "derive_state", "sources_from_blade_folders", "sources_from_release"]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'evaluation.groundtruth' has no attribute {name!r}")
    return getattr(importlib.import_module(f"evaluation.groundtruth.{_WHERE[name]}"), name)
