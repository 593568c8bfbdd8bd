"""Shared fixtures: a migrated database on SQLite and on the real PostgreSQL, and service-level factories."""

from __future__ import annotations

import atexit
import fcntl
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import NoReturn

import pytest

# Argon2 at argon2-cffi's test profile for every account the suite creates and signs in, here and in the app and
# CLI processes it starts (they inherit the environment); test_accounts checks the app's own default.
os.environ["FORKPATHS_INSECURE_TEST_PASSWORD_HASHING"] = "1"
# Workers the suite starts (they inherit the environment) notice a killed worker after 4 s, not the default 10 s:
# the kill-and-retry tests wait that long; test_queue_workers checks the default's wiring.
os.environ.setdefault("FORKPATHS_WORKER_STALLED_AFTER_S", "4")
# ... and retry a job cut short by the database going away after 2 s, not the default 15 s (test_worker_stall checks
# the default and the wiring).
os.environ.setdefault("FORKPATHS_WORKER_RETRY_WAIT_S", "2")
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


_SCHEMA_SHAPE = """
SELECT md5(coalesce(string_agg(c.relname::text || ':' || c.relkind::text || ':' || coalesce(a.attname::text, '') || ':'
                               || coalesce(replace(format_type(a.atttypid, a.atttypmod), n.nspname::text || '.', ''), '') || ':' || a.attnotnull::text,
                               ',' ORDER BY c.relname, a.attnum), '')
           || (SELECT count(*) FROM pg_proc WHERE pronamespace = n.oid)::text
           || (SELECT count(*) FROM pg_trigger t JOIN pg_class r ON r.oid = t.tgrelid WHERE r.relnamespace = n.oid)::text
           || (SELECT count(*) FROM pg_constraint WHERE connamespace = n.oid)::text)
FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid
LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE n.nspname = %(schema)s GROUP BY n.oid"""
"""A fingerprint of a schema's tables, columns, indexes, sequences, types, functions, triggers and constraints."""

_pg_pool: list[str] = []
"""This process's clean migrated schemas (``fp_pool_<hex>``), each emptied back to the template's rows after the
test that used it; dropped when the process ends."""
_pg_pool_state: dict[str, object] = {}


def _pg_admin() -> Engine:
    if "admin" not in _pg_pool_state:
        _pg_pool_state["admin"] = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        atexit.register(_pg_drop_pool)
    return _pg_pool_state["admin"]  # type: ignore[return-value]


def _pg_drop_pool() -> None:
    admin = _pg_admin()
    with suppress(Exception), admin.connect() as conn:
        for schema in _pg_pool:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
    _pg_pool.clear()
    admin.dispose()


def _pg_take_schema(dump: str) -> str:
    """A migrated schema under a new name of its own (``fp_test_<hex>``): one of the process's pool, or loaded
    from the template's dump when the pool is empty."""
    schema = f"fp_test_{uuid.uuid4().hex[:12]}"
    admin = _pg_admin()
    if _pg_pool:
        with admin.connect() as conn:
            conn.execute(text(f'ALTER SCHEMA "{_pg_pool.pop()}" RENAME TO "{schema}"'))
        return schema
    raw = admin.raw_connection()
    try:
        with raw.cursor() as cur:
            cur.execute(dump.replace("{schema}", schema))  # creates the schema; one statement string
        raw.commit()
    finally:
        raw.close()
    if "shape" not in _pg_pool_state:
        _pg_pool_state["shape"] = _pg_shape(schema)
    return schema


def _pg_shape(schema: str) -> tuple[object, ...]:
    with _pg_admin().connect() as conn:
        shape = conn.exec_driver_sql(_SCHEMA_SHAPE, {"schema": schema}).scalar()
        rows = conn.execute(text(f'SELECT version_num FROM "{schema}".alembic_version')).all()
    return shape, tuple(rows)


def _pg_give_back(schema: str) -> bool:
    """Put a test's schema back in the pool, emptied to the template's rows and its sequences restarted (a few
    milliseconds, where loading a schema and dropping it took 1-1.5 s per test); False when it cannot be
    reused as it is: another connection still holds a lock in it, or the test changed its tables."""
    admin = _pg_admin()
    pooled = f"fp_pool_{uuid.uuid4().hex[:12]}"
    with admin.connect() as conn:
        others = conn.execute(text(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "WHERE c.relnamespace = CAST(:schema AS regnamespace) AND l.pid <> pg_backend_pid()"),
            {"schema": schema}).scalar()
        if others:
            return False
        # renamed first: a process the test left behind can no longer reach it by name
        conn.execute(text(f'ALTER SCHEMA "{schema}" RENAME TO "{pooled}"'))
        tables = conn.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = :s AND "
                                   "tablename <> 'alembic_version'"), {"s": pooled}).scalars().all()
        sequences = conn.execute(text("SELECT sequencename FROM pg_sequences WHERE schemaname = :s"),
                                 {"s": pooled}).scalars().all()
        try:
            # DELETE, not TRUNCATE: TRUNCATE gives each of the ~40 tables new files, as slow as a new schema;
            # replica mode skips the foreign-key triggers, so the order of the tables does not matter
            conn.exec_driver_sql(
                "BEGIN; SET LOCAL lock_timeout = '5s'; SET LOCAL session_replication_role = replica; "
                + "".join(f'DELETE FROM "{pooled}"."{t}"; ' for t in tables)
                + "".join(f"SELECT pg_catalog.setval('\"{pooled}\".\"{q}\"', 1, false); " for q in sequences)
                + "COMMIT")
        except Exception:  # noqa: BLE001 - not superuser, or a lock: the schema is dropped instead
            conn.exec_driver_sql("ROLLBACK")
            conn.execute(text(f'ALTER SCHEMA "{pooled}" RENAME TO "{schema}"'))
            return False
    if _pg_shape(pooled) != _pg_pool_state.get("shape"):
        with admin.connect() as conn:
            conn.execute(text(f'ALTER SCHEMA "{pooled}" RENAME TO "{schema}"'))
        return False
    _pg_pool.append(pooled)
    return True


def _pg_schema_engine(*, template: bool = True) -> Iterator[Engine]:
    """A migrated schema of its own on the PostgreSQL test server, as an engine whose search_path is that schema:
    taken from the process's pool of emptied schemas, or loaded from the process's template; given back emptied
    afterwards (or dropped when it cannot be reused). With ``template=False``, migrated from empty and dropped."""
    reason = pg_unavailable_reason()
    if reason:
        unavailable("postgres", reason)
    dump = _pg_template_dump() if template else None
    admin = _pg_admin()
    if dump is not None:
        schema = _pg_take_schema(dump)
    else:
        schema = f"fp_test_{uuid.uuid4().hex[:12]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    engine = make_engine(PG_URL, connect_args={"options": f"-csearch_path={schema}"})
    try:
        if dump is None:
            migrate(engine)
        yield engine
    finally:
        engine.dispose()
        if dump is None or not _pg_give_back(schema):
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


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


# --- mypy started early -------------------------------------------------------------------------------------------
# test_mypy_finds_nothing takes over a minute on a fresh clone (mypy's cache is empty; 2-3 s warm). When it is among
# the tests to run, mypy starts in the background as soon as the tests are collected, on the tests' own source
# tree, and the test reads its result when its turn comes: the minute overlaps the tests that wait.

MYPY_TEST = "tests/test_architecture.py::test_mypy_finds_nothing"
MYPY_COMMAND = (sys.executable, "-m", "mypy", "curation", "evaluation", "exports", "forkpaths")


def mypy_folder(config: pytest.Config) -> Path:
    """Where the early mypy writes its output and exit code: in the run's base temporary folder (the one of the
    controlling process when the tests run on pytest-xdist workers)."""
    base = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return (base.parent if hasattr(config, "workerinput") else base) / "early-mypy"


def _start_mypy(config: pytest.Config) -> None:
    folder = mypy_folder(config)
    if folder.exists():
        return
    folder.mkdir()
    command = " ".join(shlex.quote(part) for part in MYPY_COMMAND)
    out, code = shlex.quote(str(folder / "output")), shlex.quote(str(folder / "exit-code"))
    subprocess.Popen(["sh", "-c", f"{command} > {out} 2>&1; echo $? > {code}.tmp && mv {code}.tmp {code}"],
                     cwd=PROJECT_ROOT, stdin=subprocess.DEVNULL, start_new_session=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput") and any(item.nodeid == MYPY_TEST for item in session.items):
        _start_mypy(session.config)  # pytest -n 0: this process runs the tests


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    if MYPY_TEST in ids:
        _start_mypy(node.config)  # type: ignore[attr-defined]
