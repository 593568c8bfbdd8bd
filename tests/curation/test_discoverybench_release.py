"""Releases of imported DiscoveryBench folders (issue 17 point 3): cut with every file and hypothesis task, exported
in DiscoveryBench's layout (the shared data byte for byte), mixed with BLADE datasets, consensus gold through the
release_parts seam, blinding, tampering and the command line. SQLite and PostgreSQL through ``engine``."""

from __future__ import annotations

import functools
import io
import zipfile
from pathlib import Path

import pytest
from sqlmodel import select

from curation.bootstrap import initialise
from curation.cli import main
from curation.db import session_scope
from curation.errors import BlindingViolation, ReleaseError
from curation.models import Dataset, HypothesisTask, Role
from curation.services import release_exports as rex
from curation.services import releases as rel
from curation.services.annotation import submit_analysis
from curation.services.datasets import assign_analysts
from curation.services.discoverybench_import import import_discoverybench
from curation.services.hypotheses.consensus import hypotheses_release_part
from curation.services.release_data import Pseudonym
from curation.settings import Settings
from exports.discoverybench import read_discoverybench
from exports.hypotheses_part import HypothesesPart, HypothesisCandidate, HypothesisGold
from exports.native import read_release
from tests import factories as f
from tests.exports.test_release_hypotheses import ANSWER_KEY, make_tree
from tests.factories import artifacts_for

MB = 2**20


def _import(engine, store: Path, path: Path) -> None:  # type: ignore[no-untyped-def]
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=path, store=store, max_bytes=200 * MB)


def _cut(w, version, **kw):  # type: ignore[no-untyped-def]
    with session_scope(w["engine"]) as s:
        return rel.cut_release(session=s, actor=w["curator"], version=version, notes="", artifacts=artifacts_for(w["root"]),
                               store=w["store"], **kw)


def _export(w, version, fmt, out):  # type: ignore[no-untyped-def]
    with session_scope(w["engine"]) as s:
        return rex.export_release(session=s, actor=w["curator"], version=version, fmt=fmt, out=out,
                                  artifacts=artifacts_for(w["root"]))


def _files(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".ipynb_checkpoints" not in p.parts and p.relative_to(root).as_posix() not in skip}


@pytest.fixture
def world(engine, store, tmp_path):  # type: ignore[no-untyped-def]
    return {"engine": engine, "store": store, "root": tmp_path / "releases",
            "curator": f.user(engine, "curator-db", Role.CURATOR)}


def test_shared_data_round_trips_through_a_release(world, shared_discoverybench, tmp_path):  # type: ignore[no-untyped-def]
    _import(world["engine"], world["store"], shared_discoverybench)
    record = _cut(world, "1.0.0")  # datasets with hypothesis tasks have ground truth: all are in by default
    tree = read_discoverybench(shared_discoverybench)
    release = read_release(world["root"] / record.path)
    assert len(release.datasets) == len(tree.folders)
    with session_scope(world["engine"]) as s:
        stored = {d.name: d for d in s.exec(select(Dataset)).all()}
    for ds in release.datasets:
        assert sorted(f.name for f in ds.files) == sorted(e["name"] for e in stored[ds.name].files)
        assert {f.sha256 for f in ds.files} == {e["sha256"] for e in stored[ds.name].files}
        assert ds.data_file in {f.path for f in ds.files}
    tasks = {t.key: t for ds in release.datasets for t in HypothesesPart.of(ds).tasks}
    assert set(tasks) == {t.key for t in tree.tasks}
    for task in tree.tasks:
        gold = tasks[task.key].gold
        assert (gold.hypothesis, gold.source) == (task.gold.text, task.gold.source)  # type: ignore[union-attr]
        assert gold.workflow == task.gold.workflow  # type: ignore[union-attr]
    counts = record.summary["db_real_test_archaeology"]["parts"]["hypotheses"]
    assert counts["hypothesis tasks"] == counts["with gold"] == 38 and counts["to curate"] == 0
    assert "DiscoveryBench" in release.attribution and "ODC-By" in release.attribution

    out = _export(world, "1.0.0", "discoverybench", tmp_path / "out")
    assert out == tmp_path / "out" / "1.0.0-discoverybench"
    # every metadata file, data file and both answer keys byte for byte; upstream's LICENSE/README are not ours
    assert _files(out, skip=("ATTRIBUTION.md",)) == _files(shared_discoverybench, skip=("LICENSE.md", "README.md"))
    with session_scope(world["engine"]) as s:
        name, payload = rex.release_archive(session=s, actor=world["curator"], version="1.0.0",
                                            fmt="discoverybench", artifacts=artifacts_for(world["root"]))
    assert name == "forkpaths-1.0.0-discoverybench.zip"
    with zipfile.ZipFile(io.BytesIO(payload)) as zf:
        key = zf.read("1.0.0-discoverybench/answer_key_real.csv")
    assert key == (shared_discoverybench / "answer_key_real.csv").read_bytes()
    # BLADE's layout has no place for hypothesis tasks: refused with a sentence, nothing written
    with pytest.raises(ReleaseError, match="holds only datasets of hypothesis tasks .* --format discoverybench"):
        _export(world, "1.0.0", "blade", tmp_path / "b")
    assert not (tmp_path / "b" / "1.0.0-blade").exists()


def test_a_release_mixing_blade_and_discoverybench_datasets(world, tmp_path):  # type: ignore[no-untyped-def]
    engine, store = world["engine"], world["store"]
    ana = f.user(engine, "ana-db")
    storms = f.dataset(engine, store, assign=[ana])
    f.full_analysis(engine, ana, storms.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=storms.id)
    _import(engine, store, make_tree(tmp_path / "tree"))
    with session_scope(engine) as s:
        assert rel.release_candidates(session=s, actor=world["curator"]) == (
            ["db_real_test_bmi", "db_real_train_savings", "db_synth_dev_jazz_0_0", "storms"], [])
    record = _cut(world, "1.0.0")
    release = read_release(world["root"] / record.path)
    bmi = next(d for d in release.datasets if d.name == "db_real_test_bmi")
    assert [t.gold.source if t.gold else None for t in HypothesesPart.of(bmi).tasks] == ["answer_key", None, None]
    storms_release = next(d for d in release.datasets if d.name == "storms")
    assert storms_release.files == [] and "hypotheses" not in storms_release.parts
    assert storms_release.data_file == "data/storms/data.csv"  # BLADE datasets as before
    assert "files" not in record.summary["storms"]
    with session_scope(engine) as s:
        rows = {r["dataset"]: r for r in rel.release_dataset_rows(session=s, actor=world["curator"], version="1.0.0")}
    assert rows["db_real_test_bmi"] == {
        "dataset": "db_real_test_bmi", "holds": "hypothesis tasks", "about": rows["db_real_test_bmi"]["about"],
        "hypothesis tasks": 3, "with gold": 1, "to curate": 2, "candidates": 0, "gold by consensus": 0, "files": 2,
        "votes": 0}
    assert "still to curate" in rows["db_real_test_bmi"]["about"]
    assert rows["storms"]["holds"].startswith("analysis decisions") and rows["storms"]["decisions"] == 4
    assert "hypothesis tasks" not in rows["storms"]

    blade = _export(world, "1.0.0", "blade", tmp_path / "b")
    assert sorted(p.name for p in blade.iterdir()) == ["NOT_EXPORTED.md", "storms"]
    note = (blade / "NOT_EXPORTED.md").read_text()
    for name in ("db_real_test_bmi", "db_real_train_savings", "db_synth_dev_jazz_0_0"):
        assert f"'{name}' is a dataset of hypothesis tasks (DiscoveryBench)" in note
    db = _export(world, "1.0.0", "discoverybench", tmp_path / "d")
    assert "'storms' is not a DiscoveryBench folder" in (db / "NOT_EXPORTED.md").read_text()
    assert _files(db, skip=("NOT_EXPORTED.md", "ATTRIBUTION.md")) == _files(tmp_path / "tree")
    with session_scope(engine) as s:
        assert list(rex.export_skips(session=s, actor=world["curator"], version="1.0.0", fmt="discoverybench")) == [
            "storms"]
        assert rex.export_skips(session=s, actor=world["curator"], version="1.0.0", fmt="native") == {}


def _parts(analyst_id: int):  # type: ignore[no-untyped-def]
    """What stage 1-3 curation would hand the cut: a candidate and consensus gold for one test query."""

    def parts(*, session, task: HypothesisTask, who: Pseudonym):  # type: ignore[no-untyped-def]
        if task.key != "real/test/bmi/metadata_0/q1":
            return [], None
        candidate = HypothesisCandidate(id="c1", author=who(analyst_id), hypothesis="Age and income explain BMI.",
                                        workflow="regress")
        gold = HypothesisGold(hypothesis="Age and income explain BMI.", source="consensus", candidate_id="c1",
                              provenance={"rule": "unanimous", "tally": {"justifiable": 2}})
        return [candidate], gold

    return {"hypotheses": functools.partial(hypotheses_release_part, task_parts=parts)}


def test_consensus_gold_and_candidates_come_through_the_seam_and_are_blinded(world, tmp_path):  # type: ignore[no-untyped-def]
    engine = world["engine"]
    _import(engine, world["store"], make_tree(tmp_path / "tree"))
    ana, boss = f.user(engine, "ana-seam"), f.user(engine, "boss-seam", Role.ADMIN)
    with session_scope(engine) as s:
        bmi_id = s.exec(select(Dataset.id).where(Dataset.name == "db_real_test_bmi")).one()
        assign_analysts(session=s, actor=boss, dataset_id=bmi_id, user_ids=[ana.id, boss.id])
    record = _cut(world, "1.0.0", release_parts=_parts(ana.id))
    assert record.summary["db_real_test_bmi"]["parts"]["hypotheses"]["candidates"] == 1
    assert record.summary["db_real_test_bmi"]["parts"]["hypotheses"]["with gold"] == 2
    release = read_release(world["root"] / record.path)
    task = next(t for d in release.datasets for t in HypothesesPart.of(d).tasks
                if t.key.endswith("bmi/metadata_0/q1"))
    assert task.candidates[0].author == f"A{ana.id}"  # a pseudonym, never the user name
    bmi = next(d for d in release.datasets if d.name == "db_real_test_bmi")
    assert [a.id for a in bmi.annotators] == [f"A{ana.id}"]
    assert task.gold is not None and task.gold.source == "consensus"
    assert "ana-seam" not in (world["root"] / record.path / "release.json").read_text()
    out = _export(world, "1.0.0", "discoverybench", tmp_path / "out")
    assert (out / "answer_key_real.csv").read_bytes() == ANSWER_KEY + b"bmi,0,1,Age and income explain BMI.\r\n"
    # an admin assigned to the folder who has not done stage 1 sees the queries: no gold (an imported gold is the
    # dataset's answer), not the peers' work
    with session_scope(engine) as s:
        view = rel.read_release_for(session=s, actor=boss, version="1.0.0", artifacts=artifacts_for(world["root"]))
        assert "db_real_test_bmi" in view.withheld
        blind = next(d for d in view.release.datasets if d.name == "db_real_test_bmi")
        assert [t.gold for t in HypothesesPart.of(blind).tasks] == [None, None, None]
        assert [t.key for t in HypothesesPart.of(blind).tasks] == [t.key for t in HypothesesPart.of(bmi).tasks]
        assert all(not t.candidates for t in HypothesesPart.of(blind).tasks)
        assert blind.extra["discoverybench"]["folder"] == "bmi"
        with pytest.raises(BlindingViolation, match="cannot be exported by you"):
            rex.export_release(session=s, actor=boss, version="1.0.0", fmt="discoverybench", out=tmp_path / "x",
                               artifacts=artifacts_for(world["root"]))


def test_an_altered_discoverybench_file_in_a_release_is_refused_naming_it(world, tmp_path):  # type: ignore[no-untyped-def]
    _import(world["engine"], world["store"], make_tree(tmp_path / "tree"))
    record = _cut(world, "1.0.0")
    meta = world["root"] / record.path / "data" / "db_real_test_bmi" / "metadata_0.json"
    meta.write_bytes(meta.read_bytes().replace(b"BMI", b"IMB"))
    for fmt in ("discoverybench", "native"):
        with pytest.raises(ReleaseError, match=r"(?s)modified after it was cut.*data/db_real_test_bmi/metadata_0\.json"):
            _export(world, "1.0.0", fmt, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_the_command_line_exports_discoverybench_and_says_what_blade_cannot_hold(tmp_path, monkeypatch, capsys):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", "admin password 1")
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    initialise(Settings()).engine.dispose()
    tree = make_tree(tmp_path / "tree")
    assert main(["import-discoverybench", str(tree)]) == 0
    assert main(["release", "create", "--version", "1.0.0"]) == 0
    capsys.readouterr()
    assert main(["release", "export", "1.0.0", "--format", "discoverybench", "--out", str(tmp_path / "out")]) == 0
    assert f"Exported release 1.0.0 (discoverybench) to {tmp_path / 'out' / '1.0.0-discoverybench'}." in (
        capsys.readouterr().out)
    assert _files(tmp_path / "out" / "1.0.0-discoverybench", skip=("ATTRIBUTION.md",)) == _files(tree)
    assert main(["release", "export", "1.0.0", "--format", "blade", "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "holds only datasets of hypothesis tasks (DiscoveryBench), which BLADE's layout has no place for" in err
    assert not (tmp_path / "b" / "1.0.0-blade").exists()


def test_answer_key_rows_come_back_in_the_order_they_were_read(world, tmp_path):  # type: ignore[no-untyped-def]
    from tests.exports.discoverybench_helpers import make_folder, real_metadata

    tree = make_tree(tmp_path / "tree")
    make_folder(tree / "real" / "test", "alpha", {0: real_metadata(), 10: real_metadata(), 9: real_metadata()})
    # not upstream's (text) order: bmi before alpha, metadata 10 before 9
    key = (ANSWER_KEY + b"alpha,10,0,Ten.\r\nalpha,9,0,Nine.\r\n")
    (tree / "answer_key_real.csv").write_bytes(key)
    _import(world["engine"], world["store"], tree)
    ana = f.user(world["engine"], "ana-order")
    _cut(world, "1.0.0", release_parts=_parts(ana.id))  # plus one consensus row for bmi (no recorded place)
    out = _export(world, "1.0.0", "discoverybench", tmp_path / "out")
    assert (out / "answer_key_real.csv").read_bytes() == (
        ANSWER_KEY + b"bmi,0,1,Age and income explain BMI.\r\nalpha,10,0,Ten.\r\nalpha,9,0,Nine.\r\n")
