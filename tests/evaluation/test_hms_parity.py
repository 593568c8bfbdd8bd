"""HMS ``discoverybench`` mode against upstream's evaluator, case by case.

Each case is a judge's answers in the order upstream asks for them, the score upstream's
``eval/new_eval.py::run_eval_gold_vs_gen_NL_hypo_workflow`` (allenai/discoverybench, commit c31fcf0) gives for them,
worked from upstream's code line by line, and the line that decides it. ``None`` is where upstream raises (a
judge error here, with the raw answer kept). The answers are served in that order by the scripted server on
127.0.0.1; the test checks forkpaths' score, that it sent exactly upstream's requests (same number, same
questions in the same order), and the settings upstream sends with each.

Upstream files: ``new_eval.py`` is ``eval/new_eval.py``, ``helpers.py`` is ``utils/openai_helpers.py``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from evaluation.hms import GoldHypothesis, HMSJudge, ItemResult, Prediction, score_item
from evaluation.llm import LLMClient, LLMConfig
from tests.evaluation.hms_script import step_of
from tests.llm_server import ScriptedLLM

GOLD = "Among adults, income rises with age."
PRED = "Older adults earn more."
DATASETS = [{"dataset_description": "a survey of incomes", "columns": [{"name": "age", "description": "years"}]},
            {"dataset_description": "a census extract", "columns": [{"name": "region", "description": "area"}]}]


def s(text: str, context: Any = ..., **extra: Any) -> dict[str, Any]:
    """A sub-hypothesis as the judge writes it (``context`` left out when not given)."""
    return {"text": text, **({} if context is ... else {"context": context}), "variables": ["x"],
            "relations": "r", **extra}


def D(*subs: dict[str, Any]) -> tuple[str, str]:  # noqa: N802 - reads as a table
    return "decompose", json.dumps({"sub_hypo": list(subs)})


def C(match: Any) -> tuple[str, str]:  # noqa: N802
    return "context", json.dumps({"match": match})


def V(a: Any, b: Any, i: Any) -> tuple[str, str]:  # noqa: N802
    return "variables_full", json.dumps({"sizeA": a, "sizeB": b, "intersection": i, "explanation": "e"})


def R(answer: Any) -> tuple[str, str]:  # noqa: N802
    return "relationship_full", json.dumps({"answer": answer, "explanation": "e"})


def raw(step: str, text: str) -> tuple[str, str]:
    return step, text


ONE = D(s("g", "adults"))
SAME = D(s("p", "adults"))


@dataclass
class Case:
    name: str
    answers: list[tuple[str, str]]
    upstream: float | None  # None: upstream raises
    line: str  # the upstream line that decides the score
    message: str = ""  # in the judge error's sentence
    extra: dict[str, Any] = field(default_factory=dict)


CASES = [
    # ---- relationship (new_eval.py:69-79)
    Case("rel A", [ONE, SAME, V(2, 2, 2), R("A")], 1.0, "new_eval.py:73"),
    Case("rel B", [ONE, SAME, V(2, 2, 2), R("B")], 0.5, "new_eval.py:75"),
    Case("rel C", [ONE, SAME, V(2, 2, 2), R("C")], 0.0, "new_eval.py:77"),
    Case("rel 'A) very similar'", [ONE, SAME, V(2, 2, 2), R("A) very similar")], 1.0, "new_eval.py:73"),
    Case("rel phrase 'very similar'", [ONE, SAME, V(2, 2, 2), R("very similar")], 1.0, "new_eval.py:73"),
    Case("rel phrase 'similar but general than HypoA'", [ONE, SAME, V(2, 2, 2), R("similar but general than HypoA")],
         0.5, "new_eval.py:75"),
    Case("rel phrase 'different'", [ONE, SAME, V(2, 2, 2), R("different")], 0.0, "new_eval.py:77"),
    Case("rel phrase 'not very similar, different' (first test wins)",
         [ONE, SAME, V(2, 2, 2), R("not very similar, different")], 1.0, "new_eval.py:73"),
    Case("rel unrecognised 'unclear'", [ONE, SAME, V(2, 2, 2), R("unclear")], -1.0, "new_eval.py:79"),
    Case("rel 'Similar but general than HypoA' (case-sensitive)",
         [ONE, SAME, V(2, 2, 2), R("Similar but general than HypoA")], -1.0, "new_eval.py:79"),
    Case("rel not JSON", [ONE, SAME, V(2, 2, 2), raw("relationship_full", "<<A>>")], None, "new_eval.py:71",
         "'<<A>>'"),
    Case("rel fenced JSON", [ONE, SAME, V(2, 2, 2), raw("relationship_full", '```json\n{"answer": "A"}\n```')], None,
         "new_eval.py:71", "```json"),
    Case("rel JSON without answer", [ONE, SAME, V(2, 2, 2), raw("relationship_full", '{"level": "A"}')], None,
         "new_eval.py:72", '{"level": "A"}'),
    Case("rel answer is a number", [ONE, SAME, V(2, 2, 2), R(1)], None, "new_eval.py:72"),
    # ---- variables (new_eval.py:37-68)
    Case("vars 1 of 2 each", [ONE, SAME, V(2, 2, 1), R("A")], 0.5, "new_eval.py:44-51"),
    Case("vars 2 of 3 gold, 2 predicted", [ONE, SAME, V(3, 2, 2), R("A")], 0.8, "new_eval.py:44-51"),
    Case("vars gold has none (sizeA 0)", [ONE, SAME, V(0, 2, 0), R("A")], 0.0, "new_eval.py:46-51"),
    Case("vars prediction has none (sizeB 0)", [ONE, SAME, V(2, 0, 0), R("A")], 0.0, "new_eval.py:44-51"),
    Case("vars neither has any", [ONE, SAME, V(0, 0, 0), R("A")], 0.0, "new_eval.py:44-51"),
    Case("vars fenced JSON", [ONE, SAME, raw("variables_full", '```json\n{"sizeA": 1, "sizeB": 1, '
                                            '"intersection": 1, "explanation": "e"}\n```'), R("A")],
         -1.0, "new_eval.py:39,63-68"),
    Case("vars without explanation", [ONE, SAME, raw("variables_full", '{"sizeA": 1, "sizeB": 1, '
                                                     '"intersection": 1}'), R("A")], -1.0, "new_eval.py:59,63-68"),
    Case("vars counts as text", [ONE, SAME, V("2", "2", "2"), R("A")], -1.0, "new_eval.py:45,63-68"),
    Case("vars not JSON, rel unrecognised: (-1)(-1)", [ONE, SAME, raw("variables_full", "two"), R("D")], 1.0,
         "new_eval.py:63-68,79,334"),
    Case("vars intersection above the sizes", [ONE, SAME, V(1, 1, 2), R("A")], 2.0, "new_eval.py:44-51"),
    # ---- decomposition (new_eval.py:218-270, 369-381; helpers.py:87-109)
    Case("decomposition not JSON: fallback context None", [raw("decompose", "Sure! The context is adults."), SAME],
         0.0, "new_eval.py:264,373,307"),
    Case("decomposition fenced JSON is read", [raw("decompose", '```json\n' + D(s("g", "adults"))[1] + '\n```'),
                                               SAME, V(1, 1, 1), R("A")], 1.0, "helpers.py:95"),
    Case("decomposition null: fallback", [raw("decompose", "null"), SAME], 0.0, "new_eval.py:260-266,373"),
    Case("decomposition with an empty sub_hypo: fallback", [raw("decompose", '{"sub_hypo": []}'), SAME], 0.0,
         "new_eval.py:372-373"),
    Case("decomposition with variables null (never read)", [D(s("g", "adults", variables=None)), SAME, V(1, 1, 1),
                                                           R("A")], 1.0, "new_eval.py:398"),
    Case("decomposition without sub_hypo", [raw("decompose", '{"hypothesis": "g"}')], None, "new_eval.py:372",
         '{"hypothesis": "g"}'),
    Case("decomposition is a JSON list", [raw("decompose", '[{"text": "g"}]')], None, "new_eval.py:268"),
    Case("decomposition's sub_hypo is text", [raw("decompose", '{"sub_hypo": "g"}'), SAME], None, "new_eval.py:398"),
    Case("sub-hypothesis without text", [D({"context": "adults"}), SAME], None, "new_eval.py:398"),
    # ---- context (new_eval.py:272-309, 390-412; helpers.py:87-109)
    Case("context identical: no call", [ONE, SAME, V(1, 1, 1), R("A")], 1.0, "new_eval.py:305"),
    Case("context None: no call", [ONE, D(s("p", "None"))], 0.0, "new_eval.py:307"),
    Case("context judged a match", [ONE, D(s("p", "grown-ups")), C(True), V(1, 1, 1), R("A")], 1.0,
         "new_eval.py:301,399"),
    Case("context judged no match", [ONE, D(s("p", "grown-ups")), C(False)], 0.0, "new_eval.py:301,399"),
    Case("context match 'false' (a string is truthy)", [ONE, D(s("p", "grown-ups")), C("false"), V(1, 1, 1),
                                                         R("A")], 1.0, "new_eval.py:301,399"),
    Case("context answer without match", [ONE, D(s("p", "grown-ups")), raw("context", '{"same": true}')], 0.0,
         "new_eval.py:301"),
    Case("context not JSON twice, then yes", [ONE, D(s("p", "grown-ups")), raw("context", "yes"),
                                              raw("context", "I think so"), C(True), V(1, 1, 1), R("A")], 1.0,
         "helpers.py:89-103"),
    Case("context not JSON five times", [ONE, D(s("p", "grown-ups"))] + [raw("context", "yes")] * 5, None,
         "new_eval.py:301 (helpers.py:109 returns None)", "five times; upstream raises here (new_eval.py:301, "
         "openai_helpers.py:109). The last answer was 'yes'"),
    Case("context answer a JSON list", [ONE, D(s("p", "grown-ups")), raw("context", "[true]")], None,
         "new_eval.py:301", "[true]"),
    Case("gold context missing, judged no match", [D(s("g")), D(s("p", "grown-ups")), C(False)], 0.0,
         "new_eval.py:398,307"),
    Case("gold context missing, judged a match", [D(s("g")), D(s("p", "grown-ups")), C(True)], None,
         "new_eval.py:408", "no 'context'"),
    Case("both contexts missing (equal)", [D(s("g")), D(s("p"))], None, "new_eval.py:305,408"),
    # ---- several sub-hypotheses (new_eval.py:390-431)
    Case("2×2 crossed contexts", [D(s("g0", "a"), s("g1", "b")), D(s("p0", "b"), s("p1", "a")), C(False),
                                  V(2, 2, 2), R("A"), V(2, 2, 1), R("B")], 0.625, "new_eval.py:390-431"),
    Case("1 gold, 2 predicted: mean over predicted", [ONE, D(s("p0", "adults"), s("p1", "adults")), V(1, 1, 1),
                                                      R("A")], 0.5, "new_eval.py:429"),
    Case("2 gold, 1 predicted: recall 1/2", [D(s("g0", "adults"), s("g1", "kids")), SAME, V(1, 1, 1), R("A")], 0.5,
         "new_eval.py:428"),
    Case("3×3, four context questions", [D(s("g0", "adults"), s("g1", "children"), s("g2", "women")),
                                         D(s("p0", "kids"), s("p1", "grown-ups"), s("p2", "over 30")),
                                         C(False), C(True), C(True), C(False),
                                         V(6, 5, 4), R("B"), V(6, 5, 4), R("B")], 16 / 99, "new_eval.py:390-431"),
]


def test_the_table_covers_every_branch():
    assert len(CASES) >= 30
    assert {c.upstream is None for c in CASES} == {True, False}
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def server():
    with ScriptedLLM(lambda _request: "UNEXPECTED: upstream sends no such request") as s:
        yield s


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_discoverybench_mode_scores_as_upstream(server, case):
    server.script = [{"content": text} for _, text in case.answers]
    sent = len(server.requests)
    judge = HMSJudge(LLMClient(LLMConfig(base_url=server.url, model="judge-model", max_retries=0, backoff_s=0)))
    item = score_item(ItemResult(task="real/test/survey/metadata_0/q0", dataset="survey",
                                 question="How does income relate to age?", status="scored"),
                      GoldHypothesis(GOLD, "gold workflow"), Prediction(PRED, "predicted workflow"), judge=judge,
                      mode="discoverybench", datasets=DATASETS)
    requests = server.requests[sent:]
    # upstream's requests: as many, the same questions, in the same order
    assert [step_of(r["messages"][-1]["content"]) for r in requests] == [step for step, _ in case.answers]
    assert item.calls == len(case.answers) and server.script == []
    for r in requests:
        sampled = step_of(r["messages"][-1]["content"]) in ("decompose", "context")
        assert r["temperature"] == (1.0 if sampled else 0.0) and r["top_p"] == 1.0
        assert r["max_tokens"] == (4096 if sampled else 250)
        assert ("response_format" in r) is (not sampled)  # JSON mode only where upstream sends it
    if case.upstream is None:
        assert item.status == "judge_error" and item.hms is None, (case.line, item.message)
        assert case.message in item.message
    else:
        assert item.status == "scored", (case.line, item.message)
        assert item.hms == pytest.approx(case.upstream), case.line


def test_what_the_judge_is_shown(server):
    """Upstream's prompts' content: the decomposition shows the datasets (each with its own description), the
    hypothesis and the workflow, and no query; the context question only the two sub-hypotheses and their
    contexts (no datasets, no query); the variables and relationship questions everything."""
    server.script = [{"content": c} for _, c in [D(s("gold sub", "adults")), D(s("pred sub", "grown-ups")), C(True),
                                                 V(1, 1, 1), R("A")]]
    sent = len(server.requests)
    judge = HMSJudge(LLMClient(LLMConfig(base_url=server.url, model="judge-model", max_retries=0, backoff_s=0)))
    score_item(ItemResult(task="t", dataset="d", question="How does income relate to age?", status="scored"),
               GoldHypothesis(GOLD, "gold workflow"), Prediction(PRED, "predicted workflow"), judge=judge,
               mode="discoverybench", datasets=DATASETS)
    decompose, _, context, variables, relationship = (r["messages"][-1]["content"] for r in server.requests[sent:])
    assert '"dataset_description": "a survey of incomes"' in decompose and "a census extract" in decompose
    assert "take the context from the dataset_description" in decompose and '"None" if' not in decompose
    assert "How does income relate to age?" not in decompose
    assert all(f"{k}: " in context for k in ("gold_hypothesis", "gold_context", "predicted_hypothesis",
                                             "predicted_context"))
    assert '"gold sub"' in context and '"pred sub"' in context and '"adults"' in context
    assert "survey" not in context and "income relate" not in context and len(context) < 2500
    for prompt in (variables, relationship):
        assert "How does income relate to age?" in prompt and "a census extract" in prompt
        assert json.dumps(GOLD) in prompt and json.dumps("predicted workflow") in prompt
    assert "A) very similar B) similar but general than HypoA C) different" in relationship


def test_an_answer_that_fits_no_branch_keeps_the_raw_answer(server):
    garbage = "<<the relationship is, broadly speaking, A-ish>>"
    server.script = [{"content": c} for _, c in [ONE, SAME, V(1, 1, 1), raw("relationship_full", garbage)]]
    judge = HMSJudge(LLMClient(LLMConfig(base_url=server.url, model="judge-model", max_retries=0, backoff_s=0)))
    item = score_item(ItemResult(task="t", dataset="d", status="scored"), GoldHypothesis(GOLD), Prediction(PRED),
                      judge=judge, mode="discoverybench", datasets=DATASETS)
    assert item.status == "judge_error" and item.hms is None and item.recall_context is None
    assert garbage in item.message and "new_eval.py:71" in item.message
