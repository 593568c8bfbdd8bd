"""The QRData kind: upstream's scoring rules (a parity table worked from QRData's benchmark/eval.py, its quirks
included), a run scored with its intervals and breakdowns, invalid answers, the submission schema, the release
part, and agents answering QRData questions one-shot and with ReAct against the scripted chat server."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy import format_float_positional

from evaluation.agents import AgentSettings, TaskAnswer, agent_kind, run_task
from evaluation.llm import LLMClient, LLMConfig
from evaluation.scoring import RunBudget
from evaluation.tasks import ScoringContext, ScoringLimits, SubmissionCheckError, task_kind
from evaluation.tasks.parts import part_of, with_part
from evaluation.tasks.qrdata import (
    KIND,
    SCHEMA_PATH,
    QRDataSubmission,
    judge_answer,
    leaderboard_values,
    read_result,
    submission_schema,
    summary_line,
)
from exports.qrdata import QRDataImport, QRDataPart, QRDataQuestion, read_qrdata
from exports.schema import DatasetRelease, Release, ReleaseFile
from tests.conftest import PROJECT_ROOT, unavailable
from tests.llm_server import ScriptedLLM

SHARED_QRDATA = PROJECT_ROOT.parent / "shared" / "qrdata"


def _q(qtype: str, gold: str, choices: tuple[str, ...] = (), qid: str = "7", keywords: tuple[str, ...] = ()
       ) -> QRDataQuestion:
    return QRDataQuestion(id=qid, question="How much?", data_files=["d.csv"], question_type=qtype,  # type: ignore[arg-type]
                          choices=list(choices), answer=gold, keywords=list(keywords))


ABC = ("a", "b", "c")
YES_NO = ("yes", "no")
GROUPS = ("treatment group", "control group")

# (question type, gold, choices, answer, expected status) — worked out by reading calc_acc in upstream's
# benchmark/eval.py: both sides lower-cased; numerical: the first match of an optional minus, digits, optional point
# and digits, optional % (then / 100) must lie STRICTLY between gold*(1-0.03) and gold*(1+0.03), bounds ordered;
# no number: the exception is swallowed and the question is wrong; multiple choice: pred[:len(gold)] == gold.
PARITY = [
    # numerical, plain
    ("numerical", "-4.91", (), "-4.91", "correct"),
    ("numerical", "-4.91", (), "The ATE is -4.91 points.", "correct"),
    ("numerical", "-4.91", (), "-4.80", "correct"),            # within 3 % of a negative gold (bounds ordered)
    ("numerical", "-4.91", (), "-4.70", "wrong"),
    ("numerical", "-4.91", (), "4.91", "wrong"),               # the sign counts
    ("numerical", "-4.91", (), "\u22124.91", "wrong"),         # a Unicode minus is no minus: reads 4.91
    ("numerical", "0.033", (), "0.033", "correct"),
    ("numerical", "0.033", (), "3.3%", "correct"),             # the answer's % divides by 100
    ("numerical", "0.033", (), ".033", "wrong"),               # no leading digit: reads 033 = 33
    ("numerical", "0.033", (), "In 2008 the rate was 0.033", "wrong"),  # the FIRST number is taken
    ("numerical", "0.033", (), "0.0339", "correct"),
    ("numerical", "0.033", (), "0.03399", "wrong"),            # 0.033*1.03 == 0.03399: the bound is not inside
    ("numerical", "0.033", (), "0.032", "wrong"),              # below 0.033*0.97 = 0.03201000…
    ("numerical", "100", (), "97", "wrong"),                   # 100*0.97 == 97.0: strict
    ("numerical", "100", (), "103", "wrong"),                  # 100*1.03 == 103.0: strict
    ("numerical", "100", (), "97.01", "correct"),
    ("numerical", "5.36%", (), "5.36%", "correct"),            # a % gold is a fraction…
    ("numerical", "5.36%", (), "0.0536", "correct"),
    ("numerical", "5.36%", (), "5.36", "wrong"),               # …so 5.36 without % is a hundred times too big
    ("numerical", "5.36%", (), "about 5.4 %", "wrong"),        # "5.4" then a space: no % on the number
    ("numerical", "5.36%", (), "about 5.4%", "correct"),
    ("numerical", "255051", (), "255,051", "wrong"),           # the comma ends the number: 255
    ("numerical", "255051", (), "255051.0", "correct"),
    ("numerical", "3", (), "3.", "correct"),                   # a trailing point reads
    ("numerical", "15", (), "1.5e1", "wrong"),                 # no exponent: reads 1.5
    ("numerical", "0", (), "0", "wrong"),                      # a gold of 0 is never matched
    ("numerical", "3", (), "three", "invalid_answer"),         # no number: upstream counts it wrong
    ("numerical", "3", (), "", "invalid_answer"),
    ("numerical", "3", (), "N/A", "invalid_answer"),
    # multiple choice: the answer must start with the gold label
    ("multiple_choice", "B", ABC, "B", "correct"),
    ("multiple_choice", "B", ABC, "b. lower than", "correct"),
    ("multiple_choice", "B", ABC, "C", "wrong"),
    ("multiple_choice", "B", ABC, "Answer: B", "wrong"),       # starts with "a": upstream reads the choice A
    ("multiple_choice", "B", ABC, " B", "invalid_answer"),     # nothing is stripped: starts with no choice
    ("multiple_choice", "B", ABC, "(B)", "invalid_answer"),
    ("multiple_choice", "no", YES_NO, "No", "correct"),
    ("multiple_choice", "no", YES_NO, "no, because opened is a collider", "correct"),
    ("multiple_choice", "no", YES_NO, "not sure", "correct"),  # starts with "no"
    ("multiple_choice", "no", YES_NO, "Yes", "wrong"),
    ("multiple_choice", "no", YES_NO, "maybe", "invalid_answer"),
    ("multiple_choice", "treatment group", GROUPS, "Treatment group", "correct"),
    ("multiple_choice", "treatment group", GROUPS, "treatment", "invalid_answer"),  # too short for either label
    ("multiple_choice", "treatment group", GROUPS, "control group", "wrong"),
]


@pytest.mark.parametrize(("qtype", "gold", "choices", "answer", "expected"), PARITY)
def test_answers_score_as_upstreams_evaluator_scores_them(qtype, gold, choices, answer, expected):
    verdict = judge_answer(_q(qtype, gold, choices), answer)
    assert verdict.status == expected, verdict.sentence
    assert verdict.sentence


def test_an_unreadable_answer_says_why_and_one_not_text_is_invalid():
    assert "no number" in judge_answer(_q("numerical", "3"), "three").sentence
    why = judge_answer(_q("multiple_choice", "b", ABC), "(B)").sentence
    assert "none of the choices" in why and "a, b, c" in why
    for value, word in ((0.033, "number"), (True, "boolean"), (["B"], "list")):
        verdict = judge_answer(_q("numerical", "0.033"), value)
        assert verdict.status == "invalid_answer" and word in verdict.sentence
    assert judge_answer(_q("numerical", "3"), None).status == "unanswered"


# ------------------------------------------------------------------------------------ a release of QRData


def _dataset(name: str, part: QRDataPart, files: list[ReleaseFile] | None = None) -> DatasetRelease:
    files = files or [ReleaseFile(name="d.csv", path=f"data/{name}/d.csv", sha256="0" * 64, size=1)]
    ds = DatasetRelease(name=name, research_question="QRData questions", data_file=files[0].path,
                        data_sha256=files[0].sha256, num_rows=0, num_columns=0, files=files)
    return with_part(ds, KIND, part)


def _release(*datasets: DatasetRelease) -> Release:
    return Release(version="1.0.0", created_at=datetime.now(UTC), app_version="t", datasets=list(datasets))


def _ctx(release: Release, data: bytes, folder: Path = Path("."), name: str = "answers.json") -> ScoringContext:
    return ScoringContext(release=release, release_folder=folder, files=[(name, data)], judge=lambda: None,
                          mode="default", k=1, ground_truth_hash="gt", limits=ScoringLimits(), budget=RunBudget())


def _toy_release() -> Release:
    causal = ("Causality", "Regression analysis")
    numbers = QRDataPart(questions=[_q("numerical", g, qid=str(i), keywords=causal if i % 2 else ("Statistics",))
                                    for i, g in enumerate(["0.5", "-2", "10%", "3", "7"])])
    choices = QRDataPart(questions=[_q("multiple_choice", g, ABC, qid=str(10 + i), keywords=causal)
                                    for i, g in enumerate(["a", "b", "c"])])
    return _release(_dataset("qrdata-nums", numbers), _dataset("qrdata-choices", choices))


def _answers(**by_id: object) -> bytes:
    return json.dumps({"answers": {k.removeprefix("q"): v for k, v in by_id.items()}}).encode()


def test_a_run_scores_every_question_with_intervals_and_breakdowns():
    release = _toy_release()
    data = _answers(q0="0.5", q1="-2.05", q2="10", q3="three", q4=None, q10="A", q11="c", q12="(c)",
                    q99="12")  # 4: null, not answered; 99: not in the release
    KIND.check_files([("answers.json", data)], release, max_items=None)
    scored = KIND.score(_ctx(release, data))
    s = scored.scores["qrdata"]
    # correct: 0 (0.5), 1 (-2.05 within 3 % of -2), 10 (A); wrong: 2 (10 vs 0.10), 11 (c vs b); invalid: 3, 12
    assert (s["questions"], s["correct"], s["wrong"], s["invalid_answer"], s["unanswered"]) == (8, 3, 2, 2, 1)
    assert s["accuracy"]["point"] == pytest.approx(3 / 8)
    assert 0 <= s["accuracy"]["ci_low"] < 3 / 8 < s["accuracy"]["ci_high"] <= 1
    types = s["question_types"]
    assert list(types) == ["numerical", "multiple_choice"]
    assert types["numerical"]["accuracy"]["point"] == pytest.approx(2 / 5)
    assert types["multiple_choice"]["accuracy"]["point"] == pytest.approx(1 / 3)
    reasoning = s["reasoning"]  # causal: the odd numerical ids and every choice; statistical: 0, 2, 4
    assert (reasoning["causal"]["questions"], reasoning["statistical"]["questions"]) == (5, 3)
    assert reasoning["statistical"]["accuracy"]["point"] == pytest.approx(1 / 3)
    assert s["datasets"]["qrdata-choices"]["question_types"]["multiple_choice"]["questions"] == 3
    assert scored.items == 8
    assert "2 answers could not be read" in scored.message and "99" in scored.message
    result = read_result(scored.result_bytes)
    by_id = {i.id: i for i in result.items}
    assert by_id["3"].status == "invalid_answer" and "no number" in by_id["3"].sentence
    assert by_id["2"].read == "10" and by_id["2"].gold == "10%" and by_id["1"].question == "How much?"
    assert result.unknown_ids == ["99"] and result.ground_truth_hash == "gt"


def test_leaderboard_values_and_summary_read_the_stored_scores():
    release = _toy_release()
    scored = KIND.score(_ctx(release, _answers(q0="0.5", q10="a")))

    class Run:
        scores_effective = scored.scores
        transform_matcher: dict = {}

    row = leaderboard_values(Run(), None)
    assert row is not None and row["accuracy"] == pytest.approx(2 / 8) and row["questions"] == 8
    assert row["accuracy.low"] is not None and row["type.numerical"] == pytest.approx(1 / 5)
    assert row["unanswered"] == 6 and row["reasoning.statistical"] == pytest.approx(1 / 3)
    assert {c.key for c in KIND.leaderboard.columns} <= set(row)
    one = leaderboard_values(Run(), "qrdata-choices")
    assert one is not None and one["accuracy"] == pytest.approx(1 / 3) and one["questions"] == 3
    assert leaderboard_values(Run(), "elsewhere") is None
    line = summary_line(scored.scores)
    assert line.startswith("accuracy 0.250 [") and "numerical 0.200" in line and "unanswered 6" in line
    assert KIND.leaderboard.role == "ranked" and KIND.leaderboard.sort_key == "accuracy"


@pytest.mark.parametrize(("files", "words"), [
    ([], "exactly one answers file"),
    ([("a.json", b"{}"), ("b.json", b"{}")], "exactly one answers file"),
    ([("a.json", b"not json")], "a.json"),
    ([("a.json", b"[1, 2]")], "not a QRData submission"),
    ([("a.json", b'{"answers": ["1"]}')], "not a QRData submission"),
    ([("a.json", b'{"answers": {}, "model": "x"}')], "the field model"),
    ([("a.json", b'{"answers": {}, "source": "me"}')], "source must be an object"),
])
def test_a_file_that_is_not_a_submission_is_refused_with_a_sentence(files, words):
    with pytest.raises(SubmissionCheckError, match=words):
        KIND.check_files(files, _toy_release(), max_items=None)


def test_a_release_without_qrdata_or_with_a_repeated_id_is_refused():
    bare = _release(DatasetRelease(name="x", research_question="q", data_file="data/x/d.csv", data_sha256="0",
                                   num_rows=0, num_columns=0))
    with pytest.raises(SubmissionCheckError, match="holds no QRData question"):
        KIND.check_files([("a.json", _answers())], bare, max_items=None)
    part = QRDataPart(questions=[_q("numerical", "1", qid="5")])
    twice = _release(_dataset("one", part), _dataset("two", part))
    with pytest.raises(SubmissionCheckError, match="question 5 twice"):
        KIND.check_files([("a.json", _answers())], twice, max_items=None)
    with pytest.raises(SubmissionCheckError, match="at most 1"):
        KIND.check_files([("a.json", _answers(q1="1", q2="2"))], _toy_release(), max_items=1)


def test_the_published_schema_is_the_submission_model_and_documents_the_format():
    on_disk = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert on_disk == submission_schema()  # regenerate the file when the model changes
    assert task_kind("qrdata").submission_schema == SCHEMA_PATH
    doc = {"answers": {"352": "-4.91", "357": "B", "360": None}, "source": {"kind": "model"}}
    assert QRDataSubmission.model_validate(doc).answers["357"] == "B"
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, on_disk)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"answers": {"q1": "3"}}, on_disk)  # ids are upstream positions: digits


def test_the_release_part_counts_hashes_gold_and_blinds():
    spec = KIND.release_part
    assert spec is not None and spec.model is QRDataPart
    part = part_of(_toy_release().datasets[0], KIND)
    assert spec.counts(part) == {"questions": 5, "numerical": 5, "multiple choice": 0, "with gold": 5}
    changed = part.model_copy(update={"questions": [part.questions[0].model_copy(update={"answer": "0.6"}),
                                                    *part.questions[1:]]})
    assert spec.hash_input(changed) != spec.hash_input(part)  # a changed gold changes the ground-truth hash
    blind = spec.blind(part)
    assert [q.answer for q in blind.questions] == [None] * 5 and blind.questions[0].question == "How much?"
    assert "with gold" in spec.work
    again = QRDataPart.model_validate(json.loads(part.model_dump_json()))
    assert again == part


def test_the_dataset_card_leaves_out_a_kind_of_question_the_dataset_does_not_have():
    """The card's line of a dataset's questions: "5 (5 numerical, 5 with gold)", not "0 multiple choice"."""
    from curation.services.releases import summary_sentence
    from exports.card import render_card

    release = _toy_release()
    card = render_card(release)
    assert "- QRData questions: 5 (5 numerical, 5 with gold)" in card, card
    assert "- QRData questions: 3 (3 multiple choice, 3 with gold)" in card, card
    assert "0 multiple choice" not in card and "0 numerical" not in card
    counts = KIND.release_part.counts(part_of(release.datasets[0], KIND))  # the cut's summary says the same
    assert summary_sentence({"parts": {"qrdata": counts}}) == "5 QRData questions (5 numerical, 5 with gold)"


# ------------------------------------------------------------------------------------ the shared data


@pytest.fixture(scope="module")
def shared_qrdata() -> QRDataImport:
    if not (SHARED_QRDATA / "QRData.json").is_file():
        unavailable("shared", f"QRData's reference data is not at {SHARED_QRDATA} (../shared/qrdata)")
    return read_qrdata(SHARED_QRDATA)


def _shared_release(imported: QRDataImport, folder: Path) -> Release:
    """The imported datasets as a release folder would hold them (files copied under data/<dataset>/)."""
    datasets = []
    for d in imported.datasets:
        files = []
        for f in d.files:
            target = folder / "data" / d.name / f.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f.source, target)
            files.append(ReleaseFile(name=f.name, path=f"data/{d.name}/{f.name}", sha256=f.sha256, size=f.size))
        datasets.append(_dataset(d.name, d.part, files))
    return _release(*datasets)


def test_upstreams_gold_answers_score_full_marks(shared_qrdata, tmp_path):
    release = _shared_release(shared_qrdata, tmp_path)
    golds = {q.id: q.answer for d in shared_qrdata.datasets for q in d.part.questions}
    scored = KIND.score(_ctx(release, json.dumps({"answers": golds}).encode(), tmp_path))
    s = scored.scores["qrdata"]
    assert (s["questions"], s["correct"]) == (29, 29) and s["accuracy"]["point"] == 1.0
    assert {t: g["questions"] for t, g in s["question_types"].items()} == {"numerical": 25, "multiple_choice": 4}


# ------------------------------------------------------------------------------------ agents


def _client(url: str, tmp_path: Path) -> LLMClient:
    return LLMClient(LLMConfig(base_url=url, model="scripted", cache_dir=tmp_path / "cache", backoff_s=0.01,
                               max_retries=0))


def test_the_agent_hook_is_declared_on_the_kind():
    assert agent_kind("qrdata") is KIND.agent
    assert set(KIND.agent.strategies) == {"oneshot", "react"}


def test_a_oneshot_agent_answers_repairs_and_its_answers_are_scored(shared_qrdata, tmp_path):
    release = _shared_release(shared_qrdata, tmp_path / "rel")
    hook = agent_kind("qrdata")
    tasks = {t.key: t for t in hook.tasks(release, tmp_path / "rel")}
    assert len(tasks) == 29
    ate, choice = tasks["352"], tasks["361"]  # online_classroom's ATE (-4.91); collections_email's risk_score (yes)
    assert "online_classroom.csv" in ate.brief and "falsexam" in ate.brief and "linear regression" in ate.brief
    assert "within 3 %" in ate.brief and [f.name for f in ate.files] == ["online_classroom.csv"]
    assert "yes, no" in hook.answer_shape(choice, workflow=False)
    with ScriptedLLM() as llm:
        llm.script = [{"content": json.dumps({"answer": "-4.9", "rationale": "OLS of falsexam on format_ol"})},
                      {"content": json.dumps({"answer": "maybe", "rationale": "?"})},
                      {"content": json.dumps({"answer": "Yes", "rationale": "a confounder"})}]
        first = run_task(_client(llm.url, tmp_path), hook, ate, AgentSettings())
        second = run_task(_client(llm.url, tmp_path), hook, choice, AgentSettings())
    assert first.status == "answered" and first.answer["answer"] == "-4.9"
    assert second.status == "answered" and "one repair" in second.message  # "maybe" is none of the choices
    assert "none of the choices" in llm.requests[2]["messages"][-1]["content"]
    failed = TaskAnswer("364", 0, "invalid_answer", "not JSON", None, raw="I think it is B")
    subs = hook.submissions(release, [TaskAnswer("352", 0, first.status, first.message, first.answer),
                                      TaskAnswer("361", 0, second.status, second.message, second.answer), failed,
                                      TaskAnswer("352", 1, "endpoint_error", "down", None)], source={"model": "m"})
    assert [s.label for s in subs] == ["run 0", "run 1"]
    body = json.loads(subs[0].files[0][1])
    assert body["answers"] == {"352": "-4.9", "361": "Yes", "364": "I think it is B"}
    assert body["source"]["model"] == "m" and body["source"]["errors"]["364"] == "not JSON"
    assert json.loads(subs[1].files[0][1])["answers"] == {}
    QRDataSubmission.model_validate(body)
    scored = KIND.score(_ctx(release, subs[0].files[0][1], tmp_path / "rel", subs[0].files[0][0]))
    items = {i.id: i for i in read_result(scored.result_bytes).items}
    assert (items["352"].status, items["361"].status, items["364"].status) == ("correct", "correct",
                                                                               "invalid_answer")
    assert scored.scores["qrdata"]["unanswered"] == 26


def test_a_json_number_answer_is_written_out_in_full():
    hook = agent_kind("qrdata")
    task = next(t for t in hook.tasks(_toy_release(), Path(".")) if t.key == "0")
    assert hook.validate({"answer": 1e-05}, task, workflow=False)["answer"] == "0.00001"
    with pytest.raises(ValueError, match="no number"):
        hook.validate({"answer": "unknown"}, task, workflow=False)


def test_a_react_agent_computes_the_answer_from_the_files_in_the_sandbox(shared_qrdata, tmp_path, os_sandbox):
    release = _shared_release(shared_qrdata, tmp_path / "rel")
    hook = agent_kind("qrdata")
    task = next(t for t in hook.tasks(release, tmp_path / "rel") if t.key == "352")
    code = ("import statsmodels.formula.api as smf\n"
            "d = pd.read_csv('online_classroom.csv').query('format_blended == 0')\n"
            "print(round(smf.ols('falsexam ~ format_ol', data=d).fit().params['format_ol'], 2))")
    with ScriptedLLM() as llm:
        llm.script = [{"tool_calls": [{"name": "run_python", "arguments": {"code": code}}]},
                      {"content": json.dumps({"answer": "-4.91", "rationale": "OLS"})}]
        out = run_task(_client(llm.url, tmp_path), hook, task, AgentSettings(strategy="react"))
    assert out.status == "answered", out.message
    observation = next(m["content"] for m in out.transcript if m["role"] == "tool")
    assert "-4.91" in observation, observation  # upstream's gold, recomputed from the data in the sandbox


# ------------------------------------------------------------------------------------ properties (hypothesis)

_finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(gold=_finite.filter(lambda g: g != 0), value=_finite, tail=st.text(max_size=20))
def test_a_number_is_correct_exactly_when_strictly_inside_three_percent(gold, value, tail):
    gold_text, answer = format_float_positional(gold), format_float_positional(value)
    g, v = float(gold_text), float(answer)
    low, high = sorted((g * 0.97, g * 1.03))
    verdict = judge_answer(_q("numerical", gold_text), f"{answer} {tail}")  # what follows the number never counts
    assert verdict.status == ("correct" if low < v < high else "wrong"), (gold_text, answer, verdict.sentence)


@given(text=st.text(max_size=30), gold=st.sampled_from(["a", "b", "c"]))
def test_a_choice_is_correct_exactly_when_the_answer_starts_with_the_gold(text, gold):
    verdict = judge_answer(_q("multiple_choice", gold, ABC), text)
    lower = text.lower()
    expected = ("correct" if lower.startswith(gold) else
                "wrong" if lower.startswith(ABC) else "invalid_answer")
    assert verdict.status == expected


def test_the_dataset_card_counts_the_questions_not_decisions_nobody_made():
    """A release of imported questions: the card's table and sections count its questions, with no row of zero
    variables, transforms, models, alternatives, votes and consensus records (BLADE's counts)."""
    from exports.card import render_card

    card = render_card(_toy_release())
    assert "| Dataset | Rows × columns | QRData questions |" in card
    assert "| `qrdata-nums` | 0 × 0 | 5 |" in card and "- QRData questions: 5" in card
    for blade in ("Variables", "Decisions:", "Consensus", "Alternatives:", "Votes:"):
        assert blade not in card, blade
