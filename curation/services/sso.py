"""Single sign-on through an OpenID Connect provider, beside the local passwords.

Streamlit does the protocol (``st.login``, with Authlib: the redirect, the code exchange, and the checks of the
ID token's signature, issuer, audience, expiry and nonce). What comes back is the token's claims; this module
turns them into a forkpaths account:

- an account is keyed by the provider's (issuer, subject), never by a name the user can edit; its user name is
  derived from the claims and made unique;
- a first sign-in creates a *pending* account (no role: every role check refuses it) that an admin approves by
  giving it a role, unless a configured claim (e.g. ``groups``) maps to a role; that mapping is recomputed at
  every sign-in, so a change at the provider shows on the next one;
- a sign-in then opens forkpaths's own session (:mod:`curation.services.sessions`), so sessions, sign-out and
  role checks are those of local accounts (see :func:`curation.services.sign_in.sign_in_sso`).

It also writes the ``[auth]`` section Streamlit reads (:func:`write_streamlit_secrets`) from the settings.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import secrets
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from curation.errors import AuthenticationError, SSOError
from curation.models import PENDING_ROLE, Role, User
from curation.settings import OIDCConfig, Settings

__all__ = [
    "SSOIdentity",
    "check_provider",
    "derive_username",
    "identity_from_claims",
    "mapped_role",
    "resolve_sso_user",
    "streamlit_auth_args",
    "write_streamlit_secrets",
]

log = logging.getLogger(__name__)
_NAME_BAD = re.compile(r"[^A-Za-z0-9._-]+")


def _retry_sentence() -> str:
    return "Nothing was stored; sign in with your forkpaths password below, or try again later."


def check_provider(config: OIDCConfig) -> dict[str, Any]:
    """Fetch the provider's discovery document, within ``config.timeout_s``; its contents on success.

    Asked before sending the browser to the provider, so that a provider that is down or slow gets a sentence
    on the sign-in page instead of an error page of the provider's.

    Raises:
        SSOError: no answer in time, an HTTP error, or something that is not a discovery document.
    """
    where = f"The identity provider at {config.issuer_hint}"
    seconds = f"{config.timeout_s:g} second{'' if config.timeout_s == 1 else 's'}"
    try:
        with urllib.request.urlopen(config.server_metadata_url, timeout=config.timeout_s) as answer:  # noqa: S310
            body = answer.read(1_000_000)
    except TimeoutError:
        raise SSOError(f"{where} did not answer within {seconds}. {_retry_sentence()}") from None
    except urllib.error.HTTPError as exc:
        raise SSOError(f"{where} answered HTTP {exc.code} to the request for its configuration. "
                       f"{_retry_sentence()}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise SSOError(f"{where} did not answer within {seconds}. {_retry_sentence()}") from None
        raise SSOError(f"{where} cannot be reached ({reason}). {_retry_sentence()}") from None
    try:
        metadata = json.loads(body)
    except ValueError:
        metadata = None
    if not isinstance(metadata, dict) or "authorization_endpoint" not in metadata:
        raise SSOError(f"{where} did not send an OpenID Connect configuration from {config.server_metadata_url}. "
                       f"{_retry_sentence()}")
    return metadata


@dataclass(frozen=True)
class SSOIdentity:
    """Who the provider says signed in: the checked claims of one ID token."""

    issuer: str
    subject: str
    claims: Mapping[str, Any]

    def check_not_expired(self, now: datetime | None = None) -> None:
        """Refuse a token past its ``exp`` (Streamlit's identity cookie outlives it by weeks).

        Raises:
            SSOError: expired.
        """
        exp = self.claims.get("exp")
        if isinstance(exp, int | float) and exp < (now or datetime.now(UTC)).timestamp():
            raise SSOError("The identity provider's sign-in has expired (its token ran out at "
                           f"{datetime.fromtimestamp(exp, UTC):%Y-%m-%d %H:%M:%S} UTC); sign in with it again.")

    @property
    def login_hash(self) -> str:
        """One provider sign-in: (issuer, subject, nonce, issued-at). It opens at most one forkpaths session."""
        parts = [self.issuer, self.subject, str(self.claims.get("nonce", "")), str(self.claims.get("iat", ""))]
        return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def identity_from_claims(claims: Mapping[str, Any], config: OIDCConfig) -> SSOIdentity:
    """The identity in an ID token's claims (as ``st.user`` holds them), after checking what forkpaths relies on.

    Streamlit (Authlib) has checked the signature, issuer, audience, expiry and nonce when the token arrived;
    the audience is checked again here because Streamlit's identity cookie outlives the token (30 days) and
    survives a change of client; the expiry is checked when the identity is about to open a session
    (:meth:`SSOIdentity.check_not_expired`).

    Raises:
        SSOError: no issuer or subject, or another application's token.
    """
    issuer, subject = str(claims.get("iss") or ""), str(claims.get("sub") or "")
    if not issuer or not subject:
        raise SSOError("The identity provider's answer names no issuer or no subject, so it cannot identify an "
                       f"account. {_retry_sentence()}")
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if config.client_id not in audiences:
        raise SSOError(f"The identity provider's token is meant for another application (audience {audience!r}, "
                       f"not forkpaths's client id '{config.client_id}'). {_retry_sentence()}")
    return SSOIdentity(issuer=issuer, subject=subject, claims=dict(claims))


def mapped_role(claims: Mapping[str, Any], config: OIDCConfig) -> Role | None:
    """The role the configured claim gives: the first entry of the mapping whose value the user has."""
    if not config.role_claim:
        return None
    value = claims.get(config.role_claim)
    have = {str(v) for v in value} if isinstance(value, list | tuple) else ({str(value)} if value else set())
    for claim_value, role in config.role_map:
        if claim_value in have:
            return Role(role)
    return None


def derive_username(*, session: Session, claims: Mapping[str, Any]) -> str:
    """A user name from the claims (preferred_username, else the e-mail's local part, else the name), reduced
    to the allowed characters and made unique with a number (``ada``, ``ada-2``, ...)."""
    email = str(claims.get("email") or "")
    for candidate in (claims.get("preferred_username"), email.split("@")[0], claims.get("name")):
        base = _NAME_BAD.sub("-", str(candidate or "")).strip("-._")[:56]
        if len(base) >= 2:
            break
    else:
        base = "sso-user"
    taken = set(session.exec(select(User.username).where(col(User.username).startswith(base))).all())
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def _display_name(claims: Mapping[str, Any], fallback: str) -> str:
    return str(claims.get("name") or claims.get("email") or fallback)[:128]


def _active_admins(session: Session) -> int:
    return len(session.exec(select(User.id).where(User.role == Role.ADMIN.value,
                                                  User.is_active == True)).all())  # noqa: E712


def resolve_sso_user(*, session: Session, identity: SSOIdentity, config: OIDCConfig) -> User:
    """The account of ``identity``, created at its first sign-in (pending unless the claim maps to a role).

    At every sign-in the claim's role is recomputed: a role that came from the claim follows it (and is
    withdrawn, back to pending, when the claim no longer maps to one); a role an admin gave stays unless the
    claim now maps to one. The last active admin is never demoted this way (an admin would be locked out).

    Raises:
        AuthenticationError: the account is deactivated.
    """
    user = session.exec(select(User).where(User.oidc_issuer == identity.issuer,
                                           User.oidc_subject == identity.subject)).first()
    role = mapped_role(identity.claims, config)
    if user is None:
        username = derive_username(session=session, claims=identity.claims)
        user = User(username=username, display_name=_display_name(identity.claims, username),
                    role=role.value if role else PENDING_ROLE, role_from_claim=role is not None,
                    oidc_issuer=identity.issuer, oidc_subject=identity.subject)
        session.add(user)
        session.flush()
        log.info("SSO: created %s account '%s' for %s", user.role or "pending", username, identity.issuer)
        return user
    if not user.is_active:
        raise AuthenticationError("This account is deactivated; ask an administrator.")
    new_role = user.role
    if role is not None:
        new_role = role.value
    elif user.role_from_claim:
        new_role = PENDING_ROLE
    if new_role != user.role:
        if user.role == Role.ADMIN.value and _active_admins(session) <= 1:
            log.warning("SSO: the claim would take the admin role from '%s', the last active admin; kept",
                        user.username)
        else:
            log.info("SSO: '%s' is now %s (claim %s)", user.username, new_role or "pending", config.role_claim)
            user.role = new_role
    user.role_from_claim = role is not None and user.role == role.value
    user.display_name = _display_name(identity.claims, user.username)
    session.add(user)
    return user


def _cookie_secret(settings: Settings) -> str:
    if settings.oidc_cookie_secret is not None:
        return settings.oidc_cookie_secret.get_secret_value()
    path = settings.oidc_cookie_secret_file
    if path.is_file() and len(path.read_text(encoding="utf-8").strip()) >= 32:
        return path.read_text(encoding="utf-8").strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(32)
    path.touch(mode=0o600)
    path.write_text(secret, encoding="utf-8")
    return secret


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def write_streamlit_secrets(settings: Settings, config: OIDCConfig) -> Path:
    """Write the ``[auth]`` section Streamlit's ``st.login`` reads, readable by its owner only; its path."""
    path = settings.streamlit_secrets_file
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        "# Written by `forkpaths run` from the FORKPATHS_OIDC_* settings at each start; edits are overwritten.",
        "[auth]",
        f"redirect_uri = {_toml_string(config.redirect_uri)}",
        f"cookie_secret = {_toml_string(_cookie_secret(settings))}",
        f"client_id = {_toml_string(config.client_id)}",
        f"client_secret = {_toml_string(config.client_secret)}",
        f"server_metadata_url = {_toml_string(config.server_metadata_url)}",
        f"client_kwargs = {{ scope = {_toml_string(config.scope)} }}",
        "",
    ]
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def streamlit_auth_args(settings: Settings) -> list[str]:
    """``streamlit run`` options that give the app single sign-on (none when it is not configured): the
    secrets file written from the settings. Streamlit reads ``[auth]`` only from its secrets, at start."""
    config = settings.oidc_config()
    if config is None:
        return []
    return ["--secrets.files", str(write_streamlit_secrets(settings, config))]
