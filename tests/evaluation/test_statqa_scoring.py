"""Scoring StatQA runs on a release of the shared subset: every question of the release counted (an invalid or
unanswered one as 0, as StatQA counts it), accuracy with bootstrap CIs and breakdowns by task type, difficulty and
dataset; a submission that does not fit is refused with a sentence; the published schema is the model's."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from evaluation.scoring import RunBudget
from evaluation.tasks import ScoringContext, ScoringLimits, SubmissionCheckError, task_kind
from evaluation.tasks.parts import part_of
from evaluation.tasks.statqa import SCHEMA_PATH, read_result, submission_schema
from tests.evaluation.statqa_world import statqa_release

KIND = task_kind("statqa")
APOSTROPHE_ID = "280"  # its gold names "# of Attendees at Children's and Teen Programming"


@pytest.fixture
def world(tmp_path):
    release = statqa_release(tmp_path)
    questions = {q.id: q for ds in release.datasets for q in part_of(ds, KIND).questions}
    return SimpleNamespace(release=release, folder=tmp_path, questions=questions)


def _score(world, body: dict, name: str = "answers.json"):
    data = json.dumps(body).encode()
    checked = KIND.check_files([(name, data)], world.release, max_items=None)
    ctx = ScoringContext(release=world.release, release_folder=world.folder, files=[(name, data)],
                         judge=lambda: None, mode="default", k=10, ground_truth_hash="gt", limits=ScoringLimits(),
                         budget=RunBudget())
    return checked, KIND.score(ctx)


def test_replying_with_the_gold_scores_every_question_but_the_one_statqa_cannot_read(world):
    answers = {i: f"Here you go: {q.gold.text}" for i, q in world.questions.items()}
    checked, run = _score(world, {"answers": answers})
    assert checked[0].items == len(answers) == 40
    o = run.scores["overall"]
    assert o["accuracy"]["point"] == pytest.approx(39 / 40) and o["gold_unreadable"] == 1
    assert o["methods"]["point"] == o["columns"]["point"] == pytest.approx(39 / 40)
    assert o["accuracy"]["ci_low"] <= 39 / 40 <= o["accuracy"]["ci_high"] <= 1.0
    result = read_result(run.result_bytes)
    odd = next(i for i in result.items if i.id == APOSTROPHE_ID)
    assert odd.status == "gold_unreadable" and odd.overall == 0 and "apostrophe" in odd.message
    assert run.items == 40 and "1 with a gold StatQA cannot read" in run.message
    assert set(run.scores["tasks"]) == {"Correlation Analysis", "Contingency Table Test",
                                        "Distribution Compliance Test", "Descriptive Statistics", "Variance Test"}
    assert set(run.scores["difficulties"]) == {"easy", "hard"}
    assert sum(g["questions"] for g in run.scores["datasets"].values()) == 40


def test_accuracy_counts_invalid_and_unanswered_questions_as_zero_with_a_sentence(world):
    ids = sorted(world.questions, key=int)
    right = [i for i in ids if i != APOSTROPHE_ID][:20]
    answers: dict[str, str | None] = {i: world.questions[i].gold.text for i in right}
    answers[ids[-1]] = "I would use a t-test on the first two columns."  # no JSON: invalid
    answers[ids[-2]] = '{"cols": ["x"]}'  # the wrong shape, scoring 0 on both targets: invalid
    answers[ids[-3]] = None  # not answered
    _checked, run = _score(world, {"answers": answers, "source": {"kind": "model", "model": "m"}})
    items = {i.id: i for i in read_result(run.result_bytes).items}
    assert items[ids[-1]].status == "invalid_answer" and "no JSON object" in items[ids[-1]].message
    assert items[ids[-2]].status == "invalid_answer" and "it has no 'columns'" in items[ids[-2]].message
    assert items[ids[-3]].status == "unanswered" and items[ids[-4]].status == "unanswered"  # absent: unanswered
    o = run.scores["overall"]
    assert (o["questions"], o["invalid"], o["scored"]) == (40, 2, 20)
    assert o["unanswered"] == 40 - 20 - 2
    assert o["accuracy"]["point"] == pytest.approx(20 / 40)
    assert 0 < o["accuracy"]["ci_low"] < 0.5 < o["accuracy"]["ci_high"] < 1
    assert "2 invalid answer(s)" in run.message
    # per task type: the mean of that type's questions
    for task, g in run.scores["tasks"].items():
        mine = [i for i in items.values() if i.task == task]
        assert g["accuracy"]["point"] == pytest.approx(sum(i.overall for i in mine) / len(mine))
    values = KIND.leaderboard_values(SimpleNamespace(scores_effective=run.scores, transform_matcher={}), None)
    assert values["accuracy"] == pytest.approx(0.5) and values["invalid"] == 2 and values["questions"] == 40
    assert values["accuracy.low"] == o["accuracy"]["ci_low"]
    assert values["type.descriptive_statistics"] == run.scores["tasks"]["Descriptive Statistics"]["accuracy"]["point"]
    keys = {c.key for c in KIND.leaderboard.columns}
    assert keys <= set(values) and KIND.leaderboard.role == "ranked" and KIND.leaderboard.sort_key in keys
    one = world.release.datasets[0].name
    per = KIND.leaderboard_values(SimpleNamespace(scores_effective=run.scores, transform_matcher={}), one)
    assert per["questions"] == run.scores["datasets"][one]["questions"] and per["type.variance_test"] is None
    assert KIND.summary_line(run.scores).startswith("StatQA accuracy 0.500 [")


def test_a_quirky_shape_is_scored_as_statqa_reads_it_and_said(world):
    q = world.questions["5"]  # columns ["income_inequality"], methods ["Mean"]
    _checked, run = _score(world, {"answers": {"5": '{"methods": ["mean"]}'}})
    item = next(i for i in read_result(run.result_bytes).items if i.id == "5")
    assert q.gold.methods == ["Mean"] and item.status == "scored" and item.methods_score == 1
    assert item.overall == 0 and "no 'columns'" in item.message
    assert run.scores["overall"]["methods"]["point"] == pytest.approx(1 / 40)


@pytest.mark.parametrize(("body", "expected"), [
    (b"not json", "answers.json is not JSON"),
    (b'{"answers": {"5": 3}}', "answers.json: answers/5 does not fit"),
    (b'{"answers": {}, "model": "x"}', "answers.json: model is not a field of the format"),
    (b'{"replies": {}}', "answers.json: answers is missing"),
    (b'{"answers": {"99999": "{}"}}', "question id '99999' is no StatQA question of release 1.0.0"),
    (b'\xff\xfe', "answers.json is not UTF-8 text"),
])
def test_a_submission_that_does_not_fit_is_refused_with_a_sentence(world, body, expected):
    with pytest.raises(SubmissionCheckError) as err:
        KIND.check_files([("answers.json", body)], world.release, max_items=None)
    assert expected in str(err.value)


def test_one_file_a_limit_and_a_release_with_statqa_questions(world, tmp_path):
    body = json.dumps({"answers": {"5": "{}", "7": "{}"}}).encode()
    with pytest.raises(SubmissionCheckError, match="exactly one answers file; 2 were given"):
        KIND.check_files([("a.json", body), ("b.json", body)], world.release, max_items=None)
    with pytest.raises(SubmissionCheckError, match="holds 2 answers; the limit is 1"):
        KIND.check_files([("a.json", body)], world.release, max_items=1)
    empty = world.release.model_copy(update={"datasets": []})
    with pytest.raises(SubmissionCheckError, match="holds no StatQA questions"):
        KIND.check_files([("a.json", body)], empty, max_items=None)


def test_the_published_schema_is_the_submission_model():
    assert KIND.submission_schema == SCHEMA_PATH
    assert json.loads(Path(SCHEMA_PATH).read_text(encoding="utf-8")) == submission_schema()
    schema = submission_schema()
    assert schema["required"] == ["answers"] and schema["additionalProperties"] is False
    assert schema["properties"]["answers"]["propertyNames"] == {"pattern": "^[0-9]+$"}


def test_score_schema_prints_it_and_it_tells_a_good_submission_from_a_bad_one(tmp_path):
    import os

    import jsonschema

    from curation.settings import PROJECT_ROOT
    from tests.cli_runner import run_cli

    env = dict(os.environ, FORKPATHS_DATA_DIR=str(tmp_path / "data"), FORKPATHS_LOAD_STARTER_DATASETS="false")
    env.pop("FORKPATHS_DATABASE_URL", None)
    done = run_cli(("score-schema", "statqa"), env=env, cwd=PROJECT_ROOT)
    assert done.returncode == 0 and json.loads(done.stdout) == submission_schema()
    schema = json.loads(done.stdout)
    jsonschema.validate({"answers": {"5": '{"columns": [], "methods": []}', "7": None}, "source": {"k": 1}}, schema)
    for bad in ({"answers": {"five": "x"}}, {"answers": {"5": 3}}, {"answers": {}, "extra": 1}, {}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
