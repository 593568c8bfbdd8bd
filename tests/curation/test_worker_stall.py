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
