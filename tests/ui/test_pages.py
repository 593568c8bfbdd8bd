"""AppTest smoke tests: every page for every role, sign-in/out, and refusal of the wrong role."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from curation.db import session_scope
from curation.services.accounts import set_user_active
from tests.ui.conftest import ADMIN_PASSWORD, texts

PAGES_BY_ROLE = {
    "analyst": ["home.py", "annotate.py", "review.py", "programmatic.py", "account.py"],
    "curator": ["home.py", "annotate.py", "review.py", "programmatic.py", "datasets.py", "releases.py", "account.py"],
    "admin": ["home.py", "annotate.py", "review.py", "programmatic.py", "datasets.py", "releases.py", "admin.py",
              "account.py"],
}
ALL_PAGES = {"home.py", "annotate.py", "review.py", "programmatic.py", "datasets.py", "releases.py", "admin.py",
             "account.py"}


def _user(ui, role):
    return {"analyst": ui.analyst, "curator": ui.curator, "admin": ui.admin}[role]


def test_signed_out_visitors_only_get_the_sign_in_page(ui):
    at = ui.app().run()
    assert not at.exception
    assert "forkpaths" in at.title[0].value
    assert [b.label for b in at.button] == ["Sign in"]
    with pytest.raises(ValueError):
        at.switch_page("app_pages/annotate.py")


def test_sign_in_wrong_then_right_then_sign_out(ui):
    at = ui.app().run()
    at.text_input(key="sign_in.username").input("admin")
    at.text_input(key="sign_in.password").input("wrong password")
    at.button[0].click().run()
    assert "Wrong user name or password" in texts(at)
    at.text_input(key="sign_in.password").input(ADMIN_PASSWORD)
    at.button[0].click().run()
    assert not at.exception
    assert at.session_state["fp.session_token"]
    assert "Stage-1 progress" in at.title[0].value
    at.button(key="sign_out").click().run()
    assert "fp.session_token" not in at.session_state
    assert "forkpaths" in at.title[0].value


@pytest.mark.parametrize("role", ["analyst", "curator", "admin"])
def test_every_page_of_every_role_renders(ui, role):
    user = _user(ui, role)
    at = ui.app(user).run()
    assert not at.exception, at.exception
    for page in PAGES_BY_ROLE[role]:
        at.switch_page(f"app_pages/{page}").run()
        assert not at.exception, (page, at.exception)
        assert at.title, page
        assert "This page is for" not in texts(at)
    for page in ALL_PAGES - set(PAGES_BY_ROLE[role]):
        with pytest.raises(ValueError):  # not in this role's navigation at all
            at.switch_page(f"app_pages/{page}")


@pytest.mark.parametrize(("role", "page"), [("analyst", "datasets.py"), ("analyst", "admin.py"),
                                            ("analyst", "releases.py"), ("curator", "admin.py")])
def test_pages_refuse_the_wrong_role_even_when_opened_directly(ui, role, page):
    from tests.ui.conftest import APP

    at = AppTest.from_file(str(APP.parent / "app_pages" / page), default_timeout=60)
    user = _user(ui, role)
    at.session_state["fp.session_token"] = ui.token_for(user)
    at.run()
    assert "This page is for" in texts(at)
    assert not at.text_input and not at.button  # nothing of the page was rendered


def test_a_session_that_outlives_its_account_is_refused(ui):
    at = ui.app(ui.analyst).run()
    assert "Stage-1 progress" in at.title[0].value
    with session_scope(ui.engine) as s:
        set_user_active(session=s, actor=ui.admin, user_id=ui.analyst.id, active=False)
    at.run()
    assert "fp.session_token" not in at.session_state
    assert "deactivated" in texts(at)
    assert "forkpaths" in at.title[0].value


def test_analyst_progress_shows_own_rows_and_team_counts_only(ui):
    from tests import factories as f

    f.full_analysis(ui.engine, ui.admin, ui.dataset_id)  # a peer's work
    at = ui.app(ui.analyst).run()
    shown = "\n".join(str(df.value.to_dict()) for df in at.dataframe)
    assert "Administrator" not in shown and "admin" not in shown.lower().replace("adm-", "")
    assert "ana" in shown
    at_admin = ui.app(ui.admin).run()
    shown_admin = "\n".join(str(df.value.to_dict()) for df in at_admin.dataframe)
    assert "Administrator" in shown_admin and "ana" in shown_admin


def test_admin_creates_a_user_and_assigns_a_dataset(ui):
    at = ui.app(ui.admin).run()
    at.switch_page("app_pages/admin.py").run()
    form_inputs = [t for t in at.text_input if t.label in ("User name", "Display name", "Initial password")]
    form_inputs[0].input("newbie")
    form_inputs[1].input("New Bie")
    form_inputs[2].input("a fine password")
    next(b for b in at.button if b.label == "Create user").click().run()
    assert not at.exception
    assert "Created analyst 'newbie'" in texts(at)
    ms = at.multiselect(key=f"assign.{ui.dataset_id}")
    ms.select("newbie")
    next(b for b in at.button if b.label == "Save assignments").click().run()
    assert "Assignments of 'storms' saved" in texts(at)
    from sqlmodel import select

    from curation.models import User
    from curation.services.datasets import assigned_user_ids

    with session_scope(ui.engine) as s:
        newbie = s.exec(select(User).where(User.username == "newbie")).one()
        assert newbie.id in assigned_user_ids(session=s, dataset_id=ui.dataset_id)


def test_blinding_on_pages_analyst_never_sees_peer_decisions(ui):

    with session_scope(ui.engine) as s:
        from curation.services.annotation import VariableInput, save_variable
        from evaluation.specs import ColumnRef, VariableType

        save_variable(session=s, actor=ui.admin, dataset_id=ui.dataset_id, data=VariableInput(
            variable_type=VariableType.IV, concept="SECRET-PEER-CONCEPT", rationale="r",
            columns=[ColumnRef(name="wind", rationale="r")]))
    at = ui.app(ui.analyst).run()
    for page in PAGES_BY_ROLE["analyst"]:
        at.switch_page(f"app_pages/{page}").run()
        assert "SECRET-PEER-CONCEPT" not in texts(at)
        assert all("SECRET-PEER-CONCEPT" not in str(df.value.to_dict()) for df in at.dataframe)
