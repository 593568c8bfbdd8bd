"""The Programmatic checks page per role (AppTest) and the programmatic kind's view functions."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from annotate_app.components.kinds import view_module
from annotate_app.components.kinds.programmatic import checks_frame, outcomes_frame, task_type_figure
from annotate_app.components.programmatic_review import gate_frame
from curation.db import session_scope
from curation.services.programmatic import import_programmatic_tasks
from evaluation.programmatic.runner import CheckResult, TaskOutcome
from evaluation.tasks import task_kind
from exports.schema import ProgrammaticArtifact, ProgrammaticCheck, ProgrammaticTaskRelease
from tests.ui.conftest import APP, texts

GATE = {"released": True, "sentence": "Released: it passes on the accepted artifacts and fails on 1 of 2.",
        "on_accepted": {"status": "true", "sentence": "Passed."},
        "on_wrong": [{"label": "clean.csv: a missing value", "status": "false", "sentence": "Failed."},
                     {"label": "clean.csv: last row dropped", "status": "true", "sentence": "Passed."}]}


def _task(ui) -> None:
    check = ProgrammaticCheck(id="c1", task_type="data cleaning & preprocessing", function="Data Completeness",
                              metric="no missing", code="def f(gt):\n    return True\n", gate=GATE)
    art = ProgrammaticArtifact(path="clean.csv", sha256="0", size=8, content_b64="YSxiCjEsMgo=")
    task = ProgrammaticTaskRelease(key="storms_clean", prompt="Clean the storms.", input_files=["data.csv"],
                                   artifacts=[art], checks=[check])
    with session_scope(ui.engine) as s:
        import_programmatic_tasks(session=s, actor=ui.curator, dataset_id=ui.dataset_id, tasks=[task],
                                  run_gate=False)


def test_curators_see_tasks_candidates_and_the_gate_evidence(ui):
    _task(ui)
    at = ui.app(ui.curator).run()
    at.switch_page("app_pages/programmatic.py").run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert "Clean the storms." in shown and "1 of 1 checks released" in shown
    assert "Released: it passes on the accepted artifacts" in shown
    assert "def f(gt):" in shown
    assert any(b.label == "Run the release gate" for b in at.button)


def test_analysts_are_told_why_they_cannot_review_yet_and_evaluators_are_refused(ui):
    _task(ui)
    at = ui.app(ui.analyst).run()
    at.switch_page("app_pages/programmatic.py").run()
    assert not at.exception
    assert "still in stage 1" in texts(at) and not [b for b in at.button if b.label == "Save vote"]
    page = AppTest.from_file(str(APP.parent / "app_pages" / "programmatic.py"), default_timeout=60)
    from curation.models import Role
    from tests import factories as f

    evaluator = f.user(ui.engine, "eve", Role.EVALUATOR)
    page.session_state["fp.session_token"] = ui.token_for(evaluator)
    page.run()
    assert "This page is for" in texts(page)


def test_the_view_functions_draw_what_the_drilldown_shows():
    assert task_kind("programmatic").view == "programmatic" and callable(view_module("programmatic").drilldown)
    checks = [CheckResult(check_id="a", task_type="data visualization", function="Plot Validity", metric="m",
                          status="true", score=2, sentence="Passed."),
              CheckResult(check_id="b", task_type="data visualization", function="Plot Validity", metric="m",
                          status="missing_file", score=0, sentence="Error: plot.png is missing.")]
    frame = checks_frame(checks)
    assert list(frame["status"]) == ["true", "missing_file"] and list(frame[""]) == ["✅", "⚠️"]
    outcomes = outcomes_frame([TaskOutcome(task="t", run="run 1", checks=checks, completion_rate=0.5)])
    assert outcomes.iloc[0]["checks errored"] == 1 and outcomes.iloc[0]["CR"] == 0.5
    fig = task_type_figure({"task_types": {"data visualization": {"point": 0.5, "ci_low": 0.25, "ci_high": 0.75}}})
    assert list(fig.data[0].x) == [0.5] and list(fig.data[0].error_x.array) == [0.25]
    gate = gate_frame(GATE)
    assert list(gate["as expected"]) == ["✅", "✅", "—"] and gate.iloc[1]["output"] == "wrong: clean.csv: a missing value"
