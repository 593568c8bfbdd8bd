"""Variable and model matching behind one :class:`~evaluation.judges.base.Judge` interface: ``offline``
(default, no LLM) and ``llm`` (BLADE's prompts through an OpenAI-compatible endpoint). A kind that brings a judge of
its own declares it (``TaskKind.own_judges``) and the registry of kinds registers it here."""

from evaluation.judges import llm_judge as _llm_judge  # noqa: F401 - registers the llm judge
from evaluation.judges import offline as _offline  # noqa: F401 - registers the offline judge
from evaluation.judges.analysis import AnalysisJudgement, agent_variables, judge_analysis
from evaluation.judges.base import (
    JUDGES,
    Judge,
    JudgeContext,
    JudgeError,
    judge_names,
    judge_needs_llm,
    make_judge,
)
from evaluation.judges.decisions import GroundTruthDecisions, decisions_from_release, ground_truth_counts

__all__ = [
    "JUDGES",
    "AnalysisJudgement",
    "GroundTruthDecisions",
    "Judge",
    "JudgeContext",
    "JudgeError",
    "agent_variables",
    "decisions_from_release",
    "ground_truth_counts",
    "judge_analysis",
    "judge_names",
    "judge_needs_llm",
    "make_judge",
]
