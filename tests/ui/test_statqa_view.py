"""The StatQA kind's page component on Run details, for every role (AppTest): evaluators, curators and admins see
the run's figures, its breakdowns and, per question, the question, the reply, what StatQA read from it, the
verdict and the gold; an analyst cannot open runs. The leaderboard draws its columns from the kind's spec.

The shared subset is imported (``import_kind``), released and scored through the services."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from annotate_app.components.kinds import leaderboard_frame, view_module
from annotate_app.components.kinds.statqa import breakdown_table, headline, questions_table, task_figure
from curation.db import session_scope
from curation.models import Role, RunStatus
from curation.services.kind_import import import_kind
from curation.services.releases import cut_release
from curation.services.scoring import execute_run, register_run
from evaluation.tasks import task_kind
from evaluation.tasks.statqa import read_result
from tests import factories as f
from tests.evaluation.statqa_world import shared_statqa
from tests.ui.conftest import APP, texts

KIND = task_kind("statqa")
REPLY_7 = ('Normality tests: {"columns": ["Vietnam"], "methods": ["Anderson-Darling Test", '
           '"Shapiro-Wilk Test of Normality", "Kolmogorov-Smirnov Test for Normality"]}')


@pytest.fixture
def statqa_run(ui):
    """The shared subset imported and released through the services, and one answers file scored on it."""
    settings, store = ui.settings, ui.settings.artifact_store()
    with session_scope(ui.engine) as s:
        report = import_kind(session=s, actor=ui.curator, kind="statqa", path=shared_statqa(),
                             store=settings.datasets_store, max_bytes=10_000_000)
    with session_scope(ui.engine) as s:
        cut_release(session=s, actor=ui.curator, version="1.0.0", notes="", artifacts=store,
                    store=settings.datasets_store, dataset_names=report.datasets)
    evaluator = f.user(ui.engine, "evie", Role.EVALUATOR)
    answers = {"7": REPLY_7, "9": "I cannot tell.", "5": '{"columns": ["income_inequality"], "methods": ["Median"]}'}
    data = json.dumps({"answers": answers}).encode()
    with session_scope(ui.engine) as s:
        run = register_run(session=s, actor=evaluator, release_version="1.0.0", files=[("answers.json", data)],
                           agent="statqa-bot", model_name="m", kind="statqa", artifacts=store, max_bytes=1_000_000)
        run_id = run.id
    done = execute_run(ui.engine, run_id, artifacts=store)
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    scored = SimpleNamespace(scores=done.scores, result_bytes=store.get_bytes(done.result_sha256 or "", what="result"))
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
    assert not at.json  # the gold is written out, not drawn as a JSON tree
    assert "**Columns**\n- Vietnam" in shown and "- Shapiro-Wilk Test of Normality" in shown
    next(sb for sb in at.selectbox if sb.label == "Question").set_value("9").run()
    shown = texts(at)
    assert "I cannot tell." in shown and "Invalid Answer (0)" in shown and "no JSON object" in shown


def test_the_leaderboard_ranks_statqa_runs_with_the_kind_s_columns(ui, statqa_run):
    at = ui.app(statqa_run.evaluator).run()
    at.switch_page("app_pages/leaderboard.py").run()
    assert not at.exception, at.exception
    kinds = next(sb for sb in at.selectbox if sb.label == "Kind of task")
    kinds.set_value("statqa").run()
    assert not at.exception, at.exception
    board = at.dataframe[0].value
    assert len(board) == 1 and board.iloc[0]["run"].startswith(f"#{statqa_run.run_id} statqa-bot")
    assert board.iloc[0]["accuracy"].startswith("0.03 [0.00, ") and board.iloc[0]["invalid answers"] == 1
    assert board.iloc[0]["questions"] == 40
    chart = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert chart["layout"]["title"]["text"] == "StatQA accuracy (selection overall)"
    assert "answers StatQA cannot read" in texts(at)


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
