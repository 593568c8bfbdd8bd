"""Alembic owns the schema: after migrating, the database matches the SQLModel tables exactly."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

import curation.models  # noqa: F401  (registers the tables)
from curation.db import include_name, migrate


def test_migrations_match_the_models(engine):
    with engine.connect() as conn:
        opts = {"compare_type": True, "include_name": include_name}  # as migrations/env.py compares
        diff = compare_metadata(MigrationContext.configure(conn, opts=opts), SQLModel.metadata)
    assert diff == []


def test_migrating_twice_changes_nothing(engine):
    migrate(engine)
    with engine.connect() as conn:
        assert MigrationContext.configure(conn).get_current_revision() == "0023_h_store"
