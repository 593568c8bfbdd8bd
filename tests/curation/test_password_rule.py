"""Passwords: 10 to 1,024 characters and not a common one; an over-long password is refused before any hashing,
at sign-in too; the rule reads the same in the services and the command line."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher

from curation.db import session_scope
from curation.errors import AccountError, AuthenticationError
from curation.models import Role
from curation.services import accounts
from curation.services.sign_in import sign_in
from curation.settings import SessionPolicy, ThrottlePolicy
from tests import factories as f
from tests.cli_runner import forkpaths

FIFTY_MB = "x" * (50 * 2**20)


class CountingHasher(PasswordHasher):
    """The real Argon2 hasher, counting the passwords it was given and how long the longest was."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[int] = []

    def hash(self, password, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.calls.append(len(password))
        return super().hash(password, *args, **kwargs)

    def verify(self, hash, password):  # type: ignore[no-untyped-def]  # noqa: A002 - argon2's own name
        self.calls.append(len(password))
        return super().verify(hash, password)


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> CountingHasher:
    counting = CountingHasher()
    monkeypatch.setattr(accounts, "_hasher", counting)
    return counting


def test_the_rule_when_an_admin_creates_or_resets_an_account(engine):
    admin = f.user(engine, "root", Role.ADMIN)
    with session_scope(engine) as s:
        with pytest.raises(AccountError, match="has 9 characters; at least 10 are needed"):
            accounts.create_user(session=s, actor=admin, username="bob", password="abcdefghi", role=Role.ANALYST)
        for common in ("password123", "Password123", "qwertyuiop", "1234567890", " 1q2w3e4r5t "):
            with pytest.raises(AccountError, match="one of the most common ones"):
                accounts.create_user(session=s, actor=admin, username="bob", password=common, role=Role.ANALYST)
        with pytest.raises(AccountError, match="has 1,025 characters; at most 1,024 are accepted"):
            accounts.create_user(session=s, actor=admin, username="bob", password="y" * 1025, role=Role.ANALYST)
        bob = accounts.create_user(session=s, actor=admin, username="bob", password="ten chars!", role=Role.ANALYST)
        longest = accounts.create_user(session=s, actor=admin, username="max", password="z" * 1024,
                                       role=Role.ANALYST)
        with pytest.raises(AccountError, match="one of the most common ones"):
            accounts.reset_password(session=s, actor=admin, user_id=bob.id, new_password="password123")
        with pytest.raises(AccountError, match="has 5 characters"):
            accounts.reset_password(session=s, actor=admin, user_id=bob.id, new_password="short")
    with session_scope(engine) as s:  # nothing half-stored: only the two good accounts, with their passwords
        assert accounts.authenticate(session=s, username="bob", password="ten chars!").id == bob.id
        assert accounts.authenticate(session=s, username="max", password="z" * 1024).id == longest.id


@pytest.mark.parametrize("padded", ["password  ", "  12345678", "qwerty    ", "\tfootball\t", " " * 10, "\t" * 12])
def test_spaces_around_a_password_do_not_make_it_long_enough(padded: str):
    """A common password padded with spaces to 10 characters, or a password of spaces only, passed the rule:
    the common list was cut at 10 characters before the comparison stripped the spaces."""
    with pytest.raises(AccountError, match="at least 10 are needed"):
        accounts.check_new_password(padded)


def test_the_rule_when_one_changes_ones_own_password(engine):
    ana = f.user(engine, "ana")
    with session_scope(engine) as s:
        with pytest.raises(AccountError, match="one of the most common ones"):
            accounts.change_own_password(session=s, actor=ana, old_password=f.PASSWORD, new_password="iloveyou12")
        with pytest.raises(AccountError, match="has 6 characters"):
            accounts.change_own_password(session=s, actor=ana, old_password=f.PASSWORD, new_password="abc123")
    with session_scope(engine) as s:
        assert accounts.authenticate(session=s, username="ana", password=f.PASSWORD).username == "ana"


def test_an_over_long_password_is_refused_before_it_is_hashed(engine, hasher):
    ana = f.user(engine, "ana")
    admin = f.user(engine, "root", Role.ADMIN)
    hasher.calls.clear()
    with session_scope(engine) as s:
        with pytest.raises(AuthenticationError, match="has 52,428,800 characters; at most 1,024 are accepted"):
            accounts.authenticate(session=s, username="ana", password=FIFTY_MB)
        with pytest.raises(AuthenticationError, match="at most 1,024"):
            accounts.authenticate(session=s, username="nobody", password=FIFTY_MB)
        with pytest.raises(AuthenticationError, match="The current password has 52,428,800 characters"):
            accounts.change_own_password(session=s, actor=ana, old_password=FIFTY_MB, new_password="a new long one")
        with pytest.raises(AccountError, match="has 52,428,800 characters"):
            accounts.change_own_password(session=s, actor=ana, old_password=f.PASSWORD, new_password=FIFTY_MB)
        with pytest.raises(AccountError, match="has 52,428,800 characters"):
            accounts.create_user(session=s, actor=admin, username="big", password=FIFTY_MB, role=Role.ANALYST)
        with pytest.raises(AccountError, match="has 52,428,800 characters"):
            accounts.reset_password(session=s, actor=admin, user_id=ana.id, new_password=FIFTY_MB)
    assert hasher.calls == []  # not one of these reached Argon2
    with session_scope(engine) as s:
        accounts.authenticate(session=s, username="ana", password=f.PASSWORD)
    assert hasher.calls == [len(f.PASSWORD)]  # the counter does see real checks


def test_sign_in_refuses_an_over_long_password_as_a_failed_attempt(engine, hasher):
    f.user(engine, "ana")
    hasher.calls.clear()
    with session_scope(engine) as s:
        outcome = sign_in(session=s, username="ana", password=FIFTY_MB, client="127.0.0.1",
                          session_policy=SessionPolicy(), throttle=ThrottlePolicy())
    assert outcome.user is None and outcome.token is None
    assert str(outcome.error) == ("The password has 52,428,800 characters; at most 1,024 are accepted. "
                                  "Nothing was checked.")
    assert hasher.calls == []


def test_generated_passwords_satisfy_the_rule(tmp_path):
    for _ in range(200):
        accounts.check_new_password(accounts.generate_password())
    from curation.bootstrap import initialise
    from curation.settings import Settings

    report = initialise(Settings(data_dir=tmp_path / "data", database_url=None, load_starter_datasets=False))
    assert report.generated_password is not None
    accounts.check_new_password(report.generated_password)  # the first admin's, shown once at first start
    with session_scope(report.engine) as s:
        assert accounts.authenticate(session=s, username="admin", password=report.generated_password)


_cli = forkpaths  # in this process; process=True for the real command


def test_the_command_line_says_what_is_wrong_with_a_password(tmp_path):
    r = _cli(tmp_path, "create-user", "bob", "--password-stdin", stdin="short\n", process=True)  # the real one, once
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "error: The password has 5 characters; at least 10 are needed. A password has 10 to 1,024" in r.stderr
    r = _cli(tmp_path, "create-user", "bob", "--password-stdin", stdin="password123\n")
    assert r.returncode == 2 and "one of the most common ones" in r.stderr
    r = _cli(tmp_path, "create-user", "bob", "--password-stdin", stdin="p" * 2000 + "\n")
    assert r.returncode == 2 and "has 2,000 characters; at most 1,024 are accepted" in r.stderr
    r = _cli(tmp_path, "create-user", "--help")
    assert "10 to 1,024 characters" in " ".join(r.stdout.split())
    r = _cli(tmp_path, "create-user", "bob", "--password-stdin", stdin="my own long one\n")
    assert r.returncode == 0, r.stderr
