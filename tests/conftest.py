"""Shared fixtures: a migrated database on SQLite and on the real PostgreSQL, and service-level factories."""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

# Argon2 at argon2-cffi's test profile for every account the suite creates and signs in, here and in the app and
# CLI processes it starts (they inherit the environment); test_accounts checks the app's own default.
os.environ["FORKPATHS_INSECURE_TEST_PASSWORD_HASHING"] = "1"
# Workers the suite starts (they inherit the environment) notice a killed worker after 4 s, not the default 10 s:
# the kill-and-retry tests wait that long; test_queue_workers checks the default's wiring.
os.environ.setdefault("FORKPATHS_WORKER_STALLED_AFTER_S", "4")
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url

from curation.db import make_engine, migrate

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_BLADE = PROJECT_ROOT.parent / "shared" / "blade"
SHARED_DISCOVERYBENCH = PROJECT_ROOT.parent / "shared" / "discoverybench"
PG_URL = os.environ.get("FORKPATHS_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")

_pg_state: dict[str, str | None] = {}

CAPABILITIES = ("postgres", "browser", "bwrap", "shared")
"""What a test may find missing on a machine: the PostgreSQL server, Chromium, the OS sandbox (bubblewrap with
user namespaces) and the reference data in ../shared."""


def required_capabilities() -> set[str]:
    """The capabilities that ``FORKPATHS_TEST_REQUIRE`` (comma-separated; ``all`` for every one) says must be here.

    CI sets it (``.ci/run``), so that a machine without PostgreSQL, Chromium, bubblewrap or ../shared fails the
    tests that need them instead of skipping them: a green CI then proves the whole suite ran."""
    named = {part.strip() for part in os.environ.get("FORKPATHS_TEST_REQUIRE", "").split(",") if part.strip()}
    unknown = named - set(CAPABILITIES) - {"all"}
    if unknown:
        raise pytest.UsageError(f"FORKPATHS_TEST_REQUIRE names {', '.join(sorted(unknown))}, which is not one of "
                                f"{', '.join(CAPABILITIES)} (or all)")
    return set(CAPABILITIES) if "all" in named else named


def unavailable(capability: str, reason: str) -> NoReturn:
    """Skip the test with ``reason``, or fail it when ``FORKPATHS_TEST_REQUIRE`` says ``capability`` must be here."""
    assert capability in CAPABILITIES, capability
    if capability in required_capabilities():
        pytest.fail(f"{reason} (FORKPATHS_TEST_REQUIRE requires {capability}: a failure here, not a skip)",
                    pytrace=False)
    pytest.skip(reason)


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


_templates: dict[str, object] = {}


def _pg_template_dump() -> str | None:
    """The SQL of a freshly migrated schema named ``fp_tpl_<hex>`` (``pg_dump`` of it, data as INSERTs), made
    once per test process: loading it is a tenth of running the migrations. None without pg_dump (then each
    test migrates). The migrations themselves are tested from an empty database in test_migrations."""
    if "pg" not in _templates:
        dump: str | None = None
        if shutil.which("pg_dump"):
            schema = f"fp_tpl_{uuid.uuid4().hex[:12]}"
            admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
            try:
                eng = make_engine(PG_URL, connect_args={"options": f"-csearch_path={schema}"})
                migrate(eng)
                eng.dispose()
                url = make_url(PG_URL).set(drivername="postgresql").render_as_string(hide_password=False)
                done = subprocess.run(["pg_dump", "--no-owner", "--no-privileges", "--inserts", "-n", schema,
                                       "-d", url], capture_output=True, text=True, timeout=120)
                if done.returncode == 0 and schema in done.stdout:  # without psql's meta-commands (\\restrict)
                    sql = "\n".join(line for line in done.stdout.splitlines() if not line.startswith("\\"))
                    dump = sql.replace(schema, "{schema}")
            finally:
                with admin.connect() as conn:
                    conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
                admin.dispose()
        _templates["pg"] = dump
    return _templates["pg"]  # type: ignore[return-value]


def _pg_schema_engine(*, template: bool = True) -> Iterator[Engine]:
    """A migrated schema of its own on the PostgreSQL test server (dropped afterwards), as an engine whose
    search_path is that schema; loaded from the process's template, or with ``template=False`` migrated."""
    reason = pg_unavailable_reason()
    if reason:
        unavailable("postgres", reason)
    schema = f"fp_test_{uuid.uuid4().hex[:12]}"
    dump = _pg_template_dump() if template else None
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    if dump is not None:
        raw = admin.raw_connection()
        try:
            with raw.cursor() as cur:
                cur.execute(dump.replace("{schema}", schema))  # creates the schema; one statement string
            raw.commit()
        finally:
            raw.close()
    else:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine = make_engine(PG_URL, connect_args={"options": f"-csearch_path={schema}"})
    try:
        if dump is None:
            migrate(engine)
        yield engine
    finally:
        engine.dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _sqlite_template() -> Path:
    """A migrated SQLite file made once per test process (in WAL mode, checkpointed, so the file is whole)."""
    if "sqlite" not in _templates:
        folder = Path(tempfile.mkdtemp(prefix="forkpaths-template-"))
        atexit.register(shutil.rmtree, folder, True)
        path = folder / "forkpaths.db"
        eng = make_engine(f"sqlite:///{path}")
        migrate(eng)
        with eng.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        eng.dispose()
        _templates["sqlite"] = path
    return _templates["sqlite"]  # type: ignore[return-value]


def migrated_sqlite(path: Path) -> Engine:
    """An engine on a freshly migrated SQLite database at ``path`` (a copy of the process's migrated template)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_sqlite_template(), path)
    return make_engine(f"sqlite:///{path}")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A freshly migrated database, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        eng = migrated_sqlite(tmp_path / "forkpaths.db")
        yield eng
        eng.dispose()
    else:
        yield from _pg_schema_engine()


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    eng = migrated_sqlite(tmp_path / "forkpaths.db")
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
        unavailable("shared", f"the shared BLADE data is absent (expected at {SHARED_BLADE})")
    return SHARED_BLADE


@pytest.fixture
def shared_discoverybench() -> Path:
    if not SHARED_DISCOVERYBENCH.is_dir():
        unavailable("shared", f"the shared DiscoveryBench data is absent (expected at {SHARED_DISCOVERYBENCH})")
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
        unavailable("bwrap", f"no OS-level sandbox here: {status.detail}")


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
