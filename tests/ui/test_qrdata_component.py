"""The QRData kind's page component on Run details, for every role (AppTest): the run's accuracy with its interval,
the breakdowns, and per question the question, the answer and the verdict; the gold only where the reader may see
the dataset's ground truth (an admin assigned to annotate it is blind); an analyst cannot open the page.

The run is a succeeded QRData run whose result file was made by the kind's own scoring and stored in the app's
artifact store; its rows are added with the ORM, since a QRData release is not cut by the app yet (the generic
import of a kind's datasets is being built beside this)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from annotate_app.components.kinds.qrdata import breakdown_table, questions_table, viewable
from curation.db import session_scope
from curation.models import ReleaseRecord, Role, RunStatus, ScoringRun
from evaluation.scoring import RunBudget
from evaluation.tasks import ScoringContext, ScoringLimits
from evaluation.tasks.parts import with_part
from evaluation.tasks.qrdata import KIND, read_result
from exports.qrdata import QRDataPart, QRDataQuestion
from exports.schema import DatasetRelease, Release
from tests import factories as f
from tests.ui.conftest import texts


def _question(qid: str, qtype: str, gold: str, choices: list[str] | None = None) -> QRDataQuestion:
    return QRDataQuestion(id=qid, question=f"Question {qid}: what is the effect?", data_files=["d.csv"],
                          question_type=qtype, choices=choices or [], answer=gold,  # type: ignore[arg-type]
                          keywords=["Causality"] if qtype == "numerical" else ["Statistics"])


def _release() -> Release:
    def ds(name: str, part: QRDataPart) -> DatasetRelease:
        return with_part(DatasetRelease(name=name, research_question="-", data_file=f"data/{name}/d.csv",
                                        data_sha256="0", num_rows=0, num_columns=0), KIND, part)

    storms = QRDataPart(questions=[_question("1", "numerical", "-4.91"), _question("2", "numerical", "0.033")])
    other = QRDataPart(questions=[_question("3", "multiple_choice", "B", ["a", "b", "c"])])
    return Release(version="1.0.0", created_at=datetime.now(UTC), app_version="t",
                   datasets=[ds("storms", storms), ds("qrdata-other", other)])


@pytest.fixture
def qrdata_run(ui):
    """A scored QRData run on release 1.0.0, whose dataset ``storms`` the admin is assigned to annotate."""
    answers = json.dumps({"answers": {"1": "-4.9", "2": "unknown", "3": "C"}}).encode()
    ctx = ScoringContext(release=_release(), release_folder=ui.settings.resolved_data_dir, files=[("a.json", answers)],
                         judge=lambda: None, mode="default", k=1, ground_truth_hash="gt", limits=ScoringLimits(),
                         budget=RunBudget())
    scored = KIND.score(ctx)
    store = ui.settings.artifact_store()
    evaluator = f.user(ui.engine, "eva", Role.EVALUATOR)
    with session_scope(ui.engine) as s:
        s.add(ReleaseRecord(version="1.0.0", format_version="2.0", path="1.0.0", manifest_sha256="0" * 64,
                            summary={"storms": {"mcqs": 1}, "qrdata-other": {"mcqs": 1}}))
        run = ScoringRun(kind="qrdata", agent="tester", release_version="1.0.0", ground_truth_hash="gt",
                         submission_sha256=store.put_bytes(answers), evaluator_version="t",
                         status=RunStatus.SUCCEEDED.value, result_sha256=store.put_bytes(scored.result_bytes),
                         scores=scored.scores, scores_effective=scored.scores)
        s.add(run)
        s.flush()
        run_id = run.id
    return run_id, evaluator, scored


def _details(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/run_details.py").run()
    assert not at.exception, at.exception
    return at


def _questions(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "verdict" in d.value.columns)


@pytest.mark.parametrize("who", ["evaluator", "curator"])
def test_readers_who_may_see_the_gold_see_every_question_with_it(ui, qrdata_run, who):
    _, evaluator, _ = qrdata_run
    at = _details(ui, evaluator if who == "evaluator" else ui.curator)
    shown = texts(at)
    assert "withheld" not in shown
    assert at.metric[0].value == "0.33" and at.metric[1].value.startswith("[0.00, ")
    table = _questions(at)
    assert list(table["id"]) == ["1", "2", "3"]
    assert list(table["gold"]) == ["-4.91", "0.033", "B"]
    assert list(table["verdict"]) == ["✔ correct", "⚠ invalid answer", "✘ wrong"]
    assert list(table["read"]) == ["-4.9", "", "c"]
    at.selectbox(key="qrdata.question").set_value("2").run()
    shown = texts(at)
    assert "Question 2: what is the effect?" in shown and "**Gold:** 0.033" in shown and "unknown" in shown
    assert "holds no number" in shown
    types = next(d.value for d in at.dataframe if "question type" in d.value.columns)
    assert list(types["question type"]) == ["numerical", "multiple choice"]  # as a person reads it
    assert list(table["type"]) == ["numerical", "numerical", "multiple choice"]
    datasets = next(d.value for d in at.dataframe if "dataset" in d.value.columns and "correct" in d.value.columns)
    assert list(datasets["dataset"]) == ["storms", "qrdata-other"]


def test_an_admin_assigned_to_the_dataset_sees_no_gold_of_it(ui, qrdata_run):
    at = _details(ui, ui.admin)
    assert "withheld from you" in texts(at) and "storms" in texts(at)
    table = _questions(at)
    assert list(table["gold"]) == ["(withheld)", "(withheld)", "B"]  # qrdata-other: nobody annotates it
    # a verdict tells the gold (a correct answer is it): withheld with it; an unreadable answer's is not
    assert list(table["verdict"]) == ["(withheld)", "⚠ invalid answer", "✘ wrong"]
    at.selectbox(key="qrdata.question").set_value("1").run()
    shown = texts(at)
    assert "-4.91" not in shown and "**Gold:** (withheld)" in shown and "✔ correct" not in shown
    assert "The verdict is withheld with the gold." in shown and "-4.9" in shown  # the answer itself is shown
    datasets = next(d.value for d in at.dataframe if "dataset" in d.value.columns and "correct" in d.value.columns)
    assert list(datasets["dataset"]) == ["qrdata-other"]  # storms' own figures would tell its verdicts


def _component(run_id: int, user_id: int) -> None:
    """The component alone, as Run details calls it, for a user the page itself would not let in."""
    from annotate_app import context
    from annotate_app.components.kinds.qrdata import drilldown
    from curation.models import ScoringRun, User

    with context.db() as s:
        run, user = s.get(ScoringRun, run_id), s.get(User, user_id)
    drilldown(run, user, context.settings())


def test_an_analyst_gets_neither_the_page_nor_the_component(ui, qrdata_run):
    run_id, _, _ = qrdata_run
    with pytest.raises(ValueError):  # the page is not in an analyst's navigation
        ui.app(ui.analyst).run().switch_page("app_pages/run_details.py")
    at = AppTest.from_function(_component, args=(run_id, ui.analyst.id), default_timeout=60).run()
    assert not at.exception, at.exception
    assert at.error and not at.dataframe and not at.metric  # the component's service refuses an analyst
    assert "-4.91" not in texts(at)


def test_the_tables_are_pure_functions_of_the_result(qrdata_run):
    _, _, scored = qrdata_run
    result = read_result(scored.result_bytes)
    blind = viewable(result, {"storms"})
    assert [i.gold for i in blind.items] == [None, None, "B"]
    assert blind.items[0].sentence == "The verdict is withheld with the gold." and "no number" in blind.items[1].sentence
    assert "-4.91" not in blind.model_dump_json() and "0.033" not in blind.model_dump_json()
    assert list(questions_table(blind.items, {"storms"})["gold"]) == ["(withheld)", "(withheld)", "B"]
    frame = breakdown_table(scored.scores["qrdata"]["datasets"], "dataset")
    assert list(frame["dataset"]) == ["storms", "qrdata-other"] and list(frame["correct"]) == [1, 0]
    assert frame["accuracy (95 % CI)"].iloc[1] == "0.00 [0.00, 0.00]"


def _leaderboard_parts(rows: list) -> None:
    import streamlit as st

    from annotate_app.components.kinds.qrdata import leaderboard_charts, leaderboard_notes

    leaderboard_notes(rows)
    leaderboard_charts(rows, st.container())


def test_the_leaderboard_notes_and_chart_are_drawn_from_the_kinds_values(qrdata_run):
    from annotate_app.components.kinds import leaderboard_frame
    from evaluation.tasks.qrdata import leaderboard_values

    _, _, scored = qrdata_run

    class Run:
        scores_effective = scored.scores
        transform_matcher: dict = {}

    values = leaderboard_values(Run(), None)
    row = {"run": 4, "agent": "tester", "release": "1.0.0", "official": False, "overrides": 0, "judge": {},
           "mode": "default", "stale": "", **(values or {})}
    frame = leaderboard_frame([row], KIND.leaderboard.columns)
    assert frame["accuracy"].iloc[0].startswith("0.33 [") and frame["invalid answers"].iloc[0] == 1
    at = AppTest.from_function(_leaderboard_parts, args=([row],), default_timeout=30).run()
    assert not at.exception, at.exception
    assert "1 run of these has answers" in texts(at)
    [chart] = at.get("plotly_chart")
    assert "QRData accuracy" in chart.proto.spec
