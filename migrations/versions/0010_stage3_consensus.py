"""stage 3: ground-truth rule, meetings, MCQ review

Revision ID: 0010
Revises: 0008
Create Date: 2026-11-23 12:00:04.146873
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = '0010'
down_revision: str | None = '0008'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('ground_truth_setting',
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('rule', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('changed_by_id', sa.Integer(), nullable=True),
    sa.Column('changed_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('history', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['changed_by_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.PrimaryKeyConstraint('dataset_id')
    )
    op.create_table('meeting',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('rule', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('started_by_id', sa.Integer(), nullable=True),
    sa.Column('started_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('closed_by_id', sa.Integer(), nullable=True),
    sa.Column('closed_at', curation.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('attendance', sa.JSON(), nullable=False),
    sa.Column('agenda', sa.JSON(), nullable=False),
    sa.Column('current', sa.Integer(), nullable=False),
    sa.Column('pre_votes', sa.JSON(), nullable=False),
    sa.Column('post_votes', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['closed_by_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.ForeignKeyConstraint(['started_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('meeting', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_meeting_dataset_id'), ['dataset_id'], unique=False)

    op.create_table('mcq_review',
    sa.Column('mcq_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('reviewed_by_id', sa.Integer(), nullable=True),
    sa.Column('reviewed_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('history', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.ForeignKeyConstraint(['mcq_id'], ['mcq.id'], ),
    sa.ForeignKeyConstraint(['reviewed_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('mcq_id')
    )
    with op.batch_alter_table('mcq_review', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mcq_review_dataset_id'), ['dataset_id'], unique=False)

    op.create_table('meeting_event',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('meeting_id', sa.Integer(), nullable=False),
    sa.Column('actor_id', sa.Integer(), nullable=True),
    sa.Column('at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('action', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('target_kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('target_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('detail', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['actor_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['meeting_id'], ['meeting.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('meeting_event', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_meeting_event_meeting_id'), ['meeting_id'], unique=False)

    op.create_table('meeting_outcome',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('meeting_id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('target_kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('target_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('outcome', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('dissent', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('recorded_by_id', sa.Integer(), nullable=True),
    sa.Column('recorded_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.ForeignKeyConstraint(['meeting_id'], ['meeting.id'], ),
    sa.ForeignKeyConstraint(['recorded_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('meeting_id', 'target_kind', 'target_id')
    )
    with op.batch_alter_table('meeting_outcome', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_meeting_outcome_dataset_id'), ['dataset_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_meeting_outcome_meeting_id'), ['meeting_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('meeting_outcome', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_meeting_outcome_meeting_id'))
        batch_op.drop_index(batch_op.f('ix_meeting_outcome_dataset_id'))

    op.drop_table('meeting_outcome')
    with op.batch_alter_table('meeting_event', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_meeting_event_meeting_id'))

    op.drop_table('meeting_event')
    with op.batch_alter_table('mcq_review', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_mcq_review_dataset_id'))

    op.drop_table('mcq_review')
    with op.batch_alter_table('meeting', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_meeting_dataset_id'))

    op.drop_table('meeting')
    op.drop_table('ground_truth_setting')
