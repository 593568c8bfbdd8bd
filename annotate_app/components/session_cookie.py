"""The browser's session cookie: read from the page request, written and cleared by a line of JavaScript.

Streamlit gives a page read access to the cookies of the request that opened it (``st.context.cookies``) but
no way to set one, so a hidden ``st.iframe`` writes ``document.cookie`` of the app's page (an HTML iframe is
same-origin with the app: Streamlit sandboxes it with ``allow-same-origin``; tests/browser checks it works). Consequences, by design:

- the cookie cannot be ``HttpOnly`` (JavaScript sets it). What protects the session is on the server: the
  token is 256 random bits, only its hash is stored, every page run re-validates it, it expires and idles
  out, and sign-out, password changes and deactivation end it there, whatever the browser still holds;
- ``SameSite=Strict`` keeps other sites from sending it; ``Secure`` is added when the app is served over HTTPS;
- the script is idempotent (an absolute ``Expires``), so rendering it on every run is harmless.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from email.utils import format_datetime

import streamlit as st

COOKIE_PREFIX = "forkpaths_session_"


def cookie_name(database_url: str) -> str:
    """One cookie name per database: cookies ignore the port, so two forkpaths on one host (each with its
    own database) must not overwrite each other's; processes sharing one database share the name."""
    return COOKIE_PREFIX + hashlib.sha256(database_url.encode("utf-8")).hexdigest()[:12]

_HIDE = "<style>.st-key-fp-session-cookie{position:absolute;width:0;height:0;overflow:hidden}</style>"


def http_date(moment: datetime) -> str:
    return format_datetime(moment, usegmt=True)


def _script(name: str, action: str, token: str, expires: str) -> str:
    value = f"{name}={token}" if action == "set" else f"{name}="
    expiry = f"; Expires={expires}" if action == "set" else "; Max-Age=0"
    return f"""<script>
(function () {{
  const doc = window.parent.document;
  const secure = window.parent.location.protocol === "https:" ? "; Secure" : "";
  doc.cookie = {json.dumps(value + "; Path=/; SameSite=Strict" + expiry)} + secure;
}})();
</script>"""


def sync_cookie(name: str, action: tuple[str, str, str] | None) -> None:
    """Make the browser's cookie match ``action`` (see :func:`annotate_app.state.cookie_action`)."""
    if action is None:
        return
    kind, token, expires = action
    st.html(_HIDE)
    with st.container(key="fp-session-cookie"):
        st.iframe(_script(name, kind, token, expires), height=1, width=1)
