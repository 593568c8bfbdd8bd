"""The hypothesis-curation pages in AppTest, per role: stage 1 on Annotate (analyst), stage 2 on Review
(analyst votes, curator looks), stage 3 on Consensus (curator decides the gold; analyst sees no gold controls)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.models import HypothesisProposal, HypothesisTask, Role, Stage
from curation.services.hypotheses import save_hypothesis, submit_hypotheses
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from tests import factories as f
from tests.curation.hypothesis_world import CODE, import_folder
from tests.curation.test_hypothesis_curation import _input
from tests.ui.conftest import settle, texts


@pytest.fixture
def hw(ui, tmp_path: Path):  # type: ignore[no-untyped-def]
    bob = f.user(ui.engine, "bob")
    ds, tasks = import_folder(ui.engine, ui.settings.datasets_store, tmp_path / "src", ui.admin, [ui.analyst, bob])
    return {"ds": ds, "tasks": tasks, "bob": bob}


def _page(ui, user, page: str):  # type: ignore[no-untyped-def]
    at = ui.app(user).run()
    at.switch_page(f"app_pages/{page}.py").run()
    assert not at.exception, at.exception
    return at


def _pick_dataset(at, key: str, ds_id: int):  # type: ignore[no-untyped-def]
    at.selectbox(key=key).set_value(ds_id).run()
    assert not at.exception, at.exception
    return at


def _label(widgets, label):  # type: ignore[no-untyped-def]
    return next(w for w in widgets if w.label == label)


def test_analyst_writes_checks_and_submits_a_hypothesis(ui, hw, os_sandbox):
    at = _pick_dataset(_page(ui, ui.analyst, "annotate"), "annotate.dataset", hw["ds"].id)
    shown = texts(at)
    assert "How does BMI relate to age?" in shown and "Conceptual variables" not in shown
    assert "Body mass index (kg/m2)" in at.dataframe[0].value.to_string()  # the data dictionary is in view
    save = f"hy{hw['tasks']['q0'].id}.save"
    at.button(key=save).click().run()
    assert "the hypothesis is empty" in texts(at)
    _label(at.text_area, "Hypothesis (the statement the data supports)").input("In US adults, BMI rises with age.")
    _label(at.text_input, "Context (where it holds: population, place, period)").input("US adults")
    _label(at.text_input, "Variable 1: name").input("age")
    _label(at.selectbox, "Variable 1: column").set_value("AGE")
    _label(at.text_input, "Variable 2: name").input("weight")
    _label(at.text_input, "Relationship (how the variables relate: direction, size, form)").input("positive")
    _label(at.text_area, "Workflow (the steps from the data to the hypothesis)").input("OLS of BMI on AGE.")
    at.button(key=save).click().run()
    assert "variable 2 ('weight'): ground it" in texts(at)
    _label(at.selectbox, "Variable 2: column").set_value("BMI")
    code_box = next(w for w in at.text_area if w.label.startswith("Supporting code"))
    code_box.input("df['NOPE'].mean()").run()
    settle(at.button(key=f"hy{hw['tasks']['q0'].id}.check").click().run())
    assert "The supporting code stopped with an error" in texts(at) and "NOPE" in texts(at)
    at.button(key=save).click().run()
    assert "the supporting code stops with an error" in texts(at) and ".." not in texts(at)
    next(w for w in at.text_area if w.label.startswith("Supporting code")).input(CODE).run()
    settle(at.button(key=f"hy{hw['tasks']['q0'].id}.check").click().run())
    assert "The code ran without error" in texts(at) and "The model was fitted" not in texts(at)
    # code that only prints is supporting code too: its output is kept, no model needed (issue 29 point 2)
    printing = "print(df.groupby(pd.qcut(df['AGE'], 4))['BMI'].mean())"
    next(w for w in at.text_area if w.label.startswith("Supporting code")).input(printing).run()
    settle(at.button(key=f"hy{hw['tasks']['q0'].id}.check").click().run())
    assert "The code ran without error" in texts(at) and "could not" not in texts(at), texts(at)
    at.button(key=save).click().run()
    # a query is named with its metadata number: a folder has a q0 per metadata file (issue 29 point 5)
    assert "Saved your hypothesis for query 0/q0." in texts(at), texts(at)
    with session_scope(ui.engine) as s:
        (h,) = s.exec(select(HypothesisProposal)).all()
        assert h.check["ok"] and [v["column"] for v in h.variables] == ["AGE", "BMI"] and h.code == printing
        assert "BMI" in h.check["stdout"]
    at.checkbox(key=f"hyp.confirm.{hw['ds'].id}").check().run()
    at.button(key=f"hyp.submit.{hw['ds'].id}").click().run()
    assert "You submitted your hypotheses" in texts(at)
    assert not at.exception


def _through_stage_two(ui, hw):  # type: ignore[no-untyped-def]
    ids = []
    for user, text in ((ui.analyst, "BMI rises with age."), (hw["bob"], "BMI falls with age.")):
        with session_scope(ui.engine) as s:
            ids.append(save_hypothesis(session=s, actor=user, task_id=hw["tasks"]["q0"].id,
                                       data=_input(hypothesis=text)).id)
        with session_scope(ui.engine) as s:
            submit_hypotheses(session=s, actor=user, dataset_id=hw["ds"].id)
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=hw["ds"].id, stage=Stage.REVIEW)
    return ids


def test_review_page_per_role(ui, hw):
    ana_h, bob_h = _through_stage_two(ui, hw)
    at = _pick_dataset(_page(ui, ui.analyst, "review"), "review.dataset", hw["ds"].id)
    shown = texts(at)
    assert "BMI falls with age." in shown and "BMI rises with age." in shown and "your own" in shown
    at.radio(key=f"hr.{bob_h}.answer").set_value("no").run()
    at.button(key=f"hr.{bob_h}.vote").click().run()
    assert "Say why this hypothesis is unjustifiable" in texts(at) and "decision" not in texts(at)  # point 12e
    at.text_input(key=f"hr.{bob_h}.why").input("the slope is positive").run()
    at.button(key=f"hr.{bob_h}.vote").click().run()
    assert not at.exception
    assert "Your vote: unjustifiable" in texts(at)
    cur = _pick_dataset(_page(ui, ui.curator, "review"), "review.dataset", hw["ds"].id)
    assert "BMI falls with age." in texts(cur) and "the analysts who submitted stage 1 vote" in texts(cur)
    assert not any(b.key and b.key.endswith(".vote") for b in cur.button)
    # an analyst who did not submit is refused, with the reason
    carl = f.user(ui.engine, "carl")
    with session_scope(ui.engine) as s:
        from curation.services.datasets import assign_analysts

        assign_analysts(session=s, actor=ui.admin, dataset_id=hw["ds"].id, user_ids=[ui.analyst.id, hw["bob"].id,
                                                                                     carl.id])
    blind = _page(ui, carl, "review")
    if any(sb.key == "review.dataset" for sb in blind.selectbox):
        blind = _pick_dataset(blind, "review.dataset", hw["ds"].id)
    assert "BMI falls with age." not in texts(blind) and "Submit your own stage-1" in texts(blind)


def test_consensus_page_decides_the_gold(ui, hw):
    ana_h, bob_h = _through_stage_two(ui, hw)
    with session_scope(ui.engine) as s:
        cast_vote(session=s, actor=hw["bob"], target_kind="hypothesis", target_id=ana_h, question="justifiable",
                  answer="yes")
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=hw["ds"].id, stage=Stage.CLOSED)
    analyst = _pick_dataset(_page(ui, ui.analyst, "consensus"), "consensus.dataset", hw["ds"].id)
    assert not any(b.key and b.key.startswith("gold.") for b in analyst.button)
    at = _pick_dataset(_page(ui, ui.curator, "consensus"), "consensus.dataset", hw["ds"].id)
    assert "Gold hypotheses" in [t.label for t in at.tabs]
    at.session_state["consensus.tab"] = "Gold hypotheses"
    at.run()
    shown = texts(at)
    assert "BMI rises with age." in shown and "justifiable" in shown
    # nothing is chosen for the curator: one click cannot make a pre-selected candidate gold (issue 29 point 10)
    choice = at.radio(key=f"gold.{hw['tasks']['q0'].id}.choice")
    assert choice.value is None and at.button(key=f"gold.{hw['tasks']['q0'].id}.decide").disabled
    assert any("an analyst's; 1 of 1 justifiable" in str(o) for o in choice.options), choice.options
    choice.set_value(choice.options[0]).run()
    at.button(key=f"gold.{hw['tasks']['q0'].id}.decide").click().run()
    assert not at.exception
    assert "is now the gold hypothesis" in texts(at) and "by cura" in texts(at)
    with session_scope(ui.engine) as s:
        task = s.get(HypothesisTask, hw["tasks"]["q0"].id)
        assert task.gold_source == "consensus" and task.gold_hypothesis == "BMI rises with age."
    assert Role.CURATOR  # the roles used above


@pytest.mark.parametrize("role", ["analyst", "curator", "admin", "evaluator"])
def test_every_role_sees_the_pages_of_a_hypothesis_dataset_without_error(ui, hw, role):
    _through_stage_two(ui, hw)
    user = {"analyst": ui.analyst, "curator": ui.curator, "admin": ui.admin,
            "evaluator": f.user(ui.engine, "eve", Role.EVALUATOR)}[role]
    for page in ("annotate", "review", "consensus"):
        at = ui.app(user).run()
        try:
            at.switch_page(f"app_pages/{page}.py").run()
        except Exception:  # noqa: BLE001 - a page outside the role's navigation may not be reachable at all
            continue
        assert not at.exception, (role, page, at.exception)
        shown = texts(at)
        if role == "evaluator" or (role != "analyst" and page == "annotate"):
            assert "BMI falls with age." not in shown  # nobody outside stage 1 of it sees peers' hypotheses there
        if role == "analyst" and page == "annotate":  # their own, submitted and locked: no form any more
            shown = texts(_pick_dataset(at, "annotate.dataset", hw["ds"].id))
            assert "You submitted your hypotheses" in shown and "BMI rises with age." in shown
            assert not any(b.key and b.key.endswith(".save") for b in at.button)


def test_a_contested_hypothesis_is_discussed_at_the_meeting(ui, hw):
    ana_h, bob_h = _through_stage_two(ui, hw)
    with session_scope(ui.engine) as s:
        cast_vote(session=s, actor=hw["bob"], target_kind="hypothesis", target_id=ana_h, question="justifiable",
                  answer="no", explanation="age alone is confounded")
    with session_scope(ui.engine) as s:
        set_stage(session=s, actor=ui.curator, dataset_id=hw["ds"].id, stage=Stage.CLOSED)
    from curation.services.ground_truth import set_rule
    from curation.services.meetings import start_meeting

    with session_scope(ui.engine) as s:
        set_rule(session=s, actor=ui.curator, dataset_id=hw["ds"].id, rule="unanimous@1")
    with session_scope(ui.engine) as s:
        start_meeting(session=s, actor=ui.curator, dataset_id=hw["ds"].id, attendee_ids=[ui.analyst.id])
    at = _pick_dataset(_page(ui, ui.curator, "consensus"), "consensus.dataset", hw["ds"].id)
    shown = texts(at)
    assert "hypothesis · BMI rises with age." in shown and "Query:" in shown and "How does BMI relate" in shown
    assert "age alone is confounded" in at.dataframe[0].value.to_string()
    assert not at.exception
