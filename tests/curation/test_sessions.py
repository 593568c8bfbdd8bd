"""Server-side sign-in sessions and sign-in throttling, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import text
from sqlmodel import select

from curation.db import session_scope
from curation.errors import AuthenticationError, SessionExpired, SignInThrottled
from curation.models import AuthSession, Role, SignInThrottle, utcnow
from curation.services import accounts
from curation.services.sessions import end_session, hash_token, resume_auth_session
from curation.services.sign_in import sign_in
from curation.settings import SessionPolicy, ThrottlePolicy
from tests import factories as f

POLICY = SessionPolicy(max_age=timedelta(hours=8), idle=timedelta(minutes=30))
THROTTLE = ThrottlePolicy(max_failures=5, window=timedelta(minutes=15), first_delay=timedelta(seconds=30),
                          max_delay=timedelta(minutes=15))


def attempt(engine, username, password, *, client="10.0.0.1", now=None):
    with session_scope(engine) as s:
        return sign_in(session=s, username=username, password=password, client=client, session_policy=POLICY,
                       throttle=THROTTLE, now=now)


def resume(engine, token, now=None):
    with session_scope(engine) as s:
        return resume_auth_session(session=s, token=token, policy=POLICY, now=now)


def expect_ended(engine, token, match, now=None):
    with pytest.raises(SessionExpired, match=match):
        resume(engine, token, now)
    # ending is committed: the same token stays refused, with the same reason
    with pytest.raises(SessionExpired, match=match):
        resume(engine, token, (now or utcnow()) + timedelta(seconds=1))


def test_a_session_is_created_validated_and_only_its_hash_stored(engine):
    f.user(engine, "ana")
    out = attempt(engine, "ana", f.PASSWORD)
    assert out.error is None and out.user.username == "ana" and len(out.token) >= 40
    assert resume(engine, out.token).username == "ana"
    with engine.connect() as conn:
        dump = " ".join(str(r) for r in conn.execute(text("select * from auth_session")).all())
    assert out.token not in dump and hash_token(out.token) in dump
    with pytest.raises(SessionExpired, match="signed out"):
        resume(engine, out.token + "x")
    other = attempt(engine, "ana", f.PASSWORD)
    assert other.token != out.token and resume(engine, other.token).username == "ana"


def test_sessions_expire_and_idle_out(engine):
    f.user(engine, "ana")
    t0 = utcnow()
    token = attempt(engine, "ana", f.PASSWORD, now=t0).token
    # each click within the idle time keeps it alive, up to the absolute lifetime
    for minutes in range(25, 8 * 60 - 25, 25):
        assert resume(engine, token, t0 + timedelta(minutes=minutes)).username == "ana"
    expect_ended(engine, token, "expired", t0 + timedelta(hours=8))
    idle = attempt(engine, "ana", f.PASSWORD, now=t0).token
    assert resume(engine, idle, t0 + timedelta(minutes=29)).username == "ana"
    expect_ended(engine, idle, "without activity", t0 + timedelta(minutes=29 + 31))


def test_sign_out_ends_only_that_session(engine):
    f.user(engine, "ana")
    a, b = attempt(engine, "ana", f.PASSWORD).token, attempt(engine, "ana", f.PASSWORD).token
    with session_scope(engine) as s:
        end_session(session=s, token=a)
    expect_ended(engine, a, "You signed out")
    assert resume(engine, b).username == "ana"


def test_deactivation_and_password_reset_end_every_session(engine):
    admin = f.user(engine, "root", Role.ADMIN)
    f.user(engine, "ana")
    token = attempt(engine, "ana", f.PASSWORD).token
    with session_scope(engine) as s:
        accounts.set_user_active(session=s, actor=admin, user_id=2, active=False)
    expect_ended(engine, token, "deactivated")
    assert "deactivated" in str(attempt(engine, "ana", f.PASSWORD).error)
    with session_scope(engine) as s:
        accounts.set_user_active(session=s, actor=admin, user_id=2, active=True)
    expect_ended(engine, token, "deactivated")  # reactivating does not revive an ended session
    token = attempt(engine, "ana", f.PASSWORD).token
    with session_scope(engine) as s:
        accounts.reset_password(session=s, actor=admin, user_id=2, new_password="brand new password")
    expect_ended(engine, token, "password was changed")
    assert isinstance(attempt(engine, "ana", f.PASSWORD).error, AuthenticationError)
    assert attempt(engine, "ana", "brand new password").user is not None


def test_changing_ones_password_keeps_this_browser_and_ends_the_others(engine):
    ana = f.user(engine, "ana")
    here, there = attempt(engine, "ana", f.PASSWORD).token, attempt(engine, "ana", f.PASSWORD).token
    with session_scope(engine) as s, pytest.raises(AuthenticationError, match="current password is wrong"):
        accounts.change_own_password(session=s, actor=ana, old_password="not it at all",
                                     new_password="a new long one", keep_session_token=here)
    with session_scope(engine) as s:
        accounts.change_own_password(session=s, actor=ana, old_password=f.PASSWORD,
                                     new_password="a new long one", keep_session_token=here)
    assert resume(engine, here).username == "ana"
    expect_ended(engine, there, "password was changed")


def test_an_epoch_bump_outside_the_services_still_ends_sessions(engine):
    """Safety net: a session is tied to the auth_epoch it was opened with."""
    f.user(engine, "ana")
    token = attempt(engine, "ana", f.PASSWORD).token
    with engine.begin() as conn:
        conn.execute(text("update \"user\" set auth_epoch = auth_epoch + 1 where username = 'ana'"))
    expect_ended(engine, token, "password was changed")


# --- throttling ----------------------------------------------------------------------------------------------


def test_failures_per_account_are_throttled_with_a_growing_delay(engine):
    f.user(engine, "ana")
    t0 = utcnow()
    for i in range(4):  # from different clients: the account count alone throttles
        out = attempt(engine, "ana", "wrong password", client=f"10.0.0.{i}", now=t0)
        assert str(out.error) == "Wrong user name or password."
    fifth = attempt(engine, "ana", "wrong password", client="10.0.0.9", now=t0)
    assert isinstance(fifth.error, SignInThrottled)
    assert "Wrong user name or password. Too many failed sign-ins; try again in 30 seconds" in str(fifth.error)
    # while throttled even the right password is refused, without being checked, from any client
    out = attempt(engine, "ANA", f.PASSWORD, client="10.9.9.9", now=t0 + timedelta(seconds=10))
    assert isinstance(out.error, SignInThrottled) and out.token is None
    assert "try again in 20 seconds" in str(out.error)
    # after the delay one more failure doubles it
    out = attempt(engine, "ana", "wrong again", client="10.0.0.8", now=t0 + timedelta(seconds=31))
    assert "try again in 60 seconds" in str(out.error)
    out = attempt(engine, "ana", "wrong again", client="10.0.0.7", now=t0 + timedelta(seconds=92))
    assert "try again in 2 minutes" in str(out.error)
    # the right password after the delay signs in and clears the account's count
    ok = attempt(engine, "ana", f.PASSWORD, client="10.0.0.6", now=t0 + timedelta(seconds=213))
    assert ok.error is None and ok.token
    after = attempt(engine, "ana", "wrong", client="10.0.0.5", now=t0 + timedelta(seconds=214))
    assert str(after.error) == "Wrong user name or password."


def test_throttling_does_not_reveal_whether_an_account_exists(engine):
    f.user(engine, "ana")
    t0 = utcnow()
    msgs = {}
    for name in ("ana", "nobody-here"):
        for i in range(6):
            out = attempt(engine, name, "wrong password", client=f"{name}-{i}", now=t0)
        msgs[name] = str(out.error)
    assert msgs["ana"] == msgs["nobody-here"]
    assert msgs["ana"].startswith("Too many failed sign-ins; try again in 30 seconds")
    with engine.connect() as conn:  # typed names are not stored in clear
        keys = " ".join(r[0] for r in conn.execute(text("select key from sign_in_throttle")).all())
    assert "nobody" not in keys and "ana" not in keys


def test_failures_per_client_are_throttled_across_account_names(engine):
    f.user(engine, "ana")
    f.user(engine, "bob")
    t0 = utcnow()
    for i in range(5):
        attempt(engine, f"guess{i}", "wrong password", client="203.0.113.7", now=t0)
    out = attempt(engine, "bob", f.PASSWORD, client="203.0.113.7", now=t0 + timedelta(seconds=5))
    assert isinstance(out.error, SignInThrottled) and "try again in 25 seconds" in str(out.error)
    assert attempt(engine, "bob", f.PASSWORD, client="198.51.100.1", now=t0 + timedelta(seconds=5)).token
    # a success from the client does not clear the client's count (a guesser could sign in as themselves)
    assert attempt(engine, "ana", f.PASSWORD, client="203.0.113.7", now=t0 + timedelta(seconds=31)).token
    out = attempt(engine, "guess9", "wrong", client="203.0.113.7", now=t0 + timedelta(seconds=32))
    assert "try again in 60 seconds" in str(out.error)
    # old failures are forgotten after the window
    later = t0 + timedelta(minutes=40)
    assert str(attempt(engine, "guess9", "wrong", client="203.0.113.7", now=later).error) == (
        "Wrong user name or password.")


def test_eight_concurrent_wrong_passwords_get_five_answers(engine):
    """Like eight wrong passwords in five seconds from several server processes: the count is in the
    database and each attempt locks its rows, so exactly five passwords are checked."""
    f.user(engine, "ana")
    results: list[object] = []
    lock = threading.Lock()

    def one(i: int) -> None:
        out = attempt(engine, "ana", f"wrong {i}", client=f"client-{i}")
        with lock:
            results.append(out.error)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(results) == 8
    checked = [e for e in results if str(e).startswith("Wrong user name or password")]
    refused = [e for e in results if str(e).startswith("Too many failed sign-ins")]
    assert len(checked) == 5 and len(refused) == 3
    with session_scope(engine) as s:
        rows = s.exec(select(SignInThrottle)).all()
        # the refused three were not counted against their clients
        assert sorted(r.failures for r in rows) == [0] * 3 + [1] * 5 + [5]
        assert s.exec(select(AuthSession)).all() == []
