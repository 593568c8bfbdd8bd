"""Parity with BLADE's own loader on the nine shared datasets, through a real release written by exports."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from curation.cli import main
from evaluation.groundtruth import build_dataset, build_release, sources_from_blade_folders
from exports.native import write_release
from exports.schema import Release
from tests.conftest import SHARED_BLADE, unavailable

DATASETS = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fish", "hurricane", "panda_nuts", "reading"]


@pytest.fixture(scope="module")
def blade_root() -> Path:
    """``shared_blade`` for module-scoped fixtures (one build serves every parity test)."""
    if not SHARED_BLADE.is_dir():
        unavailable("shared", f"the shared BLADE data is absent (expected at {SHARED_BLADE})")
    return SHARED_BLADE


@pytest.fixture(scope="module")
def reference(blade_root: Path) -> dict:
    return json.loads((blade_root / "reference" / "blade_loader_reference.json").read_text())


@pytest.fixture(scope="module")
def release_dir(blade_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The nine BLADE folders as a forkpaths release, via exports' BLADE reader and native writer (no DB)."""
    sources = sources_from_blade_folders([blade_root / "datasets" / name for name in DATASETS])
    release = Release(version="1.0.0", created_at=datetime(2026, 1, 1, tzinfo=UTC), app_version="test",
                      datasets=[s.dataset for s in sources])
    return write_release(release, {s.dataset.name: s.data_path for s in sources},
                         tmp_path_factory.mktemp("releases"))


@pytest.fixture(scope="module")
def built(release_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    cache = tmp_path_factory.mktemp("gt-cache")
    return {r.dataset: r for r in build_release(release_dir, cache_dir=cache)} | {"_cache": cache}


@pytest.mark.parametrize("name", DATASETS)
def test_release_ground_truth_equals_blade_reference(name: str, built: dict, reference: dict) -> None:
    ref, state = reference[name], built[name].state
    assert len(state.paths) == ref["num_paths"]
    assert state.num_units == ref["num_expanded_units_excl_root"]
    assert state.unit_names == ref["expanded_unit_names"]
    assert sorted(state.value_hashes) == sorted(ref["value_hashes"])
    assert sorted(state.graph_hashes) == sorted(ref["graph_hashes"])
    assert state.errors == []
    # no column of these nine depends on pandas' date inference, which is why every hash equals BLADE's
    assert state.meta["date_inferred_columns"] == {} and state.meta["failed_transforms"] == []
    assert state.meta["date_derived_columns"] == {}  # nor does any column their code derives from dates


def test_cached_build_is_identical_and_keyed_by_content(built: dict, release_dir: Path) -> None:
    cache: Path = built["_cache"]
    files = sorted(cache.glob("*.json.gz"))
    assert len(files) == len(DATASETS)
    again = {r.dataset: r for r in build_release(release_dir, cache_dir=cache)}
    for name in DATASETS:
        assert again[name].cached and not built[name].cached
        assert again[name].summary() | {"seconds": 0, "cached": 0} == built[name].summary() | {"seconds": 0,
                                                                                              "cached": 0}
    assert sum(f.stat().st_size for f in files) < 5 * 1024 * 1024


def test_changed_transform_code_misses_the_cache(shared_blade: Path, tmp_path: Path) -> None:
    source = sources_from_blade_folders([shared_blade / "datasets" / "caschools"])[0]
    first = build_dataset(source, cache_dir=tmp_path)
    t = source.dataset.transforms[0]
    edited = source.dataset.model_copy(deep=True)
    edited.transforms[0] = t.model_copy(update={"code": t.code + "\n"})
    second = build_dataset(type(source)(edited, source.data_path), cache_dir=tmp_path)
    assert not first.cached and not second.cached
    assert len(list(tmp_path.glob("*.json.gz"))) == 2


def test_cli_gt_build_prints_per_dataset_json(release_dir: Path, reference: dict, capsys: pytest.CaptureFixture,
                                              tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path))
    assert main(["gt", "build", str(release_dir), "--dataset", "hurricane", "--json"]) == 0
    line = json.loads(capsys.readouterr().out.strip())
    assert line["dataset"] == "hurricane" and line["paths"] == reference["hurricane"]["num_paths"]
    assert line["value_hashes"] == sorted(reference["hurricane"]["value_hashes"])
    assert line["graph_hashes"] == sorted(reference["hurricane"]["graph_hashes"])
    assert line["unit_names"] == reference["hurricane"]["expanded_unit_names"]
    assert (tmp_path / "cache" / "groundtruth").is_dir()

    from evaluation.sandbox import server, shutdown

    shutdown()  # the build's template process: a build found whole in the cache must start none
    assert main(["gt", "build", str(release_dir), "--dataset", "hurricane", "--json"]) == 0
    again = json.loads(capsys.readouterr().out.strip())
    assert again["cached"] and again["value_hashes"] == line["value_hashes"]
    assert server._SANDBOX._zygote is None, "a cached build started the sandbox's template process"


def test_cli_gt_build_names_a_missing_dataset(release_dir: Path, capsys: pytest.CaptureFixture, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path))
    assert main(["gt", "build", str(release_dir), "--dataset", "soccer"]) == 2
    err = capsys.readouterr().err
    assert "soccer" in err and "hurricane" in err


def test_release_decision_counts_equal_blade_reference(release_dir: Path, reference: dict) -> None:
    """The specs BLADE's loader counts: conceptual variables, model rows, transform specs (ROOT included)."""
    from evaluation.judges import decisions_from_release
    from exports.native import read_release

    release = read_release(release_dir)
    for ds in release.datasets:
        ref, gt = reference[ds.name], decisions_from_release(ds)
        assert (len(gt.variables), len(gt.models), len(ds.transforms) + 1) == (
            ref["num_cv_specs"], ref["num_model_rows"], ref["num_transform_specs_incl_root"]), ds.name
    assert sorted(d.name for d in release.datasets) == DATASETS
