"""Engine factory, migrations and the one-transaction-per-user-action session scope."""

from __future__ import annotations

import ast
import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

from curation.settings import PROJECT_ROOT

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["Transactions", "include_name", "make_engine", "migrate", "one_snapshot", "session_scope", "transactions"]

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
    from alembic.config import Config  # imported on use: alembic is a quarter of a second of every CLI start

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def script_heads() -> set[str] | None:
    """The head revisions of the migration scripts, read from their source without importing alembic; None
    when a script does not state ``revision`` and ``down_revision`` as literals (then alembic decides).

    Parsed once per set of script files (path, size, modification time): every start of the app and every
    test database asks, and parsing the scripts takes ~20 ms."""
    files = []
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        stat = path.stat()
        files.append((str(path), stat.st_mtime_ns, stat.st_size))
    heads = _script_heads(tuple(files))
    return None if heads is None else set(heads)


@functools.lru_cache(maxsize=4)
def _script_heads(files: tuple[tuple[str, int, int], ...]) -> frozenset[str] | None:
    revisions: set[str] = set()
    parents: set[str] = set()
    for name, _mtime, _size in files:
        found: dict[str, object] = {}
        for node in ast.parse(Path(name).read_text(encoding="utf-8")).body:
            target = node.target if isinstance(node, ast.AnnAssign) else (
                node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
            value = node.value if isinstance(node, ast.AnnAssign | ast.Assign) else None
            if isinstance(target, ast.Name) and target.id in ("revision", "down_revision") and value is not None:
                try:
                    found[target.id] = ast.literal_eval(value)
                except ValueError:
                    return None
        revision, down = found.get("revision"), found.get("down_revision", ...)
        if not isinstance(revision, str) or down is ...:
            return None
        revisions.add(revision)
        if isinstance(down, str):
            parents.add(down)
        elif isinstance(down, tuple | list):
            parents.update(str(d) for d in down)
        elif down is not None:
            return None
    return frozenset(revisions - parents) or None


def _at_head(conn: Any) -> bool:
    heads = script_heads()
    if heads is None or not inspect(conn).has_table("alembic_version"):
        return False
    return {row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))} == heads


def migrate(engine: Engine) -> None:
    """Bring the schema up to the newest Alembic revision (idempotent; run at every start).

    A database already at the head revision (every start but the first after an update) is left as it is
    without loading alembic and the migration scripts: a quarter of a second of every CLI command."""
    with engine.begin() as conn:
        if _at_head(conn):
            return
    from alembic import command

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


Transactions = Callable[[], AbstractContextManager[Session]]
"""A factory of transactions: each call opens one (:func:`session_scope`). What long work takes when it must span
transactions (see :func:`transactions`)."""


def transactions(engine: Engine) -> Transactions:
    """The one way long work opens its transactions: a job that runs for minutes (LLM calls, sandbox runs, an
    agent's tasks) cannot be one transaction. It would hold a SQLite write lock, or a PostgreSQL snapshot, for its
    whole length, and what it stored would vanish with a crash at the end. So a job stores each step in a
    transaction of its own (``with step() as session:``), does its slow work between them, and a cancel or a crash
    keeps the whole steps stored before it. A service that spans transactions takes this factory (or an engine it
    passes here) and says so in its docstring; every other service takes one ``session``."""
    return functools.partial(session_scope, engine)


def one_snapshot(*, session: Session, tables: Sequence[str] = ()) -> None:
    """Make every read for the rest of ``session``'s transaction see the database as it was at one moment.

    A service that reads one thing in several statements (a release: the votes, then the tallies computed from
    them) must not see a write that commits between two of them.

    * PostgreSQL, called before the transaction's first statement: the transaction runs at REPEATABLE READ, so
      its snapshot is taken at its first statement and kept; writers are never held up. Called later, in a
      READ COMMITTED transaction that has already begun, ``tables`` are locked in SHARE mode until it ends:
      writers to them wait, so every statement from here on sees the same data.
    * SQLite: Python's driver runs a SELECT outside any transaction (each one its own snapshot) until the
      first write. ``BEGIN IMMEDIATE`` opens the transaction now and takes the write lock: readers go on (WAL),
      writers wait for the busy timeout, and the transaction's own write at the end cannot fail on a newer
      snapshot. A transaction already open has written, so it holds the write lock already.
    """
    dialect = session.get_bind().dialect.name
    if dialect == "sqlite":
        conn = session.connection()
        if not conn.connection.driver_connection.in_transaction:  # type: ignore[union-attr]
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        return
    if dialect != "postgresql":  # pragma: no cover - the two supported databases
        return
    if not session.in_transaction():
        session.connection(execution_options={"isolation_level": "REPEATABLE READ"})
        return
    level = session.execute(text("SELECT current_setting('transaction_isolation')")).scalar_one()
    if level in ("repeatable read", "serializable"):
        return
    if not tables:
        log.warning("one_snapshot called after a READ COMMITTED transaction began, with no tables to hold still: "
                    "its reads may see writes that commit in between")
        return
    quote = session.get_bind().dialect.identifier_preparer.quote
    session.execute(text(f"LOCK TABLE {', '.join(quote(t) for t in tables)} IN SHARE MODE"))
