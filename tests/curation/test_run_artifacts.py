"""A job whose artifact is missing or whose hash does not match fails with that sentence (issue 16, faults): the
run records the sha256 of each submission file at registration, and scoring checks it before it starts."""

from __future__ import annotations

import hashlib

from curation.services import scoring as sc
from tests.curation.scoring_world import make_world


def _execute(world, run_id):
    return sc.execute_run(world.engine, run_id, artifacts=world.artifacts)


def test_registration_records_each_submission_files_sha256(sqlite_engine, tmp_path, shared_blade):
    world = make_world(sqlite_engine, tmp_path, shared_blade)
    run = world.register()
    [stored] = run.submission_files
    assert stored["sha256"] == hashlib.sha256(world.multirun).hexdigest()
    assert (world.runs / stored["path"]).read_bytes() == world.multirun


def test_a_run_whose_stored_submission_was_removed_fails_saying_so(sqlite_engine, tmp_path, shared_blade):
    world = make_world(sqlite_engine, tmp_path, shared_blade)
    run = world.register()
    (world.runs / run.submission_files[0]["path"]).unlink()
    done = _execute(world, run.id)
    assert done.status == "failed" and done.scores is None
    assert "the stored submission multirun_analyses.json is missing" in done.message
    assert "removed after the run was registered" in done.message and "FileNotFoundError" not in done.message


def test_a_run_whose_stored_submission_was_altered_fails_saying_so(sqlite_engine, tmp_path, shared_blade):
    world = make_world(sqlite_engine, tmp_path, shared_blade)
    run = world.register()
    path = world.runs / run.submission_files[0]["path"]
    path.write_bytes(path.read_bytes().replace(b'"n"', b'"n" ', 1))
    done = _execute(world, run.id)
    assert done.status == "failed" and done.scores is None
    assert "no longer matches its hash (the sha256 recorded when the run was registered" in done.message
    assert run.submission_files[0]["sha256"][:12] in done.message


def test_a_run_whose_release_was_altered_fails_naming_the_file(sqlite_engine, tmp_path, shared_blade):
    world = make_world(sqlite_engine, tmp_path, shared_blade)
    run = world.register()
    manifest = next(world.releases.rglob("MANIFEST*"))
    manifest.write_text(manifest.read_text() + "\n")
    done = _execute(world, run.id)
    assert done.status == "failed" and done.scores is None
    assert "ReleaseError" not in done.message and "MANIFEST" in done.message, done.message
