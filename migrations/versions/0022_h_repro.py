"""reproducibility overrides: an evaluator's correction of one item's outcome in a reproducibility run

Revision ID: 0022_h_repro
Revises: 0021_h_agent
Create Date: 2026-11-25 02:40:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0022_h_repro"
down_revision: str | None = "0021_h_agent"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        'reproducibility_override',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('item', S(length=256), nullable=False),
        sa.Column('original', S(length=32), nullable=False),
        sa.Column('value', S(length=32), nullable=False),
        sa.Column('reason', S(), nullable=False),
        sa.Column('author_id', sa.Integer(), nullable=False),
        sa.Column('created_at', TS(), nullable=False),
        sa.ForeignKeyConstraint(['author_id'], ['user.id'], ),
        sa.ForeignKeyConstraint(['run_id'], ['scoring_run.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id', 'item'),
    )
    op.create_index(op.f('ix_reproducibility_override_run_id'), 'reproducibility_override', ['run_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_reproducibility_override_run_id'), table_name='reproducibility_override')
    op.drop_table('reproducibility_override')
