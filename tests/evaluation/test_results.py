"""The result file: golden file, write→read round trip, re-aggregation from the file alone, version guard."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evaluation.judges.model_code import analyse_model_code
from evaluation.records import AgentUnit, ModelMatchRecord, VariableMatchRecord
from evaluation.results import (
    RESULT_FORMAT_VERSION,
    AnalysisResult,
    DatasetResult,
    ResultFormatError,
    build_result,
    dump_result,
    library_versions,
    parse_result,
    read_result,
    reaggregate,
    write_result,
)
from tests.evaluation.test_metrics import _data

GOLDEN = Path(__file__).parent / "golden" / "result_v1_1.json"
GOLDEN_1_0 = Path(__file__).parent / "golden" / "result_v1_0.json"  # written by forkpaths before format 1.1


def _result(mode: str = "default"):
    data = _data()
    analyses = [AnalysisResult(key=r.key, status="ok", record=r) for r in data.runs]
    analyses[0].variables = [VariableMatchRecord(gt_id="v1", gt_text="IV: A", agent_index=0, agent_text="IV: a",
                                                 role="IV", similarity=9, judge="offline",
                                                 rationale="rule agent columns are a subset of the GT's")]
    analyses[0].models = [ModelMatchRecord(gt_id="m1", representative_id="m1", specification="OLS", judge="offline",
                                           rationale="rule family-equal", cvars_all_matched=True,
                                           cvars_all_matched_representative=True)]
    analyses[0].agent_model = analyse_model_code("def model(df):\n    return smf.ols('b ~ a', df).fit()")
    analyses[3].status, analyses[3].message = "generation_failed", "analysis '3': the agent's run failed."
    analyses[0].record.transform.agent_units = [AgentUnit(verb="derive", inputs=["a"], output="x",
                                                          code="df['x'] = df['a'] * 2")]
    analyses[0].record.transform.column_lineage = {"a": ["a"], "x": ["a"]}
    ds = DatasetResult(dataset="d", submission="sub.json", counts=data.counts, analyses=analyses,
                       transform_matcher={"name": "value+graph", "ground_truth": {"units": 3, "cached": True}})
    return build_result([ds], release_version="1.2.0", ground_truth_hash="sha256:abc", judge={"name": "offline"},
                        transform_matcher={"name": "value+graph"}, mode=mode, n_bootstrap=100, seed=3,
                        created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
                        libraries={"python": "3.11", "numpy": "x"})


def test_golden_file() -> None:
    text = dump_result(_result())
    if os.environ.get("FORKPATHS_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")
    parsed = parse_result(GOLDEN.read_text(encoding="utf-8"))
    assert parsed.format_version == RESULT_FORMAT_VERSION
    run0 = parsed.datasets[0].analyses[0]
    assert [u.name for u in run0.record.transform.matched_value_units] == ["derive_x"]
    assert [u.id for u in run0.record.transform.matched_graph_units] == ["u1", "u3"]
    assert run0.record.transform.agent_units[0].output == "x" and run0.record.transform.column_lineage["x"] == ["a"]
    assert parsed.datasets[0].transform_matcher["ground_truth"]["units"] == 3
    assert run0.metrics == pytest.approx({"cvar": 0.5, "model": 1.0, "model_cvar": 1.0, "value": 0.25,
                                          "graph": 0.5})


def test_a_format_1_0_file_still_reads_and_reaggregates_to_its_own_scores() -> None:
    old = parse_result(GOLDEN_1_0.read_text(encoding="utf-8"))
    assert old.format_version == "1.0" and old.datasets[0].transform_matcher == {}
    assert old.datasets[0].analyses[0].record.transform.agent_units == []
    assert reaggregate(old) == old.scores


def test_write_read_round_trip_and_reaggregation(tmp_path: Path) -> None:
    result = _result()
    path = tmp_path / "out" / "result.json"
    write_result(path, result)
    back = read_result(path)
    assert back == result
    assert reaggregate(back) == result.scores
    blade = reaggregate(back, mode="blade")
    assert blade.mode == "blade" and blade == _result("blade").scores
    assert reaggregate(back, k=1).coverage["value"] == pytest.approx(1 / 3)
    assert [p.name for p in path.parent.iterdir()] == ["result.json"]  # no temporary left behind


def test_reader_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    data = json.loads(dump_result(_result()))
    data["format_version"] = "9.0"
    with pytest.raises(ResultFormatError, match="format_version '9.0'"):
        parse_result(json.dumps(data))
    with pytest.raises(ResultFormatError, match="no format_version"):
        parse_result("{}")
    with pytest.raises(ResultFormatError, match="not JSON"):
        parse_result("{")
    data["format_version"] = RESULT_FORMAT_VERSION
    del data["provenance"]["release_version"]
    with pytest.raises(ResultFormatError, match="provenance.release_version"):
        parse_result(json.dumps(data))
    with pytest.raises(ResultFormatError, match="cannot read"):
        read_result(tmp_path / "absent.json")


def test_provenance_names_mode_and_libraries() -> None:
    r = _result("blade")
    assert r.provenance.mode == "blade" and r.scores.mode == "blade"
    versions = library_versions()
    assert {"python", "pandas", "networkx", "rapidfuzz"} <= set(versions)
