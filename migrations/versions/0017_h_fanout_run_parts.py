"""scoring run parts: a run fanned out over workers, one part per dataset file, combined at the end

Revision ID: 0017_h_fanout
Revises: 0016_h_dbimport
Create Date: 2026-11-25 00:40:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0017_h_fanout"
down_revision: str | None = "0016_h_dbimport"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        'scoring_run_part',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('idx', sa.Integer(), nullable=False),
        sa.Column('label', S(length=128), nullable=False),
        sa.Column('status', S(length=16), nullable=False),
        sa.Column('executor', S(length=256), nullable=False),
        sa.Column('heartbeat_at', TS(), nullable=True),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('progress_done', sa.Integer(), nullable=False),
        sa.Column('progress_total', sa.Integer(), nullable=False),
        sa.Column('result', sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(['run_id'], ['scoring_run.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id', 'idx'),
    )
    op.create_index(op.f('ix_scoring_run_part_run_id'), 'scoring_run_part', ['run_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_scoring_run_part_run_id'), table_name='scoring_run_part')
    op.drop_table('scoring_run_part')
