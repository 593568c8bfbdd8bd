"""The bootstrap of :func:`evaluation.metrics.score_runs` computed per decision type over all replicates at once
gives exactly (bit for bit) the figures of recomputing everything replicate by replicate, in both modes.

The reference below is the replicate-by-replicate loop the metrics used before: it resamples every dataset's
counted runs with ``rng.integers`` and recomputes every dataset's figures and the overall ones."""

from __future__ import annotations

import random

import numpy as np
import pytest

from evaluation.metrics import (
    DatasetRuns,
    _overall,
    counted_runs,
    dataset_figures,
    score_runs,
)
from evaluation.records import (
    BLADE_EXECUTION_FAILED,
    BLADE_FINISHED,
    BLADE_GENERATION_FAILED,
    FailureCategory,
    GroundTruthCounts,
    RunRecord,
    TransformMatch,
    UnitRef,
)


def _reference(data: list[DatasetRuns], mode: str, k: int, n_bootstrap: int, seed: int) -> dict[str, list]:
    counted = [counted_runs(d.runs, mode) for d in data]  # type: ignore[arg-type]
    counts = [d.counts for d in data]
    rng = np.random.default_rng(seed)
    boot: dict[str, list] = {}
    for _ in range(n_bootstrap):
        sample = [[runs[i] for i in rng.integers(0, len(runs), size=len(runs))] for runs in counted]
        figures = [dataset_figures(s, c, mode, k) for s, c in zip(sample, counts, strict=True)]  # type: ignore[arg-type]
        for name, value in _overall(figures, counts, mode, k).items():  # type: ignore[arg-type]
            boot.setdefault(name, []).append(value)
    return boot


def _world(rng: random.Random, datasets: int) -> list[DatasetRuns]:
    out = []
    for d in range(datasets):
        units = [UnitRef(id=f"u{d}_{i}", name=f"n{i % 4}") for i in range(rng.randint(0, 9))]
        cvars = [f"v{i}" for i in range(rng.randint(0, 6))]
        counts = GroundTruthCounts(dataset=f"d{d}", units=units, num_cvars=len(cvars),
                                   num_models=rng.randint(0, 4), num_models_unique=rng.randint(0, 3))
        runs = []
        for r in range(rng.randint(1, 14)):
            status = rng.choice([BLADE_FINISHED] * 6 + [BLADE_GENERATION_FAILED, BLADE_EXECUTION_FAILED])
            picked = rng.sample(units, rng.randint(0, len(units)))
            transform = TransformMatch(status="ok", matched_value_units=picked,
                                       matched_graph_units=rng.sample(picked, rng.randint(0, len(picked))),
                                       matched_value_units2=[f"a{i}" for i in range(rng.randint(0, 5))],
                                       matched_graph_units2=[f"a{i}" for i in range(rng.randint(0, 3))],
                                       num_agent_units=rng.randint(0, 7))
            failure = FailureCategory.NONE if status == BLADE_FINISHED else FailureCategory.GENERATION_FAILED
            runs.append(RunRecord(
                key=str(r), blade_status=status, failure=failure,
                matched_cvars=rng.sample(cvars, rng.randint(0, len(cvars))),
                matched_cvars2=[f"x{i}" for i in range(rng.randint(0, 5))], num_cvars2=rng.randint(0, 8),
                num_cvars2_shown=rng.randint(0, 6), matched_models=rng.sample(["ols", "glm", "logit"], rng.randint(0, 2)),
                matched_models_cvar=rng.sample(["m1", "m2", "m3"], rng.randint(0, 2)),
                matched_models_cvar_blade=rng.sample(["m1", "m2"], rng.randint(0, 2)), transform=transform))
        out.append(DatasetRuns(counts=counts, runs=runs))
    return out


def _same(a: list, b: object) -> bool:
    values = list(b) if b is not None else []  # type: ignore[call-overload]
    if any(v is None for v in a):
        return bool(values) and any(v is None for v in values)  # both leave the interval out
    return [float(v) for v in a] == [float(v) for v in values]


@pytest.mark.parametrize("mode", ["default", "blade"])
@pytest.mark.parametrize("world_seed", range(12))
def test_the_bootstrap_gives_the_replicate_by_replicate_figures_bit_for_bit(mode: str, world_seed: int) -> None:
    from evaluation.metrics import _bootstrap

    rng = random.Random(world_seed)
    data = _world(rng, datasets=1 + world_seed % 3)
    k = rng.choice([1, 3, 10])
    counted = [counted_runs(d.runs, mode) for d in data]  # type: ignore[arg-type]
    if any(not runs for runs in counted):
        pytest.skip("a dataset without counted runs has no bootstrap")
    expected = _reference(data, mode, k, 200, seed=world_seed)
    got = _bootstrap(counted, [d.counts for d in data], mode, k, 200, world_seed)  # type: ignore[arg-type]
    assert set(got) == set(expected)
    for name, values in expected.items():
        assert _same(values, got[name]), name


def test_score_runs_keeps_its_estimates() -> None:
    """Through score_runs: the estimates (mean and 2.5/97.5 % quantiles) equal the reference's."""
    data = _world(random.Random(99), datasets=2)
    scores = score_runs(data, mode="default", k=10, n_bootstrap=300, seed=7)
    reference = _reference(data, "default", 10, 300, 7)
    for name, estimate in scores.bootstrap.items():
        values = np.asarray(reference[name], dtype=float)
        lo, hi = np.quantile(values, [0.025, 0.975])
        assert (estimate.mean, estimate.ci_low, estimate.ci_high) == (float(values.mean()), float(lo), float(hi))
    weighted = np.asarray(reference["weighted"], dtype=float)
    assert scores.weighted.mean == float(weighted.mean())
