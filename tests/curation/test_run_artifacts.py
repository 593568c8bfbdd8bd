"""A job whose artifact is missing or whose hash does not match fails with that sentence (issue 16, faults): the
run records the sha256 of its submission files, its release's MANIFEST and its result; scoring reads each from the
artifact store by that hash, checked, and a damaged object is never served."""

from __future__ import annotations

import hashlib
import re
import shutil

import pytest

from curation.db import session_scope
from curation.errors import ArtifactCorrupted, ArtifactMissing
from curation.services import leaderboard as lb
from curation.services import scoring as sc
from tests.curation.scoring_world import make_world


@pytest.fixture
def world(sqlite_engine, tmp_path, shared_blade):
    return make_world(sqlite_engine, tmp_path, shared_blade)


def _execute(world, run_id):
    return sc.execute_run(world.engine, run_id, artifacts=world.artifacts)


def test_a_run_records_the_hashes_of_what_it_reads_and_writes(world):
    run = world.register()
    [stored] = run.submission_files
    sha = hashlib.sha256(world.multirun).hexdigest()
    assert stored["sha256"] == sha and "path" not in stored  # a job needs the hash, never a path
    assert world.artifacts.object_path(sha) == world.artifacts.root / "objects" / sha[:2] / sha[2:]
    assert world.artifacts.object_path(sha).read_bytes() == world.multirun
    assert run.release_sha256 == world.release_object("MANIFEST")
    done = _execute(world, run.id)
    assert done.status == "succeeded", done.message
    result = world.artifacts.object_path(done.result_sha256)
    assert hashlib.sha256(result.read_bytes()).hexdigest() == done.result_sha256
    assert done.result_path == "result.json" and not result.stat().st_mode & 0o222  # objects are read-only
    assert not (world.runs).exists()  # nothing is written in the old layout any more


def test_a_missing_submission_fails_the_run_saying_which_artifact(world):
    run = world.register()
    sha = run.submission_files[0]["sha256"]
    world.artifacts.object_path(sha).unlink()
    done = _execute(world, run.id)
    assert done.status == "failed" and done.scores is None and done.result_sha256 is None
    assert (f"The submission multirun_analyses.json of run {run.id} (sha256 {sha[:12]}…) is not in the artifact "
            f"store at {world.artifacts.root}") in done.message
    assert "FileNotFoundError" not in done.message


def test_a_corrupted_submission_fails_the_run_and_is_never_served(world):
    run = world.register()
    sha = run.submission_files[0]["sha256"]
    world.tamper(sha, world.multirun.replace(b'"n"', b'"n" ', 1))
    done = _execute(world, run.id)
    assert done.status == "failed" and done.scores is None
    assert re.search(rf"The submission multirun_analyses.json of run {run.id} \(sha256 {sha[:12]}…\) in the "
                     rf"artifact store at .* is damaged: its bytes hash to [0-9a-f]{{12}}…, so it was not used",
                     done.message), done.message
    # set aside, never served again, and storing the same content heals the store
    assert not world.artifacts.has(sha) and len(list((world.artifacts.root / "damaged").iterdir())) == 1
    with pytest.raises(ArtifactMissing):
        world.artifacts.get_bytes(sha, what="it")
    again = world.score()
    assert again.status == "succeeded" and world.artifacts.get_bytes(sha, what="it") == world.multirun


def test_a_release_file_missing_from_the_store_fails_the_run_naming_the_file(world):
    run = world.register()
    sha = world.release_object("data/hurricane/data.csv")
    world.artifacts.object_path(sha).unlink()
    shutil.rmtree(world.artifacts.releases_cache)  # a worker that has not materialised the release yet
    done = _execute(world, run.id)
    assert done.status == "failed", done.message
    assert (f"The file data/hurricane/data.csv of release 1.0.0 (sha256 {sha[:12]}…) is not in the artifact "
            f"store at {world.artifacts.root}") in done.message
    assert not any(p.name == run.release_sha256 for p in world.artifacts.releases_cache.iterdir())  # no half copy


def test_a_corrupted_release_manifest_fails_the_run(world):
    run = world.register()
    world.tamper(run.release_sha256, b"0" * 64 + b"  release.json\n")
    done = _execute(world, run.id)
    assert done.status == "failed"
    assert f"The MANIFEST of release 1.0.0 (sha256 {run.release_sha256[:12]}…)" in done.message
    assert "is damaged" in done.message


def test_a_changed_cached_copy_is_made_again_from_the_store(world):
    run = world.register()  # registering materialised the release in this machine's cache
    cached = world.artifacts.releases_cache / run.release_sha256 / "data" / "hurricane" / "data.csv"
    cached.write_bytes(cached.read_bytes() + b"1,2,3\n")
    done = _execute(world, run.id)
    assert done.status == "succeeded", done.message
    assert hashlib.sha256(cached.read_bytes()).hexdigest() == world.release_object("data/hurricane/data.csv")


def test_a_missing_result_is_named_where_it_is_read(world):
    run = world.score()
    world.artifacts.object_path(run.result_sha256).unlink()
    with session_scope(world.engine) as s, pytest.raises(ArtifactMissing, match=rf"The result of run {run.id} "):
        lb.run_result(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts)
    world.tamper(run.submission_files[0]["sha256"], b"{}")
    with session_scope(world.engine) as s, pytest.raises(ArtifactCorrupted, match="is damaged"):
        sc.rescore_run(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts,
                       max_bytes=5_000_000)


def test_artifacts_check_names_every_damaged_or_missing_artifact(world, tmp_path, monkeypatch, capsys):
    from curation.cli import main

    run = world.score()
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path))  # the world's data folder and database
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", "not-used-here-1")
    assert main(["artifacts", "--as", world.curator.username, "check"]) == 0
    assert ", 0 problem(s)." in capsys.readouterr().out
    data = world.release_object("data/hurricane/data.csv")
    world.artifacts.object_path(data).unlink()
    world.tamper(run.result_sha256, b"{}")
    assert main(["artifacts", "--as", world.curator.username, "check"]) == 1
    out = capsys.readouterr().out
    assert f"The file data/hurricane/data.csv of release 1.0.0 (sha256 {data[:12]}…) is not in the artifact" in out
    assert f"(sha256 {run.result_sha256[:12]}…) in the artifact store at {world.artifacts.root} is damaged" in out
    assert f"The result of run {run.id} (sha256 {run.result_sha256[:12]}…) is not in the artifact store" in out
    assert "3 problem(s)" in out
    assert main(["artifacts", "--as", world.analyst.username, "check"]) == 2  # curators and admins only
