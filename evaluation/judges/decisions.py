"""Ground-truth variables and models of one release dataset, in the shape the judges compare.

Each ground-truth column is traced back to original data columns through the release's transform mappings
(``inputs → output``), so a variable operationalised by a derived column (``alldeaths_log``) is linked to
``alldeaths``: that is what the offline judge compares with the lineage of the agent's columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from evaluation.judges.base import GTModel, GTVariable, JudgeContext
from evaluation.records import GroundTruthCounts, UnitRef
from exports.blade_convert import classify_model_family
from exports.schema import DatasetRelease, ReleaseColumn

__all__ = ["GroundTruthDecisions", "decisions_from_release", "ground_truth_counts", "normalise_spec"]


class GroundTruthDecisions(BaseModel):
    context: JudgeContext
    variables: list[GTVariable] = Field(default_factory=list)
    models: list[GTModel] = Field(default_factory=list)


def normalise_spec(specification: str) -> str:
    """BLADE's de-duplication key for model specifications: stripped and lower-cased."""
    return specification.strip().lower()


def _producers(ds: DatasetRelease) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for t in ds.transforms:
        for m in t.mapping:
            if m.output:
                out.setdefault(m.output, [])
                out[m.output] += [i for i in m.inputs if i not in out[m.output]]
    return out


def _originals(names: Iterable[str], producers: dict[str, list[str]]) -> list[str]:
    seen: set[str] = set()
    found: list[str] = []
    stack = list(names)
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in producers and producers[name]:
            stack += producers[name]
        elif name not in found:
            found.append(name)
    return sorted(found)


def _column_originals(cols: Sequence[ReleaseColumn], producers: dict[str, list[str]]) -> list[str]:
    direct = [c.name for c in cols if c.origin == "original"]
    derived = [c.name for c in cols if c.origin == "derived"]
    return sorted(set(direct) | set(_originals(derived, producers)))


def decisions_from_release(ds: DatasetRelease) -> GroundTruthDecisions:
    """The judges' view of a release dataset's variables and models."""
    producers = _producers(ds)
    variables = [
        GTVariable(id=v.id, role="Moderator" if v.variable_type == "Control" and v.interaction else v.variable_type,
                   concept=v.concept, columns=[c.name for c in v.columns],
                   original_columns=_column_originals(v.columns, producers))
        for v in ds.variables]
    models = [
        GTModel(id=m.id, specification=m.specification or m.spec_name,
                family=m.family or classify_model_family(m.specification or m.spec_name),
                columns=[c.name for c in m.columns], original_columns=_column_originals(m.columns, producers),
                variable_ids=list(m.variable_ids))
        for m in ds.models]
    context = JudgeContext(dataset=ds.name, research_question=ds.research_question,
                           dictionary=list(ds.dictionary) or _dictionary_from_info(ds.info))
    return GroundTruthDecisions(context=context, variables=variables, models=models)


def _dictionary_from_info(info: dict) -> list[dict]:
    fields = (info.get("data_desc") or {}).get("fields") or []
    return [f for f in fields if isinstance(f, dict)]


def ground_truth_counts(ds: DatasetRelease, units: Sequence[UnitRef] = ()) -> GroundTruthCounts:
    """The metric constants of a dataset; ``units`` come from the ground-truth build (ROOT excluded)."""
    unique = {normalise_spec(m.specification or m.spec_name) for m in ds.models}
    return GroundTruthCounts(dataset=ds.name, units=list(units), num_cvars=len(ds.variables),
                             num_models=len(ds.models), num_models_unique=len(unique))
