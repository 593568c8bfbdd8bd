"""A real OpenID Connect provider on 127.0.0.1 for the single-sign-on tests: oidc-provider-mock (Authlib's
authorization server on Flask), which signs in any subject typed on its page with the claims the test gave it,
and can refuse (its "Deny" button).

On top, the faults a provider can have, switched on by the test: answering slowly, or issuing an ID token that
does not verify, is meant for another application, or has expired (the provider's own token, re-signed with its
own key after the change, so only the named fault differs)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import flask
import oidc_provider_mock
import werkzeug.serving
from joserfc import jwk, jwt

__all__ = ["Provider", "running_provider"]


@dataclass
class Provider:
    url: str
    server: Any
    #: None, "slow", "bad_signature", "wrong_audience" or "expired"
    fault: str | None = None
    release: threading.Event = field(default_factory=threading.Event)

    def set_user(self, sub: str, **claims: Any) -> None:
        """What the provider says about ``sub`` from now on (its next sign-in carries these claims)."""
        request = urllib.request.Request(f"{self.url}/users/{sub}", data=json.dumps(claims).encode(), method="PUT",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 204

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def _tamper(id_token: str, fault: str, key: Any) -> str:
    token = jwt.decode(id_token, key)
    header, claims = dict(token.header), dict(token.claims)
    if fault == "wrong_audience":
        claims["aud"] = "another-application"
    elif fault == "expired":
        claims["iat"], claims["exp"] = int(time.time()) - 7200, int(time.time()) - 3600
    elif fault == "bad_signature":  # the same claims and key id, signed by a key that is not the provider's
        return jwt.encode(header, claims, jwk.RSAKey.generate_key(2048, private=True))
    return jwt.encode(header, claims, key)


@contextmanager
def running_provider() -> Iterator[Provider]:
    app = oidc_provider_mock.app()
    server = werkzeug.serving.make_server("127.0.0.1", 0, app, threaded=True)
    provider = Provider(url=f"http://127.0.0.1:{server.server_port}", server=server)

    @app.before_request
    def _slow() -> None:
        if provider.fault == "slow" and flask.request.path.endswith("/openid-configuration"):
            provider.release.wait(timeout=30)  # until the test has seen the sentence (or gives up)

    @app.after_request
    def _faulty_token(response: flask.Response) -> flask.Response:
        if flask.request.path == "/oauth2/token" and provider.fault in ("bad_signature", "wrong_audience", "expired"):
            data = response.get_json()
            key = jwk.import_key(flask.g.oidc_provider_mock_storage.jwk.as_dict(is_private=True))
            data["id_token"] = _tamper(data["id_token"], provider.fault, key)
            response.set_data(json.dumps(data))
        return response

    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield provider
    finally:
        provider.release.set()
        server.shutdown()
        thread.join(5)
