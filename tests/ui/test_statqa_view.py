"""The StatQA kind's page component on Run details, for every role (AppTest): evaluators, curators and admins see
the run's figures, its breakdowns and, per question, the question, the reply, what StatQA read from it, the
verdict and the gold; an analyst cannot open runs. The leaderboard draws its columns from the kind's spec.

The run is scored by the kind on a release of the shared subset and stored as a succeeded run (its result in the
artifact store): importing and cutting StatQA releases through the services is the generic import's part."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from annotate_app.components.kinds import leaderboard_frame, view_module
from annotate_app.components.kinds.statqa import breakdown_table, headline, questions_table, task_figure
from curation.db import session_scope
from curation.models import Role, RunStatus, ScoringRun
from evaluation.scoring import RunBudget
from evaluation.tasks import ScoringContext, ScoringLimits, task_kind
from evaluation.tasks.statqa import read_result
from tests import factories as f
from tests.evaluation.statqa_world import statqa_release
from tests.ui.conftest import APP, texts

KIND = task_kind("statqa")
REPLY_7 = ('Normality tests: {"columns": ["Vietnam"], "methods": ["Anderson-Darling Test", '
           '"Shapiro-Wilk Test of Normality", "Kolmogorov-Smirnov Test for Normality"]}')


@pytest.fixture
def statqa_run(ui, tmp_path):
    release = statqa_release(tmp_path / "release")
    answers = {"7": REPLY_7, "9": "I cannot tell.", "5": '{"columns": ["income_inequality"], "methods": ["Median"]}'}
    data = json.dumps({"answers": answers}).encode()
    scored = KIND.score(ScoringContext(release=release, release_folder=tmp_path / "release",
                                       files=[("answers.json", data)], judge=lambda: None, mode="default", k=10,
                                       ground_truth_hash="gt", limits=ScoringLimits(), budget=RunBudget()))
    store = ui.settings.artifact_store()
    evaluator = f.user(ui.engine, "evie", Role.EVALUATOR)
    with session_scope(ui.engine) as s:
        run = ScoringRun(kind="statqa", agent="scripted", model_name="m", release_version="1.0.0",
                         ground_truth_hash="gt", submission_sha256=store.put_bytes(data),
                         submission_files=[{"name": "answers.json", "sha256": store.put_bytes(data)}],
                         evaluator_version="test", status=RunStatus.SUCCEEDED.value, result_path=scored.result_name,
                         result_sha256=store.put_bytes(scored.result_bytes), scores=scored.scores,
                         scores_effective=scored.scores, created_by_id=evaluator.id)
        s.add(run)
        s.flush()
        run_id = run.id
    return SimpleNamespace(evaluator=evaluator, run_id=run_id, scored=scored)


def _details(ui, user) -> AppTest:
    at = ui.app(user).run()
    assert not at.exception, at.exception
    at.switch_page("app_pages/run_details.py").run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("role", ["evaluator", "curator", "admin"])
def test_scoring_roles_see_figures_breakdowns_and_each_question_with_its_gold(ui, statqa_run, role):
    user = {"evaluator": statqa_run.evaluator, "curator": ui.curator, "admin": ui.admin}[role]
    at = _details(ui, user)
    shown = texts(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Accuracy (selection overall)"] == "0.025" and metrics["Questions"] == "40"
    assert metrics["Invalid answers"] == "1" and metrics["Unanswered"] == "37"
    assert metrics["Accuracy: 95 % CI"].startswith("[0.00, ")
    assert "Scored by StatQA analyze_model_answer.py" in shown
    assert len(at.dataframe) == 4  # task types, difficulties, datasets, questions
    by_task = at.dataframe[0].value
    assert by_task["questions"].sum() == 40 and "Distribution Compliance Test" in set(by_task["task type"])
    questions = at.dataframe[-1].value
    assert len(questions) == 40 and set(questions["status"]) == {"scored", "invalid answer", "unanswered"}
    picker = next(sb for sb in at.selectbox if sb.label == "Question")
    picker.set_value("7").run()
    shown = texts(at)
    assert "Is it appropriate to apply methods assuming normality" in shown and REPLY_7 in shown
    assert "✔ exact: 3 correct, 0 wrong, 0 missed" in shown  # the methods' verdict
    assert "Gold (StatQA's ground truth)" in shown
    gold = json.loads(at.json[-1].value)
    assert gold["columns"] == ["Vietnam"] and "Shapiro-Wilk Test of Normality" in gold["methods"]
    next(sb for sb in at.selectbox if sb.label == "Question").set_value("9").run()
    shown = texts(at)
    assert "I cannot tell." in shown and "Invalid Answer (0)" in shown and "no JSON object" in shown


def test_an_analyst_cannot_open_runs(ui, statqa_run):
    at = ui.app(ui.analyst).run()
    with pytest.raises(ValueError):
        at.switch_page("app_pages/run_details.py")
    page = AppTest.from_file(str(APP.parent / "app_pages" / "run_details.py"), default_timeout=60)
    page.session_state["fp.session_token"] = ui.token_for(ui.analyst)
    page.run()
    assert "This page is for" in texts(page) and "Gold" not in texts(page)


def test_the_view_functions_draw_what_the_drilldown_shows(statqa_run):
    assert KIND.view == "statqa" and callable(view_module("statqa").drilldown)
    scores = statqa_run.scored.scores
    cells = dict(headline(scores))
    assert cells["Accuracy (selection overall)"] == "0.025" and cells["Methods accuracy"] == "0.025" and cells["Columns accuracy"] == "0.050"
    frame = breakdown_table(scores["tasks"], "task type")
    assert list(frame["task type"]) == list(scores["tasks"]) and frame["questions"].sum() == 40
    items = read_result(statqa_run.scored.result_bytes).items
    table = questions_table(items)
    row5 = table[table["id"] == "5"].iloc[0]
    assert (row5["overall"], row5["columns"], row5["methods"]) == ("✘", "✔", "✘")
    fig = task_figure(scores)
    assert list(fig.data[0].y) == list(scores["tasks"])
    values = KIND.leaderboard_values(SimpleNamespace(scores_effective=scores, transform_matcher={}), None)
    row = {"run": 3, "agent": "scripted", "release": "1.0.0", "official": False, "overrides": 0, "judge": "",
           "mode": "default", "stale": "", **values}
    shown = leaderboard_frame([row], KIND.leaderboard.columns).iloc[0]
    assert shown["accuracy"].startswith("0.03 [0.00, ") and shown["invalid answers"] == 1
    assert shown["Descriptive Statistics"] == 0.0 and shown["questions"] == 40
