"""A run fans out (issue 16, point 4): its parts (one per dataset file) are scored by several workers and combined
at the end, in the files' order, so the result file is the same byte for byte (timestamps aside) as when one
process scores it; a part whose worker is killed is scored again, and no analysis counts twice."""

from __future__ import annotations

import json
import signal

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

from curation.db import session_scope
from curation.models import ScoringRunPart
from curation.services import scoring as sc
from curation.services.blade_import import import_blade
from curation.services.jobs import enqueue_run
from tests.conftest import _pg_schema_engine
from tests.curation.scoring_world import World, make_world
from tests.curation.test_queue_workers import ENDED, Workers, _runs, _wait_for

# when and with what it ran; "cached": whether this run built the ground truth or found it built by an earlier one
_VOLATILE = {"created_at", "library_versions", "cached"}


def _normal(value):
    if isinstance(value, dict):
        return {k: ("<t>" if k in _VOLATILE else _normal(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _result(world: World, run) -> str:
    data = world.result_json(run)
    return json.dumps(_normal(data), indent=2, sort_keys=True)


def _two_dataset_world(engine: Engine, tmp_path, shared_blade) -> World:
    """hurricane and crofoot in release 1.1.0."""
    world = make_world(engine, tmp_path, shared_blade)
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "crofoot", store=world.store,
                     max_bytes=200 * 2**20)
    world.cut("1.1.0")
    return world


def _files(shared_blade, slow_s: float = 0.0) -> list[tuple[str, bytes]]:
    """hurricane's multirun file (its first analyses slowed down when asked) and four of its analyses offered
    as an analysis of crofoot (they fail there, the same way every time)."""
    data = json.loads((shared_blade / "examples" / "multirun_analyses.json").read_text())
    hurricane = dict(data)
    if slow_s:
        hurricane["analyses"] = {
            k: ({**a, "transform_code": a["transform_code"].replace(
                "-> pd.DataFrame:\n", f"-> pd.DataFrame:\n    __import__('time').sleep({slow_s})\n", 1)}
                if i < 4 else a)
            for i, (k, a) in enumerate(data["analyses"].items())}
    crofoot = {"dataset_name": "crofoot", "n": 4, "analyses": dict(list(data["analyses"].items())[:4])}
    return [("hurricane.json", json.dumps(hurricane).encode()), ("crofoot.json", json.dumps(crofoot).encode())]


def _parts(engine: Engine, run_id: int) -> list[ScoringRunPart]:
    with session_scope(engine) as s:
        return list(s.exec(select(ScoringRunPart).where(ScoringRunPart.run_id == run_id)
                           .order_by(ScoringRunPart.idx)).all())


@pytest.fixture
def world2(tmp_path, shared_blade):
    for engine in _pg_schema_engine():
        yield _two_dataset_world(engine, tmp_path, shared_blade)


@pytest.fixture
def workers2(world2):
    w = Workers(world2)
    try:
        yield w
    finally:
        w.stop()


@pytest.mark.postgres
def test_a_run_scored_across_two_workers_gives_the_same_result_as_in_one_process(world2, workers2, shared_blade):
    files = _files(shared_blade, slow_s=1.5)
    one = world2.register(files, version="1.1.0", agent="one")
    one = sc.execute_run(world2.engine, one.id, artifacts=world2.artifacts)
    assert one.status == "succeeded", one.message
    assert _parts(world2.engine, one.id) == []  # in one process, no fan-out

    fanned = world2.register(files, version="1.1.0", agent="fanned")
    enqueue_run(world2.engine, fanned.id)
    first = workers2.start()
    second = workers2.start()
    _wait_for(lambda: _runs(world2.engine)[1].status in ENDED, workers2)
    run = _runs(world2.engine)[1]
    assert run.status == "succeeded", run.message
    parts = _parts(world2.engine, run.id)
    assert [(p.label, p.status, p.attempts) for p in parts] == [("hurricane", "done", 1), ("crofoot", "done", 1)]
    # the slow hurricane part held one worker while the other scored crofoot: both workers took a part
    assert {p.executor.split("/")[1] for p in parts} == {str(first.pid), str(second.pid)}
    assert run.progress_done == run.progress_total == 14
    assert _result(world2, run) == _result(world2, one)
    assert run.scores == one.scores


@pytest.mark.postgres
def test_a_part_whose_worker_is_killed_is_scored_again_once(world2, workers2, shared_blade):
    run_id = world2.register(_files(shared_blade, slow_s=2.0), version="1.1.0", agent="killed").id
    enqueue_run(world2.engine, run_id)
    first = workers2.start()

    def first_scores_hurricane() -> bool:
        parts = _parts(world2.engine, run_id)
        held_by = (parts[0].executor.split("/") + ["", ""])[1] if parts else ""  # host/pid/start; "" unclaimed
        return held_by == str(first.pid) and parts[0].progress_done >= 1

    _wait_for(first_scores_hurricane, workers2)
    second = workers2.start()
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=60)
    _wait_for(lambda: _runs(world2.engine)[0].status in ENDED, workers2)
    run = _runs(world2.engine)[0]
    assert run.status == "succeeded", run.message
    parts = _parts(world2.engine, run_id)
    assert all(p.status == "done" and p.executor.split("/")[1] == str(second.pid) for p in parts)
    assert parts[0].attempts == 2  # the dead worker's part, scored again from its start
    assert run.progress_done == run.progress_total == 14  # each analysis counted once
    result = world2.result_json(run)
    assert [len(d["analyses"]) for d in result["datasets"]] == [10, 4]


@pytest.mark.postgres
def test_a_cancel_stops_every_part(world2, workers2, shared_blade):
    run_id = world2.register(_files(shared_blade, slow_s=2.0), version="1.1.0", agent="cancel").id
    enqueue_run(world2.engine, run_id)
    workers2.start()
    workers2.start()
    _wait_for(lambda: _runs(world2.engine)[0].progress_done >= 1, workers2)
    with session_scope(world2.engine) as s:
        sc.cancel_run(session=s, actor=world2.evaluator, run_id=run_id)
    _wait_for(lambda: _runs(world2.engine)[0].status in ENDED, workers2)
    run = _runs(world2.engine)[0]
    assert run.status == "cancelled" and run.scores is None and run.result_path is None, run.message
    assert all(p.poll() is None for p in workers2.procs)
