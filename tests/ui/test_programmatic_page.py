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
from exports.programmatic_part import ProgrammaticArtifact, ProgrammaticCheck, ProgrammaticTaskRelease
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
    assert list(gate[""]) == ["✅", "✅", "·"] and gate.iloc[1]["output"] == "wrong: clean.csv: a missing value"
    assert list(gate["it"]) == ["passed", "caught it", "passed (not caught)"]


def _two_voters(ui):
    """ana and bob submitted stage 1 of the dataset; stage 2 open; the curator proposed a check and an artifact."""
    from curation.models import Stage
    from curation.services.annotation import submit_analysis
    from curation.services.datasets import assign_analysts
    from curation.services.programmatic import propose_artifact, propose_check
    from curation.services.stages import set_stage
    from tests import factories as f

    bob = f.user(ui.engine, "bob")
    with session_scope(ui.engine) as s:
        assign_analysts(session=s, actor=ui.admin, dataset_id=ui.dataset_id, user_ids=[ui.analyst.id, bob.id])
    for u in (ui.analyst, bob):
        f.full_analysis(ui.engine, u, ui.dataset_id)
        with session_scope(ui.engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ui.dataset_id)
    with session_scope(ui.engine) as s:
        (task,) = import_programmatic_tasks(session=s, actor=ui.curator, dataset_id=ui.dataset_id, accept=False,
                                            run_gate=False, tasks=[ProgrammaticTaskRelease(
                                                key="storms_clean", prompt="Clean the storms.",
                                                input_files=["data.csv"])])
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.REVIEW)
    with session_scope(ui.engine) as s:
        check = propose_check(session=s, actor=ui.curator, task_id=task.id, fields={
            "task_type": "data cleaning & preprocessing", "function": "Data Completeness", "metric": "no missing",
            "code": "def complete(ground_truth):\n    return True\n"}).id
        art = propose_artifact(session=s, actor=ui.curator, task_id=task.id, path="clean.csv", data=b"a,b\n1,2\n").id
    return bob, check, art


def _votes(ui, item_id):
    from sqlmodel import select

    from curation.models import Vote

    with session_scope(ui.engine) as s:
        return {(v.annotator_id, v.question): (v.answer, v.explanation)
                for v in s.exec(select(Vote).where(Vote.target_id == item_id)).all()}


def test_analysts_answer_the_detail_questions_and_the_verdict_of_checks_and_artifacts(ui):
    bob, check, art = _two_voters(ui)
    at = ui.app(ui.analyst).run()
    at.switch_page("app_pages/programmatic.py").run()
    assert not at.exception, at.exception
    labels = {w.label for w in at.button_group}
    assert {"Does the check test what the task asks for?", "Is this the correct output for the task?",
            "Overall: should this check be part of the ground truth?"} <= labels
    at.button_group(key=f"prog.vote.{check}.is_faithful").set_value("yes").run()
    at.button_group(key=f"prog.vote.{check}.is_code_correct").set_value("unsure").run()
    at.button_group(key=f"prog.vote.{art}.is_correct").set_value("no").run()
    at.button_group(key=f"prog.vote.{art}.justifiable").set_value("no").run()  # a rejection needs its reason
    assert not at.exception, at.exception
    assert "Say why" in texts(at)
    assert (ui.analyst.id, "justifiable") not in _votes(ui, art)
    at.text_input(key=f"prog.vote.{art}.reason").set_value("it keeps the storms with no deaths").run()
    assert _votes(ui, check) == {(ui.analyst.id, "is_faithful"): ("yes", ""),
                                 (ui.analyst.id, "is_code_correct"): ("unsure", "")}
    assert _votes(ui, art) == {(ui.analyst.id, "is_correct"): ("no", ""),
                               (ui.analyst.id, "justifiable"): ("no", "it keeps the storms with no deaths")}
    at = ui.app(ui.analyst).run()  # a new visit shows the stored answers
    at.switch_page("app_pages/programmatic.py").run()
    assert at.button_group(key=f"prog.vote.{art}.is_correct").value == "no"


def test_a_split_check_is_on_the_meetings_agenda_with_its_code_and_gate(ui):
    from curation.models import Stage
    from curation.services.meetings import start_meeting
    from curation.services.stages import set_stage
    from curation.services.votes import cast_vote

    bob, check, _ = _two_voters(ui)
    with session_scope(ui.engine) as s:
        cast_vote(session=s, actor=ui.analyst, target_kind="prog_check", target_id=check, question="justifiable",
                  answer="yes")
        cast_vote(session=s, actor=bob, target_kind="prog_check", target_id=check, question="justifiable",
                  answer="no", explanation="it passes on everything")
        set_stage(session=s, actor=ui.curator, dataset_id=ui.dataset_id, stage=Stage.CLOSED)
    with session_scope(ui.engine) as s:
        start_meeting(session=s, actor=ui.curator, dataset_id=ui.dataset_id, attendee_ids=[ui.analyst.id, bob.id])
    at = ui.app(ui.curator).run()
    at.switch_page("app_pages/consensus.py").run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert "1. check · Data Completeness / no missing" in shown and "storms_clean: Clean the storms." in shown
    assert "def complete(ground_truth):" in shown and "The release gate has not run for this check yet" in shown
    assert "it passes on everything" in at.dataframe[0].value.to_string()
    assert "Variable:" not in shown and "Decision graph" not in shown


def test_the_drilldown_never_shows_a_server_traceback():
    """Issue 29, point 9: results scored before kept the check's traceback as its detail; it is not shown."""
    from annotate_app.components.kinds.programmatic import is_traceback

    assert is_traceback('Traceback (most recent call last):\n  File "/srv/forkpaths/evaluation/programmatic/job.py"')
    assert is_traceback('  File "/srv/x.py", line 3, in f')
    assert not is_traceback("It replaces check c1 with the same metric (upstream keys checks by metric).")


def test_an_interval_is_a_figure_of_its_own_not_a_delta():
    """Issue 29 point 13: the drill-down drew each rate's interval as a metric delta ("↑ [0.00, 0.50]", green),
    which reads as an improvement; the headline gives it its own label, and the page draws no delta."""
    from annotate_app.components.kinds import programmatic

    cells = dict(programmatic.headline({"success_rate": {"point": 0.25, "ci_low": 0.0, "ci_high": 0.5},
                                        "completion_rate": {"point": 0.5}, "tasks": 2, "runs": 4, "errors": 0}))
    assert cells["Success rate (pass@1)"] == "0.250" and cells["Success rate: 95 % CI"] == "[0.00, 0.50]"
    assert "Completion rate: 95 % CI" not in cells and cells["Tasks"] == "2"
