"""alternatives, votes, consensus, MCQs, releases, dataset extra

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21 22:27:29.160501
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('release',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('version', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('format_version', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('previous_version', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
    sa.Column('notes', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('path', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
    sa.Column('manifest_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('summary', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('release', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_release_version'), ['version'], unique=True)

    op.create_table('alternative',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('proposed_by_id', sa.Integer(), nullable=True),
    sa.Column('seed_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('llm', sa.JSON(), nullable=True),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.ForeignKeyConstraint(['proposed_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('alternative', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_alternative_dataset_id'), ['dataset_id'], unique=False)

    op.create_table('consensus',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('target_kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('target_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('rule', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('decided_by_id', sa.Integer(), nullable=True),
    sa.Column('decided_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('votes_snapshot', sa.JSON(), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.ForeignKeyConstraint(['decided_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('target_kind', 'target_id')
    )
    with op.batch_alter_table('consensus', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_consensus_dataset_id'), ['dataset_id'], unique=False)

    op.create_table('mcq',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('mc_type', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('concept', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.Column('correct_index', sa.Integer(), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('mcq', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_mcq_dataset_id'), ['dataset_id'], unique=False)

    op.create_table('vote',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('target_kind', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('target_id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('question', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('answer', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=True),
    sa.Column('skipped_reason', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('explanation', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['annotator_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('target_kind', 'target_id', 'annotator_id', 'question')
    )
    with op.batch_alter_table('vote', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_vote_annotator_id'), ['annotator_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_vote_dataset_id'), ['dataset_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_vote_target_id'), ['target_id'], unique=False)

    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.add_column(sa.Column('extra', sa.JSON(), nullable=False, server_default=sa.text("'{}'")))



def downgrade() -> None:
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.drop_column('extra')

    with op.batch_alter_table('vote', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_vote_target_id'))
        batch_op.drop_index(batch_op.f('ix_vote_dataset_id'))
        batch_op.drop_index(batch_op.f('ix_vote_annotator_id'))

    op.drop_table('vote')
    with op.batch_alter_table('mcq', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_mcq_dataset_id'))

    op.drop_table('mcq')
    with op.batch_alter_table('consensus', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_consensus_dataset_id'))

    op.drop_table('consensus')
    with op.batch_alter_table('alternative', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_alternative_dataset_id'))

    op.drop_table('alternative')
    with op.batch_alter_table('release', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_release_version'))

    op.drop_table('release')
