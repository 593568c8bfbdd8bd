"""Reading BLADE submissions: both formats, and every kind of bad input gets a status and a sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.submissions import (
    AnalysisStatus,
    CodeStatus,
    SubmissionError,
    extract_function,
    parse_submission,
    read_submission,
)

GOOD = {
    "cvars": {"ivs": [{"description": "x", "columns": ["x"]}], "dv": {"description": "y", "columns": ["y"]},
              "controls": [{"description": "z", "is_moderator": True, "moderator_on": "x", "columns": ["z"]}]},
    "transform_code": "def transform(data: pd.DataFrame) -> pd.DataFrame:\n    data = data.dropna()\n"
                      "    data['w'] = data['x'] * 2\n    return data\n",
    "m_code": "def model(df):\n    return smf.ols('y ~ x * z', data=df).fit()\n",
}


def test_examples_parse(shared_blade: Path) -> None:
    single = read_submission(shared_blade / "examples" / "submission_analyses.json", known_datasets=["hurricane"])
    assert single.format == "single_run" and single.dataset_name == "hurricane"
    assert [a.status for a in single.analyses] == [AnalysisStatus.OK] * 10
    assert all(a.transform and a.transform.function == "transform" for a in single.analyses)
    multi = read_submission(shared_blade / "examples" / "multirun_analyses.json", known_datasets=["hurricane"])
    assert multi.format == "multi_run" and multi.n == 10 and len(multi.scorable) == 10


def test_extraction_renames_the_parameter_and_stops_at_the_first_return() -> None:
    f = extract_function(GOOD["transform_code"] + "\nx = 1\n", "transform")
    assert f.function == "transform" and f.parameter == "data"
    assert f.body == "df = df.dropna()\ndf['w'] = df['x'] * 2"
    assert f.returned == "df"
    ns: dict = {}
    import pandas as pd

    exec(f.source, {"pd": pd}, ns)  # noqa: S102 - the rebuilt function is runnable
    out = ns["transform"](pd.DataFrame({"x": [1.0, None]}))
    assert out["w"].tolist() == [2.0]
    raw = extract_function("df = df[df.a > 1]", "transform")
    assert raw.function is None and "return df" in raw.source
    early = extract_function("def my_transform(d):\n    d = d.copy()\n    return d\n    d = None\n", "transform")
    assert early.body == "df = df.copy()"


def test_multi_run_failures_and_per_analysis_problems() -> None:
    bad_dv = json.loads(json.dumps(GOOD))
    del bad_dv["cvars"]["dv"]["columns"]
    syntax = dict(GOOD, transform_code="def transform(df):\n    return df[\n")
    empty = dict(GOOD, m_code="   ")
    doc = {"dataset_name": "hurricane", "n": 5,
           "analyses": {"0": GOOD, "1": [2, "rate limited"], "2": bad_dv, "3": syntax, "4": empty, "5": "nope"}}
    sub = parse_submission(json.dumps(doc), known_datasets=["hurricane"])
    by = {a.key: a for a in sub.analyses}
    assert by["0"].status == AnalysisStatus.OK
    assert by["1"].status == AnalysisStatus.GENERATION_FAILED and by["1"].blade_status == 2
    assert "LM_GENERATION_FAILED" in by["1"].message and "rate limited" in by["1"].message
    assert by["2"].status == AnalysisStatus.INVALID
    assert by["2"].message == "analysis '2': cvars.dv.columns is missing."
    assert by["3"].status == AnalysisStatus.CODE_PROBLEM and by["3"].transform_status == CodeStatus.SYNTAX_ERROR
    assert "transform_code does not parse" in by["3"].message and "line 2" in by["3"].message
    assert by["3"].model_status == CodeStatus.OK  # the model still scores
    assert by["4"].model_status == CodeStatus.EMPTY and "m_code is empty" in by["4"].message
    assert by["5"].status == AnalysisStatus.INVALID and "is a str" in by["5"].message


def test_unknown_dataset_marks_every_analysis() -> None:
    sub = parse_submission(json.dumps({"dataset_name": "nope", "analyses": [GOOD, GOOD]}),
                           known_datasets=["hurricane", "fish"])
    assert {a.status for a in sub.analyses} == {AnalysisStatus.UNKNOWN_DATASET}
    assert "'nope' is not in the release (it has: fish, hurricane)" in sub.analyses[0].message
    assert sub.scorable == []


@pytest.mark.parametrize(("content", "expected"), [
    (b"{not json", "is not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
    (b"\xff\xfe", "is not UTF-8"),
    (b"[1, 2]", "holds a JSON list"),
    (b'{"analyses": []}', "dataset_name is missing"),
    (b'{"dataset_name": "x"}', "analyses is missing"),
    (b'{"dataset_name": "x", "analyses": 3}', "analyses is a int"),
])
def test_unreadable_files_raise_one_sentence(content: bytes, expected: str) -> None:
    with pytest.raises(SubmissionError, match="sub.json") as info:
        parse_submission(content, label="sub.json")
    assert expected in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match="cannot read"):
        read_submission(tmp_path / "absent.json")


def test_helpers_imports_and_constants_next_to_the_function_are_kept() -> None:
    import pandas as pd

    code = ("import numpy as np\nTHRESHOLD = 2\n\ndef helper(s):\n    return np.log1p(s)\n\n"
            "def transform(df):\n    df['l'] = helper(df['x'])\n    return df[df['x'] > THRESHOLD]\n\n"
            "result = transform(pd.read_csv('data.csv'))\n")
    f = extract_function(code, "transform")
    assert "def helper" in f.preamble and "THRESHOLD = 2" in f.preamble and "import numpy" in f.preamble
    assert "read_csv" not in f.preamble  # module-level work is not replayed
    ns: dict = {}
    exec(f.source, ns)  # noqa: S102
    out = ns["transform"](pd.DataFrame({"x": [1.0, 3.0]}))
    assert out["x"].tolist() == [3.0]
