"""Agreement (κ against a hand-worked example), the paired comparison and overrides, as pure functions."""

from __future__ import annotations

import pytest

from evaluation.agreement import agreement, cohens_kappa, confusion_matrix
from evaluation.overrides import OverrideError, OverrideSpec, apply_overrides
from evaluation.paired import compare_runs
from evaluation.records import GroundTruthCounts, RunRecord, VariableMatchRecord
from evaluation.results import AnalysisResult, DatasetResult, build_result


def test_kappa_matches_the_hand_worked_example():
    # 10 items: experts yes/yes/yes/yes/yes/yes/no/no/no/no; judge yes/yes/yes/yes/yes/no/yes/no/no/no
    # p_o = 8/10 = 0.8; p_e = 0.6·0.6 + 0.4·0.4 = 0.52; κ = (0.8 − 0.52) / 0.48 = 0.58333…
    experts = [True] * 6 + [False] * 4
    judge = [True] * 5 + [False, True] + [False] * 3
    pairs = list(zip(experts, judge, strict=True))
    assert cohens_kappa(pairs) == pytest.approx(0.28 / 0.48)
    report = agreement("variable", "offline", pairs)
    assert report.percent_agreement == pytest.approx(0.8) and report.kappa == pytest.approx(0.583333, abs=1e-6)
    assert report.matrix == [[5, 1], [1, 3]] and report.blade_reported == 0.93
    assert cohens_kappa([(True, True), (True, True)]) is None  # chance agreement 1: undefined
    assert cohens_kappa([]) is None
    assert confusion_matrix([("a", "b")], ["a", "b"]) == [[0, 1], [0, 0]]


def _record(key: str, cvars: list[str]) -> AnalysisResult:
    rec = RunRecord(key=key, matched_cvars=cvars, matched_cvars2=[f"agent {c}" for c in cvars], num_cvars2=2,
                    num_cvars2_shown=2)
    variables = [VariableMatchRecord(gt_id=c, gt_text=c, agent_index=i, agent_text=f"agent {c}", role="IV",
                                     similarity=9, judge="offline", rationale="r") for i, c in enumerate(cvars)]
    return AnalysisResult(key=key, status="ok", record=rec, variables=variables)


def _result(per_analysis: list[list[str]]):
    ds = DatasetResult(dataset="d", counts=GroundTruthCounts(dataset="d", num_cvars=2),
                       analyses=[_record(str(i), c) for i, c in enumerate(per_analysis)])
    return build_result([ds], release_version="1", ground_truth_hash="h", judge={}, n_bootstrap=0)


def test_overrides_change_a_copy_and_reject_unknown_items():
    result = _result([["x", "y"], ["x"]])
    changed = apply_overrides(result, [OverrideSpec(dataset="d", analysis_key="0", kind="variable", item="y|1",
                                                    value=False)])
    assert changed.datasets[0].analyses[0].record.matched_cvars == ["x"]
    assert changed.datasets[0].analyses[0].metrics["cvar"] == 0.5  # 1 of 2 agent variables now match
    assert result.datasets[0].analyses[0].record.matched_cvars == ["x", "y"]  # the original is untouched
    with pytest.raises(OverrideError):
        apply_overrides(result, [OverrideSpec(dataset="d", analysis_key="9", kind="variable", item="y|1",
                                              value=False)])


def test_paired_comparison_is_zero_against_itself_and_signed_otherwise():
    a, b = _result([["x", "y"], ["x", "y"]]), _result([["x"], ["x"]])
    same = compare_runs(a, a, n_bootstrap=100)
    assert all(d.diff == 0 and d.ci_low == 0 and d.ci_high == 0 for d in same.differences if d.decision_type == "cvar")
    cmp = compare_runs(a, b, n_bootstrap=100)
    row = next(d for d in cmp.differences if d.dataset == "d" and d.decision_type == "cvar")
    # A: precision 1, coverage 2/2 → F1 1; B: precision 0.5 (1 of 2), coverage 1/2 → F1 0.5
    assert row.f1_a == pytest.approx(1.0) and row.f1_b == pytest.approx(0.5) and row.diff == pytest.approx(0.5)
    assert row.paired and row.ci_low == pytest.approx(0.5) and row.ci_high == pytest.approx(0.5)
    items = next(i for i in cmp.items if i.decision_type == "cvar")
    assert items.only_a == ["y"] and items.only_b == []
