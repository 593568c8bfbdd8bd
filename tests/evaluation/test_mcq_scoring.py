"""MCQ accuracy: strict parsing, figures by hand, the model-under-test path against a scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evaluation.llm import LLMClient, LLMConfig
from evaluation.mcq_scoring import (
    AnswersFileError,
    dump_mcq_report,
    parse_answer,
    read_answers,
    score_answers,
)
from exports.mcq_part import MCQ, MCQOption, MCQPart
from exports.schema import DatasetRelease
from tests.evaluation.blade_release import blade_release_dataset
from tests.evaluation.chat_server import ChatServer


def _ds(name: str, mcqs: list[MCQ]) -> DatasetRelease:
    return DatasetRelease(name=name, research_question="Does x cause y?", data_file=f"data/{name}/data.csv",
                          data_sha256="", num_rows=1, num_columns=1).with_parts(mcq=MCQPart(items=mcqs))


def _q(qid: str, kind: str, n: int, correct: int) -> MCQ:
    return MCQ(id=qid, kind=kind, mc_type="select_neg", concept="c" if kind == "transform" else "",
               options=[MCQOption(text=f"option {i}") for i in range(n)], correct_index=correct)


DATA = [_ds("d1", [_q("v1", "variable", 3, 2), _q("t1", "transform", 4, 0), _q("t2", "transform", 2, 1)]),
        _ds("d2", [_q("v2", "variable", 2, 0)])]


@pytest.mark.parametrize(("raw", "n", "letter"), [
    ("B", 3, "B"), (" b ", 3, "B"), ("(C)", 3, "C"), ("A.", 2, "A"), ({"answer": "B", "rationale": "x"}, 2, "B"),
    ('{"answer": "A"}', 2, "A"), ('```json\n{"answer": "B", "rationale": "r"}\n```', 2, "B"),
    ("Answer: A", 4, None), ("A or B", 4, None), ("D", 3, None), (3, 4, None), ({"choice": "A"}, 4, None),
    ("{broken", 4, None), ("", 4, None), ("Analysis suggests B", 4, None),
])
def test_strict_parsing(raw: Any, n: int, letter: str | None) -> None:
    parsed, reason = parse_answer(raw, n)
    assert parsed == letter
    assert (reason == "") == (letter is not None)


def test_scores_by_hand() -> None:
    report = score_answers(DATA, {"v1": "C", "t1": "Answer: A", "v2": "B", "zzz": "A"}, release_version="1.0.0")
    g = {(x.dataset, x.kind): x for x in report.groups}
    assert (g["all", "all"].questions, g["all", "all"].correct, g["all", "all"].wrong) == (4, 1, 1)
    assert (g["all", "all"].unparseable, g["all", "all"].unanswered) == (1, 1)
    assert g["all", "all"].accuracy == pytest.approx(1 / 4)
    assert g["all", "all"].chance == pytest.approx((1 / 3 + 1 / 4 + 1 / 2 + 1 / 2) / 4)
    assert g["d1", "variable"].accuracy == 1.0 and g["d1", "variable"].chance == pytest.approx(1 / 3)
    assert g["d1", "transform"].accuracy == 0.0 and g["d1", "transform"].chance == pytest.approx(3 / 8)
    assert g["d2", "all"].accuracy == 0.0
    # BLADE's across-dataset figure: mean of per-dataset accuracies (d1: 1/3, d2: 0)
    assert report.macro["all"] == pytest.approx(1 / 6)
    assert report.macro["variable"] == pytest.approx(0.5)
    assert report.unknown_ids == ["zzz"]
    by_id = {i.id: i for i in report.items}
    assert by_id["t1"].status == "unparseable" and "Answer: A" in by_id["t1"].reason
    assert by_id["t2"].status == "unanswered"


def test_lone_surrogates_in_an_answers_file_cannot_break_the_report() -> None:
    """An answer or an unknown id holding a lone surrogate made the report unwritable as UTF-8: the whole MCQ
    run failed with UnicodeEncodeError. They are echoed escaped, and the rest is scored."""
    answers = read_answers(b'{"v1": "\\ud800", "v2": "A", "x\\udfffy": "B", "t1": {"answer": "\\ud801"}}')
    report = score_answers(DATA, answers, release_version="1.0.0")
    dump_mcq_report(report).encode("utf-8")
    by_id = {i.id: i for i in report.items}
    assert by_id["v1"].status == "unparseable" and by_id["v1"].answer == "\\ud800"
    assert by_id["t1"].status == "unparseable" and "\\ud801" in (by_id["t1"].answer or "")
    assert by_id["v2"].status == "correct"
    assert report.unknown_ids == ["x\\udfffy"]


def test_answers_file_errors(tmp_path: Path) -> None:
    with pytest.raises(AnswersFileError, match="not valid JSON"):
        read_answers(b"{")
    with pytest.raises(AnswersFileError, match="JSON list"):
        read_answers(b"[]")
    with pytest.raises(AnswersFileError, match="cannot read"):
        read_answers(tmp_path / "absent.json")
    assert read_answers(b'{"answers": {"a": "B"}}') == {"a": "B"}


def test_shared_mcqs_all_correct_and_chance(shared_blade: Path) -> None:
    ds = blade_release_dataset(shared_blade / "datasets" / "hurricane")
    perfect = {q.id: "ABCD"[q.correct_index] for q in MCQPart.of(ds).items}
    report = score_answers([ds], perfect)
    overall = next(x for x in report.groups if x.dataset == "all" and x.kind == "all")
    mcqs = MCQPart.of(ds).items
    assert overall.accuracy == 1.0 and overall.questions == len(mcqs) > 0
    assert overall.chance == pytest.approx(sum(1 / len(q.options) for q in mcqs) / len(mcqs))


def _ask(client: LLMClient) -> tuple[dict[str, Any], dict[str, Any], int]:
    """The model under test asked every MCQ of DATA by the agent machinery (one-shot, the mcq kind's hook):
    (answers file's answers, its source, requests sent)."""
    from datetime import UTC, datetime

    from evaluation.agents import AgentSettings, TaskAnswer, agent_kind, run_task
    from exports.schema import Release

    hook = agent_kind("mcq")
    release = Release(version="1.0.0", created_at=datetime.now(UTC), app_version="t", datasets=DATA)
    before = client.calls
    answers = []
    for task in hook.tasks(release, Path(".")):
        out = run_task(client, hook, task, AgentSettings())
        answers.append(TaskAnswer(task.key, 0, out.status, out.message, out.answer, raw=out.raw))
    body = json.loads(hook.submissions(release, answers, source={"model": client.config.model})[0].files[0][1])
    return body["answers"], body["source"], client.calls - before


def test_model_under_test_through_a_scripted_server(tmp_path: Path) -> None:
    def script(messages: list[dict[str, Any]]) -> str | int:
        user = messages[-1]["content"]
        if "option 3" in user:
            return 500  # the 4-option question fails at the endpoint
        if "conceptual variable that is" in user:
            return json.dumps({"answer": "C", "rationale": "r"})
        return "I would pick B"

    with ChatServer(script) as server:
        client = LLMClient(LLMConfig(base_url=server.base_url, model="mut", max_retries=0, timeout_s=5,
                                     cache_dir=tmp_path))
        answers, source, calls = _ask(client)
        assert all(r["temperature"] == 0 for r in server.requests)
        assert len(server.requests) == 4  # one request per MCQ: BLADE's protocol has no repair turn
        again, source2, calls2 = _ask(client)
    # asked again: the failure and the two answers without a valid letter (never served from the cache)
    assert calls == 4 and "t1" in source["errors"] and calls2 == 3
    report = score_answers(DATA, answers, source=source)
    by_id = {i.id: i for i in report.items}
    assert by_id["v1"].status == "correct"
    assert by_id["v2"].status == "unparseable"  # C is past the last of 2 options
    assert by_id["t1"].status == "unanswered"
    assert by_id["t2"].status == "unparseable"  # prose is not guessed
    assert by_id["t2"].answer == "I would pick B"  # kept as the model said it
    assert report.source["model"] == "mut"


GOLDEN = Path(__file__).parent / "golden" / "mcq_report_v1.json"


def test_report_golden_and_round_trip() -> None:
    import os

    from evaluation.mcq_scoring import dump_mcq_report, parse_mcq_report

    report = score_answers(DATA, {"v1": "C", "t1": "Answer: A", "v2": "B", "zzz": "A"}, release_version="1.0.0")
    text = dump_mcq_report(report)
    if os.environ.get("FORKPATHS_UPDATE_GOLDEN"):
        GOLDEN.write_text(text, encoding="utf-8")
    assert text == GOLDEN.read_text(encoding="utf-8")
    assert parse_mcq_report(text) == report
    with pytest.raises(AnswersFileError, match="format_version '2.0'"):
        parse_mcq_report(text.replace('"format_version": "1.0"', '"format_version": "2.0"'))
    with pytest.raises(AnswersFileError, match="not a forkpaths MCQ report"):
        parse_mcq_report("{}")
