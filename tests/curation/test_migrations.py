"""Alembic owns the schema: after migrating, the database matches the SQLModel tables exactly."""

from __future__ import annotations

import importlib
import pkgutil
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy.engine import Engine, make_url
from sqlmodel import SQLModel

import curation.models  # noqa: F401  (registers the tables)
from curation.db import include_name, make_engine, migrate
from tests import conftest
from tests import factories as f
from tests.conftest import PG_URL, _pg_schema_engine


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """Here, unlike elsewhere in the suite (a copy of a migrated template), a database migrated from empty."""
    if request.param == "sqlite":
        eng = make_engine(f"sqlite:///{tmp_path / 'forkpaths.db'}")
        migrate(eng)
        yield eng
        eng.dispose()
    else:
        yield from _pg_schema_engine(template=False)


def _dump(engine: Engine) -> str:
    with engine.connect() as conn:
        schema = str(conn.exec_driver_sql("SELECT current_schema()").scalar())
    url = make_url(PG_URL).set(drivername="postgresql").render_as_string(hide_password=False)
    done = subprocess.run(["pg_dump", "--no-owner", "--no-privileges", "--inserts", "-n", schema, "-d", url],
                          capture_output=True, text=True, timeout=120, check=True)
    return "\n".join(line for line in done.stdout.replace(schema, "SCHEMA").splitlines()
                     if not line.startswith("\\"))  # psql's \restrict lines carry a random key


@pytest.mark.postgres
def test_the_suites_postgresql_template_is_the_migrated_schema():
    """The suite loads each test's PostgreSQL schema from a dump of a migrated one (tests/conftest.py): that
    schema is, to pg_dump, the same as one migrated from empty: tables, keys, indexes, functions, triggers, rows."""
    if not shutil.which("pg_dump"):
        pytest.skip("pg_dump is not installed: the suite migrates each schema instead")
    made = [_pg_schema_engine(template=False), _pg_schema_engine()]
    try:
        migrated, loaded = (next(gen) for gen in made)
        assert "CREATE TABLE SCHEMA.procrastinate_jobs" in _dump(migrated)
        assert _dump(loaded) == _dump(migrated)
    finally:
        for gen in made:
            gen.close()  # drops the migrated schema; the loaded one goes back to the pool, emptied


@pytest.mark.postgres
def test_a_schema_given_back_by_a_test_is_the_migrated_schema_again(tmp_path: Path):
    """The suite gives a test's PostgreSQL schema back to its process's pool, emptied (tests/conftest.py): after a
    test wrote rows and moved sequences, the next test's schema dumps the same as one migrated from empty."""
    if not shutil.which("pg_dump"):
        pytest.skip("pg_dump is not installed: the suite migrates each schema instead")
    used = _pg_schema_engine()
    try:
        engine = next(used)
        (tmp_path / "store").mkdir()
        f.dataset(engine, tmp_path / "store", assign=[f.user(engine, "ana")])  # rows in tables that refer to others
        pooled = len(conftest._pg_pool)
    finally:
        used.close()
    assert len(conftest._pg_pool) == pooled + 1  # given back, not dropped
    made = [_pg_schema_engine(template=False), _pg_schema_engine()]
    try:
        migrated, reused = (next(gen) for gen in made)
        assert "CREATE TABLE SCHEMA.procrastinate_jobs" in _dump(migrated)
        assert _dump(reused) == _dump(migrated)
    finally:
        for gen in made:
            gen.close()


def test_migrations_match_the_models(engine):
    with engine.connect() as conn:
        opts = {"compare_type": True, "include_name": include_name}  # as migrations/env.py compares
        diff = compare_metadata(MigrationContext.configure(conn, opts=opts), SQLModel.metadata)
    assert diff == []


def test_migrating_twice_changes_nothing(engine):
    migrate(engine)
    with engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == "0033_mcq_curated"


def test_every_table_is_importable_from_the_package():
    """``curation.models`` is a package of modules; each table is re-exported, so importing the package (as
    migrations/env.py does) registers every table and no caller needs to know which module holds it."""
    defined = set()
    for info in pkgutil.iter_modules(curation.models.__path__):
        module = importlib.import_module(f"curation.models.{info.name}")
        defined |= {obj for obj in vars(module).values()
                    if isinstance(obj, type) and hasattr(obj, "__table__") and obj.__module__ == module.__name__}
    exported = {getattr(curation.models, name) for name in curation.models.__all__}
    assert defined, "no tables found in curation.models"
    assert {cls.__name__ for cls in defined - exported} == set()
