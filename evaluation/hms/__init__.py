"""DiscoveryBench's hypothesis matching score (HMS): records, the ``hms`` judge, scoring one query, the formula
and experts' facet overrides. No database, no UI."""

from evaluation.hms.formula import OverrideRefused, apply_overrides, check_override, f1_from_counts, settle
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
