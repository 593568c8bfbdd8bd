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
    "HypothesisCandidate",
    "HypothesisGold",
    "HypothesisTaskRelease",
    "HypothesisVariable",
    "LLMProvenance",
    "MCQ",
    "MCQOption",
    "MCQPart",
    "HypothesesPart",
    "ProgrammaticPart",
    "MeetingRecord",
    "PROGRAMMATIC_TASK_TYPES",
    "ProgrammaticArtifact",
    "ProgrammaticCheck",
    "ProgrammaticTaskRelease",
    "Release",
    "ReleaseColumn",
    "ReleaseFile",
    "ReleaseMapping",
    "ReleaseBranch",
    "ReleaseModel",
    "ReleaseTransform",
    "ReleaseVariable",
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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Annotator(_Strict):
    """A pseudonymous annotator: releases never carry user names."""

    id: str = Field(description="stable pseudonym within the release, e.g. 'A3'")
    kind: Literal["human", "imported", "llm"] = "human"
    label: str = Field(default="", description="e.g. 'BLADE experts (imported)'; empty for humans")


class ReleaseColumn(_Strict):
    name: str
    origin: Literal["original", "derived"] = "original"
    producer_id: str | None = None
    rationale: str = ""


class ReleaseMapping(_Strict):
    inputs: list[str] = Field(default_factory=list)
    output: str = ""


class ReleaseBranch(_Strict):
    dependencies: list[str] = Field(default_factory=list)
    condition: str = ""


class ReleaseVariable(_Strict):
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


class ReleaseTransform(_Strict):
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


class ReleaseModel(_Strict):
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


class LLMProvenance(_Strict):
    model: str
    base_url: str = ""
    prompt_template: str = Field(default="", description="name@version of the prompt template")
    prompt_sha256: str = ""
    temperature: float | None = None
    created_at: datetime | None = None


class Alternative(_Strict):
    """A decision proposed for review: by an LLM seeded from a decision, or by a peer."""

    id: str
    kind: Literal["variable", "transform", "hypothesis"]
    source: Literal["llm", "peer"]
    proposed_by: str | None = Field(default=None, description="annotator pseudonym for peers")
    llm: LLMProvenance | None = None
    seed_id: str | None = Field(default=None, description="the decision it was generated from")
    payload: dict[str, Any] = Field(description="the proposed decision's fields (variable or transform shape)")
    extra: dict[str, Any] = Field(default_factory=dict)


class Vote(_Strict):
    target_kind: Literal["alternative", "variable", "transform", "model", "hypothesis", "prog_check", "prog_artifact"]
    target_id: str
    annotator: str
    question: str = Field(description="e.g. justifiable, can_derive_from_data, is_suited_to_cv")
    answer: Answer | None = Field(description="None: the question was skipped (see skipped_reason)")
    skipped_reason: str = ""
    explanation: str = ""
    created_at: datetime | None = None


class ConsensusRecord(_Strict):
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


class MCQOption(_Strict):
    text: str = Field(description="a conceptual-variable string, or transform code")
    rationale: str = ""
    is_llm_generated: bool = False
    source_kind: Literal["variable", "transform", "path", "alternative", "unknown"] = "unknown"
    source_ids: list[str] = Field(default_factory=list)
    negative_reason: Literal["", "wrong_variable", "voted_unjustifiable", "not_derivable"] = ""
    extra: dict[str, Any] = Field(default_factory=dict)


class MCQ(_Strict):
    id: str
    kind: Literal["variable", "transform"]
    mc_type: Literal["select_pos", "select_neg"]
    concept: str = Field(default="", description="for transform MCQs: the conceptual variable string")
    options: list[MCQOption]
    correct_index: int
    extra: dict[str, Any] = Field(default_factory=dict)


class MeetingRecord(_Strict):
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


class ReleaseFile(_Strict):
    """One file of a dataset with more than one table (a DiscoveryBench folder), copied into the release."""

    name: str = Field(description="its name inside the dataset folder, e.g. metadata_0.json or data/x.csv")
    path: str = Field(description="path inside the release, e.g. data/<dataset>/<name>")
    sha256: str
    size: int
    role: str = Field(default="data", description="data | metadata | other")
    format: str = Field(default="", description="csv, tsv, dta, json, ...")
    columns: list[dict[str, Any]] = Field(default_factory=list, description="column descriptions, as imported")


class HypothesisVariable(_Strict):
    """One variable of a hypothesis, grounded in the data dictionary (``column``) or a derived column."""

    name: str
    column: str | None = Field(default=None, description="the data column it is, when it is one")
    derived: str = Field(default="", description="how it is derived, when it is not a column as is")
    description: str = ""


class HypothesisCandidate(_Strict):
    """A stage-1 hypothesis an analyst wrote for a query (blind), decomposed, with its workflow and code."""

    id: str
    author: str | None = Field(default=None, description="annotator pseudonym")
    hypothesis: str
    context: str = ""
    variables: list[HypothesisVariable] = Field(default_factory=list)
    relationship: str = ""
    workflow: str = ""
    code: str = ""
    check: dict[str, Any] | None = Field(default=None, description="the sandbox run of its code, as kept")
    extra: dict[str, Any] = Field(default_factory=dict)


class HypothesisGold(_Strict):
    """A query's gold hypothesis: imported, or what the decision rule made justifiable (with provenance)."""

    hypothesis: str
    context: str | None = None
    variables: list[str] | None = None
    relationship: str | None = None
    workflow: str | None = None
    source: Literal["metadata", "answer_key", "consensus"]
    candidate_id: str | None = Field(default=None, description="consensus: the candidate or alternative chosen")
    provenance: dict[str, Any] = Field(default_factory=dict, description="rule, tally, meeting, decided_by/at")


class HypothesisTaskRelease(_Strict):
    """One DiscoveryBench query over the dataset, with everything needed to write the folder back."""

    key: str = Field(description="real/test/<folder>/metadata_<k>/q<qid>")
    source: Literal["real", "synth"]
    split: str
    metadata_k: int
    qid: int
    query_field: str = ""
    question: str
    question_type: str | None = None
    question_type_raw: str | None = None
    difficulty: int | None = None
    domain: str | None = None
    domain_knowledge: str | None = None
    workflow_tags: str | None = None
    data_files: list[str] = Field(default_factory=list)
    true_hypothesis_expr: str | None = None
    target_col: str | None = None
    relevant_cols: list[str] | None = None
    gold: HypothesisGold | None = None
    candidates: list[HypothesisCandidate] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


PROGRAMMATIC_TASK_TYPES: tuple[str, ...] = (
    "data cleaning & preprocessing",
    "data exploration & statistics understanding",
    "data visualization",
    "predictive modeling",
    "data mining & pattern recognition",
    "interpretability & report generation",
)
"""DataSciBench's six task types (evaluation-seeds-reference §2.1), in its order."""


class ProgrammaticArtifact(_Strict):
    """A ground-truth artifact of a programmatic task (a table, a figure, a number), carried inline so that a
    release alone rescores a run. ``path`` is relative to the task's ``gt/`` folder."""

    path: str
    sha256: str
    size: int
    content_b64: str = Field(description="the file's bytes, base64")


class ProgrammaticCheck(_Strict):
    """One task-function-code check (DataSciBench's TFC entry): a function ``f(ground_truth)`` run in the agent's
    output folder (its working directory, read-only) that returns a boolean, optionally through ``rule``."""

    id: str
    task_type: str = Field(description="one of PROGRAMMATIC_TASK_TYPES")
    function: str = Field(description="the aggregate-function label, e.g. 'Data Completeness'")
    metric: str = Field(description="the metric's name, e.g. 'Data Completeness Ratio'")
    code: str = Field(description="Python source defining one function of the ground-truth path")
    rule: str | None = Field(default=None, description="optional lambda (as text) applied to the result")
    ground_truth: str = Field(default="", description="path inside gt/ handed to the function ('' = gt/ itself)")
    status: str = Field(default="accepted", description="accepted (scored) | proposed | refused")
    gate: dict[str, Any] = Field(default_factory=dict, description="the release gate's evidence: its outcome on "
                                 "the accepted artifact and on a known wrong output")
    provenance: dict[str, Any] = Field(default_factory=dict)


class ProgrammaticTaskRelease(_Strict):
    """A programmatic task: a prompt, its input files (the dataset's), ground-truth artifacts and checks."""

    key: str = Field(description="the task's id, also its folder name in an outputs zip")
    prompt: str
    input_files: list[str] = Field(default_factory=list, description="names of the dataset files it reads")
    data_source_type: str = ""
    artifacts: list[ProgrammaticArtifact] = Field(default_factory=list)
    checks: list[ProgrammaticCheck] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)


class KindPart(_Strict):
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


class MCQPart(KindPart):
    """The MCQ kind's part of a dataset (format 2.0; format 1.x: the dataset's ``mcqs``)."""

    kind: ClassVar[str] = "mcq"
    items: list[MCQ] = Field(default_factory=list)


class HypothesesPart(KindPart):
    """The hypotheses kind's part of a dataset: its DiscoveryBench queries (format 1.x: ``hypothesis_tasks``)."""

    kind: ClassVar[str] = "hypotheses"
    tasks: list[HypothesisTaskRelease] = Field(default_factory=list)


class ProgrammaticPart(KindPart):
    """The programmatic kind's part of a dataset: DataSciBench-style checked tasks (format 1.x:
    ``programmatic_tasks``)."""

    kind: ClassVar[str] = "programmatic"
    tasks: list[ProgrammaticTaskRelease] = Field(default_factory=list)


class DatasetRelease(_Strict):
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


class Release(_Strict):
    format_version: str = FORMAT_VERSION
    version: str = Field(description="semantic version X.Y.Z")
    created_at: datetime
    app_version: str
    notes: str = ""
    previous_version: str | None = None
    licence: str = ""
    attribution: str = ""
    datasets: list[DatasetRelease] = Field(default_factory=list)
