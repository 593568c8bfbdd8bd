"""The hypotheses kind's part of a release, as the release format's shared readers see it: its counts, its row
in the dataset card's contents and its section of the card (DiscoveryBench folders: files, queries, gold)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from exports.card import alternatives_text, annotators_text, count_text, votes_text
from exports.schema import DatasetRelease, HypothesesPart

__all__ = ["CARD_HEADINGS", "card_row", "card_section", "hypothesis_counts", "is_hypothesis_dataset"]

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
