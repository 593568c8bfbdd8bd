"""How fast a dead `forkpaths worker` is noticed is a setting (the suite shortens it)."""

from __future__ import annotations

import pytest


def test_workers_notice_a_dead_worker_within_the_stall_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from curation.services.jobs import STALLED_AFTER_S, StallTimes
    from curation.settings import Settings

    monkeypatch.setenv("FORKPATHS_WORKER_STALLED_AFTER_S", "4")
    stall = StallTimes(Settings().worker_stalled_after_s)
    assert stall.after == 4 and stall.heartbeat < stall.after / 3 and stall.check < stall.after / 2
    default = StallTimes()
    assert (default.after, default.heartbeat, default.check) == (STALLED_AFTER_S, 2.0, 3.0)
    monkeypatch.setenv("FORKPATHS_WORKER_STALLED_AFTER_S", "0.1")
    with pytest.raises(ValueError, match="worker_stalled_after_s"):
        Settings()


def test_a_job_failed_for_a_passing_reason_is_retried_after_the_retry_wait_setting(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import create_engine

    from curation.services import jobs
    from curation.settings import Settings

    monkeypatch.setattr(jobs, "_connection_kwargs", lambda _engine: {"conninfo": "postgresql://nowhere/none"})
    engine = create_engine("sqlite://")  # the app is only built (its tasks and their retry), never opened
    monkeypatch.setenv("FORKPATHS_WORKER_RETRY_WAIT_S", "2")

    def waits(app) -> dict[str, int]:
        ours = (jobs.SCORE_TASK, jobs.JOB_TASK, jobs.PART_TASK)
        return {name: app.tasks[name].retry_strategy.wait for name in ours}

    assert waits(jobs.procrastinate_app(engine, Settings().worker_retry_wait_s)) == {
        jobs.SCORE_TASK: 2, jobs.JOB_TASK: 2, jobs.PART_TASK: 1}
    assert waits(jobs.procrastinate_app(engine)) == {jobs.SCORE_TASK: 15, jobs.JOB_TASK: 15, jobs.PART_TASK: 5}
    monkeypatch.delenv("FORKPATHS_WORKER_RETRY_WAIT_S")
    assert Settings().worker_retry_wait_s == jobs.RETRY_WAIT_S == 15
    monkeypatch.setenv("FORKPATHS_WORKER_RETRY_WAIT_S", "0")
    with pytest.raises(ValueError, match="worker_retry_wait_s"):
        Settings()
