"""curated items in one shape: the generic curated_item and curated_candidate tables (a kind-owned JSON payload
validated by the kind's model), and the programmatic tasks and their candidate checks and artifacts moved onto
them with nothing lost (ids kept: votes, consensus and meeting outcomes name candidates by id, background jobs
name tasks by id)

Revision ID: 0032_curated_items
Revises: 0031_dataset_parts
Create Date: 2026-11-28 13:00:00
"""
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0032_curated_items"
down_revision: str | None = "0031_dataset_parts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime
PROGRAMMATIC = "programmatic"  # the kind whose two tables move (its name at this revision)
TASK_FIELDS = ("prompt", "input_files", "data_source_type", "extra")  # what a task keeps in its item's payload

# the tables as this migration reads and writes them (never the models, which move on)
OLD_TASK = sa.table(
    "programmatic_task", sa.column("id", sa.Integer()), sa.column("dataset_id", sa.Integer()),
    sa.column("key", S()), sa.column("prompt", S()), sa.column("input_files", sa.JSON()),
    sa.column("data_source_type", S()), sa.column("extra", sa.JSON()), sa.column("created_at", TS()),
    sa.column("created_by_id", sa.Integer()))
OLD_ITEM = sa.table(
    "programmatic_item", sa.column("id", S()), sa.column("task_id", sa.Integer()),
    sa.column("dataset_id", sa.Integer()), sa.column("kind", S()), sa.column("source", S()),
    sa.column("proposed_by_id", sa.Integer()), sa.column("seed_id", S()), sa.column("payload", sa.JSON()),
    sa.column("gate", sa.JSON()), sa.column("extra", sa.JSON()), sa.column("position", sa.Integer()),
    sa.column("created_at", TS()))
ITEM = sa.table(
    "curated_item", sa.column("id", sa.Integer()), sa.column("dataset_id", sa.Integer()), sa.column("kind", S()),
    sa.column("key", S()), sa.column("status", S()), sa.column("payload", sa.JSON()),
    sa.column("created_at", TS()), sa.column("created_by_id", sa.Integer()))
CANDIDATE = sa.table(
    "curated_candidate", sa.column("id", S()), sa.column("item_id", sa.Integer()),
    sa.column("dataset_id", sa.Integer()), sa.column("kind", S()), sa.column("role", S()), sa.column("source", S()),
    sa.column("proposed_by_id", sa.Integer()), sa.column("seed_id", S()), sa.column("payload", sa.JSON()),
    sa.column("gate", sa.JSON()), sa.column("extra", sa.JSON()), sa.column("position", sa.Integer()),
    sa.column("created_at", TS()))

BATCH = 50  # rows read and written at a time: an artifact's payload carries its file (up to 20 MB)


def _copy(bind: Any, source: Any, target: Any, row_map: Any, where: Any = None) -> None:
    """Every row of ``source`` written to ``target`` as ``row_map`` makes it, a batch of ids at a time (so a
    database of many large artifacts is never held in memory at once)."""
    ids = sa.select(source.c.id).order_by(source.c.id)
    if where is not None:
        ids = ids.where(where)
    every = [r[0] for r in bind.execute(ids)]
    for start in range(0, len(every), BATCH):
        batch = every[start:start + BATCH]
        rows = bind.execute(sa.select(source).where(source.c.id.in_(batch)).order_by(source.c.id))
        bind.execute(sa.insert(target), [row_map(r._mapping) for r in rows])


def _restart_sequence(bind: Any, table: str) -> None:
    """PostgreSQL: the table's id sequence continues after the ids copied in (SQLite needs nothing)."""
    if bind.dialect.name == "postgresql":
        bind.execute(sa.text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                             f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"))


def _create_programmatic_tables() -> None:
    """The two tables as migration 0019_h_prog made them."""
    op.create_table(
        'programmatic_task',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('key', S(length=128), nullable=False),
        sa.Column('prompt', S(), nullable=False),
        sa.Column('input_files', sa.JSON(), nullable=False),
        sa.Column('data_source_type', S(), nullable=False),
        sa.Column('extra', sa.JSON(), nullable=False),
        sa.Column('created_at', TS(), nullable=False),
        sa.Column('created_by_id', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
        sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('programmatic_task') as batch:
        batch.create_index(batch.f('ix_programmatic_task_dataset_id'), ['dataset_id'], unique=False)
        batch.create_index(batch.f('ix_programmatic_task_key'), ['key'], unique=True)
    op.create_table(
        'programmatic_item',
        sa.Column('id', S(length=64), nullable=False),
        sa.Column('task_id', sa.Integer(), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('kind', S(length=16), nullable=False),
        sa.Column('source', S(length=16), nullable=False),
        sa.Column('proposed_by_id', sa.Integer(), nullable=True),
        sa.Column('seed_id', S(length=64), nullable=True),
        sa.Column('payload', sa.JSON(), nullable=False),
        sa.Column('gate', sa.JSON(), nullable=True),
        sa.Column('extra', sa.JSON(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('created_at', TS(), nullable=False),
        sa.ForeignKeyConstraint(['task_id'], ['programmatic_task.id'], ),
        sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
        sa.ForeignKeyConstraint(['proposed_by_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('programmatic_item') as batch:
        batch.create_index(batch.f('ix_programmatic_item_task_id'), ['task_id'], unique=False)
        batch.create_index(batch.f('ix_programmatic_item_dataset_id'), ['dataset_id'], unique=False)


def _drop_programmatic_tables() -> None:
    with op.batch_alter_table('programmatic_item') as batch:
        batch.drop_index(batch.f('ix_programmatic_item_dataset_id'))
        batch.drop_index(batch.f('ix_programmatic_item_task_id'))
    op.drop_table('programmatic_item')
    with op.batch_alter_table('programmatic_task') as batch:
        batch.drop_index(batch.f('ix_programmatic_task_key'))
        batch.drop_index(batch.f('ix_programmatic_task_dataset_id'))
    op.drop_table('programmatic_task')


def upgrade() -> None:
    op.create_table(
        'curated_item',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('kind', S(length=16), nullable=False),
        sa.Column('key', S(length=128), nullable=False),
        sa.Column('status', S(length=16), nullable=False),
        sa.Column('payload', sa.JSON(), nullable=False),
        sa.Column('created_at', TS(), nullable=False),
        sa.Column('created_by_id', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
        sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('kind', 'key'),
    )
    with op.batch_alter_table('curated_item') as batch:
        batch.create_index(batch.f('ix_curated_item_dataset_id'), ['dataset_id'], unique=False)
        batch.create_index(batch.f('ix_curated_item_kind'), ['kind'], unique=False)
        batch.create_index(batch.f('ix_curated_item_key'), ['key'], unique=False)
    op.create_table(
        'curated_candidate',
        sa.Column('id', S(length=64), nullable=False),
        sa.Column('item_id', sa.Integer(), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('kind', S(length=16), nullable=False),
        sa.Column('role', S(length=16), nullable=False),
        sa.Column('source', S(length=16), nullable=False),
        sa.Column('proposed_by_id', sa.Integer(), nullable=True),
        sa.Column('seed_id', S(length=64), nullable=True),
        sa.Column('payload', sa.JSON(), nullable=False),
        sa.Column('gate', sa.JSON(), nullable=True),
        sa.Column('extra', sa.JSON(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('created_at', TS(), nullable=False),
        sa.ForeignKeyConstraint(['item_id'], ['curated_item.id'], ),
        sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
        sa.ForeignKeyConstraint(['proposed_by_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('curated_candidate') as batch:
        batch.create_index(batch.f('ix_curated_candidate_item_id'), ['item_id'], unique=False)
        batch.create_index(batch.f('ix_curated_candidate_dataset_id'), ['dataset_id'], unique=False)

    bind = op.get_bind()
    _copy(bind, OLD_TASK, ITEM, lambda r: {
        "id": r["id"], "dataset_id": r["dataset_id"], "kind": PROGRAMMATIC, "key": r["key"], "status": "",
        "payload": {k: r[k] for k in TASK_FIELDS}, "created_at": r["created_at"],
        "created_by_id": r["created_by_id"]})
    _restart_sequence(bind, "curated_item")
    _copy(bind, OLD_ITEM, CANDIDATE, lambda r: {
        "id": r["id"], "item_id": r["task_id"], "dataset_id": r["dataset_id"], "kind": PROGRAMMATIC,
        "role": r["kind"], "source": r["source"], "proposed_by_id": r["proposed_by_id"], "seed_id": r["seed_id"],
        "payload": r["payload"], "gate": r["gate"], "extra": r["extra"], "position": r["position"],
        "created_at": r["created_at"]})
    _drop_programmatic_tables()


def downgrade() -> None:
    bind = op.get_bind()
    others = bind.execute(sa.select(ITEM.c.kind, sa.func.count()).where(ITEM.c.kind != PROGRAMMATIC)
                          .group_by(ITEM.c.kind).order_by(ITEM.c.kind)).all()
    if others:
        held = ", ".join(f"{n} {kind}" for kind, n in others)
        raise RuntimeError(f"Cannot downgrade below 0032_curated_items: the curated tables hold items of kinds "
                           f"that had no table before it ({held}); they would be lost. Nothing was changed.")
    _create_programmatic_tables()
    _copy(bind, ITEM, OLD_TASK, lambda r: {
        "id": r["id"], "dataset_id": r["dataset_id"], "key": r["key"], **{k: r["payload"][k] for k in TASK_FIELDS},
        "created_at": r["created_at"], "created_by_id": r["created_by_id"]}, where=ITEM.c.kind == PROGRAMMATIC)
    _restart_sequence(bind, "programmatic_task")
    _copy(bind, CANDIDATE, OLD_ITEM, lambda r: {
        "id": r["id"], "task_id": r["item_id"], "dataset_id": r["dataset_id"], "kind": r["role"],
        "source": r["source"], "proposed_by_id": r["proposed_by_id"], "seed_id": r["seed_id"],
        "payload": r["payload"], "gate": r["gate"], "extra": r["extra"], "position": r["position"],
        "created_at": r["created_at"]}, where=CANDIDATE.c.kind == PROGRAMMATIC)
    with op.batch_alter_table('curated_candidate') as batch:
        batch.drop_index(batch.f('ix_curated_candidate_dataset_id'))
        batch.drop_index(batch.f('ix_curated_candidate_item_id'))
    op.drop_table('curated_candidate')
    with op.batch_alter_table('curated_item') as batch:
        batch.drop_index(batch.f('ix_curated_item_key'))
        batch.drop_index(batch.f('ix_curated_item_kind'))
        batch.drop_index(batch.f('ix_curated_item_dataset_id'))
    op.drop_table('curated_item')
