"""Code → transform units without an LLM: hand-written agent code with the units an expert would annotate."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.groundtruth import DatasetSource, GroundTruthLimits, build_dataset
from evaluation.groundtruth.convert import convert_transform, convert_transforms
from evaluation.matching.transforms import match_transforms
from exports.schema import DatasetRelease, ReleaseBranch, ReleaseMapping, ReleaseTransform


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("conv") / "data.csv"
    rows = ["team,score,age,city"] + [f"t{i % 3},{i * 1.5},{20 + i % 7},{'' if i % 5 == 0 else 'c' + str(i % 2)}"
                                      for i in range(30)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _units(conv):
    return [(u.verb, [(list(i), o) for i, o in u.mapping], list(u.groupby_cols)) for u in conv.units]


def test_filter_derive_impute_and_helper_statements(data: Path) -> None:
    code = """threshold = 22
df = df[df['age'] > threshold]
df['score_z'] = (df['score'] - df['score'].mean()) / df['score'].std()
df['city_filled'] = df['city'].fillna('unknown')
df.loc[df['age'] > 24, 'older'] = 1
df.loc[df['age'] <= 24, 'older'] = 0
"""
    conv = convert_transform(code, data)
    assert conv.error is None
    assert _units(conv) == [
        ("filter", [(["age"], "")], []),
        ("derive", [(["score"], "score_z")], []),
        ("impute", [(["city"], "city_filled")], []),
        ("derive", [(["age"], "older")], []),  # the two masked assignments are one unit
    ]
    assert conv.state is not None
    assert conv.state.unit_names == ["derive_older", "derive_score_z", "impute_city_filled", "node_0_filter"]


def test_column_lineage_follows_units_back_to_the_data(data: Path) -> None:
    code = """df['ratio'] = df['score'] / df['age']
df['ratio_z'] = (df['ratio'] - df['ratio'].mean()) / df['ratio'].std()
df['one'] = 1
df = df.drop(columns=['city'])
"""
    lineage = convert_transform(code, data).column_lineage()
    assert lineage == {"team": ["team"], "score": ["score"], "age": ["age"], "ratio": ["age", "score"],
                       "ratio_z": ["age", "score"], "one": []}  # city was dropped: not in the final frame


def test_a_transform_that_leaves_no_frame_says_so(data: Path) -> None:
    conv = convert_transform("df['x'] = df['score'] * 2\ndf = 5\n", data)
    assert conv.error == ("the transform code left df as a number (int), not a data frame, so what it computed last has no "
                          "columns to match")
    assert [u.verb for u in conv.units][0] == "derive"  # what came before still gets credit


def test_groupby_rollup_becomes_groupby_and_post_groupby(data: Path) -> None:
    code = "df = df.groupby('team').agg(mean_score=('score', 'mean')).reset_index()"
    conv = convert_transform(code, data)
    assert _units(conv) == [("rollup", [(["score"], "mean_score")], ["team"])]
    names = conv.state.unit_names
    assert names == ["node_0_groupby", "post_groupby_mean_score"]


def test_errors_keep_the_units_before_them_and_limits_are_results(data: Path) -> None:
    conv = convert_transform("df = df[df['age'] > 21]\ndf['x'] = df['nope'] * 2\n", data)
    assert _units(conv) == [("filter", [(["age"], "")], [])]
    assert "line 2" in conv.error and "KeyError" in conv.error
    bad = convert_transform("df = df[", data)
    assert bad.units == [] and bad.state is None and "does not parse" in bad.error
    loop = convert_transform("while True:\n    pass\n", data, limits=GroundTruthLimits(timeout_s=3))
    assert loop.units == [] and "longer than the 3 s limit" in loop.error and loop.error_kind == "timeout"


def test_converted_expert_code_matches_its_own_ground_truth(data: Path) -> None:
    t = [ReleaseTransform(id="f", annotator="A", spec_name="adults", verbs=["filter"], code="df = df[df['age'] > 21]",
                          mapping=[ReleaseMapping(inputs=["age"], output="")],
                          branches=[ReleaseBranch(dependencies=["ROOT_SPEC_ID"])]),
         ReleaseTransform(id="d", annotator="A", spec_name="double", verbs=["derive"],
                          code="df['s2'] = df['score'] * 2", mapping=[ReleaseMapping(inputs=["score"], output="s2")],
                          branches=[ReleaseBranch(dependencies=["f"])])]
    ds = DatasetRelease(name="conv", research_question="?", data_file="data/conv/data.csv", data_sha256="",
                        num_rows=30, num_columns=4, transforms=t)
    gt = build_dataset(DatasetSource(ds, data)).state
    [conv] = convert_transforms(["df = df[df['age'] > 21]\ndf['s2'] = df['score'] * 2"], data)
    m = match_transforms(gt, conv.state)
    assert m.matched_value_units == m.matched_graph_units == ["adults", "derive_s2"]


def _function_body(code: str) -> str:
    """The statements of the first ``transform`` function up to its return (BLADE's extraction, simplified)."""
    import ast

    for node in ast.parse(code).body:
        if isinstance(node, ast.FunctionDef) and "transform" in node.name:
            stmts = []
            for st in node.body:
                if isinstance(st, ast.Return):
                    break
                stmts.append(ast.unparse(st))
            return "\n".join(stmts)
    return code


def test_the_ten_example_agent_analyses_convert_and_match_without_an_llm(shared_blade: Path) -> None:
    import json

    from evaluation.groundtruth import sources_from_blade_folders

    analyses = json.loads((shared_blade / "examples" / "submission_analyses.json").read_text())["analyses"]
    source = sources_from_blade_folders([shared_blade / "datasets" / "hurricane"])[0]
    gt = build_dataset(source).state
    conversions = convert_transforms([_function_body(a["transform_code"]) for a in analyses], source.data_path)
    assert len(conversions) == 10
    for conv in conversions:
        assert conv.error is None and conv.units and conv.state is not None
        assert "filter" in [u.verb for u in conv.units]  # every example drops rows with missing values
        m = match_transforms(gt, conv.state)
        assert set(m.matched_value_units) <= set(gt.unit_names)


def test_codes_that_share_their_first_steps_are_measured_once_per_state_and_exactly_as_alone(data: Path) -> None:
    """The measuring side keeps what it worked out per handed-over state (StateMemo): codes that repeat their
    first steps reuse it, and each gets exactly the units and hashes it gets measured alone."""
    import json

    import pandas as pd

    from evaluation.groundtruth.convert_job import StateMemo, execute_codes, measure_codes

    table = pd.read_csv(data)
    first = "df = df.dropna(subset=['city'])\n"
    codes = [first + "df['double'] = df['score'] * 2\n", first + "df = df[df['age'] > 22]\n",
             first + "x = 3\ndf = df.groupby('team').agg({'score': 'sum'}).reset_index()\n", first]

    def handed_over(code: str) -> list[tuple[dict, list[bytes]]]:
        messages: list[tuple[dict, list[bytes]]] = []

        class Collect:
            def send(self, header: dict, blobs: list[bytes] | None = None) -> None:
                messages.append((json.loads(json.dumps(header)), list(blobs or [])))

        execute_codes({"code": code}, table, Collect())
        return messages

    memo = StateMemo()
    shared = [measure_codes({"code": code}, table, iter(handed_over(code)), memo=memo) for code in codes]
    alone = [measure_codes({"code": code}, table, iter(handed_over(code))) for code in codes]

    assert shared == alone
    assert all(r["error"] is None and r["units"] for r in alone)
    assert alone[0]["units"][0]["verb"] == "filter" and alone[2]["units"][-1]["verb"] == "rollup"
    states = sum(len(handed_over(code)) for code in codes)
    assert len(memo.states) == states - 3  # the shared first step's state was measured once, not four times
