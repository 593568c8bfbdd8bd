"""The tables of a Hugging Face export: one configuration per kind of item a release holds, each a typed Arrow
schema and a function from the release document to rows (split name → rows).

A row carries plain columns for what a reader filters on and the item's full record as JSON text where its shape
is open (decisions, alternatives' payloads), so nothing of the release is lost and every Parquet file has a fixed
schema, also when a column is empty in every row.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from exports.hypotheses_part import is_hypothesis_dataset
from exports.schema import DatasetRelease, HypothesesPart, MCQPart, ProgrammaticPart, Release

__all__ = ["CONFIGS", "DEFAULT_SPLIT", "HFConfig", "config_rows", "split_name"]

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


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _status(ds: DatasetRelease) -> dict[tuple[str, str], str]:
    """(target kind, target id) → its consensus status in the release."""
    return {(c.target_kind, c.target_id): c.status for c in ds.consensus}


def _analysis_datasets(release: Release) -> Iterable[DatasetRelease]:
    return (d for d in release.datasets
            if not is_hypothesis_dataset(d) and (d.variables or d.transforms or d.models))


def _file_path(ds: DatasetRelease, name: str) -> str:
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
        "dictionary_json": _json(d.dictionary), "variables": len(d.variables), "transforms": len(d.transforms),
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
                    "record_json": _json(full)})
    return {DEFAULT_SPLIT: rows}


def _alternatives(release: Release) -> Rows:
    rows = []
    for d in release.datasets:
        status = _status(d)
        for a in d.alternatives:
            rows.append({
                "dataset": d.name, "id": a.id, "kind": a.kind, "source": a.source, "proposed_by": a.proposed_by,
                "llm_model": a.llm.model if a.llm else None, "seed_id": a.seed_id,
                "consensus": status.get(("alternative", a.id)), "payload_json": _json(a.payload),
                "record_json": _json(a.model_dump(mode="json"))})
    return {DEFAULT_SPLIT: rows}


def _votes(release: Release) -> Rows:
    return {DEFAULT_SPLIT: [{
        "dataset": d.name, "target_kind": v.target_kind, "target_id": v.target_id, "annotator": v.annotator,
        "question": v.question, "answer": v.answer, "skipped_reason": v.skipped_reason, "explanation": v.explanation,
        "created_at": v.created_at.isoformat() if v.created_at else None} for d in release.datasets for v in d.votes]}


def _mcqs(release: Release) -> Rows:
    return {DEFAULT_SPLIT: [{
        "dataset": d.name, "id": q.id, "research_question": d.research_question, "kind": q.kind,
        "mc_type": q.mc_type, "concept": q.concept, "options": [o.text for o in q.options],
        "correct_index": q.correct_index,
        "answer": q.options[q.correct_index].text if 0 <= q.correct_index < len(q.options) else None,
        "options_json": _json([o.model_dump(mode="json") for o in q.options])}
        for d in release.datasets for q in MCQPart.of(d).items]}


def split_name(split: str) -> str:
    """A split name the Hub accepts (word characters and dots), ``test`` when there is none."""
    name = re.sub(r"\W+", "_", split.strip()).strip("_")
    return name or DEFAULT_SPLIT


def _hypotheses(release: Release) -> Rows:
    rows: Rows = {}
    for d in release.datasets:
        for t in HypothesesPart.of(d).tasks:
            g = t.gold
            rows.setdefault(split_name(t.split), []).append({
                "dataset": d.name, "key": t.key, "source": t.source, "question": t.question,
                "question_type": t.question_type, "difficulty": t.difficulty, "domain": t.domain,
                "domain_knowledge": t.domain_knowledge, "workflow_tags": t.workflow_tags,
                "data_files": [_file_path(d, n) for n in t.data_files], "target_col": t.target_col,
                "relevant_cols": t.relevant_cols, "true_hypothesis_expr": t.true_hypothesis_expr,
                "gold_hypothesis": g.hypothesis if g else None, "gold_source": g.source if g else None,
                "gold_context": g.context if g else None, "gold_variables": g.variables if g else None,
                "gold_relationship": g.relationship if g else None, "gold_workflow": g.workflow if g else None,
                "candidates_json": _json([c.model_dump(mode="json") for c in t.candidates])})
    return rows


def _programmatic(release: Release) -> Rows:
    return {DEFAULT_SPLIT: [{
        "dataset": d.name, "key": t.key, "prompt": t.prompt, "input_files": [_file_path(d, n) for n in t.input_files],
        "data_source_type": t.data_source_type,
        "task_types": sorted({c.task_type for c in t.checks}),
        "checks": [{"id": c.id, "task_type": c.task_type, "function": c.function, "metric": c.metric, "code": c.code,
                    "rule": c.rule, "ground_truth": c.ground_truth, "status": c.status} for c in t.checks],
        "artifacts": [{"path": a.path, "sha256": a.sha256, "size": a.size, "content": base64.b64decode(a.content_b64)}
                      for a in t.artifacts],
        "record_json": _json({k: v for k, v in t.model_dump(mode="json").items() if k != "artifacts"})}
        for d in release.datasets for t in ProgrammaticPart.of(d).tasks]}


_S, _I, _B = pa.string(), pa.int64(), pa.bool_()
_STRINGS = pa.list_(pa.string())
_DATASET = (_S, "the release dataset it belongs to (`data/<dataset>/` holds its files)")

CONFIGS: tuple[HFConfig, ...] = (
    HFConfig(
        "analyses", "BLADE analysis tasks", "a dataset and its research question, to be answered by an analysis",
        "no dataset of analysis decisions (BLADE)", ("text-generation",), {
            "dataset": _DATASET, "title": (_S, "the dataset's title"),
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
            "dataset": _DATASET, "id": (_S, "the decision's id in the release"),
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
            "dataset": _DATASET, "id": (_S, "the alternative's id"),
            "kind": (_S, "variable | transform | hypothesis"), "source": (_S, "llm | peer"),
            "proposed_by": (_S, "the peer's pseudonym"), "llm_model": (_S, "the LLM that proposed it"),
            "seed_id": (_S, "the decision it was generated from"),
            "consensus": (_S, "its consensus status, or null without a record"),
            "payload_json": (_S, "the proposed decision (JSON)"),
            "record_json": (_S, "the full alternative, with the LLM's provenance")}, _alternatives),
    HFConfig(
        "votes", "Votes", "one annotator's answer to one question about one item", "no vote", (), {
            "dataset": _DATASET, "target_kind": (_S, "the kind of item voted on"),
            "target_id": (_S, "the item's id"), "annotator": (_S, "the voter's pseudonym"),
            "question": (_S, "e.g. justifiable, can_derive_from_data"),
            "answer": (_S, "yes | no | unsure, or null when skipped"), "skipped_reason": (_S, "why it was skipped"),
            "explanation": (_S, "the voter's explanation"), "created_at": (_S, "when (ISO 8601, UTC)")}, _votes),
    HFConfig(
        "mcqs", "Multiple-choice questions", "a question on a dataset's analysis: which conceptual variable "
        "or transform fits its research question", "no multiple-choice question", ("multiple-choice",), {
            "dataset": _DATASET, "id": (_S, "the question's id"),
            "research_question": (_S, "the dataset's research question"),
            "kind": (_S, "variable | transform"),
            "mc_type": (_S, "select_pos: pick the justifiable option; select_neg: pick the unjustifiable one"),
            "concept": (_S, "transform questions: the conceptual variable"),
            "options": (_STRINGS, "the options' texts"), "correct_index": (_I, "the correct option (0-based)"),
            "answer": (_S, "the correct option's text"),
            "options_json": (_S, "the options with their rationale and provenance")}, _mcqs),
    HFConfig(
        "hypotheses", "Hypothesis tasks (DiscoveryBench)", "a data-driven discovery query over a dataset's "
        "files, with its gold hypothesis when it has one", "no hypothesis task (DiscoveryBench)",
        ("table-question-answering",), {
            "dataset": _DATASET, "key": (_S, "the task's key, `<source>/<split>/<folder>/metadata_<k>/q<qid>`"),
            "source": (_S, "real | synth"), "question": (_S, "the query"),
            "question_type": (_S, "e.g. relationship, variables, context"), "difficulty": (_I, "synth: 1-4"),
            "domain": (_S, "the domain"), "domain_knowledge": (_S, "hints given with the query"),
            "workflow_tags": (_S, "the analysis steps it needs"),
            "data_files": (_STRINGS, "paths of the data files it reads, in this repository"),
            "target_col": (_S, "synth: the target column"), "relevant_cols": (_STRINGS, "synth: relevant columns"),
            "true_hypothesis_expr": (_S, "synth: the hypothesis as a pandas expression"),
            "gold_hypothesis": (_S, "the gold hypothesis; null: still to curate"),
            "gold_source": (_S, "metadata | answer_key | consensus"), "gold_context": (_S, "the gold's context"),
            "gold_variables": (_STRINGS, "the gold's variables"), "gold_relationship": (_S, "the gold's relationship"),
            "gold_workflow": (_S, "the gold's workflow"),
            "candidates_json": (_S, "stage-1 candidate hypotheses written by analysts (JSON)")}, _hypotheses),
    HFConfig(
        "programmatic", "Programmatic tasks (DataSciBench-style)", "a data-science task whose output files are "
        "checked by code, with its checks and ground-truth artifacts", "no programmatic task",
        ("text-generation",), {
            "dataset": _DATASET, "key": (_S, "the task's id (its folder in an outputs zip)"),
            "prompt": (_S, "the task's prompt"),
            "input_files": (_STRINGS, "paths of the files it reads, in this repository"),
            "data_source_type": (_S, "where its data comes from"),
            "task_types": (_STRINGS, "DataSciBench task types its checks cover"),
            "checks": (pa.list_(pa.struct([("id", _S), ("task_type", _S), ("function", _S), ("metric", _S),
                                           ("code", _S), ("rule", _S), ("ground_truth", _S), ("status", _S)])),
                       "its checks: a Python function of the ground-truth path, run in the output folder"),
            "artifacts": (pa.list_(pa.struct([("path", _S), ("sha256", _S), ("size", _I), ("content", pa.binary())])),
                          "ground-truth artifacts (path under gt/, SHA-256, bytes)"),
            "record_json": (_S, "the task as in `release.json`, without the artifacts' bytes")}, _programmatic),
)


def config_rows(release: Release) -> dict[str, Rows]:
    """Configuration name → split → rows, for the configurations with at least one row."""
    out = {}
    for config in CONFIGS:
        rows = {split: items for split, items in sorted(config.rows(release).items()) if items}
        if rows:
            out[config.name] = rows
    return out

