"""agent runs: a model answering a release's tasks with a strategy, one row per task run, and the scoring runs
they became

Revision ID: 0021_h_agent
Revises: 0020_h_dbcurate
Create Date: 2026-11-25 02:40:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0021_h_agent"
down_revision: str | None = "0020_h_dbcurate"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        'agent_run',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', S(length=32), nullable=False),
        sa.Column('release_version', S(length=32), nullable=False),
        sa.Column('agent', S(length=128), nullable=False),
        sa.Column('model', S(length=128), nullable=False),
        sa.Column('base_url', S(length=512), nullable=False),
        sa.Column('strategy', S(length=16), nullable=False),
        sa.Column('workflow', sa.Boolean(), nullable=False),
        sa.Column('runs_per_task', sa.Integer(), nullable=False),
        sa.Column('temperature', sa.Float(), nullable=False),
        sa.Column('seed', sa.Integer(), nullable=False),
        sa.Column('only', sa.JSON(), nullable=False),
        sa.Column('settings', sa.JSON(), nullable=False),
        sa.Column('templates', sa.JSON(), nullable=False),
        sa.Column('prices', sa.JSON(), nullable=True),
        sa.Column('job_id', sa.Integer(), nullable=True),
        sa.Column('status', S(length=16), nullable=False),
        sa.Column('message', S(), nullable=False),
        sa.Column('tasks_total', sa.Integer(), nullable=False),
        sa.Column('tasks_done', sa.Integer(), nullable=False),
        sa.Column('prompt_tokens', sa.Integer(), nullable=False),
        sa.Column('completion_tokens', sa.Integer(), nullable=False),
        sa.Column('calls', sa.Integer(), nullable=False),
        sa.Column('cache_hits', sa.Integer(), nullable=False),
        sa.Column('cost', sa.Float(), nullable=True),
        sa.Column('submissions', sa.JSON(), nullable=False),
        sa.Column('scoring_run_ids', sa.JSON(), nullable=False),
        sa.Column('created_by_id', sa.Integer(), nullable=True),
        sa.Column('created_at', TS(), nullable=False),
        sa.Column('finished_at', TS(), nullable=True),
        sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index(op.f('ix_agent_run_release_version'), 'agent_run', ['release_version'], unique=False)
    op.create_index(op.f('ix_agent_run_status'), 'agent_run', ['status'], unique=False)
    op.create_table(
        'agent_task_run',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('agent_run_id', sa.Integer(), nullable=False),
        sa.Column('task_key', S(length=256), nullable=False),
        sa.Column('title', S(length=256), nullable=False),
        sa.Column('replicate', sa.Integer(), nullable=False),
        sa.Column('status', S(length=32), nullable=False),
        sa.Column('message', S(), nullable=False),
        sa.Column('answer', sa.JSON(), nullable=True),
        sa.Column('transcript_path', S(length=512), nullable=False),
        sa.Column('prompt_tokens', sa.Integer(), nullable=False),
        sa.Column('completion_tokens', sa.Integer(), nullable=False),
        sa.Column('calls', sa.Integer(), nullable=False),
        sa.Column('cache_hits', sa.Integer(), nullable=False),
        sa.Column('tool_calls', sa.Integer(), nullable=False),
        sa.Column('model_seconds', sa.Float(), nullable=False),
        sa.Column('seconds', sa.Float(), nullable=False),
        sa.Column('cost', sa.Float(), nullable=True),
        sa.Column('finished_at', TS(), nullable=False),
        sa.ForeignKeyConstraint(['agent_run_id'], ['agent_run.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('agent_run_id', 'task_key', 'replicate'),
    )
    op.create_index(op.f('ix_agent_task_run_agent_run_id'), 'agent_task_run', ['agent_run_id'], unique=False)
    with op.batch_alter_table('scoring_run') as batch:
        batch.add_column(sa.Column('agent_run_id', sa.Integer(), nullable=True))
        batch.create_index(op.f('ix_scoring_run_agent_run_id'), ['agent_run_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('scoring_run') as batch:
        batch.drop_index(op.f('ix_scoring_run_agent_run_id'))
        batch.drop_column('agent_run_id')
    op.drop_index(op.f('ix_agent_task_run_agent_run_id'), table_name='agent_task_run')
    op.drop_table('agent_task_run')
    op.drop_index(op.f('ix_agent_run_status'), table_name='agent_run')
    op.drop_index(op.f('ix_agent_run_release_version'), table_name='agent_run')
    op.drop_table('agent_run')
