"""Transform matching on hand-built analyses whose value and graph matches are worked out by hand.

Data: x = 1..4, y = 10..40, g = a a b b. Ground truth (two paths):

* path A: ``drop_small_x`` (filter x > 1) → ``log_y`` (derive lx = log y, below the filter);
* path B: ``double_x`` (derive z = 2x, straight from the data).

Expanded units: drop_small_x, derive_lx, derive_z. The column graph of lx is
y@ROOT → y@filter → lx, with input edges x@ROOT → {x, y, g}@filter.
"""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest

from evaluation.groundtruth import DatasetSource, build_dataset
from evaluation.groundtruth.graphhash import is_isomorphic, isomorphism
from evaluation.groundtruth.submission import TransformUnit, submission_state
from evaluation.matching.transforms import (
    get_transform_matcher,
    match_graphs,
    match_transforms,
    match_values,
    transform_matchers,
)
from exports.schema import DatasetRelease, ReleaseBranch, ReleaseMapping, ReleaseTransform

ROOT = "ROOT_SPEC_ID"


def _t(tid: str, name: str, verb: str, code: str, mapping: list[tuple[list[str], str]], deps: list[str]):
    return ReleaseTransform(id=tid, annotator="A1", spec_name=name, verbs=[verb], code=code,
                            mapping=[ReleaseMapping(inputs=i, output=o) for i, o in mapping],
                            branches=[ReleaseBranch(dependencies=deps)])


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hand") / "data.csv"
    path.write_text("x,y,g\n1,10,a\n2,20,a\n3,30,b\n4,40,b\n")
    return path


@pytest.fixture(scope="module")
def gt(data: Path):
    ds = DatasetRelease(
        name="hand", research_question="?", data_file="data/hand/data.csv", data_sha256="", num_rows=4,
        num_columns=3, transforms=[
            _t("f1", "drop_small_x", "filter", "df = df[df['x'] > 1]", [(["x"], "")], [ROOT]),
            _t("d1", "log_y", "derive", "df['lx'] = np.log(df['y'])", [(["y"], "lx")], ["f1"]),
            _t("d2", "double_x", "derive", "df['z'] = df['x'] * 2", [(["x"], "z")], [ROOT]),
        ])
    return build_dataset(DatasetSource(ds, data)).state


def test_ground_truth_shape(gt) -> None:
    assert len(gt.paths) == 2
    assert gt.unit_names == ["derive_lx", "derive_z", "drop_small_x"]
    # filter states x, y, g; lx; z: five column nodes with values
    assert len(gt.columns) == 5


def test_same_filter_and_renamed_log_match_by_value_and_graph(gt, data: Path) -> None:
    sub = submission_state([
        TransformUnit("filter", "df = df[df['x'] >= 2]", ((("x",), "ALL"),)),
        TransformUnit("derive", "df['log_y'] = np.log(df['y'])", ((("y",), "log_y"),)),
    ], data)
    m = match_transforms(gt, sub)
    assert m.matched_value_units == ["derive_lx", "drop_small_x"]
    assert m.matched_graph_units == ["derive_lx", "drop_small_x"]
    assert sorted(m.submission_value_unit_ids) == ["node_0_filter", "node_1_derive__derive_log_y"]


def test_different_constant_matches_by_graph_only(gt, data: Path) -> None:
    sub = submission_state([
        TransformUnit("filter", "df = df[df['x'] > 2]", ((("x",), "ALL"),)),
        TransformUnit("derive", "df['ly'] = np.log(df['y'] + 1)", ((("y",), "ly"),)),
    ], data)
    m = match_transforms(gt, sub)
    assert m.matched_value_units == []
    assert m.matched_graph_units == ["derive_lx", "drop_small_x"]


def test_derive_from_raw_column_graph_matches_the_other_path(gt, data: Path) -> None:
    sub = submission_state([TransformUnit("derive", "df['t'] = df['x'] * 3", ((("x",), "t"),))], data)
    m = match_transforms(gt, sub)
    assert m.matched_value_units == []
    assert m.matched_graph_units == ["derive_z"]
    same = submission_state([TransformUnit("derive", "df['w'] = df['x'] + df['x']", ((("x",), "w"),))], data)
    assert match_values(gt, same).matched_value_units == ["derive_z"]


def test_derive_from_other_column_matches_nothing(gt, data: Path) -> None:
    sub = submission_state([TransformUnit("derive", "df['t'] = df['y'] * 3", ((("y",), "t"),))], data)
    m = match_transforms(gt, sub)
    assert (m.matched_value_units, m.matched_graph_units) == ([], [])


def test_value_match_credits_ancestors(gt, data: Path) -> None:
    # the log column alone (on the same filtered rows) credits its filter ancestor too
    sub = submission_state([
        TransformUnit("filter", "df = df[df['x'] > 1]", ((("x",), "ALL"),)),
        TransformUnit("derive", "df = df[['y']].assign(q=np.log(df['y']))", ((("y",), "q"),)),
    ], data)
    assert match_values(gt, sub).matched_value_units == ["derive_lx", "drop_small_x"]


def test_registry_and_recorded_parameters(gt) -> None:
    assert {"value", "graph", "value+graph"} <= set(transform_matchers())
    assert get_transform_matcher("graph") is match_graphs
    m = get_transform_matcher("graph")(gt, gt, blade_compat=True)
    assert m.params == {"blade_compat": True, "iso_timeout_s": 10.0}
    assert m.matched_graph_units == ["derive_lx", "derive_z", "drop_small_x"]
    with pytest.raises(ValueError, match="no transform matcher named 'nope'; known: graph, value"):
        get_transform_matcher("nope")


def test_isomorphism_timeout_is_thread_safe_and_reported() -> None:
    import threading

    g1 = nx.complete_graph(9, nx.DiGraph)
    nx.set_node_attributes(g1, "v", "val")
    nx.set_edge_attributes(g1, "data", "type")
    g2 = nx.relabel_nodes(g1, {i: f"n{i}" for i in g1.nodes})
    out: list[object] = []
    t = threading.Thread(target=lambda: out.append(isomorphism(g1, g2, timeout_s=0.0)))
    t.start()
    t.join()
    assert out == [None]
    assert is_isomorphic(g1, g1.copy(), timeout_s=5)
