"""A kind's judge-validation card comes from its declaration in the registry (issue 27): a kind whose judge's
verdict has facets (``TaskKind.facet_judging``) gets its card on the Judge validation page, saying what the kind
declares while no expert labelled one, and the card names each kind of label as the kinds declare
(``TaskKind.judged``); no page reads an undeclared attribute of a kind's component."""

from __future__ import annotations

import dataclasses

from annotate_app.components.judge_card import judged_titles
from curation.models import Role
from evaluation.tasks import FacetJudging, registered
from tests import factories as f
from tests.conformance import toy_kind
from tests.ui.conftest import texts

EMPTY = "No toy facet is labelled yet: judge one on Run details."


def _faceted_toy():
    def nothing(*_args):
        return None

    judging = FacetJudging(read_result=nothing, effective=nothing, find_item=nothing, check_facet=lambda *_: "",
                           facet_value=nothing, facet_label=lambda *_: "", card_empty=EMPTY)
    return dataclasses.replace(toy_kind.KIND, name="toyfacets", label="Toy facets (one word)", jobs=(),
                               release_part=None, importer=None, facets=("spelling",), facet_judging=judging,
                               judged={"spelling": "toy spelling matching"})


def test_the_judge_card_names_labels_as_the_kinds_declare():
    titles = judged_titles()
    assert titles["context"] == "HMS context matching" and titles["variable"] == "variable matching"
    assert "spelling" not in titles
    with registered(_faceted_toy()):
        assert judged_titles()["spelling"] == "toy spelling matching"


def test_a_kind_with_judged_facets_has_its_card_on_the_judge_validation_page(ui):
    evaluator = f.user(ui.engine, "evie", Role.EVALUATOR)
    with registered(_faceted_toy()):
        at = ui.app(evaluator).run()
        at.switch_page("app_pages/judge_check.py").run()
        assert not at.exception, at.exception
        shown = texts(at)
    assert "Judge validation: Toy facets (one word)" in shown and EMPTY in shown, shown
    # the hypotheses kind's card, as it declares it
    assert "Judge a facet of a query on Run details" in shown


def test_the_sampled_decisions_card_points_to_nothing_that_is_not_there(ui):
    """With no run to sample from, the page draws no sampler, so the empty card must not send the reader to one
    "above" (a reviewer found "sample decisions from a run above" pointing to nothing)."""
    evaluator = f.user(ui.engine, "evie", Role.EVALUATOR)
    at = ui.app(evaluator).run()
    at.switch_page("app_pages/judge_check.py").run()
    assert not at.exception, at.exception
    shown = texts(at)
    assert not [s for s in at.selectbox if s.label == "Sample from run"]
    assert "from a run above" not in shown and "at the top of this page" not in shown, shown
    assert "no run scored with a judge has succeeded yet, so there is none to sample" in shown, shown
