"""The dataset card (``README.md``) of a release: what is inside, who made it and under which terms.

The card is generated from the release document alone, so it always agrees with ``release.json``. Per-dataset
licence and attribution are taken from the dataset's ``info`` (top level or ``data_desc``) or ``extra`` where
present, under any of the keys in :data:`LICENCE_KEYS` and :data:`ATTRIBUTION_KEYS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from exports.schema import DatasetRelease, Release

__all__ = [
    "ATTRIBUTION_KEYS",
    "LICENCE_KEYS",
    "attribution_lines",
    "hypothesis_counts",
    "is_hypothesis_dataset",
    "licence_lines",
    "render_card",
]

LICENCE_KEYS = ("licence", "license")
ATTRIBUTION_KEYS = ("attribution", "citation", "source", "source_url")


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float, bool)):
        return str(value)
    return ""


def _dataset_meta(ds: DatasetRelease, keys: Iterable[str]) -> list[tuple[str, str]]:
    """Return ``(key, text)`` for every non-empty string value under ``keys`` in the dataset's metadata."""
    places: list[Mapping[str, Any]] = [ds.info, ds.extra]
    data_desc = ds.info.get("data_desc")
    if isinstance(data_desc, Mapping):
        places.insert(1, data_desc)
    found: list[tuple[str, str]] = []
    for key in keys:
        for place in places:
            text = _scalar_text(place.get(key))
            if text and (key, text) not in found:
                found.append((key, text))
    return found


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def _annotators(ds: DatasetRelease) -> str:
    if not ds.annotators:
        return "none recorded"
    parts = []
    for a in ds.annotators:
        detail = a.kind if not a.label else f"{a.kind}: {a.label}"
        parts.append(f"`{a.id}` ({detail})")
    return ", ".join(parts)


def _alternatives(ds: DatasetRelease) -> str:
    if not ds.alternatives:
        return "0"
    by_source = Counter(a.source for a in ds.alternatives)
    detail = ", ".join(
        f"{by_source[s]} {'LLM' if s == 'llm' else 'peer'}" for s in ("llm", "peer") if by_source[s]
    )
    return f"{len(ds.alternatives):,} ({detail})"


def _votes(ds: DatasetRelease) -> str:
    skipped = sum(1 for v in ds.votes if v.answer is None)
    return f"{len(ds.votes):,}" + (f" ({skipped:,} skipped)" if skipped else "")


def is_hypothesis_dataset(ds: DatasetRelease) -> bool:
    """A dataset of hypothesis tasks (a DiscoveryBench folder: several files, queries with gold hypotheses),
    not a BLADE dataset of analysis decisions."""
    return bool(ds.hypothesis_tasks or ds.files)


def hypothesis_counts(ds: DatasetRelease) -> dict[str, int]:
    """Tasks, those with a gold hypothesis (by where it comes from), those still to curate, stage-1 candidates."""
    gold = [t.gold for t in ds.hypothesis_tasks if t.gold is not None]
    return {
        "tasks": len(ds.hypothesis_tasks),
        "gold": len(gold),
        "to_curate": len(ds.hypothesis_tasks) - len(gold),
        "gold_metadata": sum(1 for g in gold if g.source == "metadata"),
        "gold_answer_key": sum(1 for g in gold if g.source == "answer_key"),
        "gold_consensus": sum(1 for g in gold if g.source == "consensus"),
        "candidates": sum(len(t.candidates) for t in ds.hypothesis_tasks),
    }


def _gold_sources(counts: Mapping[str, int]) -> str:
    parts = [f"{counts[key]:,} {label}" for key, label in (
        ("gold_metadata", "from the metadata"), ("gold_answer_key", "from the answer key"),
        ("gold_consensus", "decided by consensus")) if counts[key]]
    return f" ({', '.join(parts)})" if parts else ""


def _hypothesis_section(ds: DatasetRelease) -> list[str]:
    counts = hypothesis_counts(ds)
    source = ds.extra.get("discoverybench") if isinstance(ds.extra.get("discoverybench"), Mapping) else None
    out = []
    if source:
        out.append(f"- DiscoveryBench folder: `{source.get('kind', '?')}/{source.get('split', '?')}/"
                   f"{source.get('folder', '?')}`")
    metadata = sum(1 for f in ds.files if f.role == "metadata")
    tables = [f"`{f.name}`" for f in ds.files if f.role != "metadata"]
    out += [f"- Files: {_count(len(ds.files), 'file')} under `data/{ds.name}/`: "
            f"{_count(metadata, 'metadata file')}; data {', '.join(tables) or 'none'}",
            f"- Main table: `{ds.data_file}`, {_count(ds.num_rows, 'row')} × {_count(ds.num_columns, 'column')}, "
            f"SHA-256 `{ds.data_sha256}`",
            f"- Hypothesis tasks: {counts['tasks']:,}; with a gold hypothesis: {counts['gold']:,}"
            f"{_gold_sources(counts)}; still to curate (no gold): {counts['to_curate']:,}"]
    types = Counter(t.question_type or "unknown" for t in ds.hypothesis_tasks)
    if types:
        out.append("- Question types: " + ", ".join(f"{name} {n:,}" for name, n in sorted(types.items())))
    out += [f"- Stage-1 candidate hypotheses: {counts['candidates']:,}",
            f"- Alternatives: {_alternatives(ds)}",
            f"- Votes: {_votes(ds)}",
            f"- Annotators: {_annotators(ds)}",
            ""]
    return out


def _dataset_section(ds: DatasetRelease) -> list[str]:
    heading = f"### `{ds.name}`" + (f": {ds.title}" if ds.title else "")
    out = [heading, "", f"**Question:** {ds.research_question}", ""]
    if ds.description:
        out += [ds.description, ""]
    if is_hypothesis_dataset(ds):
        return out + _hypothesis_section(ds)
    out += [
        f"- Data: `{ds.data_file}`, {_count(ds.num_rows, 'row')} × {_count(ds.num_columns, 'column')}, "
        f"SHA-256 `{ds.data_sha256}`",
        f"- Decisions: {_count(len(ds.variables), 'variable')}, {_count(len(ds.transforms), 'transform')}, "
        f"{_count(len(ds.models), 'model')}",
        f"- Alternatives: {_alternatives(ds)}",
        f"- Votes: {_votes(ds)}",
        f"- Consensus records: {len(ds.consensus):,}",
        f"- MCQs: {len(ds.mcqs):,}",
        f"- Annotators: {_annotators(ds)}",
        "",
    ]
    return out


def _terms(release: Release, text: str, keys: tuple[str, ...], missing: str) -> list[str]:
    out = [text.strip() if text.strip() else missing, ""]
    per_dataset = [(ds.name, _dataset_meta(ds, keys)) for ds in release.datasets]
    per_dataset = [(name, meta) for name, meta in per_dataset if meta]
    if per_dataset:
        out += ["Per dataset:", ""]
        for name, meta in per_dataset:
            out.append(f"- `{name}`: " + "; ".join(f"{key}: {value}" for key, value in meta))
        out.append("")
    return out


def licence_lines(release: Release) -> list[str]:
    """The card's Licence section body: the release's licence, then each dataset's own where recorded."""
    return _terms(release, release.licence, LICENCE_KEYS, "No licence was recorded for this release.")


def attribution_lines(release: Release) -> list[str]:
    """The card's Attribution section body: the release's attribution, then each dataset's own."""
    return _terms(release, release.attribution, ATTRIBUTION_KEYS, "No attribution was recorded for this release.")


def render_card(release: Release) -> str:
    """Render the ``README.md`` dataset card of ``release`` (Markdown, ends with a newline).

    Args:
        release: the release document being written.

    Returns:
        The card: header facts (format version, creation time, app version, predecessor), notes, a contents
        table, one section per dataset with its question, size and counts of every kind of item and its
        annotators, the file layout, then a Licence and an Attribution section.
    """
    created = release.created_at.isoformat()
    out = [
        f"# forkpaths release {release.version}",
        "",
        f"- Format version: {release.format_version}",
        f"- Created at: {created}",
        f"- forkpaths version: {release.app_version}",
        f"- Previous release: {release.previous_version or 'none (first release)'}",
        f"- Datasets: {len(release.datasets)}",
        "",
    ]
    if release.notes.strip():
        out += ["## Notes", "", release.notes.strip(), ""]

    out += ["## Contents", ""]
    analyses = [ds for ds in release.datasets if not is_hypothesis_dataset(ds)]
    hypotheses = [ds for ds in release.datasets if is_hypothesis_dataset(ds)]
    if release.datasets:
        if analyses:
            if hypotheses:
                out += ["Datasets of analysis decisions (BLADE):", ""]
            out += [
                "| Dataset | Rows × columns | Variables | Transforms | Models | Alternatives | Votes | Consensus | MCQs |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for ds in analyses:
                out.append(
                    f"| `{ds.name}` | {ds.num_rows:,} × {ds.num_columns:,} | {len(ds.variables)} | "
                    f"{len(ds.transforms)} | {len(ds.models)} | {len(ds.alternatives)} | {len(ds.votes)} | "
                    f"{len(ds.consensus)} | {len(ds.mcqs)} |"
                )
            out.append("")
        if hypotheses:
            out += [
                "Datasets of hypothesis tasks (DiscoveryBench): a task without a gold hypothesis is still to be "
                "curated; its query is in the release, its gold is not yet.",
                "",
                "| Dataset | Files | Tasks | With gold | Still to curate | Candidates | Votes |",
                "|---|---|---|---|---|---|---|",
            ]
            for ds in hypotheses:
                counts = hypothesis_counts(ds)
                out.append(
                    f"| `{ds.name}` | {len(ds.files)} | {counts['tasks']} | {counts['gold']} | "
                    f"{counts['to_curate']} | {counts['candidates']} | {len(ds.votes)} |"
                )
            out.append("")
        for ds in release.datasets:
            out += _dataset_section(ds)
    else:
        out += ["This release holds no datasets.", ""]

    out += [
        "## Files",
        "",
        "- `release.json`: the release document (every decision, alternative, vote, consensus record and MCQ"
        + (", and every hypothesis task with its gold" if hypotheses else "") + ")",
        *[f"- `{ds.data_file}`: the data table of `{ds.name}`" for ds in analyses],
        *[f"- `data/{ds.name}/`: the {_count(len(ds.files), 'file')} of `{ds.name}` (metadata and data, as "
          "imported)" for ds in hypotheses],
        "- `CHANGELOG.md`: what changed since the previous release",
        "- `MANIFEST`: SHA-256 of every other file; check with `sha256sum -c MANIFEST`. A release whose files "
        "do not match it was modified after it was cut and must not be used.",
        "",
        "Annotators appear under pseudonyms only.",
        "",
        "## Licence",
        "",
        *licence_lines(release),
        "## Attribution",
        "",
        *attribution_lines(release),
    ]
    return "\n".join(out)
