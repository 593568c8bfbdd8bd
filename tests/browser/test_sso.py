"""Single sign-on in Chromium against a real OpenID Connect provider on 127.0.0.1 (tests/browser/oidc_provider.py):
a first sign-in waits for approval, an admin approves it, a claim maps to a role and follows the provider, sign-out
ends the provider's session too; a provider that is slow, down, refuses, or sends a token that does not verify, is
for another application or has expired gets a sentence on the sign-in page, creates no account, and the password
form still signs in."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from curation.db import make_engine, session_scope
from curation.models import AuthSession, User
from tests.browser.helpers import ADMIN_PASSWORD, LiveApp, click, idle, serving, shot, sign_in, sign_out
from tests.browser.oidc_provider import Provider, running_provider

pytestmark = pytest.mark.browser
LABEL = "Example IdP"


@contextmanager
def app_with_sso(tmp_path: Path) -> Iterator[tuple[LiveApp, Provider]]:
    with running_provider() as idp:
        env = {
            "FORKPATHS_OIDC_ISSUER": idp.url,
            "FORKPATHS_OIDC_CLIENT_ID": "forkpaths-test",
            "FORKPATHS_OIDC_CLIENT_SECRET": "client secret",
            "FORKPATHS_OIDC_REDIRECT_URI": "http://127.0.0.1:{port}/oauth2callback",
            "FORKPATHS_OIDC_LABEL": LABEL,
            "FORKPATHS_OIDC_ROLE_CLAIM": "groups",
            "FORKPATHS_OIDC_ROLE_MAP": '{"fp-curators": "curator"}',
            "FORKPATHS_OIDC_TIMEOUT_S": "1",
        }
        with serving(tmp_path, env) as app:
            yield app, idp


def users(app: LiveApp) -> dict[str, User]:
    engine = make_engine(app.settings.resolved_database_url)
    try:
        with session_scope(engine) as s:
            rows = s.exec(select(User).where(User.oidc_subject != None)).all()  # noqa: E711
            return {u.oidc_subject or "": u for u in rows}
    finally:
        engine.dispose()


def open_sign_in(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("button", name=f"Sign in with {LABEL}").wait_for(timeout=60_000)
    idle(page)
    # the browser id cookie (it names this browser when the provider sends it back) is written by then
    page.wait_for_function("() => document.cookie.includes('forkpaths_sso_browser=')", timeout=10_000)


def sso_sign_in(page, app: LiveApp, idp: Provider, sub: str, *, deny: bool = False) -> None:
    """Press the SSO button, sign ``sub`` in at the provider (or deny), and wait until the app has answered."""
    open_sign_in(page, app.url)
    page.get_by_role("button", name=f"Sign in with {LABEL}").click()
    page.wait_for_url(re.compile(re.escape(idp.url) + r"/oauth2/authorize"), timeout=30_000)
    if deny:
        page.get_by_role("button", name="Deny").click()
    else:
        page.locator("input[name=sub]").fill(sub)
        page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(re.compile(re.escape(app.url) + r"/?$"), timeout=30_000)
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(timeout=60_000)
    page.wait_for_function("() => document.querySelector('h1') !== null", timeout=60_000)
    idle(page)


def sso_sign_out(page, app: LiveApp, idp: Provider) -> None:
    """Sign out: forkpaths's session ends and the browser goes to the provider to end its session there too."""
    page.get_by_role("button", name="Sign out").filter(visible=True).click()
    page.wait_for_url(re.compile(re.escape(idp.url) + r"/oauth2/end_session"), timeout=30_000)
    page.get_by_role("button", name="End session").click()
    page.wait_for_url(re.compile(re.escape(app.url)), timeout=30_000)
    page.get_by_role("button", name=f"Sign in with {LABEL}").wait_for(timeout=60_000)
    idle(page)


def test_sso_sign_in_waits_for_approval_maps_roles_and_signs_out(browser, tmp_path: Path, shots: Path):
    with app_with_sso(tmp_path) as (app, idp):
        idp.set_user("sub-ada", preferred_username="ada", name="Ada Lovelace", groups=["staff"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        open_sign_in(page, app.url)
        # local passwords stay beside SSO (the form is drawn after the button: waited for, not sampled)
        expect(page.get_by_label("User name", exact=True)).to_be_visible(timeout=60_000)
        shot(page, shots / "01-sign-in-with-sso.png")

        sso_sign_in(page, app, idp, "sub-ada")
        page.get_by_role("heading", name=re.compile("Waiting for approval")).wait_for()
        ada = users(app)["sub-ada"]
        assert (ada.username, ada.role, ada.oidc_issuer) == ("ada", "", idp.url)
        page.goto(f"{app.url}/annotate")  # every address shows only that page
        page.get_by_role("heading", name=re.compile("Waiting for approval")).wait_for(timeout=60_000)
        idle(page)
        assert page.get_by_role("link", name="Annotate").count() == 0
        shot(page, shots / "02-pending-approval.png")

        sso_sign_out(page, app, idp)
        engine = make_engine(app.settings.resolved_database_url)
        with session_scope(engine) as s:  # forkpaths's own session of that sign-in has ended
            rows = s.exec(select(AuthSession).where(AuthSession.user_id == ada.id)).all()
            assert len(rows) == 1 and rows[0].end_reason == "sign_out" and rows[0].sso_login
        engine.dispose()

        admin = browser.new_page(viewport={"width": 1300, "height": 900})  # the admin approves on the Users page
        sign_in(admin, app.url, "admin", ADMIN_PASSWORD, open_page="Users & assignments")
        admin.get_by_text("Waiting for approval (first single sign-on): ada").wait_for()
        form = admin.get_by_test_id("stForm").filter(has_text="Approve with this role")
        form.get_by_role("combobox").click()
        admin.get_by_role("option", name="analyst", exact=True).click()
        expect(form.get_by_role("combobox")).to_have_value("analyst")
        shot(admin, shots / "03-admin-approves.png")
        click(admin, "Approve with this role")
        assert users(app)["sub-ada"].role == "analyst"

        sso_sign_in(page, app, idp, "sub-ada")
        page.get_by_text("Signed in as").wait_for()
        page.get_by_role("link", name="Annotate").wait_for()
        shot(page, shots / "04-approved-analyst.png")
        sso_sign_out(page, app, idp)

        # a claim that maps to a role: curator at once, and the next sign-in follows the provider's change
        idp.set_user("sub-cora", preferred_username="cora", groups=["fp-curators"])
        sso_sign_in(page, app, idp, "sub-cora")
        page.get_by_role("link", name="Datasets").wait_for()
        assert users(app)["sub-cora"].role == "curator"
        sso_sign_out(page, app, idp)
        idp.set_user("sub-cora", preferred_username="cora", groups=["staff"])  # removed from the group
        sso_sign_in(page, app, idp, "sub-cora")
        page.get_by_role("heading", name=re.compile("Waiting for approval")).wait_for()
        assert users(app)["sub-cora"].role == ""
        shot(page, shots / "05-curator-removed-from-group.png")


FAULTS = [
    ("bad_signature", "signature does not verify"),
    ("wrong_audience", "meant for another application"),
    ("expired", "already expired"),
]


def test_provider_faults_leave_a_sentence_no_account_and_password_sign_in(browser, tmp_path: Path, shots: Path):
    with app_with_sso(tmp_path) as (app, idp):
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        alert = page.locator("[data-testid='stAlertContentError']").first

        idp.fault = "slow"  # the provider's configuration does not come within FORKPATHS_OIDC_TIMEOUT_S
        open_sign_in(page, app.url)
        click(page, f"Sign in with {LABEL}")
        expect(alert).to_contain_text("did not answer within 1 second.", timeout=60_000)
        assert page.url.startswith(app.url)  # the browser stayed here
        shot(page, shots / "01-provider-slow.png")
        idp.release.set()
        idp.fault = None

        sso_sign_in(page, app, idp, "sub-x", deny=True)  # the provider refuses the sign-in
        expect(alert).to_contain_text("did not sign you in (it answered 'access_denied')", timeout=60_000)
        shot(page, shots / "02-provider-denied.png")

        for n, (fault, words) in enumerate(FAULTS, start=3):
            idp.fault = fault
            sso_sign_in(page, app, idp, f"sub-{fault}")
            expect(alert).to_contain_text(words, timeout=60_000)
            text = alert.inner_text()
            assert words in text and "Nothing was stored" in text, text
            shot(page, shots / f"0{n}-token-{fault}.png")
        idp.fault = None
        assert users(app) == {}  # no account was created by any of them

        idp.stop()  # the provider is down
        open_sign_in(page, app.url)
        click(page, f"Sign in with {LABEL}")
        expect(alert).to_contain_text("cannot be reached", timeout=60_000)
        shot(page, shots / "06-provider-down.png")

        page.get_by_label("User name", exact=True).fill("admin")  # local sign-in still works
        page.get_by_label("Password", exact=True).fill(ADMIN_PASSWORD)
        click(page, "Sign in", exact=True)
        page.get_by_text("Signed in as").wait_for()
        assert users(app) == {}
        sign_out(page)
