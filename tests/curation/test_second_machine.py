"""A second machine joins with only the database URL and the shared artifact folder (README, "A second machine"):
a `forkpaths worker` whose data folder is not the app's scores a run queued by the app, on PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import Engine

from curation.db import session_scope
from curation.services import leaderboard as lb
from curation.services.jobs import enqueue_run
from tests.conftest import _pg_schema_engine
from tests.curation.scoring_world import World, make_world
from tests.curation.test_queue_workers import ENDED, Workers, _runs, _wait_for


@pytest.fixture
def pg_engine() -> Iterator[Engine]:
    yield from _pg_schema_engine()


@pytest.mark.postgres
def test_a_worker_with_its_own_data_folder_scores_from_the_shared_store(pg_engine, tmp_path, shared_blade):
    world: World = make_world(pg_engine, tmp_path / "app", shared_blade)  # the app's machine: data in app/
    run_id = world.register().id
    enqueue_run(world.engine, run_id)

    elsewhere = tmp_path / "worker-machine"  # the second machine: nothing of the app's data folder
    workers = Workers(world)
    workers.env.update(FORKPATHS_DATA_DIR=str(elsewhere), FORKPATHS_ARTIFACT_DIR=str(world.artifacts.root))
    workers.logs = tmp_path
    try:
        worker = workers.start()
        _wait_for(lambda: _runs(world.engine)[0].status in ENDED, workers)
    finally:
        workers.stop()
    run = _runs(world.engine)[0]
    assert run.status == "succeeded", f"{run.message}\n{workers.output()}"
    assert run.executor.split("/")[1] == str(worker.pid)
    # the worker read the release from the store into its own cache, and wrote the result into the store
    assert (elsewhere / "cache" / "releases" / run.release_sha256 / "MANIFEST").is_file()
    assert not (elsewhere / "releases").exists() or not any((elsewhere / "releases").glob("1.0.0*"))
    assert not (elsewhere / "artifacts").exists()
    result = json.loads(world.artifacts.get_bytes(run.result_sha256, what="the result"))
    assert result["provenance"]["release_version"] == "1.0.0"
    with session_scope(world.engine) as s:  # and the app reads it as its own
        assert lb.run_result(session=s, actor=world.evaluator, run_id=run_id, artifacts=world.artifacts)
