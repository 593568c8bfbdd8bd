"""Single sign-on in the app: the button that sends the browser to the identity provider (``st.login``), and the
sentence shown when it comes back without a sign-in.

Streamlit handles the provider's answer itself (``/oauth2callback``): an answer it refuses (a token that does
not verify, is meant for another application or has expired; a refusal by the provider; a provider that stops
answering mid-way) sends the browser back to the app without an identity and only writes a line in the server
log. So that the person sees a sentence instead of an unexplained sign-in page:

- before leaving, the page notes "this browser went to sign in" under a random browser id, which a cookie of
  the app's origin (``SameSite=Lax``, so it comes along on the provider's redirect back) carries;
- a logging handler on Streamlit's auth routes files each refusal under the browser id of the request it was
  refusing (found on the route handler's stack: Streamlit logs from inside it), with the reason;
- back on the sign-in page without an identity, the noted attempt becomes a sentence, with the reason when one
  was filed. Notes live in this process (one app process serves a browser from start to end) for 10 minutes.
"""

from __future__ import annotations

import json
import logging
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field

import streamlit as st

from annotate_app import state
from curation.settings import OIDCConfig

__all__ = ["BROWSER_COOKIE", "failed_return", "forget_attempt", "note_attempt", "set_browser_cookie"]

BROWSER_COOKIE = "forkpaths_sso_browser"
_KEEP_S = 600.0
_AUTH_ROUTES_LOGGER = "streamlit.web.server.starlette.starlette_auth_routes"


@dataclass
class _Attempts:
    """Browser id -> (when it left for the provider, the refusal filed for it or None)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    started: dict[str, float] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)

    def forget_old(self) -> None:
        cutoff = time.monotonic() - _KEEP_S
        for browser in [b for b, t in self.started.items() if t < cutoff]:
            self.started.pop(browser, None)
            self.refused.pop(browser, None)


def _reason(record: logging.LogRecord) -> str:
    """What a refusal logged by Streamlit's auth routes was, in words (Authlib's and httpx's errors by name)."""
    message = record.getMessage()
    exc = record.exc_info[1] if record.exc_info else None
    if exc is None:
        if "Error during authentication" in message:  # the provider answered with an OAuth error
            code = message.split("Error during authentication:", 1)[1].split(".")[0].strip()
            return f"the identity provider did not sign you in (it answered '{code}')"
        return "the answer from the identity provider could not be matched to a sign-in started here"
    text, kind = str(exc), type(exc).__name__
    chain = f"{kind} {text} {type(exc.__cause__).__name__ if exc.__cause__ else ''}"
    if ("aud" in text or "azp" in text) and "Claim" in chain:  # azp: the party the token was issued to
        return "its token is meant for another application, not this forkpaths (wrong audience)"
    if "Expired" in chain or "expired" in text:
        return "its token has already expired (check that this server's clock and the provider's agree)"
    if "Signature" in chain or "signature" in text:
        return "its token's signature does not verify (it was not signed with the provider's published key)"
    if "Claim" in chain:
        return f"its token has an invalid claim ({text})"
    if any(k in chain for k in ("Timeout", "Connect", "Network", "Transport")):
        return "the identity provider stopped answering while the sign-in was being completed"
    return f"its answer was refused ({kind}: {text[:200]})"


class _RefusalHandler(logging.Handler):
    def __init__(self, attempts: _Attempts) -> None:
        super().__init__(level=logging.WARNING)
        self.attempts = attempts

    def emit(self, record: logging.LogRecord) -> None:
        browser = _browser_of_request()
        if browser is None:
            return
        with self.attempts.lock:
            if browser in self.attempts.started:
                self.attempts.refused[browser] = _reason(record)


def _browser_of_request() -> str | None:
    """The browser id cookie of the HTTP request Streamlit's auth route is handling (it logs from inside the
    handler, whose ``request`` is on the stack)."""
    frame = sys._getframe(1)
    for _ in range(40):
        if frame is None:
            return None
        request = frame.f_locals.get("request")
        cookies = getattr(request, "cookies", None)
        if isinstance(cookies, dict) or hasattr(cookies, "get"):
            value = cookies.get(BROWSER_COOKIE) if cookies is not None else None
            if value:
                return str(value)
        frame = frame.f_back  # type: ignore[assignment]
    return None


@st.cache_resource(show_spinner=False)
def _attempts() -> _Attempts:
    attempts = _Attempts()
    logging.getLogger(_AUTH_ROUTES_LOGGER).addHandler(_RefusalHandler(attempts))
    return attempts


def _browser_id() -> str:
    """This browser's id: the cookie it came with, else a new one (written by :func:`set_browser_cookie`)."""
    known = state.get(state.SSO_BROWSER)
    if known:
        return str(known)
    cookie = st.context.cookies.get(BROWSER_COOKIE)
    browser = cookie if isinstance(cookie, str) and 16 <= len(cookie) <= 64 else secrets.token_urlsafe(24)
    state.put(state.SSO_BROWSER, browser)
    return browser


def set_browser_cookie() -> None:
    """Write the browser id cookie (idempotent; a hidden frame, as for the session cookie)."""
    browser = _browser_id()
    if st.context.cookies.get(BROWSER_COOKIE) == browser:
        return
    value = json.dumps(f"{BROWSER_COOKIE}={browser}; Path=/; SameSite=Lax")
    with st.container(key="fp-sso-browser-cookie"):
        st.html("<style>.st-key-fp-sso-browser-cookie{position:absolute;width:0;height:0;overflow:hidden}</style>")
        st.iframe(f"<script>window.parent.document.cookie = {value};</script>", height=1, width=1)


def note_attempt() -> None:
    """This browser is leaving for the provider now."""
    attempts = _attempts()
    with attempts.lock:
        attempts.forget_old()
        browser = _browser_id()
        attempts.started[browser] = time.monotonic()
        attempts.refused.pop(browser, None)


def failed_return(config: OIDCConfig) -> str | None:
    """The sentence for a browser that left for the provider and came back without a sign-in (once), or None."""
    if not st.context.cookies.get(BROWSER_COOKIE):
        return None
    attempts = _attempts()
    browser = _browser_id()
    with attempts.lock:
        if attempts.started.pop(browser, None) is None:
            return None
        reason = attempts.refused.pop(browser, None)
    why = f": {reason}" if reason else " (the provider's answer was refused or never came back; the server log says why)"
    return (f"Signing in with {config.label} did not complete{why}. Nothing was stored; sign in with your "
            "forkpaths password below, or try again.")


def forget_attempt() -> None:
    """The browser came back signed in: its attempt is over."""
    attempts = _attempts()
    with attempts.lock:
        attempts.started.pop(_browser_id(), None)

