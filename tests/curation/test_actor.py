"""Services judge the actor's current state: a User object loaded before a change is refused."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from sqlmodel import select

import curation.services
from curation.db import session_scope
from curation.errors import PermissionDenied, SessionExpired
from curation.models import Role, Transform, User
from curation.services import accounts
from curation.services.annotation import VariableInput, save_variable
from curation.services.datasets import assign_analysts, list_datasets
from curation.services.progress import progress_overview
from evaluation.specs import ColumnRef, VariableType
from tests import factories as f


def test_every_service_with_an_actor_judges_it():
    """Services are the public functions with a keyword-only ``actor``; new ones are caught here."""
    checked = 0
    unjudged = []
    for info in pkgutil.iter_modules(curation.services.__path__):
        module = importlib.import_module(f"curation.services.{info.name}")
        for name, fn in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != module.__name__:
                continue
            params = inspect.signature(fn).parameters
            is_service = "actor" in params and params["actor"].kind is inspect.Parameter.KEYWORD_ONLY
            checked += is_service
            if is_service and not getattr(fn, "__judges_actor__", False):
                unjudged.append(f"{module.__name__}.{name}")
    assert checked >= 25
    assert unjudged == [], f"decorate these with @judges_actor: {unjudged}"


def _variable() -> VariableInput:
    return VariableInput(variable_type=VariableType.IV, concept="femininity", rationale="r",
                         columns=[ColumnRef(name="masfem", rationale="x")])


def test_a_user_object_loaded_before_deactivation_cannot_write(engine, store):
    admin = f.user(engine, "root", Role.ADMIN)
    ana = f.user(engine, "ana")  # the "page" loaded ana here...
    ds = f.dataset(engine, store, assign=[ana])
    with session_scope(engine) as s:
        save_variable(session=s, actor=ana, dataset_id=ds.id, data=_variable())  # fine while active
        accounts.set_user_active(session=s, actor=admin, user_id=ana.id, active=False)
    with session_scope(engine) as s:  # ...and clicks after the admin deactivated her
        with pytest.raises(PermissionDenied, match="'ana' is deactivated; nothing was changed"):
            save_variable(session=s, actor=ana, dataset_id=ds.id, data=_variable())
        with pytest.raises(PermissionDenied, match="deactivated"):
            list_datasets(session=s, actor=ana)
    with session_scope(engine) as s:
        accounts.set_user_active(session=s, actor=admin, user_id=ana.id, active=True)
    with session_scope(engine) as s:  # reactivated, but that old object's session generation has ended
        with pytest.raises(SessionExpired, match="sign in again"):
            progress_overview(session=s, actor=ana)
        fresh = s.exec(select(User).where(User.username == "ana")).one()
        assert progress_overview(session=s, actor=fresh) is not None


def test_a_demoted_admin_object_is_refused(engine, store):
    boss = f.user(engine, "boss", Role.ADMIN)
    other = f.user(engine, "other", Role.ADMIN)
    ana = f.user(engine, "ana")
    ds = f.dataset(engine, store)
    with session_scope(engine) as s:
        accounts.set_user_role(session=s, actor=other, user_id=boss.id, role=Role.ANALYST)
    with session_scope(engine) as s:
        with pytest.raises(PermissionDenied, match="changed from admin to analyst"):
            assign_analysts(session=s, actor=boss, dataset_id=ds.id, user_ids=[ana.id])
        with pytest.raises(PermissionDenied, match="changed from admin to analyst"):
            accounts.set_user_role(session=s, actor=boss, user_id=other.id, role=Role.ANALYST)
        with pytest.raises(PermissionDenied, match="changed from admin to analyst"):
            accounts.create_user(session=s, actor=boss, username="mole", password=f.PASSWORD, role=Role.ADMIN)
    with session_scope(engine) as s:
        assert s.exec(select(User).where(User.username == "mole")).first() is None
        assert s.get(User, other.id).role == "admin"


def test_a_password_reset_refuses_objects_loaded_before_it(engine, store):
    admin = f.user(engine, "root", Role.ADMIN)
    ana = f.user(engine, "ana")
    ds = f.dataset(engine, store, assign=[ana])
    with session_scope(engine) as s:
        accounts.reset_password(session=s, actor=admin, user_id=ana.id, new_password="another password")
    with session_scope(engine) as s, pytest.raises(SessionExpired, match="password reset"):
        save_variable(session=s, actor=ana, dataset_id=ds.id, data=_variable())
    with session_scope(engine) as s:
        assert s.exec(select(Transform)).all() == []



def test_an_actor_is_judged_once_per_transaction_and_again_after_a_commit(engine, store):
    """Services that call services judge the actor once per transaction; a later transaction judges anew."""
    admin = f.user(engine, "root", Role.ADMIN)
    ana = f.user(engine, "ana")
    ds = f.dataset(engine, store, assign=[ana])
    statements: list[str] = []
    from sqlalchemy import event

    def seen(conn, cursor, statement, *args):
        if 'FROM "user"' in statement or "FROM user" in statement:
            statements.append(statement)

    with session_scope(engine) as s:  # one session, reused across commits, as a long-lived caller might
        event.listen(engine, "before_cursor_execute", seen)
        try:
            ana_row = s.exec(select(User).where(User.id == ana.id)).one()
            statements.clear()
            save_variable(session=s, actor=ana_row, dataset_id=ds.id, data=_variable())
            assert list_datasets(session=s, actor=ana_row)
            assert len(statements) == 1, statements  # the second call in the same transaction trusts the first
        finally:
            event.remove(engine, "before_cursor_execute", seen)
        s.commit()
        with session_scope(engine) as other:
            accounts.set_user_active(session=other, actor=admin, user_id=ana.id, active=False)
        with pytest.raises(PermissionDenied, match="deactivated"):  # a new transaction: judged again
            save_variable(session=s, actor=ana_row, dataset_id=ds.id, data=_variable())
