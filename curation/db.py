"""Engine factory, migrations and the one-transaction-per-user-action session scope."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

from curation.settings import PROJECT_ROOT

__all__ = ["include_name", "make_engine", "migrate", "session_scope"]

log = logging.getLogger(__name__)

MIGRATIONS_DIR = PROJECT_ROOT / "migrations"
SQLITE_BUSY_TIMEOUT_MS = 30_000
# PostgreSQL pool: room for every analyst of a full team (20) to click at once, plus background workers
# (scoring runs, LLM generation); PostgreSQL's default max_connections is 100.
PG_POOL_SIZE = 20
PG_MAX_OVERFLOW = 20
PG_POOL_TIMEOUT_S = 60


def make_engine(url: str, **kwargs: Any) -> Engine:
    """Build the engine for ``url``; SQLite gets WAL, a busy timeout and foreign keys.

    Streamlit serves each browser session from its own thread, so SQLite connections may not be bound to the
    thread that opened them; WAL lets readers proceed while one writer commits.
    """
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        connect_args = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        engine = create_engine(url, connect_args=connect_args, **kwargs)

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        return engine
    # A team of 5-20 analysts means up to 20 page scripts (threads) in one server at once. SQLAlchemy's default
    # pool (5 + 10 overflow) made the 16th concurrent click wait, and its queue is not fair: a waiting thread
    # could starve for the whole 30 s pool timeout while others kept returning and re-taking connections.
    kwargs.setdefault("pool_size", PG_POOL_SIZE)
    kwargs.setdefault("max_overflow", PG_MAX_OVERFLOW)
    kwargs.setdefault("pool_timeout", PG_POOL_TIMEOUT_S)
    return create_engine(url, pool_pre_ping=True, **kwargs)


def include_name(name: str | None, type_: str, _parent_names: Any) -> bool:
    """What alembic compares with the models: not procrastinate's queue tables (migration 0013_h_queue)."""
    return not (type_ == "table" and (name or "").startswith("procrastinate_"))


def _alembic_config(engine: Engine) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def migrate(engine: Engine) -> None:
    """Bring the schema up to the newest Alembic revision (idempotent; run at every start)."""
    with engine.begin() as conn:
        cfg = _alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """One user action = one transaction: commit on success, roll back on any error."""
    session = Session(engine, expire_on_commit=False)
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
