"""initial schema: accounts, datasets, stage-1 decisions

Revision ID: 0001
Revises:
Create Date: 2026-11-21 21:59:40.649191
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = '0001'
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('user',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('username', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('display_name', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('password_hash', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('role', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('is_active', sa.Boolean(), nullable=False),
    sa.Column('is_system', sa.Boolean(), nullable=False),
    sa.Column('auth_epoch', sa.Integer(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_user_username'), ['username'], unique=True)

    op.create_table('dataset',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
    sa.Column('title', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('research_question', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('description', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('dictionary', sa.JSON(), nullable=False),
    sa.Column('info', sa.JSON(), nullable=False),
    sa.Column('data_relpath', sqlmodel.sql.sqltypes.AutoString(length=512), nullable=False),
    sa.Column('data_sha256', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('num_rows', sa.Integer(), nullable=False),
    sa.Column('num_columns', sa.Integer(), nullable=False),
    sa.Column('source', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dataset_name'), ['name'], unique=True)

    op.create_table('analysis',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('annotator_id', sa.Integer(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('submitted_at', curation.models.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['annotator_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('dataset_id', 'annotator_id')
    )
    with op.batch_alter_table('analysis', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_analysis_annotator_id'), ['annotator_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_analysis_dataset_id'), ['dataset_id'], unique=False)

    op.create_table('datasetassignment',
    sa.Column('dataset_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('assigned_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('assigned_by_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['assigned_by_id'], ['user.id'], ),
    sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('dataset_id', 'user_id')
    )
    op.create_table('conceptualvariable',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('analysis_id', sa.Integer(), nullable=False),
    sa.Column('variable_type', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('interaction', sa.Boolean(), nullable=False),
    sa.Column('moderates', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('concept', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('rationale', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('columns', sa.JSON(), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['analysis_id'], ['analysis.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('conceptualvariable', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_conceptualvariable_analysis_id'), ['analysis_id'], unique=False)

    op.create_table('statmodel',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('analysis_id', sa.Integer(), nullable=False),
    sa.Column('family', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('specification', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('spec_name', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('code', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('rationale', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('columns', sa.JSON(), nullable=False),
    sa.Column('variable_ids', sa.JSON(), nullable=False),
    sa.Column('transform_ids', sa.JSON(), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.Column('last_check', sa.JSON(), nullable=True),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['analysis_id'], ['analysis.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('statmodel', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_statmodel_analysis_id'), ['analysis_id'], unique=False)

    op.create_table('transform',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('analysis_id', sa.Integer(), nullable=False),
    sa.Column('spec_name', sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
    sa.Column('specification', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('verbs', sa.JSON(), nullable=False),
    sa.Column('code', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('rationale', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
    sa.Column('mapping', sa.JSON(), nullable=False),
    sa.Column('branches', sa.JSON(), nullable=False),
    sa.Column('extra', sa.JSON(), nullable=False),
    sa.Column('last_check', sa.JSON(), nullable=True),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['analysis_id'], ['analysis.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('transform', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_transform_analysis_id'), ['analysis_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('transform', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_transform_analysis_id'))

    op.drop_table('transform')
    with op.batch_alter_table('statmodel', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_statmodel_analysis_id'))

    op.drop_table('statmodel')
    with op.batch_alter_table('conceptualvariable', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_conceptualvariable_analysis_id'))

    op.drop_table('conceptualvariable')
    op.drop_table('datasetassignment')
    with op.batch_alter_table('analysis', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_analysis_dataset_id'))
        batch_op.drop_index(batch_op.f('ix_analysis_annotator_id'))

    op.drop_table('analysis')
    with op.batch_alter_table('dataset', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dataset_name'))

    op.drop_table('dataset')
    with op.batch_alter_table('user', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_user_username'))

    op.drop_table('user')
