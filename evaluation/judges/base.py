"""The one interface both judges implement, and the decision records they judge.

A judge answers three questions (blade-reference 4.2 step 4, 4.5, 4.6): what model does this model code fit
(:meth:`Judge.describe_model`), which ground-truth variables does each agent variable match and how closely, on
BLADE's 5–10 similarity scale where 8 and above counts (:meth:`Judge.match_variables`), and which ground-truth
model specifications are equivalent to the agent's (:meth:`Judge.match_models`). Every answer carries the judge's
name and its rationale (the LLM's words, or the offline rule that fired).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from evaluation.errors import EvaluationError
from evaluation.judges.model_code import AgentModel
from evaluation.submissions import ExtractedFunction

__all__ = [
    "JUDGES",
    "MATCH_THRESHOLD",
    "AgentVar",
    "GTModel",
    "GTVariable",
    "Judge",
    "JudgeContext",
    "JudgeError",
    "ModelJudgement",
    "Role",
    "VariableJudgement",
    "judge_names",
    "judge_needs_llm",
    "make_judge",
    "register_judge",
]

Role = Literal["IV", "DV", "Control", "Moderator"]
MATCH_THRESHOLD = 8  # BLADE: a variable pair counts when its similarity is >= 8 (blade-reference 4.5)


class JudgeError(EvaluationError):
    """The judge could not answer (endpoint down, garbage answer); the analysis records it and scoring goes on."""


class JudgeContext(BaseModel):
    """What a judge may show about the dataset: its name, research question and data dictionary."""

    dataset: str
    research_question: str = ""
    dictionary: list[dict[str, Any]] = Field(default_factory=list)


class GTVariable(BaseModel):
    """A ground-truth conceptual variable with the original data columns its columns derive from."""

    id: str
    role: Role
    concept: str
    columns: list[str] = Field(default_factory=list)
    original_columns: list[str] = Field(default_factory=list)

    @property
    def text(self) -> str:
        """BLADE's string form, e.g. ``IV: feminity metric of hurricane name``."""
        return f"{self.role}: {self.concept}"


class AgentVar(BaseModel):
    """One of the agent's variables; ``index`` is its position in :meth:`AgentVariables.flat`."""

    index: int
    role: Role
    description: str
    columns: list[str] = Field(default_factory=list)
    original_columns: list[str] = Field(default_factory=list)

    @property
    def text(self) -> str:
        return f"{self.role}: {self.description}"


class GTModel(BaseModel):
    """A ground-truth model row."""

    id: str
    specification: str
    family: str
    columns: list[str] = Field(default_factory=list)
    original_columns: list[str] = Field(default_factory=list)
    variable_ids: list[str] = Field(default_factory=list)


class VariableJudgement(BaseModel):
    gt_id: str
    agent_index: int
    similarity: int
    rationale: str
    judge: str


class ModelJudgement(BaseModel):
    """The agent's model is equivalent to ``gt[gt_index]`` of the list the judge was given."""

    gt_index: int
    rationale: str
    judge: str


@runtime_checkable
class Judge(Protocol):
    name: str

    def configuration(self) -> dict[str, Any]:
        """Name and parameters, stored in the result file."""
        ...

    def describe_model(self, model: ExtractedFunction, *, context: JudgeContext,
                       frame_columns: Sequence[str] | None = None) -> AgentModel:
        ...

    def match_variables(self, gt: Sequence[GTVariable], agent: Sequence[AgentVar], *,
                        context: JudgeContext) -> list[VariableJudgement]:
        ...

    def match_models(self, gt: Sequence[GTModel], agent: AgentModel, *,
                     context: JudgeContext) -> list[ModelJudgement]:
        ...


JUDGES: dict[str, Callable[..., Judge]] = {}


_NEEDS_LLM: dict[str, bool] = {}


def register_judge(name: str, *, needs_llm: bool = False) -> Callable[[Callable[..., Judge]], Callable[..., Judge]]:
    """Register a judge factory under ``name`` (``offline``, ``llm``). A judge that ``needs_llm`` is built with
    ``client=`` an :class:`~evaluation.llm.LLMClient` and needs an endpoint configured."""

    def deco(factory: Callable[..., Judge]) -> Callable[..., Judge]:
        JUDGES[name] = factory
        _NEEDS_LLM[name] = needs_llm
        return factory

    return deco


def forget_judge(name: str) -> None:
    """Remove the judge ``name`` (a kind's own judge, when its kind is removed)."""
    JUDGES.pop(name, None)
    _NEEDS_LLM.pop(name, None)


def judge_names() -> list[str]:
    """The registered judges, those that need no LLM first (the default is the first)."""
    return sorted(JUDGES, key=lambda n: (_NEEDS_LLM.get(n, False), n))


def judge_needs_llm(name: str) -> bool:
    """Whether judge ``name`` asks an LLM (and so is built with a client)."""
    return _NEEDS_LLM.get(name, False)


def make_judge(name: str, **params: Any) -> Judge:
    """Build the judge registered as ``name`` with ``params``.

    Raises:
        JudgeError: no judge has that name.
    """
    if name not in JUDGES:
        raise JudgeError(f"unknown judge {name!r}; choose one of {', '.join(sorted(JUDGES))}.")
    return JUDGES[name](**params)
