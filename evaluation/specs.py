"""Value objects shared by decisions, the sandbox and the release format.

A column is never a decorated string: it is ``(name, origin, producer)``. A transform's input→output mapping
and its alternative parent sets (branches) are small typed records. BLADE's vocabulary (blade-reference 3) is
kept verbatim so imports and exports round-trip.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from exports.blade_annotations import ROOT_SPEC_ID

__all__ = [
    "ROOT_SPEC_ID",
    "TRANSFORM_VERBS",
    "VERBS_AFFECTING_WHOLE_DF",
    "VERBS_WITH_OUTPUT_COLUMN",
    "Branch",
    "ColumnMapping",
    "ColumnOrigin",
    "ColumnRef",
    "ModelFamily",
    "VariableType",
]

# ROOT_SPEC_ID: the id BLADE gives the raw data table; a dependency on it means "straight from the data".

TRANSFORM_VERBS: tuple[str, ...] = (
    "derive",
    "filter",
    "slice",
    "groupby",
    "deduplicate",
    "impute",
    "orderby",
    "rollup",
    "other",
    "other_impact_rows",
    "other_impact_cols",
)
VERBS_WITH_OUTPUT_COLUMN: frozenset[str] = frozenset({"derive", "rollup", "impute", "other_impact_cols"})
VERBS_AFFECTING_WHOLE_DF: frozenset[str] = frozenset({"groupby", "filter", "other_impact_rows"})


class ColumnOrigin(StrEnum):
    ORIGINAL = "original"
    DERIVED = "derived"


class ColumnRef(BaseModel):
    """A column used by a decision: its name, whether it is in the data or derived, and who derives it."""

    model_config = ConfigDict(frozen=True)

    name: str
    origin: ColumnOrigin = ColumnOrigin.ORIGINAL
    producer_id: str | None = Field(default=None, description="id of the transform that derives it")
    rationale: str = ""


class ColumnMapping(BaseModel):
    """One (input columns → output column) pair of a transform; ``output == ""`` acts on the whole frame."""

    model_config = ConfigDict(frozen=True)

    inputs: list[str] = Field(default_factory=list)
    output: str = ""


class Branch(BaseModel):
    """One alternative set of parent transforms that must all precede a transform."""

    dependencies: list[str] = Field(default_factory=list)
    condition: str = ""


class VariableType(StrEnum):
    IV = "IV"
    DV = "DV"
    CONTROL = "Control"
    MODERATOR = "Moderator"


class ModelFamily(StrEnum):
    """A controlled vocabulary for model families (BLADE's free text varies: blade-reference 1.5.3)."""

    OLS = "Linear regression (OLS)"
    LOGISTIC = "Logistic regression"
    PROBIT = "Probit regression"
    POISSON = "Poisson regression"
    NEGATIVE_BINOMIAL = "Negative binomial regression"
    GLM = "Generalized linear model (other)"
    MIXED = "Mixed-effects model"
    ORDINAL = "Ordinal regression"
    SURVIVAL = "Survival model"
    ANOVA = "ANOVA"
    TEST = "Statistical test (t, chi-square, ...)"
    CORRELATION = "Correlation"
    OTHER = "Other"
