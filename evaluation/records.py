"""The records that flow between the stages of scoring: what the transform matcher, the judges and the run
bookkeeping hand to the metrics, and what a result file stores per analysis.

Two of them are the contract with the transform side (ground truth build + code→units conversion + value/graph
matching, in ``evaluation/groundtruth/`` and ``evaluation/matching/transforms.py``):

* :class:`GroundTruthCounts` per dataset: the expanded ground-truth units (ROOT excluded) as :class:`UnitRef`
  ``(id, name)`` pairs, plus the variable and model counts (filled from the release by
  :func:`evaluation.judges.decisions.ground_truth_counts`);
* :class:`TransformMatch` per analysis: the ground-truth units matched by value and by graph (each with its
  ancestors, ROOT excluded), the agent's matched unit ids, the agent's number of expanded units (ROOT excluded),
  and the lineage of each column of the agent's final frame back to original data columns (the judges use it
  to link the agent's variables and model to the data).

Everything is pydantic so a result file can store it and re-aggregate from it alone.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BLADE_FINISHED",
    "BLADE_EXECUTION_FAILED",
    "BLADE_GENERATION_FAILED",
    "FailureCategory",
    "AgentUnit",
    "GroundTruthCounts",
    "ModelMatchRecord",
    "RunRecord",
    "TransformMatch",
    "UnitRef",
    "VariableMatchRecord",
]

BLADE_FINISHED = 5  # RunResultModes.FINISHED_SUCCESSFULLY
BLADE_GENERATION_FAILED = 2  # RunResultModes.LM_GENERATION_FAILED: the only failure BLADE pads back as a 0 run
BLADE_EXECUTION_FAILED = 0  # RunResultModes.LM_SUBMISSION_EXECUTION_FAILED (an analysis the run's budget never reached)


class AgentUnit(BaseModel):
    """One unit the converter read from an agent's transform code: what a person checks the credit against."""

    model_config = ConfigDict(frozen=True)

    verb: str
    inputs: list[str] = Field(default_factory=list)
    output: str = Field(default="", description="the column it makes; empty for a whole-frame step (filter, ...)")
    groupby: list[str] = Field(default_factory=list)
    code: str = Field(default="", description="the statements of the unit")


class UnitRef(BaseModel):
    """One expanded single-output transform unit: a unique id and BLADE's name (``derive_<col>``, ...).

    Names can collide (two specs deriving the same column get the same name, blade-reference 4.7); ids cannot.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    name: str


class TransformMatch(BaseModel):
    """The transform side of one analysis, as the transform matcher fills it.

    Attributes:
        status: ``ok``; ``failed`` (the code raised, ... or could not be converted: ``message`` says which);
            ``timeout`` (the code ran past its time limit); ``empty`` (no transform code); ``not_run`` (nothing
            was attempted, e.g. no ground truth).
        matched_value_units: ground-truth units matched by value hash, with ancestors, ROOT excluded
            (BLADE's ``matched_vspecs``).
        matched_graph_units: the same by graph hash (BLADE's ``matched_gspecs``).
        matched_value_units2 / matched_graph_units2: ids of the agent's units that matched (BLADE's ``*2``).
        num_agent_units: the agent's expanded units, ROOT excluded (BLADE's ``num_tspecs2``).
        column_lineage: each column of the agent's final frame → the original data columns it derives from.
        agent_units: the units the converter read from the agent's code, in order (format 1.1).
        matcher: name and parameters of what produced this (e.g. ``{"name": "value+graph", "wl_iterations": 3}``).
        blade_run_status: set to 1 (LM_SUBMISSION_CONVERSION_FAILED) when BLADE would have failed the *whole*
            run here (its conversion step crashes the analysis, 4.2); ``blade`` mode then drops the run. Leave
            ``None`` for an execution failure or empty code (BLADE scores variables and model then).
    """

    status: Literal["ok", "failed", "timeout", "empty", "not_run"] = "not_run"
    message: str = ""
    matched_value_units: list[UnitRef] = Field(default_factory=list)
    matched_graph_units: list[UnitRef] = Field(default_factory=list)
    matched_value_units2: list[str] = Field(default_factory=list)
    matched_graph_units2: list[str] = Field(default_factory=list)
    num_agent_units: int = 0
    column_lineage: dict[str, list[str]] = Field(default_factory=dict)
    agent_units: list[AgentUnit] = Field(default_factory=list)
    matcher: dict[str, object] = Field(default_factory=dict)
    blade_run_status: int | None = None


class GroundTruthCounts(BaseModel):
    """Per-dataset constants of the metrics (blade-reference 4.7: num_tspecs1, num_cvars1, num_mspecs1...)."""

    dataset: str
    units: list[UnitRef] = Field(default_factory=list, description="expanded transform units, ROOT excluded")
    num_cvars: int = 0
    num_models: int = 0
    num_models_unique: int = 0


class FailureCategory(StrEnum):
    """Why a run scored nothing (or less) — reported next to the scores in default mode."""

    NONE = ""
    GENERATION_FAILED = "generation_failed"
    INVALID = "invalid_analysis"
    UNKNOWN_DATASET = "unknown_dataset"
    TRANSFORM_FAILED = "transform_failed"  # partial: variables and model still score
    TIMEOUT = "timeout"  # partial: the transform code ran past its time limit; variables and model still score
    BUDGET_EXHAUSTED = "budget_exhausted"  # the run's time budget ran out before this analysis: scores 0
    MODEL_NOT_UNDERSTOOD = "model_not_understood"  # partial: no model family could be read from m_code
    JUDGE_FAILED = "judge_failed"


class VariableMatchRecord(BaseModel):
    """One (ground-truth variable, agent variable) pair a judge scored, with who scored it and why."""

    gt_id: str
    gt_text: str
    agent_index: int
    agent_text: str
    role: str
    similarity: int
    judge: str
    rationale: str


class ModelMatchRecord(BaseModel):
    """A ground-truth model row the agent's model matched, and whether its variables matched too."""

    gt_id: str
    representative_id: str
    specification: str
    judge: str
    rationale: str
    cvars_all_matched: bool | None = Field(
        description="every GT variable of this model row and every agent variable linked to the agent's model "
                    "matched at the threshold; None: the agent's model has no linked variables")
    cvars_all_matched_representative: bool | None = Field(
        default=None, description="the same check on the representative row's variables (BLADE's fan-out defect)")


class RunRecord(BaseModel):
    """One submitted run (analysis) as the metrics see it; stored per analysis in a result file.

    ``blade_status`` is the RunResultModes value BLADE would have ended this run with; ``blade`` mode keeps only
    runs with status 5 (finished) and pads status 2 (generation failed) as zero runs, as BLADE does.
    """

    key: str
    failure: FailureCategory = FailureCategory.NONE
    failure_message: str = ""
    blade_status: int = BLADE_FINISHED
    matched_cvars: list[str] = Field(default_factory=list, description="GT variable strings with a match >= 8")
    matched_cvars2: list[str] = Field(default_factory=list, description="agent variable strings with a match")
    num_cvars2: int = Field(default=0, description="every agent variable")
    num_cvars2_shown: int = Field(default=0, description="agent variables of the roles the GT has (BLADE)")
    matched_models: list[str] = Field(default_factory=list)
    matched_models_cvar: list[str] = Field(default_factory=list, description="per-row check (fixed)")
    matched_models_cvar_blade: list[str] = Field(default_factory=list, description="representative-row check")
    transform: TransformMatch = Field(default_factory=TransformMatch)

    @property
    def scored(self) -> bool:
        """Whether the run produced an analysis at all (a generation/invalid/unknown-dataset run did not)."""
        return self.failure not in (FailureCategory.GENERATION_FAILED, FailureCategory.INVALID,
                                    FailureCategory.UNKNOWN_DATASET, FailureCategory.BUDGET_EXHAUSTED)
