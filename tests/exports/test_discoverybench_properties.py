"""Property tests of the DiscoveryBench parser: any metadata in any of upstream's layouts comes back byte for byte,
garbage only ever raises the typed error, answer keys survive any text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from exports.discoverybench import (
    AnswerKey,
    AnswerKeyRow,
    JsonStyle,
    QuestionType,
    dump_metadata,
    normalise_question_type,
    parse_answer_key,
    parse_metadata,
    render_metadata,
    write_answer_key,
)
from exports.errors import DiscoveryBenchFormatError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# control characters other than tab, LF and CR are refused (issue 26 point 7): the texts that round-trip have none
CONTROLS = "".join(chr(c) for c in [*range(0, 9), 11, 12, *range(14, 32), 127])
text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters=CONTROLS), max_size=30)
cp1252_text = st.text(st.characters(codec="cp1252", exclude_characters=CONTROLS), max_size=30)


def extra_keys(strings: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Keys upstream's layout does not have, with any JSON values: they must survive."""
    scalar = st.none() | st.booleans() | st.integers(-(10**12), 10**12) | strings
    value = st.recursive(scalar, lambda inner: st.lists(inner, max_size=3), max_leaves=5)
    return st.dictionaries(st.text("xyz_", min_size=1, max_size=6).map(lambda k: f"x_{k}"), value, max_size=2)


@st.composite
def metadata(draw: st.DrawFn, strings: st.SearchStrategy[str] = text) -> dict[str, Any]:
    real = draw(st.booleans())
    extras = extra_keys(strings)
    column = st.builds(lambda n, d, x: {"name": n, "description": d, **x}, strings, strings, extras)
    columns = st.lists(column, max_size=3)
    dataset = st.builds(
        lambda n, d, c: {"name": n, "description": d, "columns": {"raw": c} if real else c},
        st.text("abc._", min_size=1, max_size=8), strings, columns,
    )
    qids = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=4, unique=True))
    optional_query_keys = {
        "difficulty": st.integers(1, 4),
        "true_hypothesis": strings,
        "target_col": strings,
        "true_hypothesis_expr": strings,
        "relevant_cols": st.lists(strings, max_size=2),
    }
    queries = []
    for qid in qids:
        query: dict[str, Any] = {"qid": qid, "question": "Q " + draw(strings)}
        if draw(st.booleans()):
            query["question_type"] = draw(st.sampled_from(["context", "relationship", "relationhsip", "variable"]))
        for key in draw(st.lists(st.sampled_from(sorted(optional_query_keys)), unique=True)):
            query[key] = draw(optional_query_keys[key])
        query.update(draw(extras))
        queries.append(query)
    data: dict[str, Any] = {"id": draw(st.integers(0, 50)), "domain": draw(strings)}
    optional = {
        "workflow_tags": strings,
        "domain_knowledge": strings,
        "intermediate": st.just([]),
        "hypotheses": st.fixed_dictionaries(
            {}, optional={"main": st.lists(st.fixed_dictionaries({}, optional={
                "depth": st.integers(0, 3), "target": strings, "expr": strings, "text": strings})),
                "intermediate": st.just([])}),
        "workflow": strings,
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True)):
        data[key] = draw(optional[key])
    data["datasets"] = draw(st.lists(dataset, min_size=1, max_size=2))
    data["queries"] = [queries] if real else queries
    data.update(draw(extras))
    return data


styles = st.builds(
    JsonStyle,
    encoding=st.just("utf-8"),
    bom=st.booleans(),
    newline=st.sampled_from(["\n", "\r\n"]),
    indent=st.sampled_from([None, 2, 4]),
    ensure_ascii=st.booleans(),
    final_newline=st.booleans(),
)


def _render(data: dict[str, Any], style: JsonStyle) -> bytes:
    rendered = json.dumps(data, indent=style.indent, ensure_ascii=style.ensure_ascii).replace("\n", style.newline)
    rendered += style.newline if style.final_newline else ""
    if style.encoding == "cp1252":
        return rendered.encode("cp1252")
    return (b"\xef\xbb\xbf" if style.bom else b"") + rendered.encode("utf-8")


@SETTINGS
@given(metadata(), styles)
def test_any_metadata_round_trips_byte_for_byte(data: dict[str, Any], style: JsonStyle) -> None:
    content = _render(data, style)
    file = parse_metadata(content, k=0, label="m.json")
    assert dump_metadata(file) == content
    # the detected style alone rebuilds it, and the content is what was written
    assert render_metadata(file.metadata, file.style) == content
    assert file.metadata.model_dump(mode="python") == data


@SETTINGS
@given(metadata(strings=cp1252_text), st.sampled_from(["\n", "\r\n"]))
def test_cp1252_metadata_round_trips(data: dict[str, Any], newline: str) -> None:
    content = _render(data, JsonStyle(encoding="cp1252", newline=newline, indent=4))  # type: ignore[arg-type]
    file = parse_metadata(content, k=0, label="m.json")
    assert dump_metadata(file) == content
    assert render_metadata(file.metadata, file.style) == content


@SETTINGS
@given(st.binary(max_size=200) | metadata().map(lambda d: json.dumps(d)[: len(json.dumps(d)) // 2].encode()))
def test_garbage_raises_only_the_typed_error(content: bytes) -> None:
    try:
        parse_metadata(content, k=0, label="m.json")
    except DiscoveryBenchFormatError as error:
        assert str(error).startswith("m.json")


@pytest.mark.parametrize("kind", list(QuestionType))
@SETTINGS
@given(data=st.data())
def test_question_type_spellings_normalise(kind: QuestionType, data: st.DataObject) -> None:
    word = kind.value
    spelled = "".join(ch.upper() if data.draw(st.booleans()) else ch for ch in word)
    padded = data.draw(st.sampled_from(["", " ", "\t"])) + spelled + data.draw(st.sampled_from(["", " ", "\n"]))
    assert normalise_question_type(padded) is kind
    # one pair of neighbouring letters swapped (as in upstream's "relationhsip") is still recognised
    at = data.draw(st.integers(1, len(word) - 3))
    swapped = word[:at] + word[at + 1] + word[at] + word[at + 2:]
    assert normalise_question_type(swapped) is kind


rows = st.lists(
    st.builds(AnswerKeyRow, dataset=st.text("abc_-09", min_size=1, max_size=10), metadataid=st.integers(0, 99),
              query_id=st.integers(0, 999), gold_hypo=text.filter(lambda s: s.strip() != "")),
    max_size=6, unique_by=lambda r: r.key,
)


@SETTINGS
@given(rows, st.sampled_from(["\n", "\r\n"]))
# found by hypothesis: a CRLF inside a quoted value of an LF file was taken for the file's line end
@example([AnswerKeyRow(dataset="0", metadataid=0, query_id=0, gold_hypo="0\r\n")], "\n")
def test_answer_keys_round_trip(entries: list[AnswerKeyRow], newline: str) -> None:
    key = AnswerKey(kind="synth", rows=entries, newline=newline)  # type: ignore[arg-type]
    content = write_answer_key(key)
    read = parse_answer_key(content, kind="synth", label="k.csv")
    assert [(r.key, r.gold_hypo) for r in read.rows] == [(r.key, r.gold_hypo) for r in entries]
    assert write_answer_key(read) == content


@SETTINGS
@given(st.sampled_from(CONTROLS), text, text)
def test_a_control_character_anywhere_in_a_text_is_refused_naming_the_field(control: str, before: str,
                                                                             after: str) -> None:
    data = {"id": 0, "domain": "d", "datasets": [{"name": "a.csv", "description": "", "columns": []}],
            "queries": [{"qid": 0, "question": before + control + after + "?"}]}
    content = json.dumps(data, indent=4).encode()
    with pytest.raises(DiscoveryBenchFormatError, match=r"m\.json \(line \d+\): queries\[0\]\.question holds"):
        parse_metadata(content, k=0, label="m.json")
