"""stage 2: dataset stages and review settings, vote history

Revision ID: 0008
Revises: 0003
Create Date: 2026-11-23 11:30:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = '0008'
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('dataset_review',
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('stage', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('proposer_display', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('source_visible', sa.Boolean(), nullable=False),
    sa.Column('opened_at', curation.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('opened_by_id', sa.Integer(), nullable=True),
    sa.Column('closed_at', curation.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('closed_by_id', sa.Integer(), nullable=True),
    sa.Column('updated_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.ForeignKeyConstraint(['opened_by_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['closed_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('dataset_id')
    )
    op.create_table('vote_change',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('target_kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('target_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('question', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('before', sa.JSON(), nullable=True),
    sa.Column('after', sa.JSON(), nullable=True),
    sa.Column('changed_by_id', sa.Integer(), nullable=True),
    sa.Column('changed_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.ForeignKeyConstraint(['annotator_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['changed_by_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('vote_change', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_vote_change_annotator_id'), ['annotator_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_vote_change_dataset_id'), ['dataset_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_vote_change_target_id'), ['target_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('vote_change', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_vote_change_target_id'))
        batch_op.drop_index(batch_op.f('ix_vote_change_dataset_id'))
        batch_op.drop_index(batch_op.f('ix_vote_change_annotator_id'))
    op.drop_table('vote_change')
    op.drop_table('dataset_review')
