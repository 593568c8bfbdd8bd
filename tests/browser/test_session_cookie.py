"""A sign-in survives a reload and an opened link; sign-out ends it; wrong passwords are throttled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect
from sqlmodel import select

from curation.db import make_engine, session_scope
from curation.models import AuthSession, SignInThrottle
from curation.services.sessions import hash_token
from curation.services.sign_in import throttle_key
from tests.browser.helpers import ADMIN_PASSWORD, click, idle, shot

pytestmark = pytest.mark.browser


def _signed_in(page) -> None:
    page.get_by_text("Signed in as").wait_for(timeout=30_000)
    idle(page)


def _signed_out(page) -> None:
    page.get_by_role("button", name="Sign in").wait_for(timeout=30_000)
    idle(page)


def _cookie(context):
    return next((c for c in context.cookies() if c["name"].startswith("forkpaths_session_")), None)


def _cookie_once(page, context, *, present: bool):
    """The session cookie once it is there (``present``) or gone (the page's cookie frame writes it just after
    the run); fails after 10 s."""
    for _ in range(200):
        cookie = _cookie(context)
        if (cookie is not None) == present:
            return cookie
        page.wait_for_timeout(50)
    raise AssertionError(f"the session cookie is {'still missing' if present else 'still there'}: "
                         f"{context.cookies()}")


def test_sign_in_survives_reload_and_links_until_sign_out(browser, live_app, shots: Path):
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.goto(live_app.url)
    _signed_out(page)
    page.get_by_label("User name", exact=True).fill("admin")
    page.get_by_label("Password", exact=True).fill(ADMIN_PASSWORD)
    click(page, "Sign in")
    _signed_in(page)
    cookie = _cookie_once(page, context, present=True)
    assert cookie["sameSite"] == "Strict" and cookie["path"] == "/" and cookie["expires"] > 0
    engine = make_engine(live_app.settings.resolved_database_url)
    with session_scope(engine) as s:  # the cookie holds a live server-side session (stored as a hash)
        row = s.exec(select(AuthSession).where(AuthSession.token_hash == hash_token(cookie["value"]))).one()
        assert row.ended_at is None
    shot(page, shots / "01-signed-in.png")
    # the layout is not disturbed by the hidden cookie frame
    frame_box = page.locator(".st-key-fp-session-cookie").bounding_box()
    assert frame_box is None or frame_box["height"] <= 1

    page.reload()
    _signed_in(page)
    page.get_by_role("heading", name=re.compile("Stage-1 progress")).wait_for()  # strict: exactly one
    shot(page, shots / "02-after-reload.png")

    page.goto(f"{live_app.url}/account")  # a link opened directly (as from a bookmark or another tab)
    _signed_in(page)
    page.get_by_role("heading", name=re.compile("Account")).wait_for()
    shot(page, shots / "03-link-to-account.png")

    other = context.new_page()  # a second tab of the same browser
    other.goto(f"{live_app.url}/account")
    _signed_in(other)
    other.close()

    click(page, "Sign out")
    _signed_out(page)
    _cookie_once(page, context, present=False)
    with session_scope(engine) as s:
        row = s.exec(select(AuthSession).where(AuthSession.token_hash == hash_token(cookie["value"]))).one()
        assert row.ended_at is not None and row.end_reason == "sign_out"
    page.reload()
    _signed_out(page)
    assert page.get_by_text("Signed in as").count() == 0
    shot(page, shots / "04-signed-out-after-reload.png")

    # a stolen copy of the old cookie does not work either: the server ended the session
    thief = browser.new_context()
    thief.add_cookies([{**cookie}])
    tp = thief.new_page()
    tp.goto(f"{live_app.url}/account")
    _signed_out(tp)
    tp.get_by_text("signed out").first.wait_for()
    shot(tp, shots / "05-old-cookie-refused.png")
    # signing in at a page's address shows that page
    tp.get_by_label("User name", exact=True).fill("admin")
    tp.get_by_label("Password", exact=True).fill(ADMIN_PASSWORD)
    click(tp, "Sign in")
    _signed_in(tp)
    tp.get_by_role("heading", name=re.compile("Account")).wait_for()
    shot(tp, shots / "06-signed-in-where-the-link-pointed.png")
    thief.close()
    context.close()
    engine.dispose()


def test_eight_quick_wrong_passwords_are_throttled(browser, live_app, shots: Path):
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    page.goto(live_app.url)
    _signed_out(page)
    expected = ["Wrong user name or password."] * 4 + [
        "Wrong user name or password. Too many failed sign-ins; try again in 30 seconds"
    ] + ["Too many failed sign-ins; try again in"] * 3
    for i, want in enumerate(expected):
        page.get_by_label("User name", exact=True).fill("admin")
        page.get_by_label("Password", exact=True).fill(f"wrong guess {i}")
        click(page, "Sign in")
        alert = page.locator("[data-testid='stAlertContentError']").first
        expect(alert).to_contain_text(want)
    engine = make_engine(live_app.settings.resolved_database_url)
    with session_scope(engine) as s:  # exactly five passwords were checked; the rest refused unchecked
        assert s.exec(select(SignInThrottle).where(SignInThrottle.key == throttle_key("account", "admin"))
                      ).one().failures == 5
    engine.dispose()
    shot(page, shots / "01-throttled.png")
    # the right password is refused too while the delay runs, and says when to come back
    page.get_by_label("Password", exact=True).fill(ADMIN_PASSWORD)
    click(page, "Sign in")
    msg = page.locator("[data-testid='stAlertContentError']").first.inner_text()
    assert re.search(r"try again in \d+ seconds \(after \d\d:\d\d:\d\d UTC\)", msg), msg
    assert page.get_by_text("Signed in as").count() == 0
    shot(page, shots / "02-right-password-still-waits.png")
    page.close()
