from __future__ import annotations

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import AccountError, AuthenticationError, PermissionDenied
from curation.models import Role, User
from curation.services import accounts
from tests import factories as f


def test_passwords_are_argon2_hashed_and_verified(engine):
    f.user(engine, "ana")
    with session_scope(engine) as s:
        row = s.exec(select(User).where(User.username == "ana")).one()
        assert row.password_hash.startswith("$argon2id$")
        assert f.PASSWORD not in row.password_hash
        assert accounts.authenticate(session=s, username="ana", password=f.PASSWORD).id == row.id
        with pytest.raises(AuthenticationError, match="Wrong user name or password"):
            accounts.authenticate(session=s, username="ana", password="nope-nope")
        with pytest.raises(AuthenticationError, match="Wrong user name or password"):
            accounts.authenticate(session=s, username="nobody", password=f.PASSWORD)


def test_outside_the_test_suite_passwords_get_argon2s_default_cost_and_a_cheap_hash_is_upgraded(engine, monkeypatch):
    """The suite hashes with argon2-cffi's cheapest profile (tests/conftest.py); the app never does unless told."""
    from argon2 import extract_parameters, profiles

    assert accounts._hasher.time_cost == profiles.CHEAPEST.time_cost  # this suite runs with the cheap profile
    f.user(engine, "ana")
    monkeypatch.delenv(accounts.INSECURE_TEST_HASHING_VARIABLE)
    default = accounts._password_hasher()
    assert (default.time_cost, default.memory_cost) == (profiles.RFC_9106_LOW_MEMORY.time_cost,
                                                        profiles.RFC_9106_LOW_MEMORY.memory_cost)
    monkeypatch.setattr(accounts, "_hasher", default)
    with session_scope(engine) as s:
        accounts.authenticate(session=s, username="ana", password=f.PASSWORD)
    with session_scope(engine) as s:
        stored = s.exec(select(User).where(User.username == "ana")).one().password_hash
    params = extract_parameters(stored)
    assert (params.time_cost, params.memory_cost) == (default.time_cost, default.memory_cost)
    with session_scope(engine) as s:
        assert accounts.authenticate(session=s, username="ana", password=f.PASSWORD).username == "ana"


def test_only_admins_manage_accounts(engine):
    admin = f.user(engine, "root", Role.ADMIN)
    curator = f.user(engine, "cur", Role.CURATOR)
    analyst = f.user(engine, "ana")
    with session_scope(engine) as s:
        for actor in (curator, analyst):
            with pytest.raises(PermissionDenied, match="admin"):
                accounts.create_user(session=s, actor=actor, username="x1", password=f.PASSWORD, role=Role.ADMIN)
            with pytest.raises(PermissionDenied):
                accounts.reset_password(session=s, actor=actor, user_id=analyst.id, new_password="whatever123")
            with pytest.raises(PermissionDenied):
                accounts.set_user_active(session=s, actor=actor, user_id=analyst.id, active=False)
            with pytest.raises(PermissionDenied):
                accounts.set_user_role(session=s, actor=actor, user_id=analyst.id, role=Role.ADMIN)
        with pytest.raises(PermissionDenied):
            accounts.list_users(session=s, actor=analyst)
        made = accounts.create_user(session=s, actor=admin, username="new.one", password=f.PASSWORD,
                                    role=Role.CURATOR)
        assert made.role == "curator"


def test_account_input_is_checked(engine):
    admin = f.user(engine, "root", Role.ADMIN)
    with session_scope(engine) as s:
        with pytest.raises(AccountError, match="at least 10"):
            accounts.create_user(session=s, actor=admin, username="bob", password="short", role=Role.ANALYST)
        with pytest.raises(AccountError, match="not allowed"):
            accounts.create_user(session=s, actor=admin, username="b o b", password=f.PASSWORD, role=Role.ANALYST)
        with pytest.raises(AccountError, match="already a user"):
            accounts.create_user(session=s, actor=admin, username="root", password=f.PASSWORD, role=Role.ANALYST)


def test_last_admin_cannot_be_removed(engine):
    admin = f.user(engine, "root", Role.ADMIN)
    other = f.user(engine, "root2", Role.ADMIN)
    with session_scope(engine) as s:
        with pytest.raises(AccountError, match="own account"):
            accounts.set_user_active(session=s, actor=admin, user_id=admin.id, active=False)
        accounts.set_user_active(session=s, actor=admin, user_id=other.id, active=False)
        with pytest.raises(AccountError, match="last active admin"):
            accounts.set_user_role(session=s, actor=admin, user_id=admin.id, role=Role.ANALYST)


def test_first_admin_is_created_once(engine):
    with session_scope(engine) as s:
        admin, generated = accounts.ensure_first_admin(session=s, username="boss", password=None)
        assert admin.role == "admin" and generated and len(generated) >= 12
    with session_scope(engine) as s:
        again, generated2 = accounts.ensure_first_admin(session=s, username="boss", password=None)
        assert again.id == admin.id and generated2 is None
        assert accounts.authenticate(session=s, username="boss", password=generated)
