"""Property tests: the readers never crash on arbitrary input; they answer with a status or a typed error."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.judges.model_code import analyse_model_code, formula_columns
from evaluation.mcq_scoring import LETTERS, parse_answer
from evaluation.submissions import AnalysisStatus, SubmissionError, parse_submission

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(st.one_of(json_values, st.fixed_dictionaries({"dataset_name": st.text(max_size=10),
                                                    "analyses": json_values})))
def test_parse_submission_never_crashes(doc: Any) -> None:
    try:
        sub = parse_submission(json.dumps(doc), known_datasets=["hurricane"])
    except SubmissionError as exc:
        assert str(exc)
        return
    for a in sub.analyses:
        assert isinstance(a.status, AnalysisStatus)
        assert (a.status == AnalysisStatus.OK) == (a.message == "")


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(min_value=1, max_value=len(LETTERS)))
def test_parse_answer_is_total_and_in_range(raw: Any, n: int) -> None:
    letter, reason = parse_answer(raw, n)
    if letter is None:
        assert reason
    else:
        assert LETTERS.index(letter) < n


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=80))
def test_static_readers_never_crash(code: str) -> None:
    model = analyse_model_code(code)
    assert model.family or model.notes
    formula_columns(code)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="abxy_~+*:|()[]1 -.,'CQI", max_size=40))
def test_any_formula_in_a_model_call_is_read_without_crashing(formula: str) -> None:
    model = analyse_model_code(f"def model(df):\n    return smf.ols({formula!r}, data=df).fit()\n")
    assert model.family == "Linear regression (OLS)"
    assert all(isinstance(c, str) and c for c in model.columns)
