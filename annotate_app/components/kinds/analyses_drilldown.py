"""Tables of one scored analysis (pure: result objects → DataFrames), for the run-details page."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from curation.models import ScoreOverride
from evaluation.judges.base import MATCH_THRESHOLD
from evaluation.results import AnalysisResult, DatasetResult

SCORE_COLUMNS = {"cvar": "variables", "value": "transforms (value)", "graph": "transforms (graph)",
                 "model": "model", "model_cvar": "model + variables"}


def analyses_table(dataset: DatasetResult, overrides: Sequence[ScoreOverride]) -> pd.DataFrame:
    """One row per analysis: status, failure, per-run precision per decision type, overrides."""
    counts: dict[str, int] = {}
    for o in overrides:
        if o.dataset == dataset.dataset:
            counts[o.analysis_key] = counts.get(o.analysis_key, 0) + 1
    return pd.DataFrame([{
        "analysis": a.key, "status": a.status, "failure": a.record.failure.value or "",
        **{label: a.metrics.get(t, 0.0) for t, label in SCORE_COLUMNS.items()},
        "mean score": sum(a.metrics.values()) / max(len(a.metrics), 1),
        "overrides": counts.get(a.key, 0), "message": a.message or a.record.failure_message} for a in dataset.analyses])


def _override_for(overrides: Sequence[ScoreOverride], dataset: str, key: str, kind: str, item: str,
                  ) -> ScoreOverride | None:
    return next((o for o in overrides if (o.dataset, o.analysis_key, o.kind, o.item) == (dataset, key, kind, item)),
                None)


def variables_table(dataset: str, a: AnalysisResult, overrides: Sequence[ScoreOverride],
                    authors: dict[int, str]) -> pd.DataFrame:
    """Every (ground-truth variable, agent variable) pair the judge scored, with the judge's reason and any
    override (who, why, the original value)."""
    rows = []
    seen: set[tuple[str, int]] = set()
    for v in sorted(a.variables, key=lambda v: (-v.similarity, v.gt_text)):
        if (v.gt_id, v.agent_index) in seen:
            continue
        seen.add((v.gt_id, v.agent_index))
        item = f"{v.gt_id}|{v.agent_index}"
        o = _override_for(overrides, dataset, a.key, "variable", item)
        engine = v.similarity >= MATCH_THRESHOLD
        rows.append({"item": item, "ground truth": v.gt_text, "agent": v.agent_text, "similarity": v.similarity,
                     "match": (o.value if o else engine), "engine said": engine, "judge": v.judge,
                     "reason": v.rationale,
                     "override": f"{authors.get(o.author_id, '?')}: {o.reason}" if o else ""})
    return pd.DataFrame(rows, columns=["item", "ground truth", "agent", "similarity", "match", "engine said", "judge",
                                       "reason", "override"])


def models_table(dataset: str, a: AnalysisResult, overrides: Sequence[ScoreOverride],
                 authors: dict[int, str]) -> pd.DataFrame:
    rows = []
    for m in a.models:
        o = _override_for(overrides, dataset, a.key, "model", m.gt_id)
        rows.append({"item": m.gt_id, "ground-truth model": m.specification, "match": o.value if o else True,
                     "variables match too": m.cvars_all_matched, "judge": m.judge, "reason": m.rationale,
                     "override": f"{authors.get(o.author_id, '?')}: {o.reason}" if o else ""})
    return pd.DataFrame(rows, columns=["item", "ground-truth model", "match", "variables match too", "judge", "reason",
                                       "override"])


def converter_table(a: AnalysisResult) -> pd.DataFrame:
    """The units the converter read from the agent's code, in order: verb, inputs → output, group-by keys."""
    rows = [{"step": n, "verb": u.verb, "inputs": ", ".join(u.inputs), "output": u.output or "(whole frame)",
             "group by": ", ".join(u.groupby)} for n, u in enumerate(a.record.transform.agent_units, start=1)]
    return pd.DataFrame(rows, columns=["step", "verb", "inputs", "output", "group by"])


def lineage_table(a: AnalysisResult) -> pd.DataFrame:
    rows = [{"column": c, "from data columns": ", ".join(src) or "(constants only)"}
            for c, src in sorted(a.record.transform.column_lineage.items())]
    return pd.DataFrame(rows, columns=["column", "from data columns"])


def units_table(a: AnalysisResult) -> pd.DataFrame:
    t = a.record.transform
    rows = [{"ground-truth unit": u.name, "id": u.id, "matched by": "value"} for u in t.matched_value_units]
    rows += [{"ground-truth unit": u.name, "id": u.id, "matched by": "graph"} for u in t.matched_graph_units]
    return pd.DataFrame(rows, columns=["ground-truth unit", "id", "matched by"])


def unit_choices(ds: DatasetResult, a: AnalysisResult) -> list[tuple[str, str, str, bool]]:
    """Every ground-truth unit by value and by graph, as override items: (item, unit name, method, matched now)."""
    t = a.record.transform
    hit = {"value": {u.id for u in t.matched_value_units}, "graph": {u.id for u in t.matched_graph_units}}
    return [(f"{method}|{u.id}", u.name, method, u.id in hit[method])
            for u in ds.counts.units for method in ("value", "graph")]


def missed_units(units: Sequence[tuple[str, str]], a: AnalysisResult) -> pd.DataFrame:
    """Ground-truth units (id, name) this analysis matched neither by value nor by graph."""
    t = a.record.transform
    hit = {u.id for u in t.matched_value_units} | {u.id for u in t.matched_graph_units}
    return pd.DataFrame([{"ground-truth unit": n, "id": i} for i, n in units if i not in hit],
                        columns=["ground-truth unit", "id"])
