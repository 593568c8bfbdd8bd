"""Alembic environment: the engine (or an open connection) is handed in by ``curation.db.migrate``."""

from alembic import context
from sqlmodel import SQLModel

import curation.models  # noqa: F401  (registers the tables)
from curation.db import include_name

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        engine = config.attributes["engine"]
        with engine.begin() as conn:
            _run(conn)
    else:
        _run(connection)


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_name=include_name,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
