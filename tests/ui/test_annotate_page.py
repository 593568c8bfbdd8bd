"""The annotate page's forms in AppTest: validation messages, the sanity check, pre-fill, locking."""

from __future__ import annotations

from sqlmodel import select

from curation.db import session_scope
from curation.models import Transform
from tests.ui.conftest import settle, texts


def _annotate(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/annotate.py").run()
    assert not at.exception, at.exception
    return at


def _by_label(widgets, label):
    return next(w for w in widgets if w.label == label)


def test_bad_variable_input_is_explained_and_not_stored(ui):
    at = _annotate(ui, ui.analyst)
    at.button(key="var.save").click().run()
    assert "the concept is empty" in texts(at)
    _by_label(at.text_input, "Concept").input("wind speed")
    at.selectbox(key=[k for k in at.session_state if str(k).endswith(".type")][0]).set_value("Control").run()
    at.button(key="var.save").click().run()
    assert "needs a rationale" in texts(at)
    assert not at.exception


def test_sanity_check_failure_then_success_prefills_verb_and_mapping(ui):
    at = _annotate(ui, ui.analyst)
    _by_label(at.text_input, "Name").input("ratio")
    _by_label(at.text_area, "Code (pandas statements acting on `df`)").input("df['ratio'] = df['nope'] / 2")
    settle(at.button(key="tf.check").click().run())
    shown = texts(at)
    assert "Sanity check failed" in shown and "nope" in shown
    assert not at.exception
    _by_label(at.text_area, "Code (pandas statements acting on `df`)").input("df['ratio'] = df['deaths'] / df['wind']")
    settle(at.button(key="tf.check").click().run())
    assert "Sanity check passed" in texts(at)
    verb = _by_label(at.selectbox, "Verb")
    assert verb.value == "derive"
    at.button(key="tf.save").click().run()
    assert "Saved transform 'ratio'" in texts(at)
    with session_scope(ui.engine) as s:
        (t,) = s.exec(select(Transform)).all()
        assert t.mapping == [{"inputs": ["deaths", "wind"], "output": "ratio"}]
        assert t.last_check["ok"] is True and t.last_check["change"]["created"] == ["ratio"]


def test_code_that_loops_forever_is_stopped_and_the_page_keeps_working(ui, monkeypatch):
    # 6 s: long enough that the page's own run after the click (slow on a loaded machine) still sees it running
    monkeypatch.setenv("FORKPATHS_SANDBOX_TIMEOUT_S", "6")
    at = _annotate(ui, ui.analyst)
    _by_label(at.text_area, "Code (pandas statements acting on `df`)").input("while True:\n    pass")
    at.button(key="tf.check").click().run()
    assert "Running the sanity check…" in texts(at) and "(it is stopped at 6 s)" in texts(at)
    settle(at.run())  # what the running display's poll does, until the check ends (stopped at its 6 s limit)
    assert "limit" in texts(at) and "Sanity check failed" in texts(at)
    assert not at.exception
    at.run()
    assert at.title[0].value.endswith("Annotate")


def test_submitted_analysis_shows_no_edit_controls(ui):
    from curation.services.annotation import submit_analysis
    from tests import factories as f

    f.full_analysis(ui.engine, ui.analyst, ui.dataset_id)
    with session_scope(ui.engine) as s:
        submit_analysis(session=s, actor=ui.analyst, dataset_id=ui.dataset_id)
    at = _annotate(ui, ui.analyst)
    assert "it is locked" in texts(at)
    labels = {b.label for b in at.button}
    assert not labels & {"Edit", "Delete", "Save variable", "Save transform", "Save model"}


def test_alternative_parents_with_a_condition_and_tags_are_saved(ui):
    from curation.services.annotation import TransformInput, save_transform
    from evaluation.specs import ColumnMapping

    with session_scope(ui.engine) as s:
        parent = save_transform(session=s, actor=ui.analyst, dataset_id=ui.dataset_id, data=TransformInput(
            spec_name="drop_calm", verb="filter", code="df = df[df['wind'] > 85]",
            mapping=[ColumnMapping(inputs=["wind"], output="")]))
    at = _annotate(ui, ui.analyst)
    _by_label(at.text_input, "Name").input("log_deaths")
    _by_label(at.text_area, "Code (pandas statements acting on `df`)").input("df['ld'] = np.log1p(df['deaths'])")
    at.button(key="tf.add_branch").click().run()
    first = _by_label(at.multiselect, "Runs after")
    first.unselect("ROOT_SPEC_ID").select(parent.id).run()
    _by_label(at.text_input, "Condition of branch 1 (optional)").input("drop_calm.index == 0")
    next(t for t in at.text_input if t.key.startswith("fp.tf.") and t.key.endswith(".tags")).input("t1, robustness")
    settle(at.button(key="tf.check").click().run())
    assert "Sanity check passed" in texts(at)
    assert "Rows: 3 → 3" in texts(at)  # ran after the filter of its first branch (4 rows → 3)
    at.button(key="tf.save").click().run()
    assert "Saved transform 'log_deaths'" in texts(at), texts(at)
    with session_scope(ui.engine) as s:
        row = s.exec(select(Transform).where(Transform.spec_name == "log_deaths")).one()
        assert row.branches == [{"dependencies": [parent.id], "condition": "drop_calm.index == 0"},
                                {"dependencies": ["ROOT_SPEC_ID"], "condition": ""}]
        assert row.tags == ["t1", "robustness"] and row.mapping == [{"inputs": ["deaths"], "output": "ld"}]
