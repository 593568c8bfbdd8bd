"""A job's permission is checked in the transaction that records it (issue 27 point 6): a curator demoted by an
admin after a generation's checks passed, but before its job was written, starts nothing. On SQLite and
PostgreSQL; the demotion is a real second transaction, committed in between."""

from __future__ import annotations

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import PermissionDenied
from curation.models import BackgroundJob, Role, User
from curation.services.accounts import set_user_role
from curation.services.analyses.llm_alternatives import JOB_KIND, plan_generation, start_generation
from curation.services.generation_jobs import start_dataset_generation
from tests import factories as f
from tests.curation.test_llm_jobs import _world


def _jobs(engine) -> list[BackgroundJob]:
    with session_scope(engine) as s:
        return list(s.exec(select(BackgroundJob)).all())


def test_a_curator_demoted_between_the_check_and_the_write_starts_no_job(engine, tmp_path):
    w = _world(engine, tmp_path / "data")
    admin = f.user(engine, "adm", Role.ADMIN)
    demoted = []

    def plan_then_demoted(*, session, actor, dataset_id):
        planned = plan_generation(session=session, actor=actor, dataset_id=dataset_id)  # the checks pass
        with session_scope(engine) as other:  # meanwhile an admin demotes the curator, and that commits
            set_user_role(session=other, actor=admin, user_id=w["cur"].id, role=Role.ANALYST)
        demoted.append(True)
        return planned

    with pytest.raises(PermissionDenied, match="role of 'cur' changed from curator to analyst"), \
            session_scope(engine) as s:
        start_dataset_generation(session=s, kind=JOB_KIND, actor=w["cur"], dataset_id=w["ds"].id,
                                 plan=plan_then_demoted)
    assert demoted == [True] and _jobs(engine) == []  # nothing was queued

    # the same starter, with no demotion in between, records the job (the refusal above was the demotion's)
    with session_scope(engine) as s:
        set_user_role(session=s, actor=admin, user_id=w["cur"].id, role=Role.CURATOR)
    with session_scope(engine) as s:  # the page reloaded: the curator as they are now
        promoted = s.get(User, w["cur"].id)
        s.expunge(promoted)
    with session_scope(engine) as s:
        job_id = start_generation(session=s, actor=promoted, dataset_id=w["ds"].id)
    assert [j.id for j in _jobs(engine)] == [job_id]


def test_a_curator_demoted_while_a_candidate_generation_is_planned_starts_no_job(engine, tmp_path, monkeypatch):
    """The programmatic kind's starter (its own plan, then :func:`start_job`) holds the same way: the demotion
    committed between its checks and its write refuses the write, and nothing is queued."""
    from curation.services import programmatic_generation as generation
    from curation.services.programmatic import import_programmatic_tasks
    from exports.programmatic_part import ProgrammaticTaskRelease

    store = tmp_path / "data" / "datasets"
    store.mkdir(parents=True)
    cur, admin = f.user(engine, "cur", Role.CURATOR), f.user(engine, "adm", Role.ADMIN)
    ds = f.dataset(engine, store)
    with session_scope(engine) as s:
        (task,) = import_programmatic_tasks(session=s, actor=cur, dataset_id=ds.id, accept=False, tasks=[
            ProgrammaticTaskRelease(key="storms_clean", input_files=["data.csv"], prompt="Write clean.csv.")])
    real_plan = generation.plan_generation

    def plan_then_demoted(**kw):  # type: ignore[no-untyped-def]
        planned = real_plan(**kw)  # the checks pass
        with session_scope(engine) as other:  # meanwhile an admin demotes the curator, and that commits
            set_user_role(session=other, actor=admin, user_id=cur.id, role=Role.ANALYST)
        return planned

    monkeypatch.setattr(generation, "plan_generation",
                        plan_then_demoted)
    with pytest.raises(PermissionDenied, match="role of 'cur' changed from curator to analyst"), \
            session_scope(engine) as s:
        generation.start_candidate_generation(session=s, actor=cur, task_id=task.id, samples=2, store=store)
    assert _jobs(engine) == []  # nothing was queued

    monkeypatch.setattr(generation, "plan_generation", real_plan)  # no demotion in between: the job is recorded
    with session_scope(engine) as s:
        set_user_role(session=s, actor=admin, user_id=cur.id, role=Role.CURATOR)
    with session_scope(engine) as s:
        promoted = s.get(User, cur.id)
        s.expunge(promoted)
    with session_scope(engine) as s:
        job_id = generation.start_candidate_generation(session=s, actor=promoted, task_id=task.id, samples=2,
                                                       store=store)
    assert [j.id for j in _jobs(engine)] == [job_id]
