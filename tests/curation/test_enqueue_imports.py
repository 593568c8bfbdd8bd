"""``forkpaths score --enqueue`` registers the run and hands it to the workers without loading the engine: no
data library (pandas, numpy, networkx, pyarrow) is imported to check the submission, hash the release's ground
truth, record the run and queue it. Checked in the fresh interpreter that ran the command, through
``sys.modules``, on the real PostgreSQL (not by timing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from curation.db import session_scope
from curation.models import ScoringRun
from curation.settings import PROJECT_ROOT
from tests.conftest import PG_URL, _pg_schema_engine
from tests.curation.scoring_world import World, make_world

HEAVY = ["pandas", "numpy", "networkx", "pyarrow", "scipy", "statsmodels", "sklearn", "matplotlib"]


@pytest.fixture
def pg_engine() -> Iterator[Engine]:
    yield from _pg_schema_engine()


@pytest.fixture
def pg_world(pg_engine, tmp_path, shared_blade) -> World:  # type: ignore[no-untyped-def]
    return make_world(pg_engine, tmp_path, shared_blade)


@pytest.mark.postgres
def test_score_enqueue_loads_no_data_library(pg_world, shared_blade) -> None:  # type: ignore[no-untyped-def]
    with pg_world.engine.connect() as conn:
        schema = str(conn.execute(text("select current_schema()")).scalar())
    env = dict(os.environ, FORKPATHS_DATA_DIR=str(pg_world.store.parent),
               FORKPATHS_DATABASE_URL=f"{PG_URL}?options=-csearch_path%3D{schema}",
               FORKPATHS_LOAD_STARTER_DATASETS="false", FORKPATHS_ADMIN_PASSWORD="admin password 1")
    args = ["score", "--release", "1.0.0", "--submission", str(shared_blade / "examples" / "multirun_analyses.json"),
            "--agent", "queued-agent", "--enqueue", "--as", pg_world.evaluator.username]
    code = (f"import json, sys; from curation.cli import main; code = main({args!r}); "
            f"print(json.dumps([code, sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    run_id, report = done.stdout.strip().splitlines()[-2:]
    assert json.loads(report) == [0, []], done.stderr
    with session_scope(pg_world.engine) as s:
        run = s.get(ScoringRun, int(run_id))
        assert run is not None
        assert (run.agent, run.status, run.progress_total) == ("queued-agent", "queued", 10)  # registered, counted
        assert run.dataset_hashes  # the ground truth's hashes were computed without the engine
