"""The hypotheses kind on the scoring pages (AppTest): its leaderboard columns and judge card, and the drill-down
(gold and predicted decompositions side by side, the judge's explanations, an expert judging a facet)."""

from __future__ import annotations

import pytest

from curation.db import session_scope
from curation.models import Role, ScoringRun
from curation.services.scoring import JudgeSettings, execute_run, register_run
from evaluation.llm import LLMConfig
from tests import factories as f
from tests.curation.hms_world import answers_file, cut_hypotheses_release, standard_script
from tests.llm_server import ScriptedLLM
from tests.ui.conftest import texts

CROPS = "real/test/crops/metadata_0/q0"


@pytest.fixture
def hms_run(ui, tmp_path):
    s_ = ui.settings
    cut_hypotheses_release(ui.engine, s_.releases_store, tmp_path)
    evaluator = f.user(ui.engine, "evie", Role.EVALUATOR)
    with ScriptedLLM(standard_script()) as server:
        judges = JudgeSettings(llm=LLMConfig(base_url=server.url, model="judge-model", cache_dir=tmp_path / "llm",
                                             max_retries=0, backoff_s=0))
        with session_scope(ui.engine) as s:
            run = register_run(session=s, actor=evaluator, release_version="2.0.0",
                               files=[("answers.json", answers_file())], agent="react", model_name="gpt-x",
                               judge="hms", kind="hypotheses", artifacts=s_.artifact_store(), max_bytes=s_.max_submission_bytes, judges=judges)
        run = execute_run(ui.engine, run.id, artifacts=s_.artifact_store(),
                          judges=judges)
    assert run.status == "succeeded", run.message
    return evaluator, run


def _open(ui, user, page):
    at = ui.app(user).run()
    at.switch_page(f"app_pages/{page}").run()
    assert not at.exception, at.exception
    return at


def _select(at, label, value):
    next(sb for sb in at.selectbox if sb.label == label).set_value(value).run()
    assert not at.exception, at.exception


def test_leaderboard_ranks_hypotheses_runs(ui, hms_run):
    evaluator, run = hms_run
    at = _open(ui, evaluator, "leaderboard.py")
    _select(at, "Kind of task", "hypotheses")
    board = at.dataframe[0].value
    assert list(board["run"]) == [f"#{run.id} react · gpt-x"]
    assert board["HMS"][0].startswith("0.33 [") and board["unanswered"][0] == 1
    assert "bootstrap intervals resampling whole dataset folders" in texts(at)
    assert "Judge a facet of a query on Run details" in texts(at)  # the hms judge's card, empty so far


def test_drilldown_shows_decompositions_side_by_side_and_records_a_judgement(ui, hms_run):
    evaluator, run = hms_run
    at = _open(ui, evaluator, "run_details.py")
    assert [m.value for m in at.metric][:1] == ["0.333"]
    _select(at, "Query", CROPS)
    frames = [d.value for d in at.dataframe]

    def having(*columns):
        return [fr for fr in frames if set(columns) <= set(fr.columns)]

    gold, pred = having("sub-hypothesis", "context")  # side by side: gold first
    assert list(gold["context"]) == ["all fields"] and list(pred["context"]) == ["farms"]
    (ctx,) = having("predicted context", "gold context")
    assert list(ctx["match"]) == ["✔ match"] and list(ctx["explanation"]) == ["ctx P0|G0"]
    (facets,) = having("relationship explanation")
    assert facets["relationship"][0].startswith("B ·") and facets["relationship explanation"][0] == "rel P0|G0"
    assert facets["F1"][0] == 1.0 and facets["accuracy"][0] == 0.5
    assert "context recall 1/1 × mean accuracy ((0.500) / 1 predicted)" in texts(at)
    assert set(having("domain", "95 % CI")[0]["domain"]) == {"agriculture", "sociology", "synthetic"}

    _select(at, "Facet", "relationship")
    at.radio[0].set_value("A")
    at.text_input[0].input("rain helping is the same as doubling here")
    next(b for b in at.button if b.label == "Record my judgement").click().run()
    assert not at.exception, at.exception
    with session_scope(ui.engine) as s:
        stored = s.get(ScoringRun, run.id)
        assert stored.scores_effective["overall"]["hms"]["point"] == pytest.approx((0.5 + 0 + 1 + 1 / 3) / 4)
    at = _open(ui, evaluator, "run_details.py")
    assert any("by experts" in (m.proto.delta or "") for m in at.metric)
    _select(at, "Query", CROPS)
    assert "relationship of P0|G0: A · very similar (1) by evie" in texts(at)
    assert "HMS = context recall 1/1 × mean accuracy ((1.000) / 1 predicted) = 1.000 × 1.000 = **1.000**" in texts(at)
    at = _open(ui, evaluator, "leaderboard.py")
    _select(at, "Kind of task", "hypotheses")
    assert "HMS relationship level: **0%** agreement" in texts(at)
    # the Judge validation page shows the same expert labels as the leaderboard's card, not "No expert labels
    # yet", and one label is said to be too few to read (issue 29 point 7)
    at = _open(ui, evaluator, "judge_check.py")
    assert "HMS relationship level: **0%** agreement" in texts(at), texts(at)
    assert "only 1 expert label: too few to read" in texts(at)
    assert "No expert labels yet. Judge a facet" not in texts(at)
