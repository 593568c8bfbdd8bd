"""The tables of a Hugging Face export: one configuration per kind of item a release holds, each a typed Arrow
schema and a function from the release document to rows (split name → rows).

A row carries plain columns for what a reader filters on and the item's full record as JSON text where its shape
is open (decisions, alternatives' payloads), so nothing of the release is lost and every Parquet file has a fixed
schema, also when a column is empty in every row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import pyarrow as pa

from exports.parts import declared_parts
from exports.schema import DatasetRelease, Release

__all__ = ["CONFIGS", "DATASET_FIELD", "DEFAULT_SPLIT", "SHARED_CONFIGS", "HFConfig", "config_rows", "file_path",
           "hf_configs", "json_text", "split_name"]

#: The split of configurations that are not split upstream: a benchmark is a test set.
DEFAULT_SPLIT = "test"

Rows = dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class HFConfig:
    """One configuration of the export (a Parquet file per split).

    Attributes:
        name: the configuration's name on the Hub (``load_dataset(path, name)``).
        title: what it holds, for the card's table.
        row: what one row is, for the card.
        missing: the sentence the card says when the release holds none of it.
        task_categories: the Hub's task categories the configuration brings (empty: reference data).
        fields: column name → (Arrow type, description for the card).
        rows: the release → split name → rows.
    """

    name: str
    title: str
    row: str
    missing: str
    task_categories: tuple[str, ...]
    fields: Mapping[str, tuple[pa.DataType, str]]
    rows: Callable[[Release], Rows]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([pa.field(name, kind) for name, (kind, _) in self.fields.items()])


def json_text(value: Any) -> str:
    """A value as JSON text in a row (keys sorted, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _status(ds: DatasetRelease) -> dict[tuple[str, str], str]:
    """(target kind, target id) → its consensus status in the release."""
    return {(c.target_kind, c.target_id): c.status for c in ds.consensus}


def _analysis_datasets(release: Release) -> Iterable[DatasetRelease]:
    """The datasets of BLADE's decisions: those holding decisions that no kind's part owns."""
    owners = [p.owns for p in declared_parts().values() if p.owns is not None]
    return (d for d in release.datasets
            if not any(owns(d) for owns in owners) and (d.variables or d.transforms or d.models))


def file_path(ds: DatasetRelease, name: str) -> str:
    """A dataset file's path in the export (the release's own path), given its name inside the dataset."""
    for f in ds.files:
        if f.name == name:
            return f.path
    if ds.data_file.rsplit("/", 1)[-1] == name:
        return ds.data_file
    return f"data/{ds.name}/{name}"


def _analyses(release: Release) -> Rows:
    return {DEFAULT_SPLIT: [{
        "dataset": d.name, "title": d.title, "research_question": d.research_question, "description": d.description,
        "data_file": d.data_file, "data_sha256": d.data_sha256, "num_rows": d.num_rows, "num_columns": d.num_columns,
        "dictionary_json": json_text(d.dictionary), "variables": len(d.variables), "transforms": len(d.transforms),
        "models": len(d.models)} for d in _analysis_datasets(release)]}


def _decisions(release: Release) -> Rows:
    rows = []
    for d in release.datasets:
        status = _status(d)
        for kind, items in (("variable", d.variables), ("transform", d.transforms), ("model", d.models)):
            for item in items:
                full = item.model_dump(mode="json")
                rows.append({
                    "dataset": d.name, "id": item.id, "kind": kind, "annotator": item.annotator,
                    "consensus": status.get((kind, item.id)), "concept": full.get("concept"),
                    "variable_type": full.get("variable_type"), "spec_name": full.get("spec_name") or None,
                    "family": full.get("family") or None, "specification": full.get("specification") or None,
                    "code": full.get("code") or None, "rationale": item.rationale,
                    "columns": [c["name"] for c in full.get("columns", [])], "tags": list(item.tags),
                    "record_json": json_text(full)})
    return {DEFAULT_SPLIT: rows}


def _alternatives(release: Release) -> Rows:
    rows = []
    for d in release.datasets:
        status = _status(d)
        for a in d.alternatives:
            rows.append({
                "dataset": d.name, "id": a.id, "kind": a.kind, "source": a.source, "proposed_by": a.proposed_by,
                "llm_model": a.llm.model if a.llm else None, "seed_id": a.seed_id,
                "consensus": status.get(("alternative", a.id)), "payload_json": json_text(a.payload),
                "record_json": json_text(a.model_dump(mode="json"))})
    return {DEFAULT_SPLIT: rows}


def _votes(release: Release) -> Rows:
    return {DEFAULT_SPLIT: [{
        "dataset": d.name, "target_kind": v.target_kind, "target_id": v.target_id, "annotator": v.annotator,
        "question": v.question, "answer": v.answer, "skipped_reason": v.skipped_reason, "explanation": v.explanation,
        "created_at": v.created_at.isoformat() if v.created_at else None} for d in release.datasets for v in d.votes]}


def split_name(split: str) -> str:
    """A split name the Hub accepts (word characters and dots), ``test`` when there is none."""
    name = re.sub(r"\W+", "_", split.strip()).strip("_")
    return name or DEFAULT_SPLIT


_S, _I, _B = pa.string(), pa.int64(), pa.bool_()
_STRINGS = pa.list_(pa.string())
DATASET_FIELD = (_S, "the release dataset it belongs to (`data/<dataset>/` holds its files)")

SHARED_CONFIGS: tuple[HFConfig, ...] = (
    HFConfig(
        "analyses", "BLADE analysis tasks", "a dataset and its research question, to be answered by an analysis",
        "no dataset of analysis decisions (BLADE)", ("text-generation",), {
            "dataset": DATASET_FIELD, "title": (_S, "the dataset's title"),
            "research_question": (_S, "the question an analysis answers"),
            "description": (_S, "what the data is"),
            "data_file": (_S, "path of the data table in this repository"),
            "data_sha256": (_S, "SHA-256 of the data table"),
            "num_rows": (_I, "rows of the data table"), "num_columns": (_I, "columns of the data table"),
            "dictionary_json": (_S, "the data dictionary (JSON list of columns with descriptions)"),
            "variables": (_I, "conceptual variables recorded (see `decisions`)"),
            "transforms": (_I, "transforms recorded"), "models": (_I, "models recorded")}, _analyses),
    HFConfig(
        "decisions", "Analysis decisions (ground truth)", "one decision of an expert analysis (a conceptual "
        "variable, a transform or a model) with its consensus status", "no analysis decision", (), {
            "dataset": DATASET_FIELD, "id": (_S, "the decision's id in the release"),
            "kind": (_S, "variable | transform | model"), "annotator": (_S, "the annotator's pseudonym"),
            "consensus": (_S, "justifiable | unjustifiable | contested | unjudged, or null without a record"),
            "concept": (_S, "variables: the conceptual variable"),
            "variable_type": (_S, "variables: IV | DV | Control"),
            "spec_name": (_S, "transforms and models: the specification's name"),
            "family": (_S, "models: the model family"), "specification": (_S, "the specification in words"),
            "code": (_S, "transforms and models: the pandas / statsmodels code"),
            "rationale": (_S, "why the analyst made it"), "columns": (_STRINGS, "the data columns it uses"),
            "tags": (_STRINGS, "tags"), "record_json": (_S, "the full decision as in `release.json`")}, _decisions),
    HFConfig(
        "alternatives", "Alternative decisions", "a decision proposed for review by a peer or an LLM, with its "
        "consensus status", "no alternative decision", (), {
            "dataset": DATASET_FIELD, "id": (_S, "the alternative's id"),
            "kind": (_S, "variable | transform | hypothesis"), "source": (_S, "llm | peer"),
            "proposed_by": (_S, "the peer's pseudonym"), "llm_model": (_S, "the LLM that proposed it"),
            "seed_id": (_S, "the decision it was generated from"),
            "consensus": (_S, "its consensus status, or null without a record"),
            "payload_json": (_S, "the proposed decision (JSON)"),
            "record_json": (_S, "the full alternative, with the LLM's provenance")}, _alternatives),
    HFConfig(
        "votes", "Votes", "one annotator's answer to one question about one item", "no vote", (), {
            "dataset": DATASET_FIELD, "target_kind": (_S, "the kind of item voted on"),
            "target_id": (_S, "the item's id"), "annotator": (_S, "the voter's pseudonym"),
            "question": (_S, "e.g. justifiable, can_derive_from_data"),
            "answer": (_S, "yes | no | unsure, or null when skipped"), "skipped_reason": (_S, "why it was skipped"),
            "explanation": (_S, "the voter's explanation"), "created_at": (_S, "when (ISO 8601, UTC)")}, _votes),
)
"""The configurations of the fields every dataset shares (BLADE's decisions and the curation record)."""


def hf_configs() -> tuple[HFConfig, ...]:
    """Every configuration of an export: the shared ones, then those of each kind whose release part brings some
    (:attr:`exports.parts.ReleasePart.hf_tables`), in the kinds' order.

    Raises:
        ValueError: two configurations have the same name.
    """
    configs = list(SHARED_CONFIGS)
    for part in declared_parts().values():
        if part.hf_tables is not None:
            configs += part.hf_tables()
    names = [c.name for c in configs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"two Hugging Face configurations are named {', '.join(twice)}: each needs its own name")
    return tuple(configs)


class _Configs(Sequence[HFConfig]):
    """:func:`hf_configs` as a sequence read when used (the kinds registered by then), not when imported."""

    @overload
    def __getitem__(self, index: int) -> HFConfig: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[HFConfig]: ...
    def __getitem__(self, index: int | slice) -> HFConfig | Sequence[HFConfig]:
        return hf_configs()[index]

    def __len__(self) -> int:
        return len(hf_configs())

    def __iter__(self) -> Iterator[HFConfig]:
        return iter(hf_configs())


CONFIGS: Sequence[HFConfig] = _Configs()
"""Every configuration of an export, as :func:`hf_configs` gives them when read."""


def config_rows(release: Release) -> dict[str, Rows]:
    """Configuration name → split → rows, for the configurations with at least one row."""
    out = {}
    for config in hf_configs():
        rows = {split: items for split, items in sorted(config.rows(release).items()) if items}
        if rows:
            out[config.name] = rows
    return out

