"""What changed between two releases: a structured :class:`ReleaseDiff` and its Markdown rendering.

Items are matched by identity, never by position: decisions and alternatives by ``id``, a kind's items (MCQs,
hypothesis tasks...) by the key its part gives them (:class:`exports.parts.ReleasePart`), annotators by
pseudonym, votes by ``(target_kind, target_id, annotator, question)`` and consensus records by
``(target_kind, target_id)``. An item present on both sides whose content differs is "changed" and carries the
names of the fields that differ (one level into dicts, e.g. ``extra.legacy`` or ``llm.model``).

The release writer renders ``CHANGELOG.md`` from the diff; the UI and the CLI show the same object.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from exports.parts import ReleasePart, declared_parts, read_part
from exports.schema import (
    Alternative,
    Annotator,
    ConsensusRecord,
    DatasetRelease,
    Release,
    ReleaseFile,
    ReleaseModel,
    ReleaseTransform,
    ReleaseVariable,
    Vote,
)

__all__ = [
    "SECTIONS",
    "DatasetDiff",
    "ItemChange",
    "ReleaseDiff",
    "SectionDiff",
    "diff_releases",
    "render_changelog",
]

Section = Literal["variables", "transforms", "models", "alternatives", "votes", "consensus", "files", "annotators"]

#: The item lists of a dataset that are compared, in the order the changelog shows them.
SECTIONS: tuple[Section, ...] = (
    "variables",
    "transforms",
    "models",
    "alternatives",
    "votes",
    "consensus",
    "files",
    "annotators",
)
#: the shared sections shown before the kinds' parts (the others after them)
_BEFORE_PARTS = 6

_TITLES: dict[Section, tuple[str, str]] = {
    "variables": ("Variables", "variable"),
    "transforms": ("Transforms", "transform"),
    "models": ("Models", "model"),
    "alternatives": ("Alternatives", "alternative"),
    "votes": ("Votes", "vote"),
    "consensus": ("Consensus", "consensus record"),
    "files": ("Files", "file"),
    "annotators": ("Annotators", "annotator"),
}

#: Release-level fields whose change is news (version, dates and notes differ in every release).
_RELEASE_FIELDS = ("format_version", "licence", "attribution")
_DATASET_SKIP = {"name", "parts", *SECTIONS}


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ItemChange(_Frozen):
    """One item added, removed or changed.

    Attributes:
        key: the identity the item was matched on, e.g. ``("V1",)`` or
            ``("variable", "V1", "A2", "justifiable")`` for a vote. A key that occurs twice in one list gets
            ``"#2"``, ``"#3"``... appended so nothing is hidden.
        label: a short human-readable name of the item for lists (Markdown inline code for ids).
        fields: for changed items, the names of the fields that differ; empty for added and removed items.
    """

    key: tuple[str, ...]
    label: str
    fields: list[str] = Field(default_factory=list)


class SectionDiff(_Frozen):
    """The changes of one item list of a dataset (its variables, its votes, ...)."""

    added: list[ItemChange] = Field(default_factory=list)
    removed: list[ItemChange] = Field(default_factory=list)
    changed: list[ItemChange] = Field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when nothing was added, removed or changed."""
        return not (self.added or self.removed or self.changed)


class DatasetDiff(_Frozen):
    """The changes of one dataset. An added dataset lists all its items as added, a removed one as removed."""

    name: str
    status: Literal["added", "removed", "changed", "unchanged"]
    fields: list[str] = Field(
        default_factory=list, description="dataset-level fields that differ, e.g. research_question"
    )
    variables: SectionDiff = SectionDiff()
    transforms: SectionDiff = SectionDiff()
    models: SectionDiff = SectionDiff()
    alternatives: SectionDiff = SectionDiff()
    votes: SectionDiff = SectionDiff()
    consensus: SectionDiff = SectionDiff()
    files: SectionDiff = SectionDiff()
    annotators: SectionDiff = SectionDiff()
    parts: dict[str, SectionDiff] = Field(default_factory=dict, description="each kind's part, by kind: its items "
                                          "(the kinds the release format knows, exports.parts)")
    sizes: dict[str, int] = Field(default_factory=dict, description="each part compared as one value (a kind that "
                                  "lists no items): its number of items, in the new release (the old one for a "
                                  "removed dataset)")

    def section(self, name: Section) -> SectionDiff:
        """Return the diff of the item list called ``name`` (one of :data:`SECTIONS`)."""
        value = getattr(self, name)
        assert isinstance(value, SectionDiff)
        return value


class ReleaseDiff(_Frozen):
    """Everything that changed from ``old_version`` (None: first release) to ``new_version``."""

    old_version: str | None
    new_version: str
    fields: list[str] = Field(
        default_factory=list, description="release-level fields that differ, e.g. licence"
    )
    datasets_added: list[str] = Field(default_factory=list)
    datasets_removed: list[str] = Field(default_factory=list)
    datasets: list[DatasetDiff] = Field(
        default_factory=list, description="every dataset of either release: the new order, then removed ones"
    )

    @property
    def has_changes(self) -> bool:
        """True when any dataset, item or release-level field differs."""
        return bool(self.fields) or any(d.status != "unchanged" for d in self.datasets)


# --- diffing ---------------------------------------------------------------------------------------------


def _canonical(value: Any) -> str:
    # json text, not ==: 1 == 1.0 == True in Python, but a release that turns 1 into true has changed.
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _changed_fields(old: dict[str, Any], new: dict[str, Any], *, skip: set[str] | None = None) -> list[str]:
    names: list[str] = []
    for key in [*old, *(k for k in new if k not in old)]:
        if skip and key in skip:
            continue
        a, b = old.get(key), new.get(key)
        if key in old and key in new and _canonical(a) == _canonical(b):
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            inner = [
                f"{key}.{k}"
                for k in [*a, *(k for k in b if k not in a)]
                if k not in a or k not in b or _canonical(a[k]) != _canonical(b[k])
            ]
            names.extend(inner)
        else:
            names.append(key)
    return names


def _label_variable(v: ReleaseVariable) -> str:
    return f"`{v.id}` {v.variable_type} {v.concept!r}"


def _label_transform(t: ReleaseTransform) -> str:
    return f"`{t.id}` {t.spec_name!r}"


def _label_model(m: ReleaseModel) -> str:
    return f"`{m.id}` {(m.spec_name or m.family)!r}"


def _label_alternative(a: Alternative) -> str:
    return f"`{a.id}` ({a.source} {a.kind})"


#: What each kind of voted-on item is called in the changelog (a programmatic check is no "prog_check").
_TARGET_WORDS = {"alternative": "alternative", "variable": "variable", "transform": "transform", "model": "model",
                 "hypothesis": "hypothesis", "prog_check": "check", "prog_artifact": "ground-truth artifact"}
#: The vote questions as a reader asks them (the keys are the release's own, kept in release.json).
_QUESTION_WORDS = {
    "justifiable": "justifiable?", "can_derive_from_data": "derivable from the data?",
    "is_reasonable": "reasonable to include?", "is_rationale_reasonable": "rationale sound?",
    "is_suited_to_cv": "operationalises the variable?", "is_steps_reasonable": "steps sound?",
    "is_faithful": "tests what the task asks?", "is_code_correct": "code correct?", "is_correct": "correct output?",
}


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _target_names(ds: DatasetRelease | None) -> dict[tuple[str, str], str]:
    """(target kind, target id) -> what a reader knows the item by (its concept, name, hypothesis or metric)."""
    if ds is None:
        return {}
    names: dict[tuple[str, str], str] = {}
    names.update({("variable", v.id): v.concept for v in ds.variables})
    names.update({("transform", t.id): t.spec_name for t in ds.transforms})
    names.update({("model", m.id): m.spec_name or m.family for m in ds.models})
    for a in ds.alternatives:
        p = a.payload or {}
        names[("alternative", a.id)] = str(p.get("concept") or p.get("spec_name") or p.get("hypothesis") or "")
    for name, part in declared_parts().items():  # the items of the kinds' parts that votes are about
        value = read_part(ds, name, part.model)
        if value is not None and part.targets is not None:
            names.update(part.targets(value))
    return {k: _short(v) for k, v in names.items() if v}


def _target(kind: str, target_id: str, names: dict[tuple[str, str], str]) -> str:
    word = _TARGET_WORDS.get(kind, kind)
    name = names.get((kind, target_id))
    return f"{word} {name!r} (`{_short(target_id, 12)}`)" if name else f"{word} `{_short(target_id, 12)}`"


def _label_vote(v: Vote, names: dict[tuple[str, str], str] | None = None) -> str:
    answer = v.answer if v.answer is not None else "skipped"
    question = _QUESTION_WORDS.get(v.question, v.question.replace("_", " ") + "?")
    return f"`{v.annotator}`'s vote on {_target(v.target_kind, v.target_id, names or {})}: {question} {answer}"


def _label_consensus(c: ConsensusRecord, names: dict[tuple[str, str], str] | None = None) -> str:
    return f"{_target(c.target_kind, c.target_id, names or {})}: {c.status}"


def _label_file(f: ReleaseFile) -> str:
    return f"`{f.name}` ({f.role})"


def _label_annotator(a: Annotator) -> str:
    return f"`{a.id}` ({a.kind})"


_KEYS: dict[Section, Callable[[Any], tuple[str, ...]]] = {
    "variables": lambda x: (x.id,),
    "transforms": lambda x: (x.id,),
    "models": lambda x: (x.id,),
    "alternatives": lambda x: (x.id,),
    "votes": lambda x: (x.target_kind, x.target_id, x.annotator, x.question),
    "consensus": lambda x: (x.target_kind, x.target_id),
    "files": lambda x: (x.name,),
    "annotators": lambda x: (x.id,),
}

_LABELS: dict[Section, Callable[[Any], str]] = {
    "variables": _label_variable,
    "transforms": _label_transform,
    "models": _label_model,
    "alternatives": _label_alternative,
    "votes": _label_vote,
    "consensus": _label_consensus,
    "files": _label_file,
    "annotators": _label_annotator,
}


def _keyed(section: Section, items: Sequence[BaseModel]) -> dict[tuple[str, ...], BaseModel]:
    keyed: dict[tuple[str, ...], BaseModel] = {}
    seen: dict[tuple[str, ...], int] = {}
    for item in items:
        key = _KEYS[section](item)
        seen[key] = seen.get(key, 0) + 1
        keyed[key if seen[key] == 1 else (*key, f"#{seen[key]}")] = item
    return keyed


def _diff_section(section: Section, old: Sequence[BaseModel], new: Sequence[BaseModel],
                  names: dict[tuple[str, str], str] | None = None) -> SectionDiff:
    plain = _LABELS[section]

    def label(item: Any) -> str:  # votes and consensus name the item they are about, as the reader knows it
        return plain(item, names) if section in ("votes", "consensus") else plain(item)  # type: ignore[call-arg]
    old_by_key, new_by_key = _keyed(section, old), _keyed(section, new)
    added = [ItemChange(key=k, label=label(v)) for k, v in new_by_key.items() if k not in old_by_key]
    removed = [ItemChange(key=k, label=label(v)) for k, v in old_by_key.items() if k not in new_by_key]
    changed = []
    for key, item in new_by_key.items():
        before = old_by_key.get(key)
        if before is not None:
            fields = _changed_fields(before.model_dump(mode="json"), item.model_dump(mode="json"))
            if fields:
                changed.append(ItemChange(key=key, label=label(item), fields=fields))
    return SectionDiff(added=added, removed=removed, changed=changed)


def _part_items(ds: DatasetRelease | None, name: str, part: ReleasePart) -> list[tuple[str, str, Any]]:
    value = None if ds is None else read_part(ds, name, part.model)
    if value is None:
        return []
    if part.items is not None:
        return part.items(value)
    return [(name, f"the {part.noun}", value.model_dump(mode="json"))]  # compared as one value


def _diff_part(old: list[tuple[str, str, Any]], new: list[tuple[str, str, Any]]) -> SectionDiff:
    def keyed(items: list[tuple[str, str, Any]]) -> dict[tuple[str, ...], tuple[str, Any]]:
        out: dict[tuple[str, ...], tuple[str, Any]] = {}
        for key, label, record in items:
            k: tuple[str, ...] = (key,)
            n = 1
            while k in out:  # a key that occurs twice: nothing is hidden
                n += 1
                k = (key, f"#{n}")
            out[k] = (label, record)
        return out
    old_by_key, new_by_key = keyed(old), keyed(new)
    added = [ItemChange(key=k, label=v[0]) for k, v in new_by_key.items() if k not in old_by_key]
    removed = [ItemChange(key=k, label=v[0]) for k, v in old_by_key.items() if k not in new_by_key]
    changed = []
    for key, (label, record) in new_by_key.items():
        if key in old_by_key:
            fields = _changed_fields(old_by_key[key][1], record)
            if fields:
                changed.append(ItemChange(key=key, label=label, fields=fields))
    return SectionDiff(added=added, removed=removed, changed=changed)


def _size(ds: DatasetRelease, name: str, part: ReleasePart) -> int:
    """How many items the dataset's part ``name`` holds: the first of its counts (the number of its items)."""
    value = read_part(ds, name, part.model)
    return 0 if value is None else int(next(iter(part.counts(value).values()), 0))


def _diff_dataset(old: DatasetRelease | None, new: DatasetRelease | None) -> DatasetDiff:
    either = new if new is not None else old
    assert either is not None
    names = {**_target_names(old), **_target_names(new)}
    sections = {
        s: _diff_section(s, getattr(old, s) if old else [], getattr(new, s) if new else [], names)
        for s in SECTIONS
    }
    known = declared_parts()
    parts = {name: diff for name, part in known.items()
             if not (diff := _diff_part(_part_items(old, name, part), _part_items(new, name, part))).is_empty}
    sizes = {name: _size(either, name, part) for name, part in known.items() if name in parts and part.items is None}
    if old is None or new is None:
        status = "added" if old is None else "removed"
        return DatasetDiff.model_validate({"name": either.name, "status": status, **sections, "parts": parts,
                                           "sizes": sizes})
    fields = _changed_fields(old.model_dump(mode="json"), new.model_dump(mode="json"), skip=_DATASET_SKIP)
    fields += [f"parts.{name}" for name in sorted({*old.parts, *new.parts} - set(known))
               if old.parts.get(name) != new.parts.get(name)]  # a part of a kind this forkpaths does not know
    status = "changed" if fields or parts or any(not d.is_empty for d in sections.values()) else "unchanged"
    return DatasetDiff.model_validate({"name": new.name, "status": status, "fields": fields, **sections,
                                       "parts": parts, "sizes": sizes})


def diff_releases(old: Release | None, new: Release) -> ReleaseDiff:
    """Compare two releases item by item.

    Args:
        old: the earlier release, or None when ``new`` is the first one (everything in it is then "added").
        new: the later release.

    Returns:
        The structured diff; render it with :func:`render_changelog`.
    """
    old_sets = {d.name: d for d in old.datasets} if old else {}
    new_sets = {d.name: d for d in new.datasets}
    datasets = [_diff_dataset(old_sets.get(name), ds) for name, ds in new_sets.items()]
    datasets += [_diff_dataset(ds, None) for name, ds in old_sets.items() if name not in new_sets]
    fields: list[str] = []
    if old is not None:
        fields = [f for f in _RELEASE_FIELDS if getattr(old, f) != getattr(new, f)]
    return ReleaseDiff(
        old_version=old.version if old else None,
        new_version=new.version,
        fields=fields,
        datasets_added=[n for n in new_sets if n not in old_sets],
        datasets_removed=[n for n in old_sets if n not in new_sets],
        datasets=datasets,
    )


# --- rendering -------------------------------------------------------------------------------------------


def _count(n: int, noun: str) -> str:
    plural = noun if n == 1 else f"{noun}s"
    return f"{n} {plural}"


def _ordered(d: DatasetDiff) -> list[tuple[str, str, str, SectionDiff]]:
    """Every section of the dataset's diff as (section or kind name, title, what one item is called, diff), in the
    changelog's order: decisions and their curation, then the kinds' parts, then files and annotators."""
    shared = [(str(s), _TITLES[s][0], _TITLES[s][1], d.section(s)) for s in SECTIONS]
    known = declared_parts()
    parts = [(n, _title(known[n].noun) if n in known else n, known[n].singular if n in known else f"{n} item", diff)
             for n, diff in d.parts.items()]
    return shared[:_BEFORE_PARTS] + parts + shared[_BEFORE_PARTS:]


def _title(noun: str) -> str:
    return noun[:1].upper() + noun[1:]


def _contents(d: DatasetDiff, which: Literal["added", "removed"]) -> str:
    """What a new (removed) dataset holds: how many items of each section; a part compared as one value counts its
    items, not itself."""
    parts = [_count(d.sizes.get(key, len(getattr(sec, which))), one) for key, _, one, sec in _ordered(d)
             if getattr(sec, which) and d.sizes.get(key, 1)]
    return ", ".join(parts) if parts else "no items"


def _names(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def render_changelog(diff: ReleaseDiff) -> str:
    """Render ``diff`` as the Markdown of a release's ``CHANGELOG.md`` (ends with a newline).

    A new or removed dataset is summarised with counts; in a dataset present in both releases every added,
    removed and changed item is listed, changed ones with the fields that differ.
    """
    out: list[str] = [f"# Changelog of release {diff.new_version}", ""]
    if diff.old_version is None:
        out += ["First release: there is no earlier release to compare with.", ""]
        for d in diff.datasets:
            out.append(f"- `{d.name}`: {_contents(d, 'added')}")
        return "\n".join([*out, ""]) if diff.datasets else "\n".join([*out, "It holds no datasets.", ""])

    out += [f"Compared with release {diff.old_version}.", ""]
    if not diff.has_changes:
        return "\n".join([*out, "No changes.", ""])

    by_status = {s: [d.name for d in diff.datasets if d.status == s] for s in ("added", "removed", "changed")}
    unchanged = [d.name for d in diff.datasets if d.status == "unchanged"]
    out += ["## Summary", ""]
    out += [f"- {field.replace('_', ' ').capitalize()} changed." for field in diff.fields]
    out += [f"- Datasets {status}: {_names(names)}" for status, names in by_status.items() if names]
    if unchanged:
        out.append(f"- Datasets unchanged: {_names(unchanged)}")
    out.append("")

    for d in diff.datasets:
        if d.status == "unchanged":
            continue
        out += [f"## Dataset `{d.name}` ({d.status})", ""]
        if d.status in ("added", "removed"):
            verb = "New in this release" if d.status == "added" else "Removed with it"
            out += [f"{verb}: {_contents(d, d.status)}.", ""]
            continue
        if d.fields:
            out += [f"Dataset fields changed: {_names(d.fields)}.", ""]
        for _, title, _, sec in _ordered(d):
            if sec.is_empty:
                continue
            out += [f"### {title}", ""]
            out += [f"- added {item.label}" for item in sec.added]
            out += [f"- removed {item.label}" for item in sec.removed]
            out += [f"- changed {item.label}: {_names(item.fields)}" for item in sec.changed]
            out.append("")
    return "\n".join(out)
