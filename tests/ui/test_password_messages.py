"""The password rule on the pages: the Account page and the admin's new-user form say what is wrong."""

from __future__ import annotations

from sqlmodel import select

from curation.db import session_scope
from curation.models import User
from curation.services.accounts import PASSWORD_RULE, authenticate
from tests import factories as f
from tests.ui.conftest import MARKDOWN_ESCAPE


def _errors(at) -> list[str]:
    return [MARKDOWN_ESCAPE.sub(r"\1", e.value) for e in at.error]


def test_the_account_page_says_what_is_wrong_with_a_new_password(ui):
    at = ui.app(ui.analyst).run()
    at.switch_page("app_pages/account.py").run()
    current, new, again = at.text_input
    assert new.help == PASSWORD_RULE and new.max_chars == 1024
    for password, says in (("password123", "one of the most common ones"),
                           ("abcdefgh", "has 8 characters; at least 10 are needed")):
        current, new, again = at.text_input
        current.input(f.PASSWORD)
        new.input(password)
        again.input(password)
        next(b for b in at.button if b.label == "Change password").click().run()
        assert not at.exception, at.exception
        assert any(says in e and "A password has 10 to 1,024 characters" in e for e in _errors(at)), _errors(at)
    with session_scope(ui.engine) as s:  # unchanged
        assert authenticate(session=s, username=ui.analyst.username, password=f.PASSWORD)


def test_the_new_user_form_says_what_is_wrong_with_the_initial_password(ui):
    at = ui.app(ui.admin).run()
    at.switch_page("app_pages/admin.py").run()
    fields = {t.label: t for t in at.text_input}
    assert fields["Initial password"].help == PASSWORD_RULE
    fields["User name"].input("newbie")
    fields["Initial password"].input("qwertyuiop")
    next(b for b in at.button if b.label == "Create user").click().run()
    assert not at.exception, at.exception
    assert any("one of the most common ones" in e for e in _errors(at)), _errors(at)
    with session_scope(ui.engine) as s:  # nothing stored
        assert s.exec(select(User).where(User.username == "newbie")).first() is None


def test_a_refused_new_user_keeps_what_was_typed(ui):
    """Issue 29 point 3: a refused password leaves the other fields as typed, so the retry is one fix away (the
    form used to empty every field, and the retry said "User name '' is not allowed"); a created user empties
    the form for the next one."""
    at = ui.app(ui.admin).run()
    at.switch_page("app_pages/admin.py").run()
    fields = {t.label: t for t in at.text_input}
    fields["User name"].input("newbie")
    fields["Display name"].input("New Bie")
    fields["Initial password"].input("qwertyuiop")
    next(b for b in at.button if b.label == "Create user").click().run()
    assert any("one of the most common ones" in e for e in _errors(at)), _errors(at)
    fields = {t.label: t for t in at.text_input}
    assert (fields["User name"].value, fields["Display name"].value) == ("newbie", "New Bie")
    fields["Initial password"].input("a much better password 7")
    next(b for b in at.button if b.label == "Create user").click().run()
    assert not _errors(at), _errors(at)
    with session_scope(ui.engine) as s:
        assert s.exec(select(User).where(User.username == "newbie")).one().display_name == "New Bie"
    assert {t.label: t.value for t in at.text_input}["User name"] == ""
