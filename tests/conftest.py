"""Shared fixtures: a migrated database on SQLite and on the real PostgreSQL, and service-level factories."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

from curation.db import make_engine, migrate

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_BLADE = PROJECT_ROOT.parent / "shared" / "blade"
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
