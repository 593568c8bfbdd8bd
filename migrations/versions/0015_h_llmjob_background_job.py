"""background jobs: LLM alternative generation (and agent runs next) as jobs with status, progress and cancel

Revision ID: 0015_h_llmjob
Revises: 0014_h_ui
Create Date: 2026-11-25 00:45:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0015_h_llmjob"
down_revision: str | None = "0014_h_ui"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        'background_job',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', S(length=32), nullable=False),
        sa.Column('params', sa.JSON(), nullable=False),
        sa.Column('scope', S(length=128), nullable=False),
        sa.Column('active_scope', S(length=128), nullable=True),
        sa.Column('requested_by_id', sa.Integer(), nullable=True),
        sa.Column('created_at', TS(), nullable=False),
        sa.Column('status', S(length=16), nullable=False),
        sa.Column('progress_done', sa.Integer(), nullable=False),
        sa.Column('progress_total', sa.Integer(), nullable=False),
        sa.Column('stage', S(length=256), nullable=False),
        sa.Column('message', S(), nullable=False),
        sa.Column('result', sa.JSON(), nullable=True),
        sa.Column('cancel_requested', sa.Boolean(), nullable=False),
        sa.Column('started_at', TS(), nullable=True),
        sa.Column('finished_at', TS(), nullable=True),
        sa.Column('heartbeat_at', TS(), nullable=True),
        sa.Column('executor', S(length=256), nullable=False),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('job_id', sa.Integer(), nullable=True),
        sa.Column('dismissed_at', TS(), nullable=True),
        sa.ForeignKeyConstraint(['requested_by_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('background_job', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_background_job_kind'), ['kind'], unique=False)
        batch_op.create_index(batch_op.f('ix_background_job_scope'), ['scope'], unique=False)
        batch_op.create_index(batch_op.f('ix_background_job_status'), ['status'], unique=False)
        batch_op.create_index(batch_op.f('ix_background_job_active_scope'), ['active_scope'], unique=True)


def downgrade() -> None:
    with op.batch_alter_table('background_job', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_background_job_active_scope'))
        batch_op.drop_index(batch_op.f('ix_background_job_status'))
        batch_op.drop_index(batch_op.f('ix_background_job_scope'))
        batch_op.drop_index(batch_op.f('ix_background_job_kind'))
    op.drop_table('background_job')
