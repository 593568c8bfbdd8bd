"""The MCQ kind's part of a release (``DatasetRelease.parts["mcq"]``), as the release format's shared readers see
it, beside its model (its kind declares it; :mod:`exports.upgrade` declares it to every reader of a release)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import Field

from exports.parts import ReleasePart
from exports.schema import KindPart, Release, StrictModel

__all__ = ["MCQ", "RELEASE_PART", "MCQOption", "MCQPart", "MCQType", "QuestionKind"]

#: what an MCQ asks about: a conceptual variable, or the transform of one
QuestionKind = Literal["variable", "transform"]
#: select_pos: pick the justifiable option; select_neg: pick the unjustifiable one
MCQType = Literal["select_pos", "select_neg"]


class MCQOption(StrictModel):
    text: str = Field(description="a conceptual-variable string, or transform code")
    rationale: str = ""
    is_llm_generated: bool = False
    source_kind: Literal["variable", "transform", "path", "alternative", "unknown"] = "unknown"
    source_ids: list[str] = Field(default_factory=list)
    negative_reason: Literal["", "wrong_variable", "voted_unjustifiable", "not_derivable"] = ""
    extra: dict[str, Any] = Field(default_factory=dict)


class MCQ(StrictModel):
    id: str
    kind: QuestionKind
    mc_type: MCQType
    concept: str = Field(default="", description="for transform MCQs: the conceptual variable string")
    options: list[MCQOption]
    correct_index: int
    extra: dict[str, Any] = Field(default_factory=dict)


class MCQPart(KindPart):
    """The MCQ kind's part of a dataset (format 2.0; format 1.x: the dataset's ``mcqs``)."""

    kind: ClassVar[str] = "mcq"
    items: list[MCQ] = Field(default_factory=list)


def _items(part: MCQPart) -> list[tuple[str, str, Any]]:
    return [(q.id, f"`{q.id}` ({q.kind}, {q.mc_type})", q.model_dump(mode="json")) for q in part.items]


# ------------------------------------------------------------------------------------ its Hugging Face table

def _hf_rows(release: Release) -> dict[str, list[dict[str, Any]]]:
    from exports.hf.tables import DEFAULT_SPLIT, json_text

    return {DEFAULT_SPLIT: [{
        "dataset": d.name, "id": q.id, "research_question": d.research_question, "kind": q.kind,
        "mc_type": q.mc_type, "concept": q.concept, "options": [o.text for o in q.options],
        "correct_index": q.correct_index,
        "answer": q.options[q.correct_index].text if 0 <= q.correct_index < len(q.options) else None,
        "options_json": json_text([o.model_dump(mode="json") for o in q.options])}
        for d in release.datasets for q in MCQPart.of(d).items]}


def _hf_tables() -> tuple[Any, ...]:
    import pyarrow as pa

    from exports.hf.tables import DATASET_FIELD, HFConfig

    text, integer, texts = pa.string(), pa.int64(), pa.list_(pa.string())
    return (
        HFConfig(
            "mcqs", "Multiple-choice questions", "a question on a dataset's analysis: which conceptual variable "
            "or transform fits its research question", "no multiple-choice question", ("multiple-choice",), {
                "dataset": DATASET_FIELD, "id": (text, "the question's id"),
                "research_question": (text, "the dataset's research question"),
                "kind": (text, "variable | transform"),
                "mc_type": (text, "select_pos: pick the justifiable option; select_neg: pick the unjustifiable one"),
                "concept": (text, "transform questions: the conceptual variable"),
                "options": (texts, "the options' texts"), "correct_index": (integer, "the correct option (0-based)"),
                "answer": (text, "the correct option's text"),
                "options_json": (text, "the options with their rationale and provenance")}, _hf_rows),
    )


#: A dataset's MCQs: counted, hashed for MCQ runs only (an answer key or a question that changes makes an MCQ run
#: stale; it changes nothing another kind's runs score against), never shown to a reader blind to the dataset.
RELEASE_PART = ReleasePart(
    model=MCQPart, noun="MCQs", one="MCQ",
    counts=lambda part: {"MCQs": len(part.items)},
    hash_input=lambda part: {"mcqs": [q.model_dump(mode="json") for q in part.items]} if part.items else {},
    blind=lambda part: None, work=("MCQs",), items=_items, hf_tables=_hf_tables)
