"""BLADE's metrics (blade-reference 4.7) over run records, in two modes.

``blade`` reproduces BLADE's definitions *including* its documented defects, so a figure can be put next to a
published one:

* only runs that finished (``blade_status == 5``) count, plus generation failures (status 2) padded in as zero
  runs after them; runs that crashed at conversion (1), matching (6) or metrics (7) silently drop out;
* the cvar precision denominator counts only the agent variables of roles the ground truth has;
* model+variable credit uses the *representative* row's variables for every row with the same specification;
* coverage of transform units counts distinct unit *names* over a denominator of unit ids (colliding names
  understate coverage);
* F1 divides by zero when precision and coverage are both 0 (reported as ``None``, "undefined");
* the unweighted score adds a literal 0.5 instead of halving the value-F1 (``… + 0.5 + F1_value``);
* the bootstrap needs strictly more than k runs per dataset (BLADE asserts; here the CI is left out with a note).

``default`` fixes them: every submitted run counts (a run that failed scores 0 and its failure is reported by
category), the cvar denominator is every agent variable, each model row is checked against its own variables,
coverage counts unit ids, F1 is 0 when both parts are 0, the unweighted score halves both transform F1s, and the
bootstrap works with any number of runs.

Definitions shared by both modes. Per run: cvar precision = |matched agent variables| / max(n, 1); model and
model+cvar precision = 1 if matched else 0; value/graph precision = |matched agent units| / max(agent units, 1).
Per dataset: precision = mean over its runs; coverage@k over its first k runs: cvar = |∪ matched GT variables| /
GT variables; model = |∪ matched specs| / min(unique GT specs, runs); model+cvar = |∪ labels| / min(GT model
rows, runs); value/graph = |∪ matched GT units| / GT units. Overall = mean over datasets. F1 = 2PC/(P+C).
Weights over datasets: T = Σ units, V = Σ variables, M = Σ min(model rows, k), U = Σ min(unique specs, k),
S = T+V+M+U; w_cvar = V/S, w_model = U/S, w_model_cvar = M/S, w_value = w_graph = T/2S.
Bootstrap: each replicate resamples every dataset's counted runs with replacement (same size) and recomputes
everything; mean and the 2.5/97.5 % quantiles of 1,000 seeded replicates (numpy).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from evaluation.records import (
    BLADE_FINISHED,
    BLADE_GENERATION_FAILED,
    FailureCategory,
    GroundTruthCounts,
    RunRecord,
)

if TYPE_CHECKING:  # numpy is imported by the functions that compute (registering a run reads this module's models)
    import numpy as np

__all__ = ["dataset_figures",
    "COVERAGE_METRICS",
    "DECISION_TYPES",
    "PRECISION_METRICS",
    "DatasetRuns",
    "DatasetScores",
    "Estimate",
    "Mode",
    "Scores",
    "cluster_bootstrap_mean",
    "counted_runs",
    "f1",
    "proportion_estimate",
    "score_runs",
    "unweighted_score",
    "weighted_score",
    "weights",
]

Mode = Literal["default", "blade"]
DecisionType = Literal["cvar", "model", "model_cvar", "value", "graph"]
DECISION_TYPES: tuple[str, ...] = ("cvar", "model", "model_cvar", "value", "graph")


class DatasetRuns(BaseModel):
    """The runs submitted for one dataset, in submission order, with the dataset's constants."""

    counts: GroundTruthCounts
    runs: list[RunRecord] = Field(default_factory=list)


# ------------------------------------------------------------------------------------------- per run

PrecisionFn = Callable[[RunRecord, Mode], float]
PRECISION_METRICS: dict[str, PrecisionFn] = {}


def precision_metric(name: DecisionType) -> Callable[[PrecisionFn], PrecisionFn]:
    """Register a per-run precision ("hit rate") under ``name``."""

    def deco(fn: PrecisionFn) -> PrecisionFn:
        PRECISION_METRICS[name] = fn
        return fn

    return deco


@precision_metric("cvar")
def precision_cvar(run: RunRecord, mode: Mode) -> float:
    denominator = run.num_cvars2_shown if mode == "blade" else run.num_cvars2
    return len(set(run.matched_cvars2)) / max(denominator, 1)


@precision_metric("model")
def precision_model(run: RunRecord, mode: Mode) -> float:
    return 1.0 if run.matched_models else 0.0


@precision_metric("model_cvar")
def precision_model_cvar(run: RunRecord, mode: Mode) -> float:
    return 1.0 if (run.matched_models_cvar_blade if mode == "blade" else run.matched_models_cvar) else 0.0


@precision_metric("value")
def precision_value(run: RunRecord, mode: Mode) -> float:
    return len(set(run.transform.matched_value_units2)) / max(run.transform.num_agent_units, 1)


@precision_metric("graph")
def precision_graph(run: RunRecord, mode: Mode) -> float:
    return len(set(run.transform.matched_graph_units2)) / max(run.transform.num_agent_units, 1)


# ------------------------------------------------------------------------------------------- coverage

CoverageFn = Callable[[Sequence[RunRecord], GroundTruthCounts, Mode], "float | None"]
COVERAGE_METRICS: dict[str, CoverageFn] = {}


def coverage_metric(name: DecisionType) -> Callable[[CoverageFn], CoverageFn]:
    """Register a coverage function (over the first k counted runs of a dataset) under ``name``."""

    def deco(fn: CoverageFn) -> CoverageFn:
        COVERAGE_METRICS[name] = fn
        return fn

    return deco


def _ratio(numerator: int, denominator: int, mode: Mode) -> float | None:
    if denominator <= 0:
        return None if mode == "blade" else 0.0  # BLADE divides by zero; the fix scores nothing to cover as 0
    return numerator / denominator


@coverage_metric("cvar")
def coverage_cvar(runs: Sequence[RunRecord], counts: GroundTruthCounts, mode: Mode) -> float | None:
    found = set().union(*(r.matched_cvars for r in runs)) if runs else set()
    return _ratio(len(found), counts.num_cvars, mode)


@coverage_metric("model")
def coverage_model(runs: Sequence[RunRecord], counts: GroundTruthCounts, mode: Mode) -> float | None:
    found = set().union(*(r.matched_models for r in runs)) if runs else set()
    return _ratio(len(found), min(counts.num_models_unique, len(runs)), mode)


@coverage_metric("model_cvar")
def coverage_model_cvar(runs: Sequence[RunRecord], counts: GroundTruthCounts, mode: Mode) -> float | None:
    labels = [r.matched_models_cvar_blade if mode == "blade" else r.matched_models_cvar for r in runs]
    found = set().union(*labels) if labels else set()
    return _ratio(len(found), min(counts.num_models, len(runs)), mode)


def _unit_coverage(runs: Sequence[RunRecord], counts: GroundTruthCounts, mode: Mode, graph: bool) -> float | None:
    units = [u for r in runs for u in (r.transform.matched_graph_units if graph else r.transform.matched_value_units)]
    found = {u.name for u in units} if mode == "blade" else {u.id for u in units}
    return _ratio(len(found), len(counts.units), mode)


@coverage_metric("value")
def coverage_value(runs: Sequence[RunRecord], counts: GroundTruthCounts, mode: Mode) -> float | None:
    return _unit_coverage(runs, counts, mode, graph=False)


@coverage_metric("graph")
def coverage_graph(runs: Sequence[RunRecord], counts: GroundTruthCounts, mode: Mode) -> float | None:
    return _unit_coverage(runs, counts, mode, graph=True)


# ------------------------------------------------------------------------------------------- combining


def counted_runs(runs: Sequence[RunRecord], mode: Mode) -> list[RunRecord]:
    """The runs a mode averages over, in order (see the module docstring)."""
    if mode == "default":
        return [r if r.scored else RunRecord(key=r.key, failure=r.failure, blade_status=r.blade_status)
                for r in runs]
    finished = [r for r in runs if r.blade_status == BLADE_FINISHED]
    padded = [RunRecord(key=r.key, failure=r.failure, blade_status=r.blade_status)
              for r in runs if r.blade_status == BLADE_GENERATION_FAILED]
    return finished + padded


def f1(precision: float | None, coverage: float | None, mode: Mode) -> float | None:
    """Harmonic mean; ``blade`` leaves 0/0 undefined (BLADE raises ZeroDivisionError), ``default`` gives 0."""
    if precision is None or coverage is None:
        return None
    if precision + coverage == 0:
        return None if mode == "blade" else 0.0
    return 2 * precision * coverage / (precision + coverage)


def weights(counts: Sequence[GroundTruthCounts], k: int) -> dict[str, float]:
    """BLADE's decision-type weights over the datasets evaluated."""
    t = sum(len(c.units) for c in counts)
    v = sum(c.num_cvars for c in counts)
    m = sum(min(c.num_models, k) for c in counts)
    u = sum(min(c.num_models_unique, k) for c in counts)
    s = t + v + m + u
    if s == 0:
        return dict.fromkeys(DECISION_TYPES, 0.0)
    return {"cvar": v / s, "model": u / s, "model_cvar": m / s, "value": t / (2 * s), "graph": t / (2 * s)}


def _defined(f1s: dict[str, float | None]) -> dict[str, float] | None:
    out = {t: f1s[t] for t in DECISION_TYPES}
    return None if any(v is None for v in out.values()) else {t: float(v or 0.0) for t, v in out.items()}


def weighted_score(f1s: dict[str, float | None], w: dict[str, float]) -> float | None:
    """Σ w_type · F1_type; undefined when an F1 is."""
    f = _defined(f1s)
    return None if f is None else sum(w[t] * f[t] for t in DECISION_TYPES)


def unweighted_score(f1s: dict[str, float | None], mode: Mode) -> float | None:
    """(F1_cvar + F1_model + F1_model_cvar + ½F1_graph + ½F1_value) / 4, or BLADE's typo in ``blade`` mode."""
    f = _defined(f1s)
    if f is None:
        return None
    c, m, mc, v, g = (f[t] for t in ("cvar", "model", "model_cvar", "value", "graph"))
    if mode == "blade":
        return (c + m + mc + 0.5 * g + 0.5 + v) / 4  # BLADE's typo (``+ 0.5 +``), kept on purpose
    return (c + m + mc + 0.5 * g + 0.5 * v) / 4


def _mean(values: Sequence[float | None]) -> float | None:
    import numpy as np

    vals = [v for v in values if v is not None]
    if len(vals) != len(values) or not vals:
        return None
    return float(np.mean(vals))


# ------------------------------------------------------------------------------------------- results


class Estimate(BaseModel):
    """A point estimate with its bootstrap mean and 95 % interval (``None``: undefined or not computed)."""

    point: float | None
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


class DatasetScores(BaseModel):
    dataset: str
    runs_submitted: int
    runs_counted: int
    precision: dict[str, float | None]
    coverage: dict[str, float | None]
    failures: dict[str, int] = Field(default_factory=dict)


class Scores(BaseModel):
    """Everything :func:`score_runs` computed, with the mode and parameters that produced it."""

    mode: Mode
    k: int
    n_bootstrap: int
    seed: int
    datasets: list[DatasetScores]
    precision: dict[str, float | None]
    coverage: dict[str, float | None]
    f1: dict[str, float | None]
    weights: dict[str, float]
    weighted: Estimate
    unweighted: Estimate
    bootstrap: dict[str, Estimate] = Field(default_factory=dict, description="per-type precision/coverage/F1")
    failures: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


def dataset_figures(runs: Sequence[RunRecord], counts: GroundTruthCounts, mode: Mode, k: int,
                    ) -> tuple[dict[str, float | None], dict[str, float | None]]:
    """One dataset's precision and coverage per decision type, from its runs (what the bootstraps resample)."""
    precision = {t: (_mean([PRECISION_METRICS[t](r, mode) for r in runs]) if runs else
                     (None if mode == "blade" else 0.0)) for t in DECISION_TYPES}
    first = list(runs[:k])
    coverage = {t: COVERAGE_METRICS[t](first, counts, mode) for t in DECISION_TYPES}
    return precision, coverage


def _overall(per_dataset: Sequence[tuple[dict[str, float | None], dict[str, float | None]]],
             counts: Sequence[GroundTruthCounts], mode: Mode, k: int) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    precision = {t: _mean([p[t] for p, _ in per_dataset]) for t in DECISION_TYPES}
    coverage = {t: _mean([c[t] for _, c in per_dataset]) for t in DECISION_TYPES}
    f1s = {t: f1(precision[t], coverage[t], mode) for t in DECISION_TYPES}
    w = weights(counts, k)
    for t in DECISION_TYPES:
        out[f"precision.{t}"], out[f"coverage.{t}"], out[f"f1.{t}"] = precision[t], coverage[t], f1s[t]
    out["weighted"] = weighted_score(f1s, w)
    out["unweighted"] = unweighted_score(f1s, mode)
    return out


def _coverage_sets(run: RunRecord, mode: Mode) -> dict[str, set[object]]:
    """What each coverage metric unions over a run (see the coverage functions above)."""
    def units(graph: bool) -> set[object]:
        found = run.transform.matched_graph_units if graph else run.transform.matched_value_units
        return {u.name for u in found} if mode == "blade" else {u.id for u in found}

    return {"cvar": set(run.matched_cvars), "model": set(run.matched_models),
            "model_cvar": set(run.matched_models_cvar_blade if mode == "blade" else run.matched_models_cvar),
            "value": units(False), "graph": units(True)}


def _coverage_denominator(t: str, counts: GroundTruthCounts, runs: int) -> int:
    return {"cvar": counts.num_cvars, "model": min(counts.num_models_unique, runs),
            "model_cvar": min(counts.num_models, runs), "value": len(counts.units), "graph": len(counts.units)}[t]


def _bootstrap(counted: Sequence[Sequence[RunRecord]], counts: Sequence[GroundTruthCounts], mode: Mode, k: int,
               n_bootstrap: int, seed: int) -> dict[str, Any]:
    """Every figure of :func:`_overall` over ``n_bootstrap`` resamples of each dataset's counted runs: exactly
    the numbers of recomputing everything per replicate (the same draws, in the same order; the same float
    operations, row by row), computed per decision type over all replicates at once.

    A run's precision does not depend on the sample, so it is computed once per run; a replicate's coverage is
    the size of a union of the first k sampled runs' sets, kept as bit masks."""
    import numpy as np

    rng = np.random.default_rng(seed)
    indexes: list[np.ndarray]  # per dataset (replicates, runs), C-contiguous: a row's mean is np.mean of that sample
    if len(counted) == 1:  # the replicates' draws in one call: the generator gives the same numbers in the same order
        indexes = [rng.integers(0, len(counted[0]), size=(n_bootstrap, len(counted[0])))]
    else:  # the datasets' draws interleave, replicate after replicate
        draws: list[list[np.ndarray]] = [[] for _ in counted]
        for _ in range(n_bootstrap):
            for d, runs in enumerate(counted):
                draws[d].append(rng.integers(0, len(runs), size=len(runs)))
        indexes = [np.vstack(picks) for picks in draws]
    precision: dict[str, list[np.ndarray]] = {t: [] for t in DECISION_TYPES}
    coverage: dict[str, list[np.ndarray | None]] = {t: [] for t in DECISION_TYPES}
    for runs, count, index in zip(counted, counts, indexes, strict=True):
        first = index[:, :k]
        sets = [_coverage_sets(r, mode) for r in runs]
        for t in DECISION_TYPES:
            per_run = np.asarray([PRECISION_METRICS[t](r, mode) for r in runs], dtype=float)
            precision[t].append(np.mean(per_run[index], axis=1))
            denominator = _coverage_denominator(t, count, first.shape[1])
            if denominator <= 0:
                coverage[t].append(None if mode == "blade" else np.zeros(n_bootstrap))
                continue
            coverage[t].append(_covered(first, [s[t] for s in sets]) / denominator)
    out: dict[str, Any] = {}  # each figure: an array of the replicates' values, or a list of None (undefined)
    undefined: list[None] = [None] * n_bootstrap
    f1s: dict[str, np.ndarray | None] = {}
    for t in DECISION_TYPES:
        p = np.mean(np.column_stack(precision[t]), axis=1)
        columns = coverage[t]
        c = None if any(x is None for x in columns) else np.mean(np.column_stack(columns), axis=1)  # type: ignore[arg-type]
        f: np.ndarray | None = None
        if c is not None:
            total = p + c
            with np.errstate(divide="ignore", invalid="ignore"):
                f = 2 * p * c / total
            zero = total == 0
            if zero.any():
                if mode == "blade":
                    f = None
                else:
                    f[zero] = 0.0
        out[f"precision.{t}"], out[f"coverage.{t}"] = p, (undefined if c is None else c)
        out[f"f1.{t}"] = undefined if f is None else f
        f1s[t] = f
    if any(f is None for f in f1s.values()):
        out["weighted"] = out["unweighted"] = undefined
        return out
    w = weights(counts, k)
    weighted: np.ndarray | float = 0
    for t in DECISION_TYPES:
        weighted = weighted + w[t] * f1s[t]  # type: ignore[operator]
    out["weighted"] = np.asarray(weighted, dtype=float)
    cv, m, mc, v, g = (f1s[t] for t in ("cvar", "model", "model_cvar", "value", "graph"))
    if mode == "blade":
        out["unweighted"] = (cv + m + mc + 0.5 * g + 0.5 + v) / 4  # type: ignore[operator]  # BLADE's typo
    else:
        out["unweighted"] = (cv + m + mc + 0.5 * g + 0.5 * v) / 4  # type: ignore[operator]
    return out


def _union(masks: Sequence[int], row: Sequence[int]) -> int:
    found = 0
    for i in row:
        found |= masks[i]
    return found


_COVERED_CELLS = 20_000_000  # above this many (replicate, run, item) cells, the replicates are counted one by one


def _covered(first: np.ndarray, sets: Sequence[set[object]]) -> np.ndarray:
    """Per replicate (a row of ``first``: the indexes of its first k sampled runs), how many distinct items
    those runs' ``sets`` hold together, as floats: a (runs x items) membership matrix indexed by every
    replicate at once, or the runs' sets as bit masks unioned row by row when that matrix would be large."""
    import numpy as np

    bits: dict[object, int] = {}
    for s in sets:
        for item in s:
            bits.setdefault(item, len(bits))
    if first.size * max(len(bits), 1) <= _COVERED_CELLS:
        member = np.zeros((len(sets), len(bits)), dtype=bool)
        for i, s in enumerate(sets):
            member[i, [bits[item] for item in s]] = True
        return member[first].any(axis=1).sum(axis=1).astype(float)
    masks = [sum(1 << bits[item] for item in s) for s in sets]
    return np.fromiter(((_union(masks, row)).bit_count() for row in first.tolist()), dtype=float,
                       count=first.shape[0])


def score_runs(data: Sequence[DatasetRuns], *, mode: Mode = "default", k: int = 10, n_bootstrap: int = 1000,
               seed: int = 0) -> Scores:
    """Precision, coverage@k, F1 per decision type, weighted and unweighted scores, bootstrap CIs.

    Args:
        data: per dataset, its constants and its submitted runs in order.
        mode: ``default`` (defects fixed) or ``blade`` (BLADE's definitions, defects included).
        k: coverage@k and the model-weight cap (BLADE: 10).
        n_bootstrap: replicates (BLADE: 1000); 0 skips the bootstrap.
        seed: numpy seed of the bootstrap, stored with the result.
    """
    import numpy as np

    notes: list[str] = []
    counted = [counted_runs(d.runs, mode) for d in data]
    counts = [d.counts for d in data]
    per_dataset = [dataset_figures(runs, d.counts, mode, k) for runs, d in zip(counted, data, strict=True)]
    overall = _overall(per_dataset, counts, mode, k)
    failures: Counter[str] = Counter()
    datasets = []
    for d, runs, (p, c) in zip(data, counted, per_dataset, strict=True):
        fails = Counter(r.failure.value for r in d.runs if r.failure != FailureCategory.NONE)
        failures.update(fails)
        dropped = len(d.runs) - len(runs)
        if dropped:
            notes.append(f"{d.counts.dataset}: {dropped} run(s) dropped as BLADE does (crashed after generation).")
        datasets.append(DatasetScores(dataset=d.counts.dataset, runs_submitted=len(d.runs), runs_counted=len(runs),
                                      precision=p, coverage=c, failures=dict(fails)))
    boot: dict[str, Any] = {}
    if n_bootstrap > 0 and data:
        short = [d.counts.dataset for d, runs in zip(data, counted, strict=True) if len(runs) <= k]
        empty = [d.counts.dataset for d, runs in zip(data, counted, strict=True) if not runs]
        if mode == "blade" and short:
            notes.append(f"no bootstrap: BLADE needs more than k={k} counted runs per dataset "
                         f"({', '.join(short)} have fewer).")
        elif empty:
            notes.append(f"no bootstrap: no counted runs for {', '.join(empty)}.")
        else:
            boot = _bootstrap(counted, counts, mode, k, n_bootstrap, seed)

    def estimate(name: str) -> Estimate:
        values = boot.get(name)
        if values is None or len(values) == 0 or (
                not isinstance(values, np.ndarray) and any(v is None for v in values)):  # floats: never None
            return Estimate(point=overall[name])
        arr = np.asarray(values, dtype=float)
        lo, hi = np.quantile(arr, [0.025, 0.975])
        return Estimate(point=overall[name], mean=float(arr.mean()), ci_low=float(lo), ci_high=float(hi))

    return Scores(
        mode=mode, k=k, n_bootstrap=n_bootstrap, seed=seed, datasets=datasets,
        precision={t: overall[f"precision.{t}"] for t in DECISION_TYPES},
        coverage={t: overall[f"coverage.{t}"] for t in DECISION_TYPES},
        f1={t: overall[f"f1.{t}"] for t in DECISION_TYPES}, weights=weights(counts, k),
        weighted=estimate("weighted"), unweighted=estimate("unweighted"),
        bootstrap={name: estimate(name) for name in overall if name not in ("weighted", "unweighted")},
        failures=dict(failures), notes=notes)


def proportion_estimate(values: Sequence[bool], *, n_bootstrap: int = 1000, seed: int = 0) -> Estimate:
    """The share of ``True`` in ``values`` with its 95 % percentile-bootstrap interval (items resampled with
    replacement); ``point`` None when there are no values, no interval when ``n_bootstrap`` is 0.

    Used for rates over items (the reproducibility rate, accuracy): each item counts once."""
    import numpy as np

    n = len(values)
    if n == 0:
        return Estimate(point=None)
    arr = np.asarray(values, dtype=float)
    point = float(arr.mean())
    if n_bootstrap <= 0:
        return Estimate(point=point)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, n, size=(n_bootstrap, n))].mean(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return Estimate(point=point, mean=float(means.mean()), ci_low=float(lo), ci_high=float(hi))


def cluster_bootstrap_mean(values: Sequence[float], clusters: Sequence[str], *, n_bootstrap: int = 1000,
                           seed: int = 0) -> Estimate:
    """The mean of ``values`` with a 95 % bootstrap interval that resamples whole clusters (e.g. the dataset folder
    each item comes from), so items that share a cluster are not counted as independent evidence.

    Each replicate draws as many clusters as there are, with replacement, and averages every item of the drawn
    clusters. ``None`` point when there are no values; no interval with one cluster or ``n_bootstrap`` 0.
    """
    import numpy as np

    if len(values) != len(clusters):
        raise ValueError("values and clusters must have the same length")
    if not values:
        return Estimate(point=None)
    point = float(np.mean(values))
    groups: dict[str, list[float]] = {}
    for v, c in zip(values, clusters, strict=True):
        groups.setdefault(c, []).append(float(v))
    names = sorted(groups)
    if n_bootstrap <= 0 or len(names) < 2:
        return Estimate(point=point)
    sums = np.array([sum(groups[n]) for n in names])
    sizes = np.array([len(groups[n]) for n in names])
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(names), size=(n_bootstrap, len(names)))
    means = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return Estimate(point=point, mean=float(means.mean()), ci_low=float(lo), ci_high=float(hi))
