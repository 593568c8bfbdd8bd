"""Format 1.x → 2.0: the one place that knows the release format's 1.x field names.

Format 1.x gave each kind of task a field of the dataset (``mcqs``, ``hypothesis_tasks``, ``programmatic_tasks``);
format 2.0 keeps a kind's items in ``DatasetRelease.parts[<kind>]``. :func:`upgrade_release_document` moves them
there losslessly (every item as it was; an empty list is no part, as a 2.0 cut writes it) and checks each moved
part against its model, so that a malformed 1.x part is refused with a sentence naming the file, the dataset
and the field before anything is taken. :func:`upgrade_summary` does the same for the per-dataset counts that
release records kept under format 1.x.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from exports import hypotheses_part, mcq_part, programmatic_part
from exports.errors import FormatError
from exports.hypotheses_part import HypothesesPart
from exports.mcq_part import MCQPart
from exports.parts import declare_part, declared_parts
from exports.programmatic_part import ProgrammaticPart
from exports.schema import FORMAT_VERSION

__all__ = ["LEGACY_PARTS", "upgrade_release_document", "upgrade_summary"]

#: 1.x field of a dataset → (the kind whose part it became, the key of the items in that part, its model)
LEGACY_PARTS: dict[str, tuple[str, str, type[BaseModel]]] = {
    "mcqs": ("mcq", "items", MCQPart),
    "hypothesis_tasks": ("hypotheses", "tasks", HypothesesPart),
    "programmatic_tasks": ("programmatic", "tasks", ProgrammaticPart),
}

# The parts of the kinds format 1.x had are known to every reader of a release, with or without the registry of
# kinds (which declares them again, in its kinds' order, when it registers them).
for _kind, _spec in ((MCQPart.kind, mcq_part.RELEASE_PART), (HypothesesPart.kind, hypotheses_part.RELEASE_PART),
                     (ProgrammaticPart.kind, programmatic_part.RELEASE_PART)):
    if _kind not in declared_parts():
        declare_part(_kind, _spec)

#: 1.x counts of a release record's summary → (kind, the label its part's counts give them)
_LEGACY_COUNTS: dict[str, tuple[str, str]] = {
    "mcqs": ("mcq", "MCQs"),
    "hypothesis_tasks": ("hypotheses", "hypothesis tasks"),
    "hypothesis_gold": ("hypotheses", "with gold"),
    "hypothesis_to_curate": ("hypotheses", "to curate"),
    "hypothesis_candidates": ("hypotheses", "candidates"),
    "hypothesis_consensus": ("hypotheses", "gold by consensus"),
}


def _is_1x(version: Any) -> bool:
    return isinstance(version, str) and version.split(".")[0] == "1"


def upgrade_release_document(obj: dict[str, Any], *, source: str) -> dict[str, Any]:
    """The 2.0 form of a ``release.json`` object (a 2.0 object is returned as it is).

    Raises:
        FormatError: a 1.x kind's field that is not a list, or an item that does not fit its kind's model: the
            sentence names ``source`` (the file), the dataset and the field; nothing is upgraded.
    """
    if not _is_1x(obj.get("format_version")):
        return obj
    datasets = obj.get("datasets")
    out = {**obj, "format_version": FORMAT_VERSION}
    if not isinstance(datasets, list):
        return out  # the schema names what is wrong with it
    upgraded = []
    for index, ds in enumerate(datasets):
        if not isinstance(ds, dict):
            upgraded.append(ds)
            continue
        name = ds.get("name", f"#{index + 1}")
        ds = dict(ds)
        parts = dict(ds.get("parts") or {})
        for field, (kind, key, model) in LEGACY_PARTS.items():
            if field not in ds:
                continue
            items = ds.pop(field)
            if not isinstance(items, list):
                raise FormatError(f"{source}: dataset {name!r}: field {field} is {type(items).__name__}, not a list "
                                  f"(format {obj['format_version']}); nothing was read.")
            if not items:
                continue
            try:
                model.model_validate({key: items})
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = [str(x) for x in first.get("loc", ())][1:]  # the first is the part's own key
                where = field + "".join(f"[{x}]" if x.isdigit() else f".{x}" for x in loc)
                raise FormatError(f"{source}: dataset {name!r}: field {where}: {first.get('msg', 'invalid')} "
                                  f"(format {obj['format_version']}); nothing was read.") from exc
            parts[kind] = {key: items}
        ds["parts"] = dict(sorted(parts.items()))
        upgraded.append(ds)
    out["datasets"] = upgraded
    return out


def upgrade_summary(counts: dict[str, Any]) -> dict[str, Any]:
    """A release record's counts for one dataset in the 2.0 shape: each kind's counts under ``parts[<kind>]``
    (records cut under format 1.x kept them as fields of their own; a 2.0 summary is returned as it is)."""
    if "parts" in counts:
        return counts
    out = {k: v for k, v in counts.items() if k not in _LEGACY_COUNTS}
    parts: dict[str, dict[str, int]] = {}
    for field, (kind, label) in _LEGACY_COUNTS.items():
        if field in counts:
            parts.setdefault(kind, {})[label] = int(counts[field] or 0)
    out["parts"] = {kind: c for kind, c in parts.items() if any(c.values())}
    return out
