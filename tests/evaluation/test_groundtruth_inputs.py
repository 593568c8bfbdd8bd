"""Ground truth from hand-built releases: paths over branches, bad input and the cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.groundtruth import (
    DatasetSource,
    GroundTruthError,
    GroundTruthLimits,
    JobFailed,
    build_dataset,
)
from evaluation.groundtruth.paths import enumerate_paths
from evaluation.groundtruth.specs import specs_from_release
from exports.schema import DatasetRelease, ReleaseBranch, ReleaseMapping, ReleaseTransform

ROOT = "ROOT_SPEC_ID"


def _t(tid: str, verb: str, code: str, mapping: list[tuple[list[str], str]], *branches: list[str],
       condition: str = "") -> ReleaseTransform:
    return ReleaseTransform(id=tid, annotator="A", spec_name=tid, verbs=[verb], code=code,
                            mapping=[ReleaseMapping(inputs=i, output=o) for i, o in mapping],
                            branches=[ReleaseBranch(dependencies=b, condition=condition) for b in branches])


def _source(data: Path, *transforms: ReleaseTransform) -> DatasetSource:
    ds = DatasetRelease(name="hand", research_question="?", data_file="data/hand/data.csv", data_sha256="",
                        num_rows=4, num_columns=2, transforms=list(transforms))
    return DatasetSource(ds, data)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,5\n2,6\n3,7\n4,8\n")
    return path


def test_alternative_branches_and_a_two_parent_join_give_the_paths_by_hand(data: Path) -> None:
    # c has two alternative parent sets: {a} or {a, b}; b hangs below ROOT; so the paths are
    # ROOT→a→c (branch 1), ROOT→a→b→c (branch 2, the parents chained), and the leaf b is not a leaf (c uses it)
    src = _source(data,
                  _t("a", "derive", "df['x'] = df['a'] * 2", [(["a"], "x")], [ROOT]),
                  _t("b", "derive", "df['y'] = df['b'] + 1", [(["b"], "y")], [ROOT]),
                  _t("c", "derive", "df['z'] = df['x'] + 1", [(["x"], "z")], ["a"], ["a", "b"]))
    paths = enumerate_paths(specs_from_release(src.dataset))
    orders = sorted(tuple(p.nodes) for p in paths)
    assert len(paths) == 2
    assert orders == sorted([("c", "a", "b", ROOT), ("c", "a", ROOT)])
    joined = next(p for p in paths if "b" in p.nodes)
    assert sorted(joined.edges) == sorted([(ROOT, "a"), ("a", "b"), ("b", "c")])  # a, then b, then c
    state = build_dataset(src).state
    assert state.unit_names == ["derive_x", "derive_y", "derive_z"]
    assert state.errors == []


def test_a_failing_transform_is_reported_and_the_rest_is_built(data: Path) -> None:
    src = _source(data,
                  _t("ok", "derive", "df['x'] = df['a'] * 2", [(["a"], "x")], [ROOT]),
                  _t("bad", "derive", "df['y'] = df['nope'] + 1", [(["nope"], "y")], [ROOT]),
                  _t("after_bad", "derive", "df['z'] = df['y'] + 1", [(["y"], "z")], ["bad"]))
    result = build_dataset(src)
    assert any("'bad' raised KeyError" in e for e in result.state.errors)
    ok_columns = [c for c in result.state.columns if c.unit.startswith("ok__")]
    assert len(ok_columns) == 1  # the good path still has its value state


@pytest.mark.parametrize(("transform", "message"), [
    (_t("x", "derive", "df['x'] = 1", [([], "x")], ["ghost"]), "depends on ghost, which is not a transform"),
    (_t("x", "derive", "df['x'] = 1", [([], "x")], [ROOT], condition="x == 'y'"), "condition"),
    (_t("x", "derive", "df['x' = 1", [([], "x")], [ROOT]), r"does not parse \(line 1"),
])
def test_bad_transforms_are_refused_with_the_transform_named(data: Path, transform: ReleaseTransform,
                                                              message: str) -> None:
    with pytest.raises(GroundTruthError, match=message) as info:
        build_dataset(_source(data, transform))
    assert "transform 'x'" in str(info.value)


def test_code_that_loops_stops_at_the_time_limit(data: Path) -> None:
    src = _source(data, _t("loop", "derive", "while True:\n    pass", [(["a"], "x")], [ROOT]))
    with pytest.raises(JobFailed, match="longer than 2 s"):
        build_dataset(src, limits=GroundTruthLimits(timeout_s=2))


def test_a_damaged_cache_entry_is_rebuilt(data: Path, tmp_path: Path) -> None:
    src = _source(data, _t("a", "derive", "df['x'] = df['a'] * 2", [(["a"], "x")], [ROOT]))
    first = build_dataset(src, cache_dir=tmp_path / "c")
    assert first.cache_file is not None
    first.cache_file.write_bytes(b"not gzip")
    second = build_dataset(src, cache_dir=tmp_path / "c")
    assert not second.cached and second.summary()["value_hashes"] == first.summary()["value_hashes"]
    assert build_dataset(src, cache_dir=tmp_path / "c").cached


def test_code_that_allocates_too_much_is_stopped_by_the_memory_limit(data: Path) -> None:
    src = _source(data,
                  _t("greedy", "derive", "big = bytearray(3 * 1024 ** 3)\ndf['x'] = 1", [([], "x")], [ROOT]),
                  _t("fine", "derive", "df['y'] = df['a'] + 1", [(["a"], "y")], [ROOT]))
    result = build_dataset(src, limits=GroundTruthLimits(memory_mb=1536))
    assert any("'greedy' raised MemoryError" in e for e in result.state.errors)
    assert [c.unit for c in result.state.columns] == ["fine__derive_y"]


def test_a_large_table_reaches_the_job_through_its_fast_copy_unchanged(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A data file past FAST_COPY_MIN_BYTES is parsed in the caller (while the sandbox starts) and handed over
    as a fast copy in a private folder: the state is the one the job builds from the CSV itself, and the
    release folder gets no file."""
    import numpy as np
    import pandas as pd

    import evaluation.sandbox as sandbox
    from evaluation.groundtruth import build as build_module
    from evaluation.sandbox import checks

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.normal(0, 1, 2000).round(6), "b": rng.integers(0, 9, 2000),
                          "t": np.array(["x", "y", "z"], dtype=object)[rng.integers(0, 3, 2000)]})
    data = tmp_path / "release" / "data.csv"
    data.parent.mkdir()
    frame.to_csv(data, index=False)
    src = _source(data, _t("f", "filter", "df = df[df['b'] > 2]", [(["b"], "")], [ROOT]),
                  _t("d", "derive", "df['c'] = df['a'] * 2 + df['b']", [(["a", "b"], "c")], ["f"]),
                  _t("u", "derive", "df['t2'] = df['t'].str.upper()", [(["t"], "t2")], [ROOT]))
    plain = build_dataset(src).state
    copies: list[Path] = []
    real = checks.prepare_fast_copy

    def spy(path: Path) -> Path:
        copies.append(real(path))
        assert pd.read_pickle(copies[-1])["frame"].equals(pd.read_csv(data))
        return copies[-1]

    monkeypatch.setattr(build_module, "FAST_COPY_MIN_BYTES", 1)
    monkeypatch.setattr(sandbox, "prepare_fast_copy", spy, raising=False)
    fast = build_dataset(src).state
    assert len(copies) == 1 and copies[0].parent != data.parent and not copies[0].exists()
    assert sorted(p.name for p in data.parent.iterdir()) == ["data.csv"]
    assert fast.value_hashes == plain.value_hashes and len(plain.value_hashes) >= 5
    assert [c.value_hash for c in fast.columns] == [c.value_hash for c in plain.columns]
    # and the job did read the copy: one whose frame differs gives other hashes
    def altered(path: Path) -> Path:
        copy = real(path)
        payload = pd.read_pickle(copy)
        payload["frame"]["a"] = payload["frame"]["a"] + 1
        pd.to_pickle(payload, copy)
        return copy

    monkeypatch.setattr(sandbox, "prepare_fast_copy", altered, raising=False)
    assert build_dataset(src).state.value_hashes != plain.value_hashes
