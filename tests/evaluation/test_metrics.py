"""Metrics against figures worked out by hand (see each comment), in both modes."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.metrics import DatasetRuns, counted_runs, f1, score_runs, unweighted_score, weights
from evaluation.records import FailureCategory, GroundTruthCounts, RunRecord, TransformMatch, UnitRef

U1, U2, U3 = UnitRef(id="u1", name="derive_x"), UnitRef(id="u2", name="derive_x"), UnitRef(id="u3", name="filter_y")


def _data() -> DatasetRuns:
    """3 GT units (two share the name derive_x), 4 variables, 3 model rows of 2 distinct specifications."""
    counts = GroundTruthCounts(dataset="d", units=[U1, U2, U3], num_cvars=4, num_models=3, num_models_unique=2)
    r0 = RunRecord(key="0", matched_cvars=["IV: A", "DV: B"], matched_cvars2=["IV: a", "DV: b"], num_cvars2=4,
                   num_cvars2_shown=2, matched_models=["OLS"], matched_models_cvar=["OLS | A, B [m1]"],
                   matched_models_cvar_blade=["OLS | A, B"],
                   transform=TransformMatch(status="ok", matched_value_units=[U1], matched_graph_units=[U1, U3],
                                            matched_value_units2=["a1"], matched_graph_units2=["a1", "a2"],
                                            num_agent_units=4))
    r1 = RunRecord(key="1", matched_cvars=["IV: A"], matched_cvars2=["IV: a"], num_cvars2=2, num_cvars2_shown=2,
                   transform=TransformMatch(status="ok", matched_value_units=[U2], matched_graph_units=[U2],
                                            matched_value_units2=["b1"], matched_graph_units2=["b1"],
                                            num_agent_units=2))
    r2 = RunRecord(key="2", failure=FailureCategory.JUDGE_FAILED, blade_status=6, num_cvars2=3)
    r3 = RunRecord(key="3", failure=FailureCategory.GENERATION_FAILED, blade_status=2)
    return DatasetRuns(counts=counts, runs=[r0, r1, r2, r3])


def test_counted_runs_per_mode() -> None:
    runs = _data().runs
    assert [r.key for r in counted_runs(runs, "default")] == ["0", "1", "2", "3"]
    # BLADE keeps finished runs, drops the matching crash (6), pads the generation failure (2) at the end
    assert [r.key for r in counted_runs(runs, "blade")] == ["0", "1", "3"]


def test_default_mode_by_hand() -> None:
    s = score_runs([_data()], mode="default", n_bootstrap=0)
    # precision: cvar (2/4 + 1/2 + 0 + 0)/4; model (1+0+0+0)/4; value (1/4 + 1/2)/4; graph (2/4 + 1/2)/4
    assert s.precision == pytest.approx({"cvar": 0.25, "model": 0.25, "model_cvar": 0.25, "value": 0.1875,
                                         "graph": 0.25})
    # coverage: cvar 2/4; model 1/min(2, 4); model_cvar 1/min(3, 4); value ids {u1, u2}/3; graph {u1, u2, u3}/3
    assert s.coverage == pytest.approx({"cvar": 0.5, "model": 0.5, "model_cvar": 1 / 3, "value": 2 / 3,
                                        "graph": 1.0})
    assert s.f1 == pytest.approx({"cvar": 1 / 3, "model": 1 / 3, "model_cvar": 2 / 7, "value": 12 / 41,
                                  "graph": 0.4})
    # weights: T=3, V=4, M=3, U=2, S=12
    assert s.weights == pytest.approx({"cvar": 4 / 12, "model": 2 / 12, "model_cvar": 3 / 12, "value": 3 / 24,
                                       "graph": 3 / 24})
    weighted = 4 / 12 / 3 + 2 / 12 / 3 + 3 / 12 * 2 / 7 + 3 / 24 * 12 / 41 + 3 / 24 * 0.4
    assert s.weighted.point == pytest.approx(weighted)
    assert s.unweighted.point == pytest.approx((1 / 3 + 1 / 3 + 2 / 7 + 0.5 * 0.4 + 0.5 * 12 / 41) / 4)
    assert s.failures == {"judge_failed": 1, "generation_failed": 1}
    assert s.mode == "default"


def test_blade_mode_reproduces_its_defects_by_hand() -> None:
    s = score_runs([_data()], mode="blade", n_bootstrap=0)
    # runs 0, 1 and the padded generation failure; cvar denominators are the *shown* variables: 2/2, 1/2, 0
    assert s.precision == pytest.approx({"cvar": 0.5, "model": 1 / 3, "model_cvar": 1 / 3, "value": 0.25,
                                         "graph": 1 / 3})
    # unit coverage counts names: {derive_x} / 3 ids and {derive_x, filter_y} / 3
    assert s.coverage == pytest.approx({"cvar": 0.5, "model": 0.5, "model_cvar": 1 / 3, "value": 1 / 3,
                                        "graph": 2 / 3})
    f1s = {"cvar": 0.5, "model": 0.4, "model_cvar": 1 / 3, "value": 2 / 7, "graph": 4 / 9}
    assert s.f1 == pytest.approx(f1s)
    # the typo: + 0.5 + F1_value instead of + 0.5 * F1_value
    assert s.unweighted.point == pytest.approx((0.5 + 0.4 + 1 / 3 + 0.5 * 4 / 9 + 0.5 + 2 / 7) / 4)
    assert s.weighted.point == pytest.approx(4 / 12 * 0.5 + 2 / 12 * 0.4 + 3 / 12 / 3 + 3 / 24 * 2 / 7 + 3 / 24 * 4 / 9)
    assert any("dropped" in n for n in s.notes)


def test_f1_guard_and_unweighted_typo() -> None:
    assert f1(0.0, 0.0, "default") == 0.0
    assert f1(0.0, 0.0, "blade") is None  # BLADE divides by zero
    zeros = dict.fromkeys(("cvar", "model", "model_cvar", "value", "graph"), 0.0)
    assert unweighted_score(zeros, "default") == 0.0
    assert unweighted_score(zeros, "blade") == pytest.approx(0.125)  # the literal 0.5 / 4
    assert weights([], 10) == dict.fromkeys(("cvar", "model", "model_cvar", "value", "graph"), 0.0)


def test_model_weights_are_capped_at_k() -> None:
    c = GroundTruthCounts(dataset="d", units=[U1], num_cvars=1, num_models=73, num_models_unique=20)
    w = weights([c], 10)  # M = min(73, 10), U = min(20, 10), S = 1 + 1 + 10 + 10
    assert w["model_cvar"] == pytest.approx(10 / 22)
    assert w["model"] == pytest.approx(10 / 22)
    assert w["value"] == pytest.approx(1 / 44)


def test_coverage_at_k_uses_the_first_k_runs_only() -> None:
    data = _data()
    s = score_runs([data], mode="default", k=1, n_bootstrap=0)
    assert s.coverage["cvar"] == pytest.approx(0.5)  # run 0 alone: {IV: A, DV: B}
    assert s.coverage["value"] == pytest.approx(1 / 3)  # run 0 alone: u1
    assert s.coverage["model"] == pytest.approx(1.0)  # 1 / min(2 unique, 1 run)


def test_bootstrap_is_seeded_and_collapses_on_identical_runs() -> None:
    data = _data()
    a = score_runs([data], mode="default", n_bootstrap=200, seed=7)
    b = score_runs([data], mode="default", n_bootstrap=200, seed=7)
    c = score_runs([data], mode="default", n_bootstrap=200, seed=8)
    assert a.weighted == b.weighted
    assert a.weighted.mean != c.weighted.mean
    assert a.weighted.ci_low <= a.weighted.mean <= a.weighted.ci_high
    same = DatasetRuns(counts=data.counts, runs=[data.runs[0].model_copy(update={"key": str(i)}) for i in range(5)])
    s = score_runs([same], mode="default", n_bootstrap=100)
    assert s.weighted.ci_low == pytest.approx(s.weighted.point)
    assert s.weighted.ci_high == pytest.approx(s.weighted.point)


def test_blade_bootstrap_needs_more_than_k_runs() -> None:
    s = score_runs([_data()], mode="blade", n_bootstrap=50)
    assert s.weighted.mean is None and s.weighted.point is not None
    assert any("more than k=10" in n for n in s.notes)
    long = _data()
    long.runs = [long.runs[0].model_copy(update={"key": str(i)}) for i in range(11)] + long.runs[1:]
    s = score_runs([long], mode="blade", n_bootstrap=50)
    assert s.weighted.mean is not None


def test_blade_mode_with_no_finished_run_does_not_crash() -> None:
    data = _data()
    data.runs = [data.runs[2]]  # only a matching crash: BLADE could not even serialise this
    s = score_runs([data], mode="blade", n_bootstrap=10)
    assert s.datasets[0].runs_counted == 0
    assert s.weighted.point is None
    d = score_runs([data], mode="default", n_bootstrap=10)
    assert d.weighted.point == 0.0


_UNITS = [UnitRef(id=f"u{i}", name=f"unit_{i}") for i in range(6)]  # no colliding names


@st.composite
def clean_runs(draw: st.DrawFn) -> DatasetRuns:
    """Runs where none of BLADE's defects can show: all finished, all agent variables of GT roles, no
    colliding names, the representative check equal to the per-row one."""
    counts = GroundTruthCounts(dataset="d", units=_UNITS, num_cvars=5, num_models=4, num_models_unique=2)
    runs = []
    for i in range(draw(st.integers(1, 12))):
        n_vars = draw(st.integers(0, 6))
        matched2 = draw(st.lists(st.sampled_from([f"a{j}" for j in range(6)]), max_size=n_vars, unique=True))
        label = draw(st.sampled_from([[], ["m | x"], ["m | y"]]))
        value = draw(st.lists(st.sampled_from(_UNITS), unique=True))
        graph = draw(st.lists(st.sampled_from(_UNITS), unique=True))
        agent_units = draw(st.integers(0, 8))
        runs.append(RunRecord(
            key=str(i), num_cvars2=n_vars, num_cvars2_shown=n_vars, matched_cvars2=matched2,
            matched_cvars=draw(st.lists(st.sampled_from([f"g{j}" for j in range(5)]), unique=True)),
            matched_models=draw(st.sampled_from([[], ["OLS"], ["Logit"]])), matched_models_cvar=label,
            matched_models_cvar_blade=label,
            transform=TransformMatch(status="ok", matched_value_units=value, matched_graph_units=graph,
                                     matched_value_units2=[f"x{j}" for j in range(min(len(value), agent_units))],
                                     matched_graph_units2=[f"x{j}" for j in range(min(len(graph), agent_units))],
                                     num_agent_units=agent_units)))
    return DatasetRuns(counts=counts, runs=runs)


@settings(max_examples=80, deadline=None)
@given(clean_runs())
def test_modes_agree_where_no_defect_can_show(data: DatasetRuns) -> None:
    d = score_runs([data], mode="default", n_bootstrap=0)
    b = score_runs([data], mode="blade", n_bootstrap=0)
    assert d.precision == pytest.approx(b.precision)
    assert d.coverage == pytest.approx(b.coverage)
    for name in ("precision", "coverage", "f1"):
        assert all(0.0 <= v <= 1.0 for v in getattr(d, name).values())
    if all(v for v in b.f1.values()):  # F1 defined everywhere: only the typo separates the unweighted scores
        assert b.weighted.point == pytest.approx(d.weighted.point)
        gap = (0.5 + b.f1["value"] - 0.5 * b.f1["value"]) / 4
        assert b.unweighted.point - d.unweighted.point == pytest.approx(gap)
