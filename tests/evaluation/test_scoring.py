"""A whole submission scored offline in both modes: nothing crashes, every analysis has a status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.judges import make_judge
from evaluation.records import FailureCategory, TransformMatch, UnitRef
from evaluation.results import build_result, dump_result, parse_result, reaggregate
from evaluation.scoring import score_submission
from evaluation.submissions import SubmittedAnalysis, parse_submission, read_submission
from tests.evaluation.blade_release import blade_release_dataset

UNITS = [UnitRef(id=f"u{i}", name=n) for i, n in enumerate(
    ["derive_alldeaths_log", "derive_alldeaths_boxcox", "derive_masfem_mean", "derive_masfem_weighted_mean",
     "remove_Katrina", "remove_NA_in_elapsedyrs"])]


def _matcher(analysis: SubmittedAnalysis) -> TransformMatch:
    """Credits remove_Katrina by value to analyses that filter on alldeaths; fails on analysis 5."""
    if analysis.key == "5":
        raise RuntimeError("sandbox exploded")
    assert analysis.transform is not None
    hit = "alldeaths" in analysis.transform.body and "df[df[" in analysis.transform.body
    return TransformMatch(status="ok", matched_value_units=[UNITS[4]] if hit else [],
                          matched_graph_units=[UNITS[4]] if hit else [],
                          matched_value_units2=["a0"] if hit else [], matched_graph_units2=["a0"] if hit else [],
                          num_agent_units=3, column_lineage={"masfem": ["masfem"], "alldeaths": ["alldeaths"]})


@pytest.mark.parametrize("mode", ["default", "blade"])
def test_ten_examples_score_in_both_modes(shared_blade: Path, mode: str) -> None:
    ds = blade_release_dataset(shared_blade / "datasets" / "hurricane")
    sub = read_submission(shared_blade / "examples" / "submission_analyses.json", known_datasets=["hurricane"])
    seen: list[int] = []
    result = score_submission(ds, sub, judge=make_judge("offline"), transform_matcher=_matcher, units=UNITS,
                              progress=lambda done, total: seen.append(done))
    assert seen == list(range(1, 11))
    assert result.counts.num_cvars == 4 and result.counts.num_models == 18 and len(result.counts.units) == 6
    failed = result.analyses[5].record
    assert failed.failure == FailureCategory.TRANSFORM_FAILED
    assert "sandbox exploded" in failed.transform.message and failed.matched_models  # model still credited
    full = build_result([result], release_version="1.0.0", ground_truth_hash="h", judge={"name": "offline"},
                        mode=mode, n_bootstrap=50)  # type: ignore[arg-type]
    assert full.scores.mode == mode
    assert full.scores.coverage["value"] == pytest.approx(1 / 6)  # remove_Katrina only
    assert full.scores.precision["model"] == 1.0
    back = parse_result(dump_result(full))
    assert reaggregate(back) == full.scores


def test_multirun_with_failures_and_unknown_dataset(shared_blade: Path) -> None:
    ds = blade_release_dataset(shared_blade / "datasets" / "hurricane")
    raw = json.loads((shared_blade / "examples" / "multirun_analyses.json").read_text())
    raw["analyses"]["10"] = [2, "context length exceeded"]
    raw["analyses"]["11"] = {"cvars": "?"}
    sub = parse_submission(raw, known_datasets=["hurricane"])
    result = score_submission(ds, sub, judge=make_judge("offline"))
    failures = [a.record.failure for a in result.analyses]
    assert failures[10:] == [FailureCategory.GENERATION_FAILED, FailureCategory.INVALID]
    assert all(a.record.transform.status == "not_run" for a in result.analyses)
    default = build_result([result], release_version="1", ground_truth_hash="h", judge={}, n_bootstrap=0)
    blade = build_result([result], release_version="1", ground_truth_hash="h", judge={}, mode="blade",
                         n_bootstrap=0)
    assert default.scores.datasets[0].runs_counted == 12
    assert blade.scores.datasets[0].runs_counted == 12  # both failures are padded as generation failures
    assert default.scores.failures == {"generation_failed": 1, "invalid_analysis": 1}

    other = parse_submission(raw, known_datasets=["fish"])
    unknown = score_submission(ds, other, judge=make_judge("offline"))
    assert {a.record.failure for a in unknown.analyses} >= {FailureCategory.UNKNOWN_DATASET}
    assert "not in the release" in unknown.analyses[0].message
