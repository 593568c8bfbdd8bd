"""Hugging Face export of releases (issue 31 point 3): ``forkpaths release export V --format hf`` writes a folder
that ``datasets.load_dataset`` loads offline, one configuration per kind of item the release holds, whose row
counts equal the release's; a kind with no item is left out and the card says so; blinding as for every export.

``datasets`` runs in a child process whose environment is offline (``HF_DATASETS_OFFLINE``, ``HF_HUB_OFFLINE``)
with its cache in the test's folder: the library reads those settings when it is imported.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from curation.bootstrap import initialise
from curation.cli import main
from curation.dataset_files import read_blade_folder
from curation.db import session_scope
from curation.errors import BlindingViolation, ReleaseError
from curation.models import Role
from curation.programmatic_starters import register_starter_tasks
from curation.services import release_exports as rex
from curation.services import releases as rel
from curation.services.annotation import submit_analysis
from curation.services.blade_import import import_blade
from curation.services.datasets import register_dataset
from curation.services.discoverybench_import import import_discoverybench
from curation.settings import Settings
from curation.starters import list_starter_dirs
from exports.hf import CONFIGS
from exports.hypotheses_part import HypothesesPart
from exports.manifest import parse_manifest, sha256_file
from exports.mcq_part import MCQPart
from exports.native import read_release
from exports.programmatic_part import ProgrammaticPart
from exports.schema import Release
from tests import factories as f
from tests.exports.test_release_hypotheses import make_tree
from tests.factories import artifacts_for

REPO = Path(__file__).resolve().parents[2]
ALL = [c.name for c in CONFIGS]

_LOAD = r"""
import hashlib, json, sys
from datasets import get_dataset_config_names, load_dataset

folder = sys.argv[1]
def plain(value):
    return hashlib.sha256(value).hexdigest() if isinstance(value, bytes) else str(value)
default = load_dataset(folder)
out = {"default": {split: d.num_rows for split, d in default.items()}, "configs": {}}
for name in get_dataset_config_names(folder):
    loaded = load_dataset(folder, name)
    out["configs"][name] = {split: {"rows": d.to_list(), "features": list(d.features)} for split, d in loaded.items()}
print(json.dumps(out, default=plain))
"""


def load_offline(folder: Path, cache: Path) -> dict[str, Any]:
    """What ``datasets`` reads from ``folder`` with no network: the default configuration's splits and, per
    configuration, each split's rows and columns."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "PYTHONPATH"))}
    env |= {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(cache)}
    done = subprocess.run([sys.executable, "-c", _LOAD, str(folder)], env=env, cwd=cache.parent, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def release_counts(release: Release) -> dict[str, int]:
    """Items of each kind in the release document, counted here (not by the export's code)."""
    analysed = [d for d in release.datasets if d.variables or d.transforms or d.models]
    return {"analyses": len(analysed),
            "decisions": sum(len(d.variables) + len(d.transforms) + len(d.models) for d in release.datasets),
            "alternatives": sum(len(d.alternatives) for d in release.datasets),
            "votes": sum(len(d.votes) for d in release.datasets),
            "mcqs": sum(len(MCQPart.of(d).items) for d in release.datasets),
            "hypotheses": sum(len(HypothesesPart.of(d).tasks) for d in release.datasets),
            "programmatic": sum(len(ProgrammaticPart.of(d).tasks) for d in release.datasets)}


def card_header(folder: Path) -> dict[str, Any]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def check_sums(folder: Path) -> list[str]:
    digests, problems = parse_manifest((folder / "SHA256SUMS").read_text(encoding="utf-8"))
    assert problems == []
    files = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert files - set(digests) == {"README.md", "SHA256SUMS"}
    return [p for p, sha in digests.items() if sha256_file(folder / p) != sha]


@pytest.fixture
def world(engine, store, shared_blade, tmp_path):  # type: ignore[no-untyped-def]
    """Every kind at once: BLADE fish (decisions, alternatives, votes, MCQs), a DiscoveryBench tree (hypothesis
    tasks in test, train and dev) and the starter datasets with their programmatic tasks."""
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "fish", store=store, max_bytes=200 * 2**20)
        import_discoverybench(session=s, actor=None, path=make_tree(tmp_path / "tree"), store=store,
                              max_bytes=200 * 2**20)
        for folder in list_starter_dirs(REPO / "datasets"):
            register_dataset(session=s, actor=None, bundle=read_blade_folder(folder, max_bytes=50 * 2**20), store=store)
    with session_scope(engine) as s:
        assert len(register_starter_tasks(session=s, datasets_dir=REPO / "datasets")) == 6
    curator = f.user(engine, "curator-hf", Role.CURATOR)
    root = tmp_path / "releases"
    with session_scope(engine) as s:
        record = rel.cut_release(session=s, actor=curator, version="1.0.0", notes="Every kind, for the Hub.",
                                 artifacts=artifacts_for(root), store=store)
    return {"engine": engine, "curator": curator, "root": root, "record": record}


def test_every_kind_loads_offline_with_the_release_row_counts(world, tmp_path):  # type: ignore[no-untyped-def]
    with session_scope(world["engine"]) as s:
        out = rex.export_release(session=s, actor=world["curator"], version="1.0.0", fmt="hf", out=tmp_path / "hub",
                                 artifacts=artifacts_for(world["root"]))
        assert out == tmp_path / "hub" / "1.0.0-hf"
        zip_name, data = rex.release_archive(session=s, actor=world["curator"], version="1.0.0", fmt="hf",
                                         artifacts=artifacts_for(world["root"]))
    assert zip_name == "forkpaths-1.0.0-hf.zip"  # the page's download: the same folder, zipped
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert sorted(zf.namelist()) == sorted(f"1.0.0-hf/{p.relative_to(out).as_posix()}" for p in out.rglob("*")
                                               if p.is_file())
    release = read_release(world["root"] / world["record"].path)
    counts = release_counts(release)
    assert all(counts[name] > 0 for name in ALL), counts  # the world holds every kind
    summary = world["record"].summary.values()
    assert counts["decisions"] == sum(c["variables"] + c["transforms"] + c["models"] for c in summary)
    assert counts["mcqs"] == sum(c["parts"].get("mcq", {}).get("MCQs", 0) for c in summary) == 15
    assert counts["hypotheses"] == sum(c["parts"].get("hypotheses", {}).get("hypothesis tasks", 0)
                                       for c in summary) == 5
    assert counts["votes"] == sum(c["votes"] for c in summary)

    loaded = load_offline(out, tmp_path / "hf-cache")
    assert list(loaded["configs"]) == ALL
    assert {name: sum(len(s["rows"]) for s in splits.values()) for name, splits in loaded["configs"].items()} == counts
    assert loaded["default"] == {"test": counts["analyses"]}  # load_dataset(DIR): the first configuration
    # hypothesis tasks keep DiscoveryBench's splits; the other kinds are one test split
    assert {split: len(s["rows"]) for split, s in loaded["configs"]["hypotheses"].items()} == dict(
        Counter(t.split for d in release.datasets for t in HypothesesPart.of(d).tasks))
    assert all(list(loaded["configs"][n]) == ["test"] for n in ALL if n != "hypotheses")

    mcq = MCQPart.of(next(d for d in release.datasets if d.name == "fish")).items[0]
    row = next(r for r in loaded["configs"]["mcqs"]["test"]["rows"] if r["id"] == mcq.id)
    assert row["options"] == [o.text for o in mcq.options] and row["answer"] == mcq.options[mcq.correct_index].text
    tasks = {t.key: t for d in release.datasets for t in ProgrammaticPart.of(d).tasks}
    for r in loaded["configs"]["programmatic"]["test"]["rows"]:
        # the artifacts' bytes come back whole: the child hashed what it loaded
        assert [(a["path"], a["content"]) for a in r["artifacts"]] == [
            (a.path, a.sha256) for a in tasks[r["key"]].artifacts]
        assert len(r["checks"]) == len(tasks[r["key"]].checks)
        assert all((out / p).is_file() for p in r["input_files"])  # paths resolve inside the folder
    gold = {t.key: t.gold for d in release.datasets for t in HypothesesPart.of(d).tasks}
    hyp = [r for s in loaded["configs"]["hypotheses"].values() for r in s["rows"]]
    assert {r["key"]: r["gold_hypothesis"] for r in hyp} == {k: g.hypothesis if g else None for k, g in gold.items()}
    assert all((out / p).is_file() for r in hyp for p in r["data_files"])

    header = card_header(out)
    assert header["pretty_name"] == "forkpaths release 1.0.0" and header["license"] == "other"
    assert [c["config_name"] for c in header["configs"]] == ALL and header["configs"][0]["default"] is True
    assert header["size_categories"] == ["n<1K"] and "multiple-choice" in header["task_categories"]
    assert (out / header["license_link"]).is_file()
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "left out" not in card and "Every kind, for the Hub." in card
    assert world["record"].manifest_sha256 in card and "@misc{forkpaths_release_1_0_0" in card
    assert "Gu et al." in card and "Majumder et al." in card  # the sources' citations travel with it
    for parquet in out.rglob("*.parquet"):
        assert hashlib.sha256(parquet.read_bytes()).hexdigest() in card
    # the release's files keep the digests of its MANIFEST; every file but the card is in SHA256SUMS
    manifest, _ = parse_manifest((world["root"] / world["record"].path / "MANIFEST").read_text())
    assert {p: sha256_file(out / p) for p in manifest if p == "release.json" or p.startswith("data/")} == {
        p: sha for p, sha in manifest.items() if p == "release.json" or p.startswith("data/")}
    assert check_sums(out) == []
    schema = pq.read_schema(out / "decisions" / "test-00000-of-00001.parquet")
    assert schema.field("columns").type == pa.list_(pa.string()) and schema.field("consensus").type == pa.string()


def test_a_blind_reader_exports_nothing(engine, store, tmp_path):  # type: ignore[no-untyped-def]
    ana, boss, cur = f.user(engine, "ana-hf"), f.user(engine, "boss-hf", Role.ADMIN), f.user(engine, "cur-hf", Role.CURATOR)
    storms = f.dataset(engine, store, assign=[ana, boss])
    f.full_analysis(engine, ana, storms.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=storms.id)
        rel.cut_release(session=s, actor=cur, version="1.0.0", notes="", artifacts=artifacts_for(tmp_path / "r"),
                        store=store)
    with session_scope(engine) as s:
        with pytest.raises(BlindingViolation, match="cannot be exported by you: it holds peers' stage-1 work on 'storms'"):
            rex.export_release(session=s, actor=boss, version="1.0.0", fmt="hf", out=tmp_path / "hub",
                               artifacts=artifacts_for(tmp_path / "r"))
        with pytest.raises(BlindingViolation, match="cannot be downloaded by you"):
            rex.release_archive(session=s, actor=boss, version="1.0.0", fmt="hf", artifacts=artifacts_for(tmp_path / "r"))
    assert not (tmp_path / "hub").exists()
    # once the admin's own analysis is in, the same export holds the peers' decisions
    f.full_analysis(engine, boss, storms.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=boss, dataset_id=storms.id)
        out = rex.export_release(session=s, actor=boss, version="1.0.0", fmt="hf", out=tmp_path / "hub",
                                 artifacts=artifacts_for(tmp_path / "r"))
    assert pq.read_table(out / "decisions" / "test-00000-of-00001.parquet").num_rows == 4


def test_the_fresh_install_release_from_the_command_line_leaves_out_the_kinds_it_lacks(tmp_path, monkeypatch,
                                                                                        capsys):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_STARTER_DATASETS_DIR", str(REPO / "datasets"))
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", "admin password 1")
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    initialise(Settings()).engine.dispose()
    assert main(["release", "create", "--version", "1.0.0"]) == 0
    capsys.readouterr()
    assert main(["release", "export", "1.0.0", "--format", "hf", "--out", str(tmp_path / "hub")]) == 0
    out = tmp_path / "hub" / "1.0.0-hf"
    assert f"Exported release 1.0.0 (hf) to {out}." in capsys.readouterr().out
    loaded = load_offline(out, tmp_path / "hf-cache")
    assert list(loaded["configs"]) == ["programmatic"] and loaded["default"] == {"test": 6}
    assert [c["config_name"] for c in card_header(out)["configs"]] == ["programmatic"]
    card = (out / "README.md").read_text(encoding="utf-8")
    for config in CONFIGS:
        if config.name != "programmatic":
            assert f"- `{config.name}` is left out: this release has {config.missing}." in card
            assert not (out / config.name).exists()
    assert check_sums(out) == []
    # an export never replaces a folder
    assert main(["release", "export", "1.0.0", "--format", "hf", "--out", str(tmp_path / "hub")]) == 2
    assert "already exists; choose another --out" in capsys.readouterr().err


def test_a_release_of_data_tables_alone_is_refused_with_the_reason(engine, store, tmp_path):  # type: ignore[no-untyped-def]
    cur = f.user(engine, "cur-empty", Role.CURATOR)
    f.dataset(engine, store)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=cur, version="1.0.0", notes="", artifacts=artifacts_for(tmp_path / "r"),
                        store=store, include_empty=True)
    with session_scope(engine) as s, pytest.raises(ReleaseError, match=(
            r"Release 1.0.0 could not be written as a Hugging Face dataset: release 1.0.0 holds no item of any kind "
            r"\(analyses, decisions, .*\), only data tables.*export it with --format native")):
        rex.export_release(session=s, actor=cur, version="1.0.0", fmt="hf", out=tmp_path / "hub",
                           artifacts=artifacts_for(tmp_path / "r"))
    assert not (tmp_path / "hub").exists()
