"""The Runs page says when a run's limits cost analyses their scores (issue 15, point 7)."""

from __future__ import annotations

import json

from curation.db import session_scope
from curation.models import Role
from curation.services import releases as rel
from curation.services.blade_import import import_blade
from curation.services.scoring import ScoringLimits, execute_run, register_run
from tests import factories as f
from tests.curation.test_bounded_scoring import GOOD, LOOP


def test_a_run_whose_analysis_timed_out_says_so_on_the_runs_page(ui, shared_blade):
    s_ = ui.settings
    with session_scope(ui.engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "hurricane", store=s_.datasets_store,
                     max_bytes=200 * 2**20)
    with session_scope(ui.engine) as s:
        rel.cut_release(session=s, actor=ui.curator, version="1.0.0", notes="", artifacts=s_.artifact_store(),
                        store=s_.datasets_store)
    evaluator = f.user(ui.engine, "evie", Role.EVALUATOR)
    limits = ScoringLimits(analysis_timeout_s=2)
    data = json.dumps({"dataset_name": "hurricane", "analyses": [GOOD, LOOP]}).encode()
    with session_scope(ui.engine) as s:
        run = register_run(session=s, actor=evaluator, release_version="1.0.0", files=[("loop.json", data)],
                           agent="looper", artifacts=s_.artifact_store(),
                           max_bytes=s_.max_submission_bytes, limits=limits)
    run = execute_run(ui.engine, run.id, artifacts=s_.artifact_store(), limits=limits)
    assert run.status == "succeeded", run.message
    at = ui.app(evaluator).run()
    at.switch_page("app_pages/runs.py").run()
    assert not at.exception, at.exception
    assert any("succeeded" in x.value for x in at.success)
    assert run.message == ("1 analysis ran longer than the 2 s limit per analysis "
                           "(FORKPATHS_SCORE_ANALYSIS_TIMEOUT_S) and has the status 'timeout'.")
    assert [w.value.replace("\\", "") for w in at.warning] == [run.message]  # shown as text, Markdown escaped
