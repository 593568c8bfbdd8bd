"""The offline judge (the default): no LLM, deterministic, and every match names the rule that made it.

Models: the agent's model family is read from its code (:mod:`evaluation.judges.model_code`); a ground-truth
model matches when its family (forkpaths' controlled vocabulary, :class:`~evaluation.specs.ModelFamily`) is
the family of the agent's chosen model or of another model/test the code also runs (an OLS followed by
``anova_lm`` matches both "Linear regression" and "ANOVA"). Like BLADE's model prompt, variables are ignored here;
they are checked per matched model afterwards.

Variables are compared within one role bucket on two signals:

* lineage: the original data columns behind the ground-truth variable (``G``) and behind the agent's columns
  (``A``, through the transform's column lineage);
* text: the mean of rapidfuzz's ``token_set_ratio`` and ``token_sort_ratio`` of the concept and the description,
  case and punctuation folded and English function words ("of", "the", ...) dropped, in [0, 1]. The token-set
  ratio alone rates any text containing "of hurricane" as close to "year of hurricane"; the sort ratio tempers it.

Similarity on BLADE's scale (8 and above is a match):

=====================================================  =============================
condition                                              similarity
=====================================================  =============================
``A == G``                                             10 if text >= 0.5 else 9
``A ⊂ G`` (one of the GT's operationalisations)        9 if text >= 0.5 else 8
``G ⊂ A`` (the agent adds columns)                     8 if text >= 0.5 else 7
partial overlap                                        8 if text >= 0.7 else 7
no shared column                                       7 if text >= 0.9, 6 if >= 0.8
=====================================================  =============================

Pairs below 6 are not recorded. The thresholds are parameters of :class:`OfflineJudge` (stored with results).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rapidfuzz import fuzz, utils

from evaluation.judges.base import (
    AgentVar,
    GTModel,
    GTVariable,
    JudgeContext,
    ModelJudgement,
    VariableJudgement,
    register_judge,
)
from evaluation.judges.model_code import AgentModel, ModelCall, analyse_model_code
from evaluation.submissions import ExtractedFunction

__all__ = ["OfflineJudge", "text_similarity"]


_STOP = frozenset({"a", "an", "the", "of", "in", "on", "for", "to", "and", "or", "by", "with", "at", "from", "is",
                   "are", "as", "its", "their", "that", "which"})


def _clean(text: str) -> str:
    return " ".join(w for w in utils.default_process(text).split() if w not in _STOP)


def text_similarity(a: str, b: str) -> float:
    """Mean of rapidfuzz's token-set and token-sort ratios on folded, function-word-free text, in [0, 1]."""
    ca, cb = _clean(a), _clean(b)
    if not ca or not cb:
        return 0.0
    return (fuzz.token_set_ratio(ca, cb) + fuzz.token_sort_ratio(ca, cb)) / 200.0


@register_judge("offline")
class OfflineJudge:
    """Static model analysis + column lineage + text similarity (see the module docstring)."""

    name = "offline"

    def __init__(self, *, text_strong: float = 0.5, text_partial: float = 0.7, text_only_high: float = 0.9,
                 text_only_low: float = 0.8) -> None:
        self.text_strong = text_strong
        self.text_partial = text_partial
        self.text_only_high = text_only_high
        self.text_only_low = text_only_low

    def configuration(self) -> dict[str, Any]:
        return {"name": self.name, "text_similarity": "mean(rapidfuzz token_set_ratio, token_sort_ratio)/100, stop words dropped",
                "text_strong": self.text_strong, "text_partial": self.text_partial,
                "text_only_high": self.text_only_high, "text_only_low": self.text_only_low}

    # ------------------------------------------------------------------ models
    def describe_model(self, model: ExtractedFunction, *, context: JudgeContext,
                       frame_columns: Sequence[str] | None = None) -> AgentModel:
        return analyse_model_code(model.source, frame_columns=frame_columns)

    def match_models(self, gt: Sequence[GTModel], agent: AgentModel, *,
                     context: JudgeContext) -> list[ModelJudgement]:
        if not agent.family:
            return []
        families: dict[str, ModelCall | None] = {agent.family: agent.calls[0] if agent.calls else None}
        for call in agent.calls[1:]:
            families.setdefault(call.family, call)
        out = []
        for i, m in enumerate(gt):
            if m.family in families:
                found = families[m.family]
                where = f"{found.api} at line {found.line}" if found else "the model code"
                out.append(ModelJudgement(gt_index=i, judge=self.name, rationale=(
                    f"rule family-equal: the ground truth's {m.specification.strip()!r} is "
                    f"{m.family}; the agent's {where} is {m.family} too")))
        return out

    # ------------------------------------------------------------------ variables
    def score(self, g: GTVariable, a: AgentVar) -> tuple[int, str] | None:
        gs = {c.lower() for c in g.original_columns}
        as_ = {c.lower() for c in a.original_columns}
        text = text_similarity(g.concept, a.description)
        shared = sorted(gs & as_)
        if gs and as_ and gs == as_:
            sim, rule = (10 if text >= self.text_strong else 9), "same original columns"
        elif shared and as_ < gs:
            sim, rule = (9 if text >= self.text_strong else 8), "agent columns are a subset of the GT's"
        elif shared and gs < as_:
            sim, rule = (8 if text >= self.text_strong else 7), "agent columns include all of the GT's"
        elif shared:
            sim, rule = (8 if text >= self.text_partial else 7), "columns overlap"
        elif text >= self.text_only_high:
            sim, rule = 7, "no shared column, near-identical text"
        elif text >= self.text_only_low:
            sim, rule = 6, "no shared column, similar text"
        else:
            return None
        why = (f"rule {rule} (GT {sorted(gs)} vs agent {sorted(as_)}"
               + (f", shared {shared}" if shared else "") + f"; text similarity {text:.2f})")
        return sim, why

    def match_variables(self, gt: Sequence[GTVariable], agent: Sequence[AgentVar], *,
                        context: JudgeContext) -> list[VariableJudgement]:
        out = []
        for g in gt:
            for a in agent:
                scored = self.score(g, a)
                if scored is not None:
                    out.append(VariableJudgement(gt_id=g.id, agent_index=a.index, similarity=scored[0],
                                                 rationale=scored[1], judge=self.name))
        return out
