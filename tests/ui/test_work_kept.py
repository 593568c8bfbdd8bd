"""Work is not lost and nothing is destroyed by one click (AppTest): a half-typed form comes back in a new
browser session of the same user (what a reload opens), Delete asks first, and assignment pickers offer only
people who annotate."""

from __future__ import annotations

import pytest
from sqlmodel import func, select

from curation.db import session_scope
from curation.errors import PermissionDenied
from curation.models import ConceptualVariable, FormDraft, Role
from curation.services.datasets import assign_analysts, assigned_user_ids
from tests import factories as f
from tests.ui.conftest import texts


def _annotate(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/annotate.py").run()
    assert not at.exception, at.exception
    return at


def _by_label(widgets, label):
    return next(w for w in widgets if w.label == label)


def _drafts(ui) -> int:
    with session_scope(ui.engine) as s:
        return s.exec(select(func.count()).select_from(FormDraft)).one()


def test_a_half_typed_variable_survives_a_new_session_and_is_gone_once_saved(ui):
    at = _annotate(ui, ui.analyst)
    _by_label(at.text_input, "Concept").input("storm strength").run()
    _by_label(at.text_area, "Rationale").input("stronger storms kill more").run()
    at.multiselect(key=[k for k in at.session_state if str(k).endswith("var.0.columns")][0]).select("wind").run()
    _by_label(at.text_input, "Why `wind`?").input("wind measures strength").run()
    assert _drafts(ui) == 1

    again = _annotate(ui, ui.analyst)  # a reload: a new browser session, same user
    assert _by_label(again.text_input, "Concept").value == "storm strength"
    assert _by_label(again.text_area, "Rationale").value == "stronger storms kill more"
    columns = again.multiselect(key=[k for k in again.session_state if str(k).endswith("var.0.columns")][0])
    assert columns.value == ["o:wind"]  # the original column "wind"
    assert _by_label(again.text_input, "Why `wind`?").value == "wind measures strength"
    other = _annotate(ui, ui.admin)  # drafts are per user: another person's form is empty
    assert _by_label(other.text_input, "Concept").value == ""

    again.button(key="var.save").click().run()
    assert "Saved variable 'storm strength'" in texts(again)
    assert _drafts(ui) == 0  # saved: nothing left to restore
    fresh = _annotate(ui, ui.analyst)
    assert _by_label(fresh.text_input, "Concept").value == ""


def test_a_half_typed_transform_keeps_its_code_and_cancel_discards_it(ui):
    from tests import factories as f

    f.full_analysis(ui.engine, ui.analyst, ui.dataset_id, checked=False)
    at = _annotate(ui, ui.analyst)
    _by_label(at.text_input, "Name").input("ratio").run()
    _by_label(at.text_area, "Code (pandas statements acting on `df`)").input("df['r'] = df['deaths'] / 2").run()
    again = _annotate(ui, ui.analyst)
    assert _by_label(again.text_input, "Name").value == "ratio"
    assert _by_label(again.text_area, "Code (pandas statements acting on `df`)").value == "df['r'] = df['deaths'] / 2"
    # editing an existing decision is kept too, and Cancel editing forgets it
    next(b for b in again.button if b.key and b.key.startswith("md.") and b.key.endswith(".edit")).click().run()
    assert "Edit model" in texts(again)
    third = _annotate(ui, ui.analyst)
    assert "Edit model" in texts(third)
    third.button(key="md.cancel").click().run()
    assert "New statistical model" in texts(third)
    assert "New statistical model" in texts(_annotate(ui, ui.analyst))


def test_delete_asks_first_and_keep_it_keeps_it(ui):
    f.full_analysis(ui.engine, ui.analyst, ui.dataset_id, checked=False)

    def variables() -> int:
        with session_scope(ui.engine) as s:
            return s.exec(select(func.count()).select_from(ConceptualVariable)).one()

    before = variables()
    at = _annotate(ui, ui.analyst)
    delete = next(b for b in at.button if b.label == "Delete" and b.key.startswith("var."))
    delete.click().run()
    assert variables() == before  # one click destroys nothing
    assert "Delete it for good?" in texts(at)
    next(b for b in at.button if b.label == "Keep it").click().run()
    assert variables() == before and "Delete it for good?" not in texts(at)
    next(b for b in at.button if b.label == "Delete" and b.key.startswith("var.")).click().run()
    next(b for b in at.button if b.label == "Yes, delete").click().run()
    assert not at.exception, at.exception
    assert variables() == before - 1
    assert "Deleted variable" in texts(at)


def test_assignment_pickers_offer_only_people_who_annotate(ui):
    evie = f.user(ui.engine, "evie", Role.EVALUATOR)
    at = ui.app(ui.admin).run()
    at.switch_page("app_pages/admin.py").run()
    assert not at.exception, at.exception
    options = at.multiselect(key=f"assign.{ui.dataset_id}").options
    assert "evie" not in options and {"ana", "cura", "admin"} <= set(options)
    with session_scope(ui.engine) as s, pytest.raises(PermissionDenied, match="evaluators score agents"):
        assign_analysts(session=s, actor=ui.admin, dataset_id=ui.dataset_id, user_ids=[ui.analyst.id, evie.id])
    with session_scope(ui.engine) as s:
        assert evie.id not in assigned_user_ids(session=s, dataset_id=ui.dataset_id)


def test_each_dataset_keeps_its_own_draft_when_the_analyst_switches(ui):
    other = f.dataset(ui.engine, ui.settings.datasets_store, name="floods", assign=[ui.analyst])
    at = _annotate(ui, ui.analyst)
    at.selectbox(key="annotate.dataset").set_value(ui.dataset_id).run()
    _by_label(at.text_input, "Concept").input("storm strength").run()
    at.selectbox(key="annotate.dataset").set_value(other.id).run()
    assert not at.exception, at.exception
    assert _by_label(at.text_input, "Concept").value == ""  # the other dataset's form is not this one's
    _by_label(at.text_input, "Concept").input("flood depth").run()
    at.selectbox(key="annotate.dataset").set_value(ui.dataset_id).run()
    assert _by_label(at.text_input, "Concept").value == "storm strength"  # back: its own draft
    assert _drafts(ui) == 2
