"""AppTest: a single-sign-on account waiting for approval sees only that page; the admin's page lists it and
offers no password reset for it; its Account page has no password form. The provider flow itself is
tests/browser/test_sso.py."""

from __future__ import annotations

import time

import pytest

from curation.db import session_scope
from curation.services.sign_in import sign_in_sso
from curation.services.sso import identity_from_claims
from curation.settings import OIDCConfig
from tests.ui.conftest import texts

CONFIG = OIDCConfig(server_metadata_url="http://idp.example/.well-known/openid-configuration", client_id="fp",
                    client_secret="", redirect_uri="http://localhost:8501/oauth2callback")


def sso_user(ui, sub: str, name: str):
    claims = {"iss": "http://idp.example", "sub": sub, "aud": "fp", "exp": time.time() + 60, "nonce": sub,
              "preferred_username": name}
    with session_scope(ui.engine) as s:
        out = sign_in_sso(session=s, identity=identity_from_claims(claims, CONFIG), config=CONFIG, client="t",
                          session_policy=ui.settings.session_policy, throttle=ui.settings.throttle_policy)
        assert out.user is not None
        return out.user


def test_a_pending_account_sees_only_the_waiting_page(ui):
    pending = sso_user(ui, "s-1", "newcomer")
    at = ui.app(pending).run()
    assert not at.exception, at.exception
    assert "Waiting for approval" in at.title[0].value
    assert [b.label for b in at.button] == ["Sign out"]
    with pytest.raises(ValueError):  # no other page is in its navigation
        at.switch_page("app_pages/annotate.py")


def test_admin_sees_pending_accounts_and_an_sso_account_has_no_password_form(ui):
    pending = sso_user(ui, "s-1", "aaa-newcomer")  # first in the list: the one "Manage user" shows
    at = ui.app(ui.admin).run()
    at.switch_page("app_pages/admin.py").run()
    assert not at.exception, at.exception
    assert "Waiting for approval (first single sign-on): aaa-newcomer" in texts(at)
    assert "signs in through single sign-on" in texts(at)
    assert "Reset password" not in [b.label for b in at.button]
    at.selectbox[1].select("curator")
    next(b for b in at.button if b.label == "Approve with this role").click().run()
    assert not at.exception, at.exception
    with session_scope(ui.engine) as s:
        from curation.models import User

        assert s.get(User, pending.id).role == "curator"
    at = ui.app(pending).run()  # approved: its pages, and an Account page without a password form
    at.switch_page("app_pages/account.py").run()
    assert not at.exception, at.exception
    assert "single sign-on" in texts(at) and not at.text_input
