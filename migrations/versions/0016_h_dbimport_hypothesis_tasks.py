"""hypothesis tasks (DiscoveryBench queries) and the files of a dataset with several files

Revision ID: 0016_h_dbimport
Revises: 0015_h_llmjob
Create Date: 2026-11-25 00:45:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0016_h_dbimport"
down_revision: str | None = "0015_h_llmjob"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
    with op.batch_alter_table('dataset') as batch:
        batch.add_column(sa.Column('files', sa.JSON(), nullable=False, server_default='[]'))
    op.create_table(
        'hypothesis_task',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('key', S(), nullable=False),
        sa.Column('source', S(length=8), nullable=False),
        sa.Column('split', S(length=16), nullable=False),
        sa.Column('metadata_k', sa.Integer(), nullable=False),
        sa.Column('qid', sa.Integer(), nullable=False),
        sa.Column('query_field', S(), nullable=False),
        sa.Column('question', S(), nullable=False),
        sa.Column('question_type', S(length=16), nullable=True),
        sa.Column('question_type_raw', S(), nullable=True),
        sa.Column('difficulty', sa.Integer(), nullable=True),
        sa.Column('domain', S(), nullable=True),
        sa.Column('domain_knowledge', S(), nullable=True),
        sa.Column('workflow_tags', S(), nullable=True),
        sa.Column('data_files', sa.JSON(), nullable=False),
        sa.Column('gold_hypothesis', S(), nullable=True),
        sa.Column('gold_source', S(length=16), nullable=True),
        sa.Column('gold_workflow', S(), nullable=True),
        sa.Column('gold_context', S(), nullable=True),
        sa.Column('gold_variables', sa.JSON(), nullable=True),
        sa.Column('gold_relationship', S(), nullable=True),
        sa.Column('true_hypothesis_expr', S(), nullable=True),
        sa.Column('target_col', S(), nullable=True),
        sa.Column('relevant_cols', sa.JSON(), nullable=True),
        sa.Column('status', S(length=16), nullable=False),
        sa.Column('created_at', TS(), nullable=False),
        sa.Column('created_by_id', sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
        sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('dataset_id', 'metadata_k', 'qid'),
    )
    with op.batch_alter_table('hypothesis_task') as batch:
        batch.create_index(batch.f('ix_hypothesis_task_dataset_id'), ['dataset_id'], unique=False)
        batch.create_index(batch.f('ix_hypothesis_task_key'), ['key'], unique=True)
        batch.create_index(batch.f('ix_hypothesis_task_status'), ['status'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('hypothesis_task') as batch:
        batch.drop_index(batch.f('ix_hypothesis_task_status'))
        batch.drop_index(batch.f('ix_hypothesis_task_key'))
        batch.drop_index(batch.f('ix_hypothesis_task_dataset_id'))
    op.drop_table('hypothesis_task')
    with op.batch_alter_table('dataset') as batch:
        batch.drop_column('files')
