"""The sign-in page: throttled failures, the first-admin password file hint, sessions ended elsewhere."""

from __future__ import annotations

from curation.db import session_scope
from curation.services.accounts import reset_password
from tests.ui.conftest import ADMIN_PASSWORD, MARKDOWN_ESCAPE, texts

HINT = "first-admin-password.txt"


def _try(at, username, password):
    at.text_input(key="sign_in.username").input(username)
    at.text_input(key="sign_in.password").input(password)
    at.button[0].click().run()
    assert not at.exception, at.exception
    return [MARKDOWN_ESCAPE.sub(r"\1", e.value) for e in at.error]  # as the browser shows them


def test_wrong_passwords_are_throttled_with_a_readable_message(ui):
    at = ui.app().run()
    answers = [_try(at, "admin", f"wrong password {i}") for i in range(6)]
    assert answers[0] == ["Wrong user name or password."]
    assert answers[4][0].startswith("Wrong user name or password. Too many failed sign-ins; try again in 30")
    assert answers[5][0].startswith("Too many failed sign-ins; try again in ")
    assert "UTC" in answers[5][0]
    # even the right password waits; a name that does not exist reads the same
    assert _try(at, "admin", ADMIN_PASSWORD)[0].startswith("Too many failed sign-ins")
    assert "fp.session_token" not in at.session_state
    fresh = ui.app().run()  # another browser session (no address locally): the account count still holds
    assert _try(fresh, "admin", ADMIN_PASSWORD)[0].startswith("Too many failed sign-ins")
    for i in range(6):
        last = _try(fresh, "no-such-user", f"guess {i}")
    assert last[0].startswith("Too many failed sign-ins; try again in ")


def test_the_hint_names_the_password_file_only_while_it_exists(ui):
    path = ui.settings.first_admin_password_file
    path.write_text(f"user name: admin\npassword: {ADMIN_PASSWORD}\n", encoding="utf-8")
    at = ui.app().run()
    assert HINT in texts(at)
    _try(at, "admin", ADMIN_PASSWORD)
    at.switch_page("app_pages/account.py").run()
    inputs = at.text_input
    inputs[0].input(ADMIN_PASSWORD)
    inputs[1].input("my own admin password")
    inputs[2].input("my own admin password")
    next(b for b in at.button if b.label == "Change password").click().run()
    assert not at.exception, at.exception
    assert "Password changed" in texts(at)
    assert not path.exists()
    assert at.session_state["fp.session_token"]  # this browser stays signed in
    at.button(key="sign_out").click().run()
    assert "forkpaths" in at.title[0].value and HINT not in texts(at)


def test_a_password_reset_elsewhere_signs_this_browser_out_with_the_reason(ui):
    at = ui.app(ui.analyst).run()
    assert "Stage-1 progress" in at.title[0].value
    with session_scope(ui.engine) as s:
        reset_password(session=s, actor=ui.admin, user_id=ui.analyst.id, new_password="new analyst pw")
    at.run()
    assert "password was changed" in texts(at)
    assert "forkpaths" in at.title[0].value and "fp.session_token" not in at.session_state
