"""DiscoveryBench's hypothesis matching score (HMS): records, the ``hms`` judge, scoring one query, the formula
and experts' facet overrides. No database, no UI.

Its names load on first use (PEP 562): the records and the formula are small, the judge and the scorer bring the
LLM client and the judges' code (networkx, pandas), which listing the task kinds must not load.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evaluation.hms.formula import (
        OverrideRefused,
        apply_overrides,
        check_override,
        f1_from_counts,
        settle,
    )
    from evaluation.hms.judge import HMSJudge
    from evaluation.hms.records import (
        ContextCheck,
        Decomposition,
        ExpressionCheck,
        FacetOverride,
        HMSMode,
        ItemResult,
        PairResult,
        RelationshipFacet,
        SubHypothesis,
        VariablesFacet,
        pair_key,
    )
    from evaluation.hms.score import GoldHypothesis, Prediction, score_item

__all__ = ["ContextCheck", "Decomposition", "ExpressionCheck", "FacetOverride", "GoldHypothesis", "HMSJudge",
           "HMSMode", "ItemResult", "OverrideRefused", "PairResult", "Prediction", "RelationshipFacet",
           "SubHypothesis", "VariablesFacet", "apply_overrides", "check_override", "f1_from_counts", "pair_key",
           "score_item", "settle"]

#: each public name -> the submodule that defines it
_HOME = {
    **dict.fromkeys(("OverrideRefused", "apply_overrides", "check_override", "f1_from_counts", "settle"), "formula"),
    "HMSJudge": "judge",
    **dict.fromkeys(("ContextCheck", "Decomposition", "ExpressionCheck", "FacetOverride", "HMSMode", "ItemResult",
                     "PairResult", "RelationshipFacet", "SubHypothesis", "VariablesFacet", "pair_key"), "records"),
    **dict.fromkeys(("GoldHypothesis", "Prediction", "score_item"), "score"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
