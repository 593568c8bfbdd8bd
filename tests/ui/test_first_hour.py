"""Issue 8 in AppTest: literal text, the check gate on the Submit tab, placeholders, archive, small words."""

from __future__ import annotations

from sqlmodel import select

from curation.db import session_scope
from curation.models import Dataset, Transform
from curation.services.annotation import TransformInput, save_transform, submit_analysis
from evaluation.specs import ColumnMapping
from tests import factories as f
from tests.ui.conftest import settle, texts

CODE = "Code (pandas statements acting on `df`)"


def _annotate(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/annotate.py").run()
    assert not at.exception, at.exception
    return at


def _by_label(widgets, label):
    return next(w for w in widgets if w.label == label)


def test_error_and_user_text_is_shown_literally(ui):
    at = _annotate(ui, ui.analyst)
    # a save refused with a message quoting what the analyst typed: shortcodes and dollars stay as typed
    _by_label(at.text_input, "Name").input("step :x: $a+b$ *one*")
    at.button(key="tf.save").click().run()
    (error,) = [e.value for e in at.error]
    assert r"step \:x\: \$a\+b\$ \*one\*" in error  # escaped Markdown: no emoji, no LaTeX, no emphasis
    assert "Transform 'step :x: $a+b$ *one*': the code is empty" in texts(at)
    # a failing check's message is escaped too
    _by_label(at.text_area, CODE).input("raise ValueError(':man: costs $5 and $6')")
    settle(at.button(key="tf.check").click().run())
    assert any("Sanity check failed" in e.value for e in at.error)
    assert any("ValueError: :man: costs $5 and $6" in c.value for c in at.code)  # in a code block, as raised
    # a saved transform with such a name is listed literally
    with session_scope(ui.engine) as s:
        save_transform(session=s, actor=ui.analyst, dataset_id=ui.dataset_id, data=TransformInput(
            spec_name="ratio_:x:", specification="costs $5 and $6", verb="derive", code="df['r'] = 1",
            mapping=[ColumnMapping(output="r")]))
    at.run()
    listed = next(m.value for m in at.markdown if "ratio" in m.value)
    assert r"ratio\_\:x\:" in listed and r"costs \$5 and \$6" in listed
    assert not at.exception


def test_submit_tab_lists_what_needs_a_check_and_refuses_until_checked(ui):
    f.full_analysis(ui.engine, ui.analyst, ui.dataset_id, checked=False)
    at = _annotate(ui, ui.analyst)
    todo = next(w.value for w in at.warning if "Still to check" in w.value)
    assert "transform **log\\_deaths**: never checked" in todo and "model **OLS**: never checked" in todo
    assert "needs a check: never checked" in texts(at)  # the badges in the lists say so too
    at.checkbox(key="annotate.confirm").check().run()
    at.button(key="annotate.submit").click().run()
    assert "need a passing sanity check on their current code" in texts(at)
    f.run_checks(ui.engine, ui.analyst, ui.dataset_id)
    at.run()
    assert not [w for w in at.warning if "Still to check" in w.value]
    at.checkbox(key="annotate.confirm").check().run()
    at.button(key="annotate.submit").click().run()
    assert "Analysis submitted and locked. Thank you!" in texts(at)
    at.run()  # shown once: the next run does not repeat it
    assert "Thank you!" not in texts(at)


def test_a_check_run_in_the_form_is_what_lets_the_model_be_submitted(ui):
    """Through the page: fit the model, save it, and the Submit tab no longer lists it."""
    f.full_analysis(ui.engine, ui.analyst, ui.dataset_id, checked=False)
    at = _annotate(ui, ui.analyst)
    edit = next(b for b in at.button if b.key and b.key.startswith("md.") and b.key.endswith(".edit"))
    edit.click().run()
    settle(at.button(key="md.check").click().run())
    assert "The model was fitted" in texts(at)
    at.button(key="md.save").click().run()
    assert "Saved model 'OLS'" in texts(at)
    todo = next(w.value for w in at.warning if "Still to check" in w.value)
    assert "model **OLS**" not in todo and "transform **log\\_deaths**" in todo
    edit = next(b for b in at.button if b.key and b.key.startswith("tf.") and b.key.endswith(".edit"))
    edit.click().run()
    settle(at.button(key="tf.check").click().run())
    assert "Sanity check passed" in texts(at)
    at.button(key="tf.save").click().run()
    assert not [w for w in at.warning if "Still to check" in w.value]
    assert "Every transform and model passed its sanity check on its current code." in texts(at)


def test_placeholders_come_from_the_dataset_not_from_another(ui):
    at = _annotate(ui, ui.analyst)
    shown = [w.placeholder for w in [*at.text_input, *at.text_area] if w.placeholder]
    joined = "\n".join(shown)
    assert "hurricane" not in joined and "masfem + min" not in joined and "alldeaths" not in joined
    assert _by_label(at.text_area, CODE).placeholder.startswith("# ")  # an example, not content
    assert "df['log_deaths'] = np.log(df['deaths'] + 1)" in _by_label(at.text_area, CODE).placeholder
    model_code = _by_label(at.text_area, "Code (fits the model on `df`)").placeholder
    assert "smf.ols('masfem ~ deaths', data=df)" in model_code  # the tiny dataset's own numeric columns


def test_counts_are_pluralised_and_a_locked_empty_tab_says_so(ui):
    ids = f.full_analysis(ui.engine, ui.analyst, ui.dataset_id)
    with session_scope(ui.engine) as s:
        submit_analysis(session=s, actor=ui.analyst, dataset_id=ui.dataset_id)
    at = _annotate(ui, ui.analyst)
    assert "Recorded so far: 2 conceptual variables · 1 transform · 1 model" in texts(at)
    assert ids  # the locked tabs have content; an analysis without transforms says so:
    with session_scope(ui.engine) as s:
        t = s.exec(select(Transform)).one()
        s.delete(t)  # only possible behind the service's back: a submitted analysis with no transform
    at.run()
    assert "Nothing recorded: this analysis was submitted without transforms." in texts(at)


def test_a_save_confirmation_shows_once_under_its_button(ui):
    at = _annotate(ui, ui.analyst)
    _by_label(at.text_input, "Name").input("ratio")
    _by_label(at.text_area, CODE).input("df['ratio'] = df['deaths'] / df['wind']")
    _by_label(at.selectbox, "Verb").set_value("derive")
    at.data_editor  # noqa: B018 - the mapping editor exists
    settle(at.button(key="tf.check").click().run())
    at.button(key="tf.save").click().run()
    success = [s for s in at.success if "Saved transform 'ratio'" in s.value]
    assert len(success) == 1
    assert not at.toast  # not a page-wide banner above the title
    at.run()
    assert "Saved transform" not in texts(at)


def test_curator_archives_and_restores_a_dataset_on_the_datasets_page(ui):
    at = ui.app(ui.curator).run()
    at.switch_page("app_pages/datasets.py").run()
    assert not at.exception, at.exception
    at.selectbox(key="ds.pick").set_value("storms").run()
    at.button(key="ds.archive").click().run()
    assert "Archived 'storms'" in texts(at)
    with session_scope(ui.engine) as s:
        assert s.exec(select(Dataset)).one().archived_at is not None
    assert "Archived on" in texts(at)
    # the analyst no longer finds it to annotate
    ana = _annotate(ui, ui.analyst)
    assert "You are not assigned to any dataset yet" in texts(ana)
    at.button(key="ds.restore").click().run()
    assert "Restored 'storms'" in texts(at)
    assert _annotate(ui, ui.analyst).selectbox(key="annotate.dataset").value == ui.dataset_id


def test_long_questions_can_be_read_in_full_on_the_datasets_page(ui):
    at = ui.app(ui.curator).run()
    at.switch_page("app_pages/datasets.py").run()
    question = "Do storms with feminine names kill more people?"
    at.selectbox(key="ds.pick").set_value("storms").run()
    assert f"**{question}**" in [m.value for m in at.markdown]
