"""The hypotheses kind's part of a release, as the release format's shared readers see it: its counts, its row
in the dataset card's contents and its section of the card (DiscoveryBench folders: files, queries, gold)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field

from exports.card import alternatives_text, annotators_text, count_text, votes_text
from exports.parts import ReleasePart
from exports.schema import DatasetRelease, KindPart, Release, StrictModel

__all__ = [
    "CARD_HEADINGS",
    "RELEASE_PART",
    "HypothesesPart",
    "HypothesisCandidate",
    "HypothesisGold",
    "HypothesisTaskRelease",
    "HypothesisVariable",
    "card_row",
    "card_section",
    "hypothesis_counts",
    "is_hypothesis_dataset",
]

ABOUT = ("Every query of each folder is released as a hypothesis task; one without a gold hypothesis is still to "
         "curate (stages 1-3): there is no gold to score it against yet.")
CARD_INTRO = ("Datasets of hypothesis tasks (DiscoveryBench): a task without a gold hypothesis is still to be "
              "curated; its query is in the release, its gold is not yet.")
CARD_HEADINGS = ("Files", "Tasks", "With gold", "Still to curate", "Candidates", "Votes")


class HypothesisVariable(StrictModel):
    """One variable of a hypothesis, grounded in the data dictionary (``column``) or a derived column."""

    name: str
    column: str | None = Field(default=None, description="the data column it is, when it is one")
    derived: str = Field(default="", description="how it is derived, when it is not a column as is")
    description: str = ""


class HypothesisCandidate(StrictModel):
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


class HypothesisGold(StrictModel):
    """A query's gold hypothesis: imported, or what the decision rule made justifiable (with provenance)."""

    hypothesis: str
    context: str | None = None
    variables: list[str] | None = None
    relationship: str | None = None
    workflow: str | None = None
    source: Literal["metadata", "answer_key", "consensus"]
    candidate_id: str | None = Field(default=None, description="consensus: the candidate or alternative chosen")
    provenance: dict[str, Any] = Field(default_factory=dict, description="rule, tally, meeting, decided_by/at")


class HypothesisTaskRelease(StrictModel):
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


class HypothesesPart(KindPart):
    """The hypotheses kind's part of a dataset: its DiscoveryBench queries (format 1.x: ``hypothesis_tasks``)."""

    kind: ClassVar[str] = "hypotheses"
    tasks: list[HypothesisTaskRelease] = Field(default_factory=list)


def is_hypothesis_dataset(ds: DatasetRelease) -> bool:
    """A dataset of hypothesis tasks (a DiscoveryBench folder: several files, queries with gold hypotheses),
    not a BLADE dataset of analysis decisions."""
    return bool(HypothesesPart.of(ds).tasks or ds.files)


def hypothesis_counts(part: HypothesesPart) -> dict[str, int]:
    """Tasks, those with a gold hypothesis (by where it comes from), those still to curate, stage-1 candidates."""
    gold = [t.gold for t in part.tasks if t.gold is not None]
    return {
        "tasks": len(part.tasks),
        "gold": len(gold),
        "to_curate": len(part.tasks) - len(gold),
        "gold_metadata": sum(1 for g in gold if g.source == "metadata"),
        "gold_answer_key": sum(1 for g in gold if g.source == "answer_key"),
        "gold_consensus": sum(1 for g in gold if g.source == "consensus"),
        "candidates": sum(len(t.candidates) for t in part.tasks),
    }


def _gold_sources(counts: Mapping[str, int]) -> str:
    parts = [f"{counts[key]:,} {label}" for key, label in (
        ("gold_metadata", "from the metadata"), ("gold_answer_key", "from the answer key"),
        ("gold_consensus", "decided by consensus")) if counts[key]]
    return f" ({', '.join(parts)})" if parts else ""


def card_row(ds: DatasetRelease, part: HypothesesPart) -> list[str]:
    counts = hypothesis_counts(part)
    return [str(len(ds.files)), str(counts["tasks"]), str(counts["gold"]), str(counts["to_curate"]),
            str(counts["candidates"]), str(len(ds.votes))]


def card_section(ds: DatasetRelease, part: HypothesesPart) -> list[str]:
    counts = hypothesis_counts(part)
    source = ds.extra.get("discoverybench") if isinstance(ds.extra.get("discoverybench"), Mapping) else None
    out = []
    if source:
        out.append(f"- DiscoveryBench folder: `{source.get('kind', '?')}/{source.get('split', '?')}/"
                   f"{source.get('folder', '?')}`")
    metadata = sum(1 for f in ds.files if f.role == "metadata")
    tables = [f"`{f.name}`" for f in ds.files if f.role != "metadata"]
    out += [f"- Files: {count_text(len(ds.files), 'file')} under `data/{ds.name}/`: "
            f"{count_text(metadata, 'metadata file')}; data {', '.join(tables) or 'none'}",
            f"- Main table: `{ds.data_file}`, {count_text(ds.num_rows, 'row')} × "
            f"{count_text(ds.num_columns, 'column')}, SHA-256 `{ds.data_sha256}`",
            f"- Hypothesis tasks: {counts['tasks']:,}; with a gold hypothesis: {counts['gold']:,}"
            f"{_gold_sources(counts)}; still to curate (no gold): {counts['to_curate']:,}"]
    types = Counter(t.question_type or "unknown" for t in part.tasks)
    if types:
        out.append("- Question types: " + ", ".join(f"{name} {n:,}" for name, n in sorted(types.items())))
    out += [f"- Stage-1 candidate hypotheses: {counts['candidates']:,}",
            f"- Alternatives: {alternatives_text(ds)}",
            f"- Votes: {votes_text(ds)}",
            f"- Annotators: {annotators_text(ds)}",
            ""]
    return out


def _counts(part: HypothesesPart) -> dict[str, int]:
    c = hypothesis_counts(part)
    return {"hypothesis tasks": c["tasks"], "with gold": c["gold"], "to curate": c["to_curate"],
            "candidates": c["candidates"], "gold by consensus": c["gold_consensus"]}


def _hash_input(part: HypothesesPart) -> dict[str, Any]:
    """The gold of each task (without who decided it when: a re-decision to the same gold is no change)."""
    if not part.tasks:
        return {}
    return {"hypotheses": [{"key": t.key, "gold": t.gold.model_dump(mode="json", exclude={"provenance"})
                            if t.gold else None, "expr": t.true_hypothesis_expr, "target": t.target_col}
                           for t in part.tasks]}


def _blind(part: HypothesesPart) -> HypothesesPart:
    """A blind reader keeps the queries, not their gold nor stage-1 candidates: an imported gold hypothesis is the
    dataset's answer, withheld like a decided one (curation.services.blinding's rule; format 1.x's blinding kept
    it, and the conformance suite's "a blind reader gets no gold" found it)."""
    return HypothesesPart(tasks=[t.model_copy(update={"candidates": [], "gold": None}) for t in part.tasks])


def _items(part: HypothesesPart) -> list[tuple[str, str, Any]]:
    return [(t.key, f"`{t.key}` ({f'gold from {t.gold.source}' if t.gold is not None else 'no gold yet'})",
             t.model_dump(mode="json")) for t in part.tasks]


# ------------------------------------------------------------------------------------ its Hugging Face table

def _hf_rows(release: Release) -> dict[str, list[dict[str, Any]]]:
    from exports.hf.tables import file_path, json_text, split_name

    rows: dict[str, list[dict[str, Any]]] = {}
    for d in release.datasets:
        for t in HypothesesPart.of(d).tasks:
            g = t.gold
            rows.setdefault(split_name(t.split), []).append({
                "dataset": d.name, "key": t.key, "source": t.source, "question": t.question,
                "question_type": t.question_type, "difficulty": t.difficulty, "domain": t.domain,
                "domain_knowledge": t.domain_knowledge, "workflow_tags": t.workflow_tags,
                "data_files": [file_path(d, n) for n in t.data_files], "target_col": t.target_col,
                "relevant_cols": t.relevant_cols, "true_hypothesis_expr": t.true_hypothesis_expr,
                "gold_hypothesis": g.hypothesis if g else None, "gold_source": g.source if g else None,
                "gold_context": g.context if g else None, "gold_variables": g.variables if g else None,
                "gold_relationship": g.relationship if g else None, "gold_workflow": g.workflow if g else None,
                "candidates_json": json_text([c.model_dump(mode="json") for c in t.candidates])})
    return rows


def _hf_tables() -> tuple[Any, ...]:
    import pyarrow as pa

    from exports.hf.tables import DATASET_FIELD, HFConfig

    text, integer, texts = pa.string(), pa.int64(), pa.list_(pa.string())
    return (
        HFConfig(
            "hypotheses", "Hypothesis tasks (DiscoveryBench)", "a data-driven discovery query over a dataset's "
            "files, with its gold hypothesis when it has one", "no hypothesis task (DiscoveryBench)",
            ("table-question-answering",), {
                "dataset": DATASET_FIELD, "key": (text, "the task's key, `<source>/<split>/<folder>/metadata_<k>/q<qid>`"),
                "source": (text, "real | synth"), "question": (text, "the query"),
                "question_type": (text, "e.g. relationship, variables, context"), "difficulty": (integer, "synth: 1-4"),
                "domain": (text, "the domain"), "domain_knowledge": (text, "hints given with the query"),
                "workflow_tags": (text, "the analysis steps it needs"),
                "data_files": (texts, "paths of the data files it reads, in this repository"),
                "target_col": (text, "synth: the target column"), "relevant_cols": (texts, "synth: relevant columns"),
                "true_hypothesis_expr": (text, "synth: the hypothesis as a pandas expression"),
                "gold_hypothesis": (text, "the gold hypothesis; null: still to curate"),
                "gold_source": (text, "metadata | answer_key | consensus"), "gold_context": (text, "the gold's context"),
                "gold_variables": (texts, "the gold's variables"), "gold_relationship": (text, "the gold's relationship"),
                "gold_workflow": (text, "the gold's workflow"),
                "candidates_json": (text, "stage-1 candidate hypotheses written by analysts (JSON)")}, _hf_rows),
    )


#: A dataset's DiscoveryBench queries. Their gold is in the hash of every run on the dataset (format 1.x's rule).
#: ``with gold`` counts imported gold too: an imported gold is the dataset's answer, kept from a blind annotator.
RELEASE_PART = ReleasePart(
    model=HypothesesPart, noun="hypothesis tasks", one="hypothesis task", counts=_counts, hash_input=_hash_input,
    blind=_blind, work=("candidates", "gold by consensus", "with gold"), in_every_hash=True, items=_items,
    targets=lambda part: {("hypothesis", c.id): c.hypothesis for t in part.tasks for c in t.candidates},
    about=ABOUT, card_table=(CARD_INTRO, CARD_HEADINGS, card_row), card_section=card_section,
    hf_tables=_hf_tables, owns=is_hypothesis_dataset)
