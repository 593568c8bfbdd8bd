"""The generated first-admin password file lives only as long as that password signs in."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from curation.bootstrap import initialise
from curation.db import session_scope
from curation.errors import AuthenticationError
from curation.models import Role, User
from curation.services import accounts
from curation.settings import Settings
from tests import factories as f


def _write(path: Path, username: str, password: str) -> Path:
    path.write_text(f"user name: {username}\npassword: {password}\nSign in, then change it.\n", encoding="utf-8")
    return path


def test_changing_the_password_removes_the_file(engine, tmp_path):
    with session_scope(engine) as s:
        admin, generated = accounts.ensure_first_admin(session=s, username="admin", password=None)
    path = _write(tmp_path / "first-admin-password.txt", "admin", generated)
    with session_scope(engine) as s:  # still valid: kept
        assert accounts.forget_stale_password_file(session=s, path=path) is False
    assert path.exists()
    # a wrong current password changes nothing, the file stays
    with session_scope(engine) as s, pytest.raises(AuthenticationError):
        accounts.change_own_password(session=s, actor=admin, old_password="nope nope",
                                     new_password="my own secret", first_admin_password_file=path)
    assert path.exists()
    with session_scope(engine) as s:
        accounts.change_own_password(session=s, actor=admin, old_password=generated,
                                     new_password="my own secret", first_admin_password_file=path)
    assert not path.exists()


def test_an_admin_reset_of_the_first_admin_removes_the_file_but_others_do_not(engine, tmp_path):
    with session_scope(engine) as s:
        first, generated = accounts.ensure_first_admin(session=s, username="admin", password=None)
    other = f.user(engine, "second", Role.ADMIN)
    ana = f.user(engine, "ana")
    path = _write(tmp_path / "pw.txt", "admin", generated)
    with session_scope(engine) as s:
        accounts.reset_password(session=s, actor=other, user_id=ana.id, new_password="for ana only",
                                first_admin_password_file=path)
    assert path.exists()
    with session_scope(engine) as s:
        accounts.reset_password(session=s, actor=other, user_id=first.id, new_password="reset by second",
                                first_admin_password_file=path)
    assert not path.exists()


def test_start_removes_a_stale_file_and_the_page_hint_follows(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", database_url=None, load_starter_datasets=False)
    report = initialise(settings)
    path = settings.first_admin_password_file
    assert report.password_file == path and path.exists()
    initialise(settings)  # still valid: kept
    assert path.exists()
    with session_scope(report.engine) as s:  # changed while the app was stopped (e.g. another tool)
        admin = s.exec(select(User).where(User.username == "admin")).one()
        accounts.change_own_password(session=s, actor=admin, old_password=report.generated_password,
                                     new_password="changed elsewhere")
    assert path.exists()
    initialise(settings)
    assert not path.exists()


def test_an_unreadable_file_is_left_alone(engine, tmp_path):
    path = tmp_path / "pw.txt"
    path.write_bytes(b"\xff\xfe garbage")
    with session_scope(engine) as s:
        assert accounts.forget_stale_password_file(session=s, path=path) is False
    assert path.exists()
