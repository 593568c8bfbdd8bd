"""A data folder from before the artifact store keeps working: at start, its runs' files (runs/<id>/…) and its
published releases (releases/<version>/) are put into the store, checked against their recorded hashes."""

from __future__ import annotations

import hashlib
import shutil

from sqlmodel import select

from curation.bootstrap import initialise
from curation.db import session_scope
from curation.models import ScoringRun
from curation.services import leaderboard as lb
from curation.services import scoring as sc
from curation.services.artifact_import import import_old_layout
from curation.settings import Settings
from tests.curation.scoring_world import World, make_world


def _to_old_layout(world: World, run: ScoringRun, *, submission: bytes | None = None) -> None:
    """What forkpaths before the store left: the run's files under runs/<id>/, their paths on its row."""
    folder = world.runs / str(run.id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "submission-0.json").write_bytes(submission or world.multirun)
    if run.result_sha256:
        (folder / "result.json").write_bytes(world.artifacts.get_bytes(run.result_sha256, what="r"))
    with session_scope(world.engine) as s:
        row = s.get(ScoringRun, run.id)
        assert row is not None
        row.submission_files = [{**row.submission_files[0], "path": f"{run.id}/submission-0.json"}]
        row.result_path = f"{run.id}/result.json" if run.result_sha256 else None
        row.result_sha256 = row.release_sha256 = None
        s.add(row)


def _rows(world: World) -> list[ScoringRun]:
    with session_scope(world.engine) as s:
        return list(s.exec(select(ScoringRun).order_by(ScoringRun.id)).all())


def test_an_old_data_folder_is_put_in_the_store_at_start_and_keeps_working(sqlite_engine, tmp_path, shared_blade):
    world = make_world(sqlite_engine, tmp_path, shared_blade)
    scored = world.score()
    queued = world.register(agent="queued-before-upgrade")
    own = world.multirun.replace(b"{", b"{ ", 1)  # content of its own (the store keeps equal contents once)
    altered = world.register([("own.json", own)], agent="altered-on-disk")
    for run in (scored, queued):
        _to_old_layout(world, run)
    _to_old_layout(world, altered, submission=own + b" ")
    result = world.artifacts.get_bytes(scored.result_sha256, what="r")
    shutil.rmtree(world.artifacts.root)  # the old data folder had no store
    shutil.rmtree(world.artifacts.cache_dir)

    settings = Settings(data_dir=tmp_path, load_starter_datasets=False, admin_password="admin password 1")
    assert settings.resolved_database_url == str(world.engine.url)
    initialise(settings)  # what every start does (the app, the CLI, a worker)

    old, waiting, changed = _rows(world)
    assert old.result_sha256 == hashlib.sha256(result).hexdigest() and old.result_path == "result.json"
    assert old.release_sha256 == waiting.release_sha256 == world.release_object("MANIFEST")
    assert ["path" in f for r in (old, waiting, changed) for f in r.submission_files] == [False, False, True]
    assert world.artifacts.has(world.release_object("MANIFEST"))  # the published release, as a tree
    with session_scope(world.engine) as s:  # the old run's result is read from the store
        assert lb.run_result(session=s, actor=world.evaluator, run_id=old.id, artifacts=world.artifacts)
    done = sc.execute_run(world.engine, waiting.id, artifacts=world.artifacts)  # a run queued before the upgrade
    assert done.status == "succeeded", done.message
    failed = sc.execute_run(world.engine, changed.id, artifacts=world.artifacts)
    assert failed.status == "failed" and "is damaged" not in failed.message
    assert f"of run {changed.id} (sha256" in failed.message and "is not in the artifact store" in failed.message
    assert (world.runs / str(old.id) / "result.json").exists()  # the old files are left where they were

    with session_scope(world.engine) as s:  # idempotent: a second start has nothing left to do
        again = import_old_layout(session=s, artifacts=world.artifacts, runs_root=world.runs)
    assert (again.releases, again.submissions, again.results) == (0, 0, 0)
    assert len(again.problems) == 1 and "no longer matches the sha256 recorded for it" in again.problems[0]
