"""Parity with StatQA's own scorer (HKUSTDial/StatQA@31ca981: ``utils.extract_json_answer``,
``analyze_model_answer.compare_and_count_answer_row`` and ``model_answer_score_policy`` with ``acc``), as a table
of (gold, reply, expected verdict) worked out by reading that code, quirks included:

* extraction takes the text from the first ``{`` to the first ``}`` after it and keeps it only when it parses, so
  a nested object, a brace in the prose before the answer, or a ``}`` inside a string make an *Invalid Answer*;
* each target's value is lower-cased and stripped item by item (``for x in value``): a missing key is an empty
  list, a string is read letter by letter, ``null``, a number or a list holding a non-string raise (Invalid);
* the gold is parsed after every ``'`` became ``"``: a column named with an apostrophe breaks it (Invalid for
  every reply, record 280 of the shared subset is one);
* a target scores 1 only when correct > 0 and nothing is wrong or missed (an empty gold never scores);
  selection overall is 1 when both do.

Each row: columns counts and methods counts as (correct, wrong, missed) or ``None`` for *Invalid Answer*, then
(columns score, methods score, overall), then the status this kind gives the item.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.tasks.statqa import extract_answer, upstream_verdict

G = '{"columns": ["income_inequality"], "methods": ["Mean"]}'
G3 = ('{"columns": ["Vietnam"], "methods": ["Anderson-Darling Test", "Shapiro-Wilk Test of Normality", '
      '"Kolmogorov-Smirnov Test for Normality"]}')
G_APOSTROPHE = ('{"columns": ["Total Computer Usage (Wireless + PC Sessions)", "# of Attendees at Children\'s and '
                'Teen Programming"], "methods": ["Mood Variance Test", "Levene Test"]}')
GOOD = '{"columns": ["income_inequality"], "methods": ["Mean"]}'

CASES = [
    # (what, gold, reply, columns, methods, (columns score, methods score, overall))
    ("exact", G, GOOD, (1, 0, 0), (1, 0, 0), (1, 1, 1)),
    ("case and spaces are ignored", G, '{"columns": [" Income_Inequality "], "methods": ["MEAN\\n"]}',
     (1, 0, 0), (1, 0, 0), (1, 1, 1)),
    ("prose around the JSON", G, f"Sure! The answer is: {GOOD} Hope this helps.", (1, 0, 0), (1, 0, 0), (1, 1, 1)),
    ("a code fence", G, f"```json\n{GOOD}\n```", (1, 0, 0), (1, 0, 0), (1, 1, 1)),
    ("order does not matter", G3, '{"columns": ["vietnam"], "methods": ["Kolmogorov-Smirnov Test for Normality", '
     '"Anderson-Darling Test", "Shapiro-Wilk Test of Normality"]}', (1, 0, 0), (3, 0, 0), (1, 1, 1)),
    ("a repeated item counts once (sets)", G, '{"columns": ["income_inequality"], "methods": ["Mean", "mean"]}',
     (1, 0, 0), (1, 0, 0), (1, 1, 1)),
    ("one method too many", G, '{"columns": ["income_inequality"], "methods": ["Mean", "Median"]}',
     (1, 0, 0), (1, 1, 0), (1, 0, 0)),
    ("one method missed", G3, '{"columns": ["Vietnam"], "methods": ["Anderson-Darling Test", '
     '"Shapiro-Wilk Test of Normality"]}', (1, 0, 0), (2, 0, 1), (1, 0, 0)),
    ("wrong column", G, '{"columns": ["income"], "methods": ["Mean"]}', (0, 1, 1), (1, 0, 0), (0, 1, 0)),
    ("no braces at all", G, "The mean of income_inequality.", None, None, (0, 0, 0)),
    ("a nested object cuts the text at its '}'", G, '{"columns": ["income_inequality"], "methods": ["Mean"], '
     '"why": {"a": 1}}', None, None, (0, 0, 0)),
    ("an object as a value is cut the same way", G, '{"methods": ["Mean"], "columns": {"income_inequality": 1}}',
     None, None, (0, 0, 0)),
    ("a brace in the prose before the answer", G, f"Use {{x}} then: {GOOD}", None, None, (0, 0, 0)),
    ("a '}' inside a string", G, '{"columns": ["income}inequality"], "methods": ["Mean"]}', None, None, (0, 0, 0)),
    ("single-quoted pseudo-JSON", G, "{'columns': ['income_inequality'], 'methods': ['Mean']}", None, None,
     (0, 0, 0)),
    ("only the first object is read", G, '{"columns": ["x"], "methods": ["Median"]} no wait: ' + GOOD,
     (0, 1, 1), (0, 1, 1), (0, 0, 0)),
    ("a missing key is an empty list", G, '{"methods": ["Mean"]}', (0, 0, 1), (1, 0, 0), (0, 1, 0)),
    ("an empty object", G, "{}", (0, 0, 1), (0, 0, 1), (0, 0, 0)),
    ("null columns: that target is invalid", G, '{"columns": null, "methods": ["Mean"]}', None, (1, 0, 0),
     (0, 1, 0)),
    ("a number in the methods: that target is invalid", G, '{"columns": ["income_inequality"], "methods": '
     '["Mean", 3]}', (1, 0, 0), None, (1, 0, 0)),
    ("NaN parses, and is not a list", G, '{"columns": NaN, "methods": ["Mean"]}', None, (1, 0, 0), (0, 1, 0)),
    ("true is not a list", G, '{"columns": ["income_inequality"], "methods": true}', (1, 0, 0), None, (1, 0, 0)),
    ("a string is read letter by letter", G, '{"columns": "income_inequality", "methods": ["Mean"]}',
     (0, 13, 1), (1, 0, 0), (0, 1, 0)),
    ("... which matches a one-letter column", '{"columns": ["A"], "methods": ["Mean"]}',
     '{"columns": "a", "methods": ["Mean"]}', (1, 0, 0), (1, 0, 0), (1, 1, 1)),
    ("an empty gold never scores, even answered empty", '{"columns": [], "methods": ["Mean"]}',
     '{"columns": [], "methods": ["Mean"]}', (0, 0, 0), (1, 0, 0), (0, 1, 0)),
    ("an apostrophe in the gold breaks it for every reply", G_APOSTROPHE,
     '{"columns": ["Total Computer Usage (Wireless + PC Sessions)", "# of Attendees at Children\'s and Teen '
     'Programming"], "methods": ["Mood Variance Test", "Levene Test"]}', None, None, (0, 0, 0)),
    ("an apostrophe in the reply is kept (only the gold is rewritten)", G,
     '{"columns": ["income_inequality\'s"], "methods": ["Mean"]}', (0, 1, 1), (1, 0, 0), (0, 1, 0)),
]


def _counts(c):
    return None if c is None else (c.correct, c.wrong, c.missed)


@pytest.mark.parametrize(("what", "gold", "reply", "columns", "methods", "scores"), CASES,
                         ids=[c[0] for c in CASES])
def test_verdict_matches_upstreams_code(what, gold, reply, columns, methods, scores):
    v = upstream_verdict(reply, gold)
    assert (_counts(v.columns), _counts(v.methods)) == (columns, methods), what
    assert (v.columns_score, v.methods_score, v.overall) == scores, what


def test_extraction_keeps_the_first_brace_pair_text_as_written():
    assert extract_answer(f"x {GOOD} y") == GOOD
    assert extract_answer("{ }") == "{ }"
    assert extract_answer("} {") is None  # the first '}' comes before the '{': nothing after it
    assert extract_answer('{"a": [1, 2]}') == '{"a": [1, 2]}'
    assert json.loads(extract_answer('prefix {"k": "v"} suffix') or "null") == {"k": "v"}


# ------------------------------------------------------------------------------------ properties

_item = st.text(st.characters(blacklist_characters="{}'", blacklist_categories=("Cs",)), min_size=1, max_size=12)
_prose = st.text(st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)), max_size=30)


def _reworded(x: str) -> str:
    """``x`` in upper case with spaces around, where upper-casing keeps its lower case (not for 'ß')."""
    return f"  {x.upper()} " if x.upper().lower() == x.lower() else x


@settings(max_examples=200, deadline=None)
@given(columns=st.lists(_item, min_size=1, max_size=4), methods=st.lists(_item, min_size=1, max_size=4),
       before=_prose, after=_prose, data=st.data())
def test_the_gold_reworded_by_case_order_and_spaces_is_right_wherever_it_sits_in_prose(columns, methods, before,
                                                                                    after, data):
    gold = json.dumps({"columns": columns, "methods": methods})
    answer = json.dumps({"columns": data.draw(st.permutations([_reworded(x) for x in columns])),
                         "methods": data.draw(st.permutations([_reworded(x) for x in methods]))})
    v = upstream_verdict(before + answer + after, gold)
    assert v.extracted == answer and v.overall == 1, (answer, gold)


@settings(max_examples=200, deadline=None)
@given(gold_items=st.lists(_item, min_size=1, max_size=4), extra=_item)
def test_an_extra_item_or_a_missing_one_never_scores(gold_items, extra):
    gold = json.dumps({"columns": gold_items, "methods": ["Mean"]})
    known = {g.lower().strip() for g in gold_items}
    more = upstream_verdict(json.dumps({"columns": [*gold_items, extra], "methods": ["Mean"]}), gold)
    if extra.lower().strip() not in known:
        assert more.columns is not None and more.columns.wrong == 1 and more.overall == 0
    first = gold_items[0].lower().strip()
    fewer = upstream_verdict(json.dumps({"columns": [g for g in gold_items if g.lower().strip() != first],
                                         "methods": ["Mean"]}), gold)
    assert fewer.columns is not None and fewer.columns.missed == 1 and fewer.overall == 0
