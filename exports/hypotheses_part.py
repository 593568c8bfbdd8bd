"""The hypotheses kind's part of a release, as the release format's shared readers see it: its counts, its row
in the dataset card's contents and its section of the card (DiscoveryBench folders: files, queries, gold)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from exports.card import alternatives_text, annotators_text, count_text, votes_text
from exports.parts import ReleasePart
from exports.schema import DatasetRelease, HypothesesPart

__all__ = ["CARD_HEADINGS", "RELEASE_PART", "card_row", "card_section", "hypothesis_counts", "is_hypothesis_dataset"]

ABOUT = ("Every query of each folder is released as a hypothesis task; one without a gold hypothesis is still to "
         "curate (stages 1-3): there is no gold to score it against yet.")
CARD_INTRO = ("Datasets of hypothesis tasks (DiscoveryBench): a task without a gold hypothesis is still to be "
              "curated; its query is in the release, its gold is not yet.")
CARD_HEADINGS = ("Files", "Tasks", "With gold", "Still to curate", "Candidates", "Votes")


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


#: A dataset's DiscoveryBench queries. Their gold is in the hash of every run on the dataset (format 1.x's rule).
#: ``with gold`` counts imported gold too: an imported gold is the dataset's answer, kept from a blind annotator.
RELEASE_PART = ReleasePart(
    model=HypothesesPart, noun="hypothesis tasks", one="hypothesis task", counts=_counts, hash_input=_hash_input,
    blind=_blind, work=("candidates", "gold by consensus", "with gold"), in_every_hash=True, items=_items,
    targets=lambda part: {("hypothesis", c.id): c.hypothesis for t in part.tasks for c in t.candidates},
    about=ABOUT, card_table=(CARD_INTRO, CARD_HEADINGS, card_row), card_section=card_section)
