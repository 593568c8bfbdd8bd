"""The dataset card (``README.md``) of a release: what is inside, who made it and under which terms.

The card is generated from the release document alone, so it always agrees with ``release.json``. Per-dataset
licence and attribution are taken from the dataset's ``info`` (top level or ``data_desc``) or ``extra`` where
present, under any of the keys in :data:`LICENCE_KEYS` and :data:`ATTRIBUTION_KEYS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from exports.parts import ReleasePart, counts_text, declared_parts
from exports.schema import DatasetRelease, Release

__all__ = [
    "ATTRIBUTION_KEYS",
    "LICENCE_KEYS",
    "alternatives_text",
    "annotators_text",
    "attribution_lines",
    "count_text",
    "licence_lines",
    "render_card",
    "votes_text",
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


def count_text(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"


def annotators_text(ds: DatasetRelease) -> str:
    if not ds.annotators:
        return "none recorded"
    parts = []
    for a in ds.annotators:
        detail = a.kind if not a.label else f"{a.kind}: {a.label}"
        parts.append(f"`{a.id}` ({detail})")
    return ", ".join(parts)


def alternatives_text(ds: DatasetRelease) -> str:
    if not ds.alternatives:
        return "0"
    by_source = Counter(a.source for a in ds.alternatives)
    detail = ", ".join(
        f"{by_source[s]} {'LLM' if s == 'llm' else 'peer'}" for s in ("llm", "peer") if by_source[s]
    )
    return f"{len(ds.alternatives):,} ({detail})"


def votes_text(ds: DatasetRelease) -> str:
    skipped = sum(1 for v in ds.votes if v.answer is None)
    return f"{len(ds.votes):,}" + (f" ({skipped:,} skipped)" if skipped else "")


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _title(noun: str) -> str:
    return noun[:1].upper() + noun[1:]


def _first(part: ReleasePart, value: object) -> int:
    """A part's number of items (its first count), 0 where the dataset holds none."""
    return 0 if value is None else next(iter(part.counts(value).values()), 0)


def _home(ds: DatasetRelease) -> tuple[str, ReleasePart, object] | None:
    """The first kind's part the dataset holds that has a table of its own in the card (None: decisions)."""
    for name, part in declared_parts().items():
        if part.card_table is not None and (value := part.held(ds, name)) is not None:
            return name, part, value
    return None


def _curated_as_decisions(ds: DatasetRelease) -> bool:
    """Whether the card counts the dataset's decisions, alternatives, votes and consensus: it has some, or it holds
    no kind's part (a BLADE dataset still to curate). A dataset of imported questions has none of them to count."""
    return bool(ds.variables or ds.transforms or ds.models or ds.alternatives or ds.votes or ds.consensus) \
        or all(p.held(ds, name) is None for name, p in declared_parts().items())


def _dataset_section(ds: DatasetRelease) -> list[str]:
    heading = f"### `{ds.name}`" + (f": {ds.title}" if ds.title else "")
    out = [heading, "", f"**Question:** {ds.research_question}", ""]
    if ds.description:
        out += [ds.description, ""]
    home = _home(ds)
    if home is not None and home[1].card_section is not None:
        return out + home[1].card_section(ds, home[2])
    held = [(p, value) for name, p in declared_parts().items() if p.card_section is None
            and (value := p.held(ds, name)) is not None]
    decided = [
        f"- Decisions: {count_text(len(ds.variables), 'variable')}, {count_text(len(ds.transforms), 'transform')}, "
        f"{count_text(len(ds.models), 'model')}",
        f"- Alternatives: {alternatives_text(ds)}",
        f"- Votes: {votes_text(ds)}",
        f"- Consensus records: {len(ds.consensus):,}",
    ] if _curated_as_decisions(ds) else []
    out += [
        f"- Data: `{ds.data_file}`, {count_text(ds.num_rows, 'row')} × {count_text(ds.num_columns, 'column')}, "
        f"SHA-256 `{ds.data_sha256}`",
        *decided,
        *[f"- {_title(p.noun)}: {counts_text(p.counts(value))}" for p, value in held],
        f"- Annotators: {annotators_text(ds)}",
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
    tables: dict[str, list[DatasetRelease]] = {}
    decisions: list[DatasetRelease] = []  # datasets of decisions
    others: list[DatasetRelease] = []  # datasets of other kinds' items, with no table of their own
    for ds in release.datasets:
        home = _home(ds)
        if home is None:
            (decisions if _curated_as_decisions(ds) else others).append(ds)
        else:
            tables.setdefault(home[0], []).append(ds)
    if release.datasets:
        if decisions:
            if tables or others:
                out += ["Datasets of analysis decisions (BLADE):", ""]
            parts = declared_parts()
            columns = [(name, p) for name, p in parts.items() if p.card_table is None
                       and any(p.held(ds, name) is not None for ds in decisions)]
            out += [
                "| Dataset | Rows × columns | Variables | Transforms | Models | Alternatives | Votes | Consensus |"
                + "".join(f" {_title(p.noun)} |" for _, p in columns),
                "|---|---|---|---|---|---|---|---|" + "---|" * len(columns),
            ]
            for ds in decisions:
                out.append(
                    f"| `{ds.name}` | {ds.num_rows:,} × {ds.num_columns:,} | {len(ds.variables)} | "
                    f"{len(ds.transforms)} | {len(ds.models)} | {len(ds.alternatives)} | {len(ds.votes)} | "
                    f"{len(ds.consensus)} |" + "".join(f" {_first(p, p.held(ds, name))} |" for name, p in columns)
                )
            out.append("")
        if others:
            columns = [(name, p) for name, p in declared_parts().items() if p.card_table is None
                       and any(p.held(ds, name) is not None for ds in others)]
            if decisions or tables:
                out += [f"Datasets of {_listed([p.noun for _, p in columns])}:", ""]
            out += ["| Dataset | Rows × columns |" + "".join(f" {_title(p.noun)} |" for _, p in columns),
                    "|---|---|" + "---|" * len(columns)]
            out += [f"| `{ds.name}` | {ds.num_rows:,} × {ds.num_columns:,} |"
                    + "".join(f" {_first(p, p.held(ds, name))} |" for name, p in columns) for ds in others]
            out.append("")
        for name, held in tables.items():
            spec = declared_parts()[name]
            assert spec.card_table is not None
            intro, headings, row = spec.card_table
            out += [intro, "", "| Dataset | " + " | ".join(headings) + " |", "|---|" + "---|" * len(headings)]
            for ds in held:
                out.append(f"| `{ds.name}` | " + " | ".join(row(ds, spec.held(ds, name))) + " |")
            out.append("")
        for ds in release.datasets:
            out += _dataset_section(ds)
    else:
        out += ["This release holds no datasets.", ""]

    what = ["decision", "alternative", "vote", "consensus record"] + [
        p.singular for name, p in declared_parts().items() if any(p.held(ds, name) is not None for ds in release.datasets)]
    out += [
        "## Files",
        "",
        f"- `release.json`: the release document (every {_listed(what)})",
        *[f"- `{ds.data_file}`: the data table of `{ds.name}`" for ds in release.datasets if not ds.files],
        *[f"- `data/{ds.name}/`: the {count_text(len(ds.files), 'file')} of `{ds.name}` (metadata and data, as "
          "imported)" for ds in release.datasets if ds.files],
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
