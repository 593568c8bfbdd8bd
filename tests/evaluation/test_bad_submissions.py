"""Hostile submissions (issue 15, point 9): each gets a sentence saying what is wrong and where, never a
traceback; a bad analysis costs that analysis, not the file, wherever that is possible."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.groundtruth.convert import convert_transform
from evaluation.groundtruth.runner import GroundTruthLimits
from evaluation.judges import make_judge
from evaluation.scoring import score_submission
from evaluation.submissions import AnalysisStatus, SubmissionError, parse_submission, printable
from tests.evaluation.blade_release import blade_release_dataset

GOOD = {
    "cvars": {"ivs": [{"description": "masculinity of the name", "columns": ["masfem"]}],
              "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
    "transform_code": "def transform(df):\n    df = df[df['alldeaths'] > 0]\n    return df\n",
    "m_code": "def model(df):\n    return smf.ols('alldeaths ~ masfem', data=df).fit()\n",
}


def _doc(*analyses: dict, name: str = "hurricane") -> str:
    return json.dumps({"dataset_name": name, "analyses": list(analyses)})


def _with(transform_code: str) -> dict:
    return dict(GOOD, transform_code=transform_code)


def _refused(content: str | bytes) -> str:
    with pytest.raises(SubmissionError) as info:
        parse_submission(content, label="sub.json")
    return str(info.value)


# ------------------------------------------------------------------------------------------ the file as a whole


def test_a_100000_deep_nesting_is_refused_with_where_it_happens():
    deep = '{"dataset_name": "hurricane", "analyses": [' + "[" * 100_000 + "]" * 100_000 + "]}"
    message = _refused(deep)
    assert message.startswith("sub.json nests objects and lists more than 100 levels deep (level 101 opens at "
                              "line 1, column")


def test_a_5000_digit_integer_in_the_json_is_refused_with_its_place():
    message = _refused('{"dataset_name": "hurricane",\n "n": ' + "7" * 5000 + ', "analyses": []}')
    assert "holds a number of 5,000 digits at line 2, column 7" in message


@pytest.mark.parametrize(("content", "key"), [
    ('{"dataset_name": "hurricane", "dataset_name": "fish", "analyses": []}', "dataset_name"),
    ('{"dataset_name": "hurricane", "analyses": [{"cvars": {}, "m_code": "a", "m_code": "b"}]}', "m_code"),
])
def test_duplicate_keys_are_refused_naming_the_key(content: str, key: str):
    assert f"the key '{key}' appears twice in one object" in _refused(content)


def test_control_characters_in_names_are_escaped_when_echoed():
    evil = "hurri\x1b[2J\x07cane\u202e"
    unknown = parse_submission(_doc(GOOD, name=evil), label="sub\x1b]0;x\x07.json", known_datasets=["hurricane"])
    message = unknown.analyses[0].message
    assert "'hurri\\x1b[2J\\x07cane\\u202e' is not in the release" in message
    assert not any(ord(c) < 32 or c == "\u202e" for c in message)
    missing = _refused(b'{"analyses": []}'.replace(b"{", b'{"x": 1, ', 1))
    assert missing == "sub.json: dataset_name is missing or not a string."
    with pytest.raises(SubmissionError) as info:
        parse_submission(b'{"analyses": []}', label="sub\x1b]0;x\x07.json")
    assert str(info.value).startswith("sub\\x1b]0;x\\x07.json: dataset_name is missing")
    multi = parse_submission(json.dumps({"dataset_name": "hurricane", "analyses": {"r\x1b[31m1": {"cvars": 1}}}))
    assert multi.analyses[0].message.startswith("analysis 'r\\x1b[31m1': ")
    assert printable("x" * 200, 10) == "xxxxxxxxxx…"


def test_a_failed_runs_error_text_is_escaped_and_cannot_break_the_result_file():
    """A multi-run entry [status, text] echoes the agent's text: a lone surrogate there made the result file
    unwritable (UnicodeEncodeError, the whole run failed) and terminal escapes reached the message raw."""
    doc = json.dumps({"dataset_name": "hurricane",
                      "analyses": {"1": [1, "boom \ud800 \x1b[2J\u202e"], "2": GOOD}})
    sub = parse_submission(doc, label="sub.json")
    failed, good = sub.analyses
    assert failed.status == AnalysisStatus.GENERATION_FAILED and good.status == AnalysisStatus.OK
    assert "boom \\ud800 \\x1b[2J\\u202e" in failed.message
    assert not any(ord(c) < 32 or c == "\u202e" or "\ud800" <= c <= "\udfff" for c in failed.message)
    sub.model_dump_json()  # the message can be written as UTF-8


# ------------------------------------------------------------------------------------------ one analysis


def test_a_lone_surrogate_in_code_is_that_analysis_problem():
    text = _doc(_with("df['x\ud800'] = 1\n"), GOOD)  # json.dumps writes the lone surrogate as \ud800
    sub = parse_submission(text, label="sub.json")
    bad, good = sub.analyses
    assert bad.status == AnalysisStatus.CODE_PROBLEM and good.status == AnalysisStatus.OK
    assert bad.message == ("analysis 0: transform_code holds a lone surrogate (\\ud800) at line 1, column 6; code "
                           "must be valid Unicode text, so it was not run.")
    described = json.loads(_doc(GOOD, GOOD))
    described["analyses"][0]["cvars"]["dv"]["description"] = "deaths\ud800"
    invalid = parse_submission(json.dumps(described))
    assert invalid.analyses[0].status == AnalysisStatus.INVALID
    assert "cvars.dv.description holds a lone surrogate" in invalid.analyses[0].message
    assert invalid.analyses[1].status == AnalysisStatus.OK
    assert "lone surrogate" in _refused(_doc(GOOD, name="hurri\ud800cane"))


def test_a_5000_digit_integer_in_code_is_that_analysis_problem():
    for literal in ("7" * 5000, "0x" + "f" * 5000):  # decimal: the parser refuses; hex: reading it back does
        sub = parse_submission(_doc(_with(f"def transform(df):\n    df['x'] = {literal}\n    return df\n"), GOOD))
        assert [a.status for a in sub.analyses] == [AnalysisStatus.CODE_PROBLEM, AnalysisStatus.OK]
        assert "holds an integer of more than 4,300 digits, which Python refuses to read" in sub.analyses[0].message


@pytest.mark.parametrize(("terms", "expected"), [
    (200_000, "transform_code is 400,0"),  # longer than any analysis: refused before it reaches the parser
    (30_000, "nests too deeply or holds too long an expression for Python to compile"),
])
def test_a_huge_expression_is_code_problem_and_the_rest_are_scored(shared_blade: Path, terms: int, expected: str):
    code = "def transform(df):\n    df['x'] = " + "+".join(["1"] * terms) + "\n    return df\n"
    sub = parse_submission(_doc(_with(code), GOOD, GOOD), known_datasets=["hurricane"])
    assert [a.status for a in sub.analyses] == [AnalysisStatus.CODE_PROBLEM] + [AnalysisStatus.OK] * 2
    assert expected in sub.analyses[0].message
    ds = blade_release_dataset(shared_blade / "datasets" / "hurricane")
    result = score_submission(ds, sub, judge=make_judge("offline"))
    assert [a.status for a in result.analyses] == ["code_problem", "ok", "ok"]
    assert all(a.record.matched_cvars for a in result.analyses)  # variables still score, the bad one's too


@pytest.mark.parametrize(("returned", "says"), [
    ("None", "returns None, not a data frame"),
    ("42", "returns a number, not a data frame"),
    ("(c for c in df.columns)", "returns a generator, not a data frame"),
])
def test_a_transform_returning_none_a_number_or_a_generator_says_so(returned: str, says: str):
    sub = parse_submission(_doc(_with(f"def transform(df):\n    df['x'] = 1\n    return {returned}\n"), GOOD))
    assert sub.analyses[0].status == AnalysisStatus.CODE_PROBLEM and says in sub.analyses[0].message
    assert sub.analyses[1].status == AnalysisStatus.OK
    yields = parse_submission(_doc(_with("def transform(df):\n    for c in df:\n        yield df[c]\n")))
    assert "yields values, so calling it gives a generator, not a data frame" in yields.analyses[0].message
    nested = parse_submission(_doc(_with("def transform(df):\n    def g():\n        yield 1\n    return df\n")))
    assert nested.analyses[0].status == AnalysisStatus.OK  # a generator helper inside is fine


# ------------------------------------------------------------------------------------------ in the sandbox


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bad") / "data.csv"
    path.write_text("a,b\n" + "\n".join(f"{i},{i % 3}" for i in range(40)) + "\n")
    return path


@pytest.mark.parametrize(("code", "says"), [
    ("df['x'] = 1\ndf = None\n", "left df as None, not a data frame"),
    ("df = 42\n", "left df as a number (int), not a data frame"),
    ("df = (c for c in df.columns)\n", "left df as a generator, not a data frame"),
])
def test_a_value_computed_at_run_time_that_is_not_a_frame_says_what_it_is(data: Path, code: str, says: str):
    assert says in (convert_transform(code, data).error or "")


@pytest.mark.parametrize(("code", "raised"), [
    ("df['x'] = 1\nraise SystemExit(3)\n", "raised at line 2: SystemExit: 3"),
    ("raise KeyboardInterrupt\n", "raised at line 1: KeyboardInterrupt"),
    ("class Stop(BaseException):\n    pass\nraise Stop('no more')\n", "Stop: no more"),
    ("raise GeneratorExit\n", "raised at line 1: GeneratorExit"),
])
def test_base_exceptions_are_the_code_failure_not_the_sandbox(data: Path, code: str, raised: str):
    conversion = convert_transform(code, data)  # before: SandboxError "The sandbox failed while running the job"
    assert conversion.error is not None and raised in conversion.error
    assert "sandbox failed" not in conversion.error


def test_a_30m_row_frame_past_the_memory_limit_gets_a_message(data: Path):
    code = "df = df.sample(30_000_000, replace=True)\n"
    conversion = convert_transform(code, data, limits=GroundTruthLimits(timeout_s=120, memory_mb=1024))
    assert conversion.state is None and conversion.error_kind == "memory"
    assert conversion.error == ("the transform code could not be converted: The code tried to use more than the "
                                "1024 MB memory limit (for example a frame of tens of millions of rows) and was "
                                "stopped.")


def test_an_mcq_answers_file_nested_deeply_or_with_a_huge_number_gets_a_sentence():
    from evaluation.mcq_scoring import AnswersFileError, read_answers

    with pytest.raises(AnswersFileError, match="answers file nests objects and lists more than 100 levels deep"):
        read_answers(b'{"answers": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with pytest.raises(AnswersFileError, match="answers file holds a number of 5,000 digits at line 1, column 7"):
        read_answers(b'{"q": ' + b"1" * 5000 + b"}")
