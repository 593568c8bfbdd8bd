"""Paired comparison of two scored runs on the same release: per dataset and decision type, the F1 difference
with a paired bootstrap 95 % interval, and the items one run matched that the other did not.

Pairing: within a dataset, analysis *i* of run A is paired with analysis *i* of run B (both are the i-th sample
of their agent on the same question), and one bootstrap replicate draws the same indices for both, so
dataset-level noise shared by both runs cancels. When the two runs have different numbers of analyses for a
dataset, the indices are drawn independently for each run and the comparison says it is unpaired there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from evaluation.metrics import DECISION_TYPES, Mode, counted_runs, dataset_figures, f1
from evaluation.records import RunRecord
from evaluation.results import DatasetResult, EvaluationResult

__all__ = ["ItemDiff", "PairedComparison", "PairedDifference", "compare_runs", "matched_items"]


class PairedDifference(BaseModel):
    dataset: str = Field(description="a dataset name, or 'all' (mean over the common datasets)")
    decision_type: str
    f1_a: float | None
    f1_b: float | None
    diff: float | None = Field(description="F1(A) − F1(B)")
    ci_low: float | None = None
    ci_high: float | None = None
    paired: bool = True


class ItemDiff(BaseModel):
    dataset: str
    decision_type: str
    only_a: list[str] = Field(default_factory=list)
    only_b: list[str] = Field(default_factory=list)


class PairedComparison(BaseModel):
    datasets: list[str]
    mode: Mode
    n_bootstrap: int
    differences: list[PairedDifference]
    items: list[ItemDiff]
    notes: list[str] = Field(default_factory=list)


def _f1s(runs: Sequence[RunRecord], d: DatasetResult, mode: Mode, k: int) -> dict[str, float | None]:
    p, c = dataset_figures(runs, d.counts, mode, k)
    return {t: f1(p[t], c[t], mode) for t in DECISION_TYPES}


def _sub(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def _mean(values: list[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else float(np.mean(values))  # type: ignore[arg-type]


def matched_items(run: RunRecord, decision_type: str, mode: Mode = "default") -> set[str]:
    """The ground-truth items a run matched, as labels, for one decision type."""
    if decision_type == "cvar":
        return set(run.matched_cvars)
    if decision_type == "model":
        return set(run.matched_models)
    if decision_type == "model_cvar":
        return set(run.matched_models_cvar_blade if mode == "blade" else run.matched_models_cvar)
    units = run.transform.matched_value_units if decision_type == "value" else run.transform.matched_graph_units
    return {f"{u.name} [{u.id}]" for u in units}


def compare_runs(a: EvaluationResult, b: EvaluationResult, *, mode: Mode | None = None, k: int | None = None,
                 n_bootstrap: int = 1000, seed: int = 0) -> PairedComparison:
    """F1(A) − F1(B) per common dataset and decision type (and their mean), with paired bootstrap CIs."""
    mode = mode or a.provenance.mode
    k = k if k is not None else a.provenance.k
    notes: list[str] = []
    if a.provenance.release_version != b.provenance.release_version:
        notes.append(f"the runs were scored on different releases ({a.provenance.release_version} and "
                     f"{b.provenance.release_version}); differences mix agent and ground-truth changes.")
    da, db = {d.dataset: d for d in a.datasets}, {d.dataset: d for d in b.datasets}
    common = sorted(set(da) & set(db))
    for name in sorted(set(da) ^ set(db)):
        notes.append(f"{name} is scored in only one of the runs and left out.")
    runs_a = {n: counted_runs([x.record for x in da[n].analyses], mode) for n in common}
    runs_b = {n: counted_runs([x.record for x in db[n].analyses], mode) for n in common}
    point = {n: (_f1s(runs_a[n], da[n], mode, k), _f1s(runs_b[n], db[n], mode, k)) for n in common}
    paired = {n: len(runs_a[n]) == len(runs_b[n]) for n in common}
    for n in common:
        if not paired[n]:
            notes.append(f"{n}: {len(runs_a[n])} vs {len(runs_b[n])} analyses, resampled independently (unpaired).")
    boot: dict[tuple[str, str], list[float]] = {}
    rng = np.random.default_rng(seed)
    if n_bootstrap > 0 and all(runs_a[n] and runs_b[n] for n in common):
        for _ in range(n_bootstrap):
            per: dict[str, dict[str, float | None]] = {}
            for n in common:
                ia = rng.integers(0, len(runs_a[n]), size=len(runs_a[n]))
                ib = ia if paired[n] else rng.integers(0, len(runs_b[n]), size=len(runs_b[n]))
                fa = _f1s([runs_a[n][i] for i in ia], da[n], mode, k)
                fb = _f1s([runs_b[n][i] for i in ib], db[n], mode, k)
                per[n] = {t: _sub(fa[t], fb[t]) for t in DECISION_TYPES}
            for t in DECISION_TYPES:
                for n in common:
                    v = per[n][t]
                    if v is not None:
                        boot.setdefault((n, t), []).append(v)
                overall = _mean([per[n][t] for n in common])
                if overall is not None:
                    boot.setdefault(("all", t), []).append(overall)
    elif n_bootstrap > 0:
        notes.append("no bootstrap: a dataset has no counted analyses in one of the runs.")

    def row(name: str, t: str, fa: float | None, fb: float | None, is_paired: bool) -> PairedDifference:
        values = boot.get((name, t), [])
        lo = hi = None
        if values and len(values) == n_bootstrap:
            lo, hi = (float(x) for x in np.quantile(np.asarray(values), [0.025, 0.975]))
        return PairedDifference(dataset=name, decision_type=t, f1_a=fa, f1_b=fb, diff=_sub(fa, fb), ci_low=lo,
                                ci_high=hi, paired=is_paired)

    differences = [row(n, t, point[n][0][t], point[n][1][t], paired[n]) for n in common for t in DECISION_TYPES]
    for t in DECISION_TYPES:
        differences.append(row("all", t, _mean([point[n][0][t] for n in common]),
                               _mean([point[n][1][t] for n in common]), all(paired.values())))
    items = []
    for n in common:
        for t in DECISION_TYPES:
            sa = set().union(*(matched_items(r, t, mode) for r in runs_a[n][:k])) if runs_a[n] else set()
            sb = set().union(*(matched_items(r, t, mode) for r in runs_b[n][:k])) if runs_b[n] else set()
            items.append(ItemDiff(dataset=n, decision_type=t, only_a=sorted(sa - sb), only_b=sorted(sb - sa)))
    return PairedComparison(datasets=common, mode=mode, n_bootstrap=n_bootstrap, differences=differences,
                            items=items, notes=notes)
