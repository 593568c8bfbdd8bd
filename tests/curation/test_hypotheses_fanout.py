"""A hypotheses run fans out one dataset folder per part: two `forkpaths worker` processes score its queries in
parallel on PostgreSQL, and the result is the one a single process gives (timings aside), whatever the order."""

from __future__ import annotations

import json
import time

import pytest
from sqlmodel import col, select

from curation.db import session_scope
from curation.models import ScoringRunPart
from curation.services import scoring as sc
from curation.services.jobs import enqueue_run
from tests.conftest import _pg_schema_engine
from tests.curation.hms_world import make_hms_world
from tests.curation.test_queue_workers import ENDED, Workers, _runs, _wait_for
from tests.llm_server import ScriptedLLM

# how long it took, and whether an answer came from the cache: not part of what was judged
_VOLATILE = {"seconds", "created_at", "cached"}


def _normal(value):
    if isinstance(value, dict):
        return {k: ("<v>" if k in _VOLATILE else _normal(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _result(world, run) -> str:
    return json.dumps(_normal(json.loads(sc.stored_result(run, world.artifacts))), indent=1, sort_keys=True)


@pytest.fixture
def hms_pg(tmp_path):
    with ScriptedLLM() as server:
        for engine in _pg_schema_engine():
            world = make_hms_world(engine, tmp_path, server)
            script = world.script

            def slow_survey(request, script=script):  # the survey folder's questions take a while: one worker stays on them
                if "Older adults earn more." in json.dumps(request):
                    time.sleep(0.6)
                return script(request)

            server.responder = slow_survey
            workers = Workers(world)  # type: ignore[arg-type]
            workers.env.update(FORKPATHS_LLM_BASE_URL=server.url, FORKPATHS_LLM_MODEL="judge-model",
                               FORKPATHS_LLM_MAX_RETRIES="0")
            try:
                yield world, workers
            finally:
                workers.stop()


@pytest.mark.postgres
def test_a_hypotheses_run_is_scored_across_two_workers_with_the_same_result(hms_pg):
    world, workers = hms_pg
    one = sc.execute_run(world.engine, world.register(agent="one").id, artifacts=world.artifacts,
                         judges=world.judges)
    assert one.status == "succeeded", one.message
    with session_scope(world.engine) as s:
        assert s.exec(select(ScoringRunPart).where(ScoringRunPart.run_id == one.id)).all() == []  # one process

    fanned = world.register(agent="fanned")
    enqueue_run(world.engine, fanned.id)
    first, second = workers.start(), workers.start()
    _wait_for(lambda: _runs(world.engine)[1].status in ENDED, workers)
    run = _runs(world.engine)[1]
    assert run.status == "succeeded", (run.message, workers.output())
    with session_scope(world.engine) as s:
        parts = list(s.exec(select(ScoringRunPart).where(ScoringRunPart.run_id == run.id)
                            .order_by(col(ScoringRunPart.idx))).all())
        s.expunge_all()
    # one part per dataset folder answered, in the release's order
    assert [(p.label, p.status, p.attempts) for p in parts] == [("survey", "done", 1), ("crops", "done", 1),
                                                                 ("synth-one", "done", 1)]
    # the slow survey part held one worker while the other scored the rest: both workers took a part
    assert {p.executor.split("/")[1] for p in parts} == {str(first.pid), str(second.pid)}
    assert run.progress_done == 4
    assert _result(world, run) == _result(world, one)
    assert run.scores == one.scores
