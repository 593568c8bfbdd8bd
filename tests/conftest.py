"""Shared fixtures: a migrated database on SQLite and on the real PostgreSQL, and service-level factories."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from curation.db import make_engine, migrate

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_BLADE = PROJECT_ROOT.parent / "shared" / "blade"
SHARED_DISCOVERYBENCH = PROJECT_ROOT.parent / "shared" / "discoverybench"
PG_URL = os.environ.get("FORKPATHS_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")

_pg_state: dict[str, str | None] = {}


def pg_unavailable_reason() -> str | None:
    """None when the PostgreSQL test server answers; otherwise why not (shown as the skip reason)."""
    if "reason" not in _pg_state:
        try:
            eng = create_engine(PG_URL, connect_args={"connect_timeout": 3})
            with eng.connect() as conn:
                conn.execute(text("select 1"))
            eng.dispose()
            _pg_state["reason"] = None
        except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
            _pg_state["reason"] = f"PostgreSQL not reachable at {PG_URL}: {type(exc).__name__}: {exc}"[:300]
    return _pg_state["reason"]


def _pg_schema_engine() -> Iterator[Engine]:
    reason = pg_unavailable_reason()
    if reason:
        pytest.skip(reason)
    schema = f"fp_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine = make_engine(PG_URL, connect_args={"options": f"-csearch_path={schema}"})
    try:
        migrate(engine)
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A freshly migrated database, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        eng = make_engine(f"sqlite:///{tmp_path / 'forkpaths.db'}")
        migrate(eng)
        yield eng
        eng.dispose()
    else:
        yield from _pg_schema_engine()


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    eng = make_engine(f"sqlite:///{tmp_path / 'forkpaths.db'}")
    migrate(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store"
    path.mkdir()
    return path


@pytest.fixture
def shared_blade() -> Path:
    if not SHARED_BLADE.is_dir():
        pytest.skip(f"the shared BLADE data is absent (expected at {SHARED_BLADE})")
    return SHARED_BLADE


@pytest.fixture
def shared_discoverybench() -> Path:
    if not SHARED_DISCOVERYBENCH.is_dir():
        pytest.skip(f"the shared DiscoveryBench data is absent (expected at {SHARED_DISCOVERYBENCH})")
    return SHARED_DISCOVERYBENCH


@pytest.fixture(scope="session", autouse=True)
def bubblewrap() -> str | None:
    """Debian's bubblewrap, the sandbox's OS boundary; installed with apt-get when missing (CI runs as root).

    Sandbox tests that need it skip with the reason when it is still missing (see ``os_sandbox``).
    """
    path = shutil.which("bwrap")
    if path is None and apt_install("bubblewrap", present=lambda: shutil.which("bwrap") is not None):
        from evaluation.sandbox import isolation

        isolation.forget_probe()
        path = shutil.which("bwrap")
    return path


def apt_install(*packages: str, present: Callable[[], bool]) -> bool:
    """Install Debian packages when ``present()`` says they are missing and we are root (CI: a fresh machine).

    Test workers run in parallel (pytest-xdist): one installs while the others wait on a lock file, then see the
    packages present; two ``apt-get`` at once would fail on dpkg's lock and the tests would skip.
    """
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return False
    with open(Path(tempfile.gettempdir()) / "forkpaths-tests-apt.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if present():
            return True
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-qq", *packages], check=False, env=env,
                       capture_output=True, timeout=1200)
        return present()


@pytest.fixture
def os_sandbox(bubblewrap: str | None) -> None:
    """Skip (with the reason) where the operating-system sandbox cannot run even after installing bubblewrap."""
    from evaluation.sandbox import isolation_status

    status = isolation_status()
    if not status.strong_available:
        pytest.skip(f"no OS-level sandbox here: {status.detail}")


@pytest.fixture
def no_bubblewrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A machine where bubblewrap is not installed: the sandbox looks for it in an empty folder only."""
    from evaluation.sandbox import configure, isolation
    from evaluation.sandbox import server as sandbox_server

    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(isolation, "BWRAP_SEARCH_PATH", str(empty))
    monkeypatch.setenv("PATH", str(empty))
    isolation.forget_probe()
    try:
        yield
    finally:
        configure(mode="bwrap")
        monkeypatch.undo()
        isolation.forget_probe()
        sandbox_server.shutdown()
