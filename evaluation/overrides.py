"""Human overrides of automatic matches, applied to a result without touching the engine's own record.

An override says of one item of one analysis whether it counts as a match:

* ``variable``: the pair ``"<gt_id>|<agent_index>"`` of a ground-truth variable and an agent variable (any pair the
  judge scored, so a miss can be made a match, and a match a miss);
* ``model``: a ground-truth model row (its id) the agent's model was matched to; only "not a match" is possible,
  since the result file holds the rows that matched, not every row;
* ``transform``: ``"value|<unit id>"`` or ``"graph|<unit id>"``, a ground-truth transform unit of the dataset
  credited (or not) by value or by graph; any unit of the dataset, so a miss can be made a match. Only that
  unit is credited or withdrawn, not its ancestors: a person decides about the unit they looked at. It moves
  coverage (and so F1); precision counts the agent's own units, which such an override does not name.

:func:`apply_overrides` returns a corrected *copy* of the result; :func:`evaluation.results.reaggregate` then
recomputes the scores from it. The original result file stays as the engine wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel

from evaluation.judges.base import MATCH_THRESHOLD
from evaluation.records import UnitRef
from evaluation.results import AnalysisResult, EvaluationResult, run_precisions

__all__ = ["OverrideError", "OverrideSpec", "apply_overrides", "find_item", "original_value"]


class OverrideError(ValueError):
    """The override names an item the result does not have."""


class OverrideSpec(BaseModel):
    dataset: str
    analysis_key: str
    kind: Literal["variable", "model", "transform"]
    item: str
    value: bool


def _analysis(result: EvaluationResult, dataset: str, key: str) -> AnalysisResult:
    for d in result.datasets:
        if d.dataset == dataset:
            for a in d.analyses:
                if a.key == key:
                    return a
            raise OverrideError(f"dataset {dataset} has no analysis {key!r}.")
    raise OverrideError(f"the result has no dataset {dataset!r}.")


def _pair(item: str) -> tuple[str, int]:
    gt_id, _, index = item.rpartition("|")
    if not gt_id or not index.isdigit():
        raise OverrideError(f"variable item {item!r} is not '<ground-truth id>|<agent variable index>'.")
    return gt_id, int(index)


def find_item(result: EvaluationResult, dataset: str, key: str, kind: str, item: str) -> str:
    """A human description of the item; raises :class:`OverrideError` when the analysis has no such item."""
    a = _analysis(result, dataset, key)
    if kind == "variable":
        gt_id, index = _pair(item)
        for v in a.variables:
            if v.gt_id == gt_id and v.agent_index == index:
                return f"{v.gt_text} ↔ {v.agent_text}"
        raise OverrideError(f"analysis {key!r} of {dataset}: the judge did not compare variable {gt_id} with agent "
                            f"variable {index}.")
    if kind == "model":
        for m in a.models:
            if m.gt_id == item:
                return f"model: {m.specification}"
        raise OverrideError(f"analysis {key!r} of {dataset}: its model was not matched to ground-truth row {item}.")
    if kind == "transform":
        method, unit = _unit(result, dataset, item)
        return f"{method} match of ground-truth unit {unit.name}"
    raise OverrideError(f"unknown override kind {kind!r}; use variable, model or transform.")


def _unit(result: EvaluationResult, dataset: str, item: str) -> tuple[str, UnitRef]:
    method, _, unit_id = item.partition("|")
    if method not in ("value", "graph") or not unit_id:
        raise OverrideError(f"transform item {item!r} is not 'value|<unit id>' or 'graph|<unit id>'.")
    units = next(d.counts.units for d in result.datasets if d.dataset == dataset)
    unit = next((u for u in units if u.id == unit_id), None)
    if unit is None:
        raise OverrideError(f"dataset {dataset} has no ground-truth transform unit {unit_id}.")
    return method, unit


def original_value(result: EvaluationResult, dataset: str, key: str, kind: str, item: str) -> bool:
    """Whether the engine counted the item as a match."""
    find_item(result, dataset, key, kind, item)
    a = _analysis(result, dataset, key)
    if kind == "variable":
        gt_id, index = _pair(item)
        sims = [v.similarity for v in a.variables if v.gt_id == gt_id and v.agent_index == index]
        return bool(sims) and max(sims) >= MATCH_THRESHOLD
    if kind == "transform":
        method, unit = _unit(result, dataset, item)
        return unit in _matched_units(a, method)
    return True


def _matched_units(a: AnalysisResult, method: str) -> list[UnitRef]:
    t = a.record.transform
    return t.matched_value_units if method == "value" else t.matched_graph_units


def _apply(a: AnalysisResult, overrides: list[OverrideSpec], units: dict[str, UnitRef]) -> None:
    rec = a.record
    for o in (o for o in overrides if o.kind == "transform"):
        method, _, unit_id = o.item.partition("|")
        credited = [u for u in _matched_units(a, method) if u.id != unit_id]
        if o.value and unit_id in units:
            credited.append(units[unit_id])
        credited.sort(key=lambda u: u.id)
        if method == "value":
            rec.transform.matched_value_units = credited
        else:
            rec.transform.matched_graph_units = credited
    var = {_pair(o.item): o.value for o in overrides if o.kind == "variable"}
    if var:
        texts = {(v.gt_id, v.agent_index): (v.gt_text, v.agent_text) for v in a.variables}
        matched = {(v.gt_id, v.agent_index) for v in a.variables if v.similarity >= MATCH_THRESHOLD}
        removed = {p for p, keep in var.items() if not keep and p in matched}
        kept = (matched - removed) | {p for p, keep in var.items() if keep and p in texts}
        gt_texts = (set(rec.matched_cvars) - {texts[p][0] for p in removed}) | {texts[p][0] for p in kept}
        agent_texts = (set(rec.matched_cvars2) - {texts[p][1] for p in removed}) | {texts[p][1] for p in kept}
        rec.matched_cvars, rec.matched_cvars2 = sorted(gt_texts), sorted(agent_texts)
    dropped = {o.item for o in overrides if o.kind == "model" and not o.value}
    if dropped:
        remaining = [m for m in a.models if m.gt_id not in dropped]
        if not remaining:
            rec.matched_models, rec.matched_models_cvar_blade = [], []
        rec.matched_models_cvar = [label for label in rec.matched_models_cvar
                                   if not any(label.endswith(f"[{gt_id}]") for gt_id in dropped)]


def apply_overrides(result: EvaluationResult, overrides: Iterable[OverrideSpec]) -> EvaluationResult:
    """A copy of ``result`` whose run records reflect ``overrides`` (per-run precisions refreshed)."""
    out = result.model_copy(deep=True)
    grouped: dict[tuple[str, str], list[OverrideSpec]] = {}
    for o in overrides:
        _analysis(out, o.dataset, o.analysis_key)
        grouped.setdefault((o.dataset, o.analysis_key), []).append(o)
    for (dataset, key), items in grouped.items():
        a = _analysis(out, dataset, key)
        units = {u.id: u for d in out.datasets if d.dataset == dataset for u in d.counts.units}
        _apply(a, items, units)
        a.metrics = run_precisions(a.record, out.provenance.mode)
    return out
