"""procrastinate's job queue (tables, types, functions) on PostgreSQL, beside forkpaths' tables

Long jobs (scoring runs) run on procrastinate's workers where the database is PostgreSQL
(curation/services/jobs.py). Its schema is procrastinate's own SQL for the installed version, applied in the
schema the connection works in (search_path), so a private test schema gets its own queue. Nothing on SQLite,
where jobs run in the app's process. A procrastinate upgrade that changes its schema ships its own SQL migrations
(procrastinate/sql/migrations): add an alembic revision that applies them.

Revision ID: 0013_h_queue
Revises: 0012_h_queue
Create Date: 2026-11-24 23:45:00
"""
from collections.abc import Sequence

from alembic import op

revision: str = "0013_h_queue"
down_revision: str | None = "0012_h_queue"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("procrastinate_events", "procrastinate_periodic_defers", "procrastinate_jobs", "procrastinate_workers")
TYPES = ("procrastinate_job_to_defer_v1", "procrastinate_job_event_type", "procrastinate_job_status")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    if bind.exec_driver_sql("SELECT to_regclass('procrastinate_jobs')").scalar() is not None:
        return  # applied by hand or by an earlier start
    from procrastinate.schema import SchemaManager

    with bind.connection.dbapi_connection.cursor() as cur:  # type: ignore[union-attr]
        cur.execute(SchemaManager.get_schema())  # no parameters: its '%' are SQL, not placeholders


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for table in TABLES:
        bind.exec_driver_sql(f"DROP TABLE IF EXISTS {table} CASCADE")
    functions = bind.exec_driver_sql(
        "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE p.proname LIKE 'procrastinate%' AND n.nspname = current_schema()").scalars().all()
    for fn in functions:
        bind.exec_driver_sql(f"DROP FUNCTION IF EXISTS {fn} CASCADE")
    for typ in TYPES:
        bind.exec_driver_sql(f"DROP TYPE IF EXISTS {typ} CASCADE")
