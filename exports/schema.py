"""The forkpaths release format: one pydantic document per release, the contract between curation (which
writes it) and evaluation (which reads it, never the database).

Everything an expert entered is here, with provenance: decisions with their branches, alternatives proposed
by peers or an LLM (model and prompt provenance), every vote (pseudonymous annotator), consensus outcomes,
MCQs. ``extra`` fields carry what forkpaths does not model but a source format had (e.g. BLADE's legacy
keys), so nothing is lost on the way through.

Bump :data:`FORMAT_VERSION` on any field change; readers refuse versions they do not know.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

__all__ = [
    "FORMAT_VERSION",
    "KindPart",
    "Alternative",
    "Annotator",
    "ConsensusRecord",
    "DatasetRelease",
    "LLMProvenance",
    "MeetingRecord",
    "Release",
    "ReleaseColumn",
    "ReleaseFile",
    "ReleaseMapping",
    "ReleaseBranch",
    "ReleaseModel",
    "ReleaseTransform",
    "ReleaseVariable",
    "StrictModel",
    "Vote",
]

FORMAT_VERSION = "2.0"
# 1.1: contested/unjudged statuses with basis and tally, meetings, MCQ review
# 1.2: a dataset's files (DiscoveryBench folders), hypothesis tasks with their candidates and gold; the kind
#      "hypothesis" for alternatives, votes and consensus
# 2.0: each kind of task keeps its items in ``DatasetRelease.parts[<kind>]`` (MCQs, hypothesis tasks and
#      programmatic tasks moved there from fields of their own); 1.x documents are upgraded on read
#      (:mod:`exports.upgrade`). BLADE's decisions (variables, transforms, models) and the curation record every
#      kind shares (annotators, alternatives, votes, consensus, meetings) stay fields of the dataset: votes,
#      consensus and meetings are about the items of several kinds at once (decisions, hypotheses, programmatic
#      checks), and the decisions are what they, the MCQs and the BLADE layout refer to by id.

Answer = Literal["yes", "no", "unsure"]


class StrictModel(BaseModel):
    """A model of the release format: unknown fields are refused (a kind's part models derive from it)."""

    model_config = ConfigDict(extra="forbid")


class Annotator(StrictModel):
    """A pseudonymous annotator: releases never carry user names."""

    id: str = Field(description="stable pseudonym within the release, e.g. 'A3'")
    kind: Literal["human", "imported", "llm"] = "human"
    label: str = Field(default="", description="e.g. 'BLADE experts (imported)'; empty for humans")


class ReleaseColumn(StrictModel):
    name: str
    origin: Literal["original", "derived"] = "original"
    producer_id: str | None = None
    rationale: str = ""


class ReleaseMapping(StrictModel):
    inputs: list[str] = Field(default_factory=list)
    output: str = ""


class ReleaseBranch(StrictModel):
    dependencies: list[str] = Field(default_factory=list)
    condition: str = ""


class ReleaseVariable(StrictModel):
    id: str
    annotator: str
    variable_type: Literal["IV", "DV", "Control"]
    interaction: bool = False
    moderates: str = ""
    concept: str
    rationale: str = ""
    columns: list[ReleaseColumn] = Field(default_factory=list)
    random_effect: bool = False
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


class ReleaseTransform(StrictModel):
    id: str
    annotator: str
    spec_name: str
    specification: str = ""
    verbs: list[str] = Field(default_factory=list)
    code: str = ""
    rationale: str = ""
    mapping: list[ReleaseMapping] = Field(default_factory=list)
    branches: list[ReleaseBranch] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


class ReleaseModel(StrictModel):
    id: str
    annotator: str
    family: str = ""
    specification: str = ""
    spec_name: str = ""
    code: str = ""
    rationale: str = ""
    columns: list[ReleaseColumn] = Field(default_factory=list)
    variable_ids: list[str] = Field(default_factory=list)
    transform_ids: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


class LLMProvenance(StrictModel):
    model: str
    base_url: str = ""
    prompt_template: str = Field(default="", description="name@version of the prompt template")
    prompt_sha256: str = ""
    temperature: float | None = None
    created_at: datetime | None = None


class Alternative(StrictModel):
    """A decision proposed for review: by an LLM seeded from a decision, or by a peer."""

    id: str
    kind: Literal["variable", "transform", "hypothesis"]
    source: Literal["llm", "peer"]
    proposed_by: str | None = Field(default=None, description="annotator pseudonym for peers")
    llm: LLMProvenance | None = None
    seed_id: str | None = Field(default=None, description="the decision it was generated from")
    payload: dict[str, Any] = Field(description="the proposed decision's fields (variable or transform shape)")
    extra: dict[str, Any] = Field(default_factory=dict)


class Vote(StrictModel):
    target_kind: Literal["alternative", "variable", "transform", "model", "hypothesis", "prog_check", "prog_artifact"]
    target_id: str
    annotator: str
    question: str = Field(description="e.g. justifiable, can_derive_from_data, is_suited_to_cv")
    answer: Answer | None = Field(description="None: the question was skipped (see skipped_reason)")
    skipped_reason: str = ""
    explanation: str = ""
    created_at: datetime | None = None


class ConsensusRecord(StrictModel):
    """An item's ground-truth status. ``contested`` is a final state (voters heard, no rule threshold met, or a
    meeting left it open); ``unjudged``: nobody voted. ``split``/``unresolved`` are format-1.0 values."""

    target_kind: Literal["alternative", "variable", "transform", "model", "hypothesis", "prog_check", "prog_artifact"]
    target_id: str
    status: Literal["justifiable", "unjustifiable", "contested", "unjudged", "split", "unresolved"]
    basis: str = Field(default="", description="rule | meeting | imported")
    tally: dict[str, int] = Field(default_factory=dict, description="voters per verdict under the rule")
    rule: str = Field(description="how the status was reached, e.g. 'unanimous', 'majority>=2/3', 'meeting'")
    decided_by: str | None = None
    decided_at: datetime | None = None
    note: str = ""
    votes: list[Vote] = Field(default_factory=list, description="the votes as they stood when decided")


class MeetingRecord(StrictModel):
    """A stage-3 consensus meeting: agenda with outcomes, reasons and dissent; attendance; the votes before and
    after; the audit trail. People appear only as pseudonyms."""

    id: int
    status: Literal["open", "closed"]
    rule: str
    started_by: str | None = None
    started_at: datetime | None = None
    closed_by: str | None = None
    closed_at: datetime | None = None
    attendance: list[str] = Field(default_factory=list)
    items: list[dict[str, Any]] = Field(default_factory=list)
    decided: int = 0
    pre_votes: list[dict[str, Any]] = Field(default_factory=list)
    post_votes: list[dict[str, Any]] = Field(default_factory=list)
    events: list[dict[str, Any]] = Field(default_factory=list)


class ReleaseFile(StrictModel):
    """One file of a dataset with more than one table (a DiscoveryBench folder), copied into the release."""

    name: str = Field(description="its name inside the dataset folder, e.g. metadata_0.json or data/x.csv")
    path: str = Field(description="path inside the release, e.g. data/<dataset>/<name>")
    sha256: str
    size: int
    role: str = Field(default="data", description="data | metadata | other")
    format: str = Field(default="", description="csv, tsv, dta, json, ...")
    columns: list[dict[str, Any]] = Field(default_factory=list, description="column descriptions, as imported")


class KindPart(StrictModel):
    """A kind's part of a dataset (``DatasetRelease.parts[kind]``) whose model knows its kind's name, so that the
    kind's own modules read it with ``Model.of(ds)`` (an empty part where the dataset has none)."""

    kind: ClassVar[str] = ""

    @classmethod
    def of(cls, ds: DatasetRelease) -> Self:
        """The dataset's part (validated once and kept on the dataset while its payload stays the same)."""
        raw = ds.parts.get(cls.kind)
        if raw is None:
            return cls()
        cached = ds._parsed.get(cls.kind)
        if cached is not None and cached[0] is raw:
            return cached[1]  # type: ignore[no-any-return]
        parsed = cls.model_validate(raw)
        ds._parsed[cls.kind] = (raw, parsed)
        return parsed

    def __bool__(self) -> bool:
        return any(bool(getattr(self, f)) for f in type(self).model_fields)

    def put(self, ds: DatasetRelease) -> DatasetRelease:
        """A copy of ``ds`` whose part of this kind is this one."""
        return ds.model_copy(update={"parts": {**ds.parts, self.kind: self.model_dump(mode="json")}})


class DatasetRelease(StrictModel):
    name: str
    title: str = ""
    research_question: str
    description: str = ""
    dictionary: list[dict[str, Any]] = Field(default_factory=list)
    info: dict[str, Any] = Field(default_factory=dict, description="the full info.json, losslessly")
    data_file: str = Field(description="path of the data table inside the release, e.g. data/<name>/data.csv")
    data_sha256: str
    num_rows: int
    num_columns: int
    annotators: list[Annotator] = Field(default_factory=list)
    variables: list[ReleaseVariable] = Field(default_factory=list)
    transforms: list[ReleaseTransform] = Field(default_factory=list)
    models: list[ReleaseModel] = Field(default_factory=list)
    alternatives: list[Alternative] = Field(default_factory=list)
    votes: list[Vote] = Field(default_factory=list)
    consensus: list[ConsensusRecord] = Field(default_factory=list)
    meetings: list[MeetingRecord] = Field(default_factory=list)
    files: list[ReleaseFile] = Field(default_factory=list, description="format 1.2: every file of a multi-file "
                                     "dataset (data_file stays its main table)")
    parts: dict[str, dict[str, Any]] = Field(default_factory=dict, description="each task kind's part of the dataset, "
                                             "by the kind's name: a JSON payload its kind's model validates")
    extra: dict[str, Any] = Field(default_factory=dict)
    # parts validated by their kind's model, by name: (the payload read, the model), so that a copy with another
    # payload (model_copy shares this dict) never reads a part it does not hold
    _parsed: dict[str, Any] = PrivateAttr(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        """Equal fields: what was read of the parts (the private cache) is no part of a dataset's value."""
        if not isinstance(other, DatasetRelease):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def with_parts(self, **parts: KindPart | BaseModel | None) -> DatasetRelease:
        """A copy whose parts named by keyword are replaced (None or an empty part: left out)."""
        kept = {k: v for k, v in self.parts.items() if k not in parts}
        for name, part in parts.items():
            if part is not None and (not isinstance(part, KindPart) or part):
                kept[name] = part.model_dump(mode="json")
        return self.model_copy(update={"parts": dict(sorted(kept.items()))})


class Release(StrictModel):
    format_version: str = FORMAT_VERSION
    version: str = Field(description="semantic version X.Y.Z")
    created_at: datetime
    app_version: str
    notes: str = ""
    previous_version: str | None = None
    licence: str = ""
    attribution: str = ""
    datasets: list[DatasetRelease] = Field(default_factory=list)
