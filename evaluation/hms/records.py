"""What HMS scoring keeps per query: the decompositions, every context check, the facets of each matched pair
(context, variables with precision / recall / F1, relationship), the formula's parts and the judge calls made.

Everything here is data (pydantic), written into the result file and read back by the pages and the overrides.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "ContextCheck",
    "Decomposition",
    "ExpressionCheck",
    "FacetOverride",
    "HMSMode",
    "ItemResult",
    "PairResult",
    "RelationshipFacet",
    "SubHypothesis",
    "VariablesFacet",
    "pair_key",
]

HMSMode = Literal["default", "discoverybench"]
Status = Literal["scored", "judge_error", "unanswered", "budget_exhausted"]
#: relationship levels (DiscoveryBench: A very similar, B similar but more general than the gold, C different)
LEVEL_SCORES = {"A": 1.0, "B": 0.5, "C": 0.0}


def pair_key(pred: int, gold: int) -> str:
    """How a (predicted, gold) sub-hypothesis pair is named in results and overrides: ``P0|G1``."""
    return f"P{pred}|G{gold}"


class SubHypothesis(BaseModel):
    text: str = ""
    context: str = "None"
    variables: list[str] = Field(default_factory=list)
    relations: str = "None"


class Decomposition(BaseModel):
    """A hypothesis split into sub-hypotheses: ``given`` (the gold's or the answer's own fields), ``judge`` (the
    LLM's), ``fallback`` (DiscoveryBench mode: the LLM's answer was unusable, so the whole text with context
    "None"), ``expert`` (no decomposition could be made; an expert judges the hypotheses as a whole)."""

    source: Literal["given", "judge", "fallback", "expert"]
    sub_hypo: list[SubHypothesis]
    note: str = ""


class ContextCheck(BaseModel):
    """Does the context of predicted sub-hypothesis ``pred`` match that of gold sub-hypothesis ``gold``?
    ``match`` None: never judged (or the judge failed)."""

    pred: int
    gold: int
    match: bool | None
    how: Literal["identical", "none", "judge", "expert", "judge_error"]
    explanation: str = ""
    original: bool | None = None  # before an expert's override


class VariablesFacet(BaseModel):
    size_gold: int | None = None
    size_pred: int | None = None
    intersection: int | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float
    explanation: str = ""
    source: Literal["judge", "rule", "expert", "sentinel"] = "judge"
    original_f1: float | None = None  # before an expert's override


class RelationshipFacet(BaseModel):
    level: str | None = None  # A, B, C; None for the sentinel
    score: float
    explanation: str = ""
    source: Literal["judge", "expert", "sentinel"] = "judge"
    original_score: float | None = None


class PairResult(BaseModel):
    pred: int
    gold: int
    variables: VariablesFacet | None = None
    relationship: RelationshipFacet | None = None
    accuracy: float | None = None  # context (1) × variables F1 × relationship

    @property
    def key(self) -> str:
        return pair_key(self.pred, self.gold)


class ExpressionCheck(BaseModel):
    """The deterministic facet of a synthetic task: the answer's code, run in the sandbox on the task's data,
    gives the values its hypothesis predicts for ``target_col``; they are compared with the generating
    expression's values (no LLM)."""

    status: Literal["passed", "failed", "error"]
    agreement: float | None = None  # share of rows where the two agree (within tolerance)
    rows: int = 0
    message: str = ""


class ItemResult(BaseModel):
    task: str
    dataset: str
    source: str = ""
    domain: str = ""
    question_type: str = ""
    question: str = ""
    status: Status
    message: str = ""
    gold_hypothesis: str = ""
    gold_workflow: str = ""
    predicted_hypothesis: str = ""
    predicted_workflow: str = ""
    gold: Decomposition | None = None
    predicted: Decomposition | None = None
    contexts: list[ContextCheck] = Field(default_factory=list)
    facets: list[PairResult] = Field(default_factory=list, description="every pair's judged facets")
    matched: list[PairResult] = Field(default_factory=list, description="the matched pairs that score")
    recall_context: float | None = None
    mean_accuracy: float | None = None
    hms: float | None = None
    expression: ExpressionCheck | None = None
    calls: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    llm: list[dict[str, Any]] = Field(default_factory=list, description="each judge answer's provenance")
    overrides: list[dict[str, Any]] = Field(default_factory=list, description="experts' facet judgements applied")


class FacetOverride(BaseModel):
    """An expert's judgement of one facet of one pair of one query.

    ``context``: ``{"match": bool}``; ``variables``: ``{"size_gold": int, "size_pred": int, "intersection": int}``;
    ``relationship``: ``{"level": "A" | "B" | "C"}``."""

    task: str
    facet: Literal["context", "variables", "relationship"]
    pair: str
    value: dict[str, Any]
    author: str = ""
    reason: str = ""
