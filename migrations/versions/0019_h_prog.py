"""programmatic tasks (DataSciBench style) and their candidate checks and artifacts

Revision ID: 0019_h_prog
Revises: 0018_h_hms
Create Date: 2026-11-25 02:35:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0019_h_prog"
down_revision: str | None = "0018_h_hms"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
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


def downgrade() -> None:
    with op.batch_alter_table('programmatic_item') as batch:
        batch.drop_index(batch.f('ix_programmatic_item_dataset_id'))
        batch.drop_index(batch.f('ix_programmatic_item_task_id'))
    op.drop_table('programmatic_item')
    with op.batch_alter_table('programmatic_task') as batch:
        batch.drop_index(batch.f('ix_programmatic_task_key'))
        batch.drop_index(batch.f('ix_programmatic_task_dataset_id'))
    op.drop_table('programmatic_task')
