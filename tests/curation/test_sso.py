"""Single sign-on accounts, on SQLite and PostgreSQL: created pending at the first sign-in, approved by an admin,
roles from a claim recomputed at every sign-in, keyed by (issuer, subject), throttled and sessioned like local
accounts. The browser flow against a real provider is tests/browser/test_sso.py."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import AccountError, PermissionDenied, SignInThrottled, SSOError
from curation.models import PENDING_ROLE, Role, User, utcnow
from curation.services import accounts
from curation.services.sessions import end_session, resume_auth_session
from curation.services.sign_in import sign_in_sso
from curation.services.sso import identity_from_claims, streamlit_auth_args
from curation.settings import OIDCConfig, SessionPolicy, Settings, ThrottlePolicy
from tests import factories as f

POLICY = SessionPolicy(max_age=timedelta(hours=8), idle=timedelta(minutes=30))
THROTTLE = ThrottlePolicy(max_failures=2, window=timedelta(minutes=15), first_delay=timedelta(seconds=30),
                          max_delay=timedelta(minutes=15))
ISSUER = "http://idp.example"
CONFIG = OIDCConfig(server_metadata_url=f"{ISSUER}/.well-known/openid-configuration", client_id="forkpaths",
                    client_secret="s", redirect_uri="http://localhost:8501/oauth2callback")
MAPPED = OIDCConfig(**{**CONFIG.__dict__, "role_claim": "groups",
                       "role_map": (("fp-admins", "admin"), ("fp-curators", "curator"))})


def claims(sub: str, *, nonce: str = "n1", **extra):
    """An ID token's claims; the same ``nonce`` (and issued-at) is the same provider sign-in."""
    return {"iss": ISSUER, "sub": sub, "aud": "forkpaths", "exp": int(time.time()) + 600, "iat": 1_790_000_000,
            "nonce": nonce, **extra}


def sso(engine, sub: str, config: OIDCConfig = CONFIG, *, client: str = "10.0.0.9", **extra):
    identity = identity_from_claims(claims(sub, **extra), config)
    with session_scope(engine) as s:
        return sign_in_sso(session=s, identity=identity, config=config, client=client, session_policy=POLICY,
                           throttle=THROTTLE)


def row(engine, sub: str) -> User:
    with session_scope(engine) as s:
        return s.exec(select(User).where(User.oidc_subject == sub)).one()


def test_first_sign_in_creates_a_pending_account_an_admin_approves(engine):
    admin = f.user(engine, "root", Role.ADMIN)
    out = sso(engine, "u-1", preferred_username="ada", name="Ada Lovelace", email="ada@lab.org")
    assert out.error is None and out.token
    user = row(engine, "u-1")
    assert (user.username, user.display_name, user.role, user.oidc_issuer) == ("ada", "Ada Lovelace", "", ISSUER)
    assert user.is_pending and user.password_hash == ""
    with session_scope(engine) as s:  # the session is forkpaths's own, and the pending user holds no role
        resumed = resume_auth_session(session=s, token=out.token, policy=POLICY)
        assert resumed.id == user.id
        with pytest.raises(PermissionDenied, match="waiting for an admin's approval"):
            accounts.require_role(resumed, Role.ANALYST, Role.CURATOR, Role.ADMIN, Role.EVALUATOR)
    with session_scope(engine) as s:
        accounts.set_user_role(session=s, actor=admin, user_id=user.id or 0, role=Role.CURATOR)
    again = sso(engine, "u-1", nonce="n2", preferred_username="ada")  # no claim mapping: the admin's role stays
    assert again.user is not None and again.user.role == Role.CURATOR.value
    assert row(engine, "u-1").username == "ada"  # the same account, not a second one


def test_accounts_are_keyed_by_issuer_and_subject_and_names_are_made_unique(engine):
    f.user(engine, "ada", Role.ANALYST)  # a local account already holds the name
    sso(engine, "u-1", preferred_username="ada")
    sso(engine, "u-2", preferred_username="ada")
    sso(engine, "u-3", email="grace.hopper@navy.mil")
    sso(engine, "u-4")  # no name at all
    assert [row(engine, s).username for s in ("u-1", "u-2", "u-3", "u-4")] == ["ada-2", "ada-3", "grace.hopper",
                                                                              "sso-user"]
    # a changed preferred_username at the provider does not make another account
    sso(engine, "u-1", nonce="n9", preferred_username="ada-lovelace")
    with session_scope(engine) as s:
        assert len(s.exec(select(User).where(User.oidc_subject == "u-1")).all()) == 1
    # an SSO account has no password here: a password sign-in, a reset or a change is refused
    admin = f.user(engine, "root", Role.ADMIN)
    with session_scope(engine) as s, pytest.raises(AccountError, match="single sign-on"):
        accounts.reset_password(session=s, actor=admin, user_id=row(engine, "u-1").id or 0,
                                new_password="a long enough one")


def test_role_claim_maps_and_is_recomputed_at_each_sign_in(engine):
    f.user(engine, "root", Role.ADMIN)
    assert sso(engine, "u-1", MAPPED, groups=["staff", "fp-curators"]).user.role == "curator"
    assert row(engine, "u-1").role_from_claim
    # downgraded at the provider: the next sign-in reflects it; out of every mapped group: pending again
    assert sso(engine, "u-1", MAPPED, nonce="n2", groups=["fp-admins"]).user.role == "admin"
    assert sso(engine, "u-1", MAPPED, nonce="n3", groups=["staff"]).user.role == PENDING_ROLE
    # no mapped group at first: pending, like without a mapping
    assert sso(engine, "u-2", MAPPED, groups="staff").user.role == PENDING_ROLE
    # a role an admin gave stays when the claim maps to nothing
    with session_scope(engine) as s:
        admin = s.exec(select(User).where(User.username == "root")).one()
        accounts.set_user_role(session=s, actor=admin, user_id=row(engine, "u-2").id or 0, role=Role.ANALYST)
    assert sso(engine, "u-2", MAPPED, nonce="n2", groups=[]).user.role == "analyst"


def test_the_last_admin_is_not_demoted_by_the_claim(engine):
    assert sso(engine, "boss", MAPPED, groups=["fp-admins"]).user.role == "admin"
    assert sso(engine, "boss", MAPPED, nonce="n2", groups=[]).user.role == "admin"


def test_one_provider_sign_in_opens_one_session_and_deactivation_refuses(engine):
    admin = f.user(engine, "root", Role.ADMIN)
    first = sso(engine, "u-1", preferred_username="ada")
    with session_scope(engine) as s:
        end_session(session=s, token=first.token or "")
    replay = sso(engine, "u-1", preferred_username="ada")  # the same nonce and iat: the same provider sign-in
    assert replay.reused and replay.token is None
    with session_scope(engine) as s:
        accounts.set_user_active(session=s, actor=admin, user_id=row(engine, "u-1").id or 0, active=False)
    out = sso(engine, "u-1", nonce="n2")
    assert out.token is None and "deactivated" in str(out.error)
    out = sso(engine, "u-1", nonce="n3")  # the second refusal reaches the limit of 2: throttled from now on
    assert isinstance(sso(engine, "u-1", nonce="n4").error, SignInThrottled)


def test_a_refused_token_creates_no_account(engine):
    wrong_audience = {**claims("u-1"), "aud": "someone-else"}
    with pytest.raises(SSOError, match="meant for another application"):
        identity_from_claims(wrong_audience, CONFIG)
    expired = identity_from_claims({**claims("u-1"), "exp": int(time.time()) - 60}, CONFIG)
    with session_scope(engine) as s:
        out = sign_in_sso(session=s, identity=expired, config=CONFIG, client="c", session_policy=POLICY,
                          throttle=THROTTLE)
    assert out.token is None and isinstance(out.error, SSOError) and "has expired" in str(out.error)
    with pytest.raises(SSOError, match="no subject"):
        identity_from_claims({**claims("u-1"), "sub": ""}, CONFIG)
    with session_scope(engine) as s:
        assert s.exec(select(User).where(User.oidc_subject == "u-1")).first() is None
    assert utcnow()  # the clock the sessions use is the same


def test_settings_become_streamlits_auth_section(tmp_path):
    plain = Settings(data_dir=tmp_path, _env_file=None)
    assert plain.oidc_config() is None and streamlit_auth_args(plain) == []
    cfg = Settings(data_dir=tmp_path, oidc_issuer="http://idp.example/", oidc_client_id="fp",
                   oidc_client_secret="sec\"ret", oidc_role_claim="groups", oidc_role_map={"g": "curator"},
                   _env_file=None)
    args = streamlit_auth_args(cfg)
    assert args[0] == "--secrets.files"
    import tomllib
    from pathlib import Path

    path = Path(args[1])
    auth = tomllib.loads(path.read_text())["auth"]
    assert auth["server_metadata_url"] == "http://idp.example/.well-known/openid-configuration"
    assert (auth["client_id"], auth["client_secret"]) == ("fp", 'sec"ret')
    assert len(auth["cookie_secret"]) >= 32 and path.stat().st_mode & 0o077 == 0
    again = tomllib.loads(Path(streamlit_auth_args(cfg)[1]).read_text())["auth"]
    assert again["cookie_secret"] == auth["cookie_secret"]  # kept across restarts
    with pytest.raises(ValueError, match="'boss', which is not one of"):
        Settings(data_dir=tmp_path, oidc_issuer="http://x", oidc_client_id="fp", oidc_role_map={"g": "boss"},
                 _env_file=None)
    from curation.settings import Settings as S

    assert set(S._known_roles({r.value: r.value for r in Role})) == {r.value for r in Role}  # the same roles


def test_the_cli_acts_as_an_sso_account(tmp_path):
    """``--as USER`` names an SSO account by its derived user name: an approved one acts, a pending one is told."""
    from curation.db import make_engine
    from tests.cli_runner import forkpaths

    assert forkpaths(tmp_path, "add-dataset", str(f.tiny_blade_folder(tmp_path / "src"))).returncode == 0
    engine = make_engine(f"sqlite:///{tmp_path / 'data' / 'forkpaths.db'}")
    sso(engine, "u-cora", MAPPED, preferred_username="cora", groups=["fp-curators"])
    sso(engine, "u-pat", MAPPED, preferred_username="pat")
    engine.dispose()
    done = forkpaths(tmp_path, "dataset", "archive", "storms", "--as", "cora")
    assert done.returncode == 0 and "Archived 'storms'" in done.stdout, done.stderr
    refused = forkpaths(tmp_path, "dataset", "restore", "storms", "--as", "pat")
    assert refused.returncode != 0
    assert "'pat' is waiting for an admin's approval" in refused.stderr + refused.stdout
