"""The llm judge against a scripted chat-completions server on 127.0.0.1: calls, cache, failures."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evaluation.judges import decisions_from_release, judge_analysis, make_judge
from evaluation.judges.llm_judge import LLMJudge
from evaluation.llm import LLMClient, LLMConfig
from evaluation.records import FailureCategory, TransformMatch
from evaluation.submissions import read_submission
from tests.evaluation.blade_release import blade_release_dataset
from tests.evaluation.chat_server import ChatServer


def _items(text: str, letter: str) -> list[str]:
    """The quoted items of list A or B, decoded."""
    return [json.loads(q) for q in re.findall(rf"^{letter}\d+: (\".*\")$", text, re.MULTILINE)]


def scripted(messages: list[dict[str, Any]]) -> str:
    """Answers each BLADE prompt kind: OLS for the model code; same-role pairs rated 9; linear models equal."""
    system, user = messages[0]["content"], messages[-1]["content"]
    if "reads data-analysis code" in system:
        cols = re.findall(r"'(\w+)'", json.loads(user.split("CODE: ", 1)[1].split("\n", 1)[0]))
        return json.dumps({"m_spec": "Ordinary least squares regression", "m_columns": sorted(set(cols))})
    if "same concept" in system:
        a, b = _items(user, "A"), _items(user, "B")
        return "Here you go:\n" + json.dumps({
            f"A{i + 1}-B{j + 1}": {"rationale": "same role, related", "similarity": 9}
            for i, x in enumerate(a) for j, y in enumerate(b) if x.split(":")[0] == y.split(":")[0]})
    a = _items(user, "A")
    return json.dumps({f"A{i + 1}-B1": {"rationale": "both linear models"} for i, x in enumerate(a)
                       if "linear" in x or "ols" in x})


@pytest.fixture
def hurricane(shared_blade: Path):
    gt = decisions_from_release(blade_release_dataset(shared_blade / "datasets" / "hurricane"))
    sub = read_submission(shared_blade / "examples" / "submission_analyses.json", known_datasets=["hurricane"])
    return gt, sub


def _judge(server: ChatServer, cache: Path | None, **config: Any) -> LLMJudge:
    settings = {"max_retries": 0, "timeout_s": 5, "backoff_s": 0.01, **config}
    client = LLMClient(LLMConfig(base_url=server.base_url, model="scripted-1", cache_dir=cache, **settings))
    judge = make_judge("llm", client=client)
    assert isinstance(judge, LLMJudge)
    return judge


def test_examples_with_at_most_six_calls_each_and_a_warm_cache(hurricane, tmp_path: Path) -> None:
    gt, sub = hurricane
    with ChatServer(scripted) as server:
        judge = _judge(server, tmp_path / "cache")
        per_analysis = []
        for a in sub.analyses:
            before = judge.calls
            r = judge_analysis(gt, a, judge, transform=TransformMatch(status="ok"))
            per_analysis.append(judge.calls - before)
            assert r.record.failure == FailureCategory.NONE
            assert r.record.matched_models == ["Linear Regression"]
            assert len(r.record.matched_cvars) >= 3
            assert all(v.judge == "llm" and v.rationale == "same role, related" for v in r.variables)
            assert all(m.judge == "llm" and m.rationale == "both linear models" for m in r.models)
        assert max(per_analysis) <= 6
        # hurricane has IV, DV and Control: model code + 3 buckets + model match; the 16 matched model rows cost 0
        assert per_analysis[0] == 5
        assert all(req["temperature"] == 0 and req["model"] == "scripted-1" for req in server.requests)
        sent = len(server.requests)
        again = _judge(server, tmp_path / "cache")
        for a in sub.analyses:
            judge_analysis(gt, a, again, transform=TransformMatch(status="ok"))
        assert again.calls == 0 and again.cache_hits > 0
        assert len(server.requests) == sent
    stored = list((tmp_path / "cache").rglob("*.json"))
    assert stored and {"content", "raw", "messages"} <= set(json.loads(stored[0].read_text()))
    assert judge.configuration()["template_version"].startswith("blade-judge@")


def test_a_judge_that_is_down_fails_each_analysis_with_a_sentence(hurricane) -> None:
    gt, sub = hurricane
    with ChatServer(scripted) as server:
        judge = _judge(server, None)
    records = [judge_analysis(gt, a, judge).record for a in sub.analyses[:3]]
    assert [r.failure for r in records] == [FailureCategory.JUDGE_FAILED] * 3
    assert "the llm judge failed: the LLM endpoint failed: cannot connect" in records[0].failure_message
    assert records[0].failure_message.startswith("analysis 0: the llm judge failed")
    assert records[0].blade_status == 6


@pytest.mark.parametrize(("answer", "expected"), [
    ("I think A1 matches B1.", "not the requested JSON"),
    ('{"m_spec": 3}', "lacks m_spec"),
    (500, "HTTP 500"),
])
def test_garbage_and_errors(hurricane, answer: str | int, expected: str) -> None:
    gt, sub = hurricane
    with ChatServer(lambda messages: answer) as server:
        record = judge_analysis(gt, sub.analyses[0], _judge(server, None)).record
    assert record.failure == FailureCategory.JUDGE_FAILED
    assert expected in record.failure_message
    assert record.matched_cvars == [] and record.matched_models == []


def test_one_bad_answer_does_not_poison_the_next_analysis(hurricane) -> None:
    gt, sub = hurricane
    answers = iter(["not json"] + [None] * 100)

    def flaky(messages: list[dict[str, Any]]) -> str:
        first = next(answers)
        return first if first is not None else scripted(messages)

    with ChatServer(flaky) as server:
        judge = _judge(server, None)
        bad = judge_analysis(gt, sub.analyses[0], judge).record
        good = judge_analysis(gt, sub.analyses[1], judge).record
    assert bad.failure == FailureCategory.JUDGE_FAILED
    assert good.failure == FailureCategory.NONE and good.matched_models


@pytest.mark.parametrize("name", ["affairs", "boxes", "panda_nuts", "reading"])
def test_moderators_cost_no_extra_calls(name: str, shared_blade: Path, tmp_path: Path) -> None:
    """Datasets with moderators: an analysis with controls and a moderator stays within 6 calls (asking per role
    left the control × moderator pairs to the per-model-row check: 10 calls on reading)."""
    from evaluation.submissions import parse_submission

    gt = decisions_from_release(blade_release_dataset(shared_blade / "datasets" / name))
    iv = next(v for v in gt.variables if v.role == "IV")
    dv = next(v for v in gt.variables if v.role == "DV")
    others = [v for v in gt.variables if v.role in ("Control", "Moderator")][:4]
    controls = [{"description": v.concept, "is_moderator": n == 0, "moderator_on": iv.concept if n == 0 else None,
                 "columns": v.original_columns[:1]} for n, v in enumerate(others)]
    cols = [iv.original_columns[0], *(c["columns"][0] for c in controls)]
    analysis = {"cvars": {"ivs": [{"description": iv.concept, "columns": iv.original_columns[:1]}],
                          "dv": {"description": dv.concept, "columns": dv.original_columns[:1]},
                          "controls": controls},
                "transform_code": "def transform(df):\n    return df",
                "m_code": "def model(df):\n    return smf.ols('" + dv.original_columns[0] + " ~ " + " + ".join(cols)
                          + "', data=df).fit()"}
    sub = parse_submission({"dataset_name": name, "analyses": {"0": analysis}}, known_datasets=[name])

    def answers(messages: list[dict[str, Any]]) -> str:  # as `scripted`, but the agent's model is every GT model
        if "reads data-analysis code" in messages[0]["content"] or "same concept" in messages[0]["content"]:
            return scripted(messages)
        return json.dumps({f"A{i + 1}-B1": {"rationale": "equivalent"}
                           for i in range(len(_items(messages[-1]["content"], "A")))})

    with ChatServer(answers) as server:
        judge = _judge(server, tmp_path / "cache")
        r = judge_analysis(gt, sub.analyses[0], judge, transform=TransformMatch(status="ok"))
        assert r.record.failure == FailureCategory.NONE, r.record.failure_message
        # model code + IV + DV + controls with moderators + model match; the per-row variable checks cost 0
        assert judge.calls == 5, judge.calls
        assert len(r.models) == len(gt.models)  # every row's variables were checked, answered from memory


def test_a_garbage_answer_is_not_cached_and_rescoring_after_recovery_asks_again(hurricane, tmp_path: Path) -> None:
    """The endpoint answers garbage, then recovers: re-scoring sends requests and scores (it used to fail again,
    answered from the cache with 0 requests)."""
    gt, sub = hurricane
    broken = {"on": True}

    def flaky(messages: list[dict[str, Any]]) -> str:
        return "<html>maintenance</html>" if broken["on"] else scripted(messages)

    with ChatServer(flaky) as server:
        first = judge_analysis(gt, sub.analyses[0], _judge(server, tmp_path / "cache")).record
        assert first.failure == FailureCategory.JUDGE_FAILED and "not the requested JSON" in first.failure_message
        sent = len(server.requests)
        broken["on"] = False
        judge = _judge(server, tmp_path / "cache")
        again = judge_analysis(gt, sub.analyses[0], judge, transform=TransformMatch(status="ok")).record
        assert again.failure == FailureCategory.NONE and again.matched_models
        assert judge.calls > 0 and len(server.requests) > sent


def test_a_failed_judge_is_not_reported_as_ok_with_an_empty_message(shared_blade: Path) -> None:
    from evaluation.scoring import JUDGE_ERROR, score_submission

    ds = blade_release_dataset(shared_blade / "datasets" / "hurricane")
    sub = read_submission(shared_blade / "examples" / "submission_analyses.json", known_datasets=["hurricane"])
    with ChatServer(lambda messages: 503) as server:
        result = score_submission(ds, sub, judge=_judge(server, None))
    assert {a.status for a in result.analyses} == {JUDGE_ERROR}
    assert all(a.message.startswith(f"analysis {a.key}: the llm judge failed") and "HTTP 503" in a.message
               for a in result.analyses)
