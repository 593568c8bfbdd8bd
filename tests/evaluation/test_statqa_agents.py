"""Agents answer StatQA questions, one-shot and ReAct, against the scripted chat-completions server on 127.0.0.1
(and, for ReAct, the real sandbox): the brief is AIRepr's (file, dataset description, columns with description and
data type, question) with StatQA's method list; the first reply is the answer; the answers file the hook writes is
checked and scored by the kind like an uploaded one."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from evaluation.agents import AgentSettings, TaskAnswer, agent_kind, run_task
from evaluation.llm import LLMClient, LLMConfig
from evaluation.scoring import RunBudget
from evaluation.tasks import ScoringContext, ScoringLimits, task_kind
from evaluation.tasks.statqa import read_result
from tests.evaluation.statqa_world import statqa_release
from tests.llm_server import ScriptedLLM

KIND = task_kind("statqa")
HOOK = agent_kind("statqa")


@pytest.fixture
def world(tmp_path):
    release = statqa_release(tmp_path / "release")
    tasks = {t.key: t for t in HOOK.tasks(release, tmp_path / "release")}
    return SimpleNamespace(release=release, folder=tmp_path / "release", tasks=tasks)


def _client(url: str, tmp_path: Path) -> LLMClient:
    return LLMClient(LLMConfig(base_url=url, model="scripted", cache_dir=tmp_path / "cache", backoff_s=0.01,
                               max_retries=0))


def _gold(world, key: str) -> dict:
    ds = next(d for d in world.release.datasets if d.name == world.tasks[key].dataset)
    q = next(q for q in ds.parts["statqa"]["questions"] if q["id"] == key)
    return {"columns": q["gold"]["columns"], "methods": q["gold"]["methods"]}


def _scored(world, answers: list[TaskAnswer]):
    subs = HOOK.submissions(world.release, answers, source={"model": "scripted", "strategy": "oneshot"})
    assert [s.label for s in subs] == ["run 1"]
    files = subs[0].files
    KIND.check_files(files, world.release, max_items=None)
    ctx = ScoringContext(release=world.release, release_folder=world.folder, files=files, judge=lambda: None,
                         mode="default", k=10, ground_truth_hash="gt", limits=ScoringLimits(), budget=RunBudget())
    return json.loads(files[0][1]), KIND.score(ctx)


def test_one_task_per_question_with_airepr_s_brief(world):
    assert len(world.tasks) == 40 and HOOK.strategies == ("oneshot", "react")
    t = world.tasks["7"]  # Crop Production Dataset, a distribution compliance question about Vietnam
    assert t.kind == "statqa" and t.dataset == "statqa_crop_production_dataset"
    assert t.data_path is not None and t.data_path.is_file() and t.files[0].name == "Crop_Production_Dataset.csv"
    for text in ("Crop_Production_Dataset.csv", "comprehensive record of annual crop production", '"Vietnam"',
                 "Annual crop production in the Vietnam", 'data type \\"quant\\"', "Shapiro-Wilk Test of Normality",
                 "Kolmogorov-Smirnov Test for Gamma distribution"):
        assert text in t.brief or text.replace('\\"', '"') in t.brief, text
    assert "annual crop production data from Vietnam" in t.brief  # the question
    assert "Distribution Compliance" not in t.brief.split("Choose the methods")[0]  # the task type is not told
    assert "Vietnam" in t.columns
    assert [x.key for x in HOOK.tasks(world.release, world.folder, only=["7", "9"])] == ["7", "9"]


def test_oneshot_answers_are_written_as_replies_and_scored_by_statqa_s_rules(world, tmp_path):
    gold = _gold(world, "7")
    reply = f"The data are tiny (4 rows), but: {json.dumps(gold)}"
    with ScriptedLLM() as llm:
        llm.script = [{"content": reply}, {"content": "I would run a normality test."}]
        good = run_task(_client(llm.url, tmp_path), HOOK, world.tasks["7"], AgentSettings())
        bad = run_task(_client(llm.url, tmp_path), HOOK, world.tasks["9"], AgentSettings())
    assert good.status == "answered" and good.answer["raw"] == reply and good.answer["methods"] == gold["methods"]
    assert bad.status == "invalid_answer" and "no JSON object" in bad.message and bad.raw is not None
    assert len(llm.requests) == 2  # strict: no repair turn
    assert "Statistical question" in llm.requests[0]["messages"][1]["content"]
    body, run = _scored(world, [
        TaskAnswer(task="7", replicate=1, status=good.status, message=good.message, answer=good.answer),
        TaskAnswer(task="9", replicate=1, status=bad.status, message=bad.message, answer=None, raw=bad.raw),
        TaskAnswer(task="5", replicate=1, status="endpoint_error", message="The endpoint is down.", answer=None)])
    assert body["answers"] == {"5": None, "7": reply, "9": "I would run a normality test."}
    assert body["source"]["errors"] == {"5": "The endpoint is down."}
    items = {i.id: i for i in read_result(run.result_bytes).items}
    assert items["7"].status == "scored" and items["7"].overall == 1
    assert items["9"].status == "invalid_answer" and items["5"].status == "unanswered"
    assert run.scores["overall"]["accuracy"]["point"] == pytest.approx(1 / 40)


def test_a_wrong_shape_is_refused_by_the_hook_with_statqa_s_reason(world):
    t = world.tasks["7"]
    with pytest.raises(ValueError, match="'columns' is a string, not a list"):
        HOOK.validate_text('{"columns": "Vietnam", "methods": ["Lilliefors Test"]}', t, workflow=False)
    with pytest.raises(ValueError, match="first '\\{' to the first '\\}'"):
        HOOK.validate_text('{"columns": ["Vietnam"], "methods": ["x"], "note": {"a": 1}}', t, workflow=False)
    ok = HOOK.validate({"columns": ["Vietnam"], "methods": ["Lilliefors Test"]}, t, workflow=False)
    assert ok["columns"] == ["Vietnam"] and json.loads(ok["raw"])["methods"] == ["Lilliefors Test"]


def test_react_runs_code_on_the_question_s_table_then_answers(world, tmp_path, os_sandbox):
    gold = _gold(world, "5")  # the mean of income_inequality
    with ScriptedLLM() as llm:
        llm.script = [{"tool_calls": [{"name": "run_python", "arguments": {
                          "code": "print(df.shape)\nprint(round(df['income_inequality'].mean(), 5))"}}]},
                      {"content": json.dumps(gold)}]
        out = run_task(_client(llm.url, tmp_path), HOOK, world.tasks["5"], AgentSettings(strategy="react"))
    assert out.status == "answered", out.message
    observation = llm.requests[1]["messages"][-1]
    assert observation["role"] == "tool" and "38.41781" in observation["content"], observation["content"]
    _body, run = _scored(world, [TaskAnswer(task="5", replicate=1, status=out.status, message=out.message,
                                            answer=out.answer)])
    assert next(i for i in read_result(run.result_bytes).items if i.id == "5").overall == 1
