"""stage-1 hypotheses of DiscoveryBench queries (hypothesis_proposal) and the provenance of a consensus gold

Revision ID: 0020_h_dbcurate
Revises: 0019_h_prog
Create Date: 2026-11-25 02:40:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0020_h_dbcurate"
down_revision: str | None = "0019_h_prog"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        'hypothesis_proposal',
        sa.Column('id', S(length=64), nullable=False),
        sa.Column('analysis_id', sa.Integer(), nullable=False),
        sa.Column('task_id', sa.Integer(), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('hypothesis', S(), nullable=False),
        sa.Column('context', S(), nullable=False),
        sa.Column('variables', sa.JSON(), nullable=False),
        sa.Column('relationship', S(), nullable=False),
        sa.Column('workflow', S(), nullable=False),
        sa.Column('code', S(), nullable=False),
        sa.Column('check', sa.JSON(), nullable=True),
        sa.Column('created_at', TS(), nullable=False),
        sa.Column('updated_at', TS(), nullable=False),
        sa.ForeignKeyConstraint(['analysis_id'], ['analysis.id'], ),
        sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
        sa.ForeignKeyConstraint(['task_id'], ['hypothesis_task.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('analysis_id', 'task_id'),
    )
    op.create_index(op.f('ix_hypothesis_proposal_analysis_id'), 'hypothesis_proposal', ['analysis_id'], unique=False)
    op.create_index(op.f('ix_hypothesis_proposal_task_id'), 'hypothesis_proposal', ['task_id'], unique=False)
    op.create_index(op.f('ix_hypothesis_proposal_dataset_id'), 'hypothesis_proposal', ['dataset_id'], unique=False)
    with op.batch_alter_table('hypothesis_task') as batch:
        batch.add_column(sa.Column('gold_provenance', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('hypothesis_task') as batch:
        batch.drop_column('gold_provenance')
    op.drop_index(op.f('ix_hypothesis_proposal_dataset_id'), table_name='hypothesis_proposal')
    op.drop_index(op.f('ix_hypothesis_proposal_task_id'), table_name='hypothesis_proposal')
    op.drop_index(op.f('ix_hypothesis_proposal_analysis_id'), table_name='hypothesis_proposal')
    op.drop_table('hypothesis_proposal')
