"""scoring runs (immutable run records), human score overrides, judge validation labels

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23 12:00:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        'scoring_run',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('kind', S(length=16), nullable=False),
        sa.Column('agent', S(length=128), nullable=False),
        sa.Column('model_name', S(length=128), nullable=False),
        sa.Column('release_version', S(length=32), nullable=False),
        sa.Column('ground_truth_hash', S(length=64), nullable=False),
        sa.Column('dataset_hashes', sa.JSON(), nullable=False),
        sa.Column('submission_sha256', S(length=64), nullable=False),
        sa.Column('submission_files', sa.JSON(), nullable=False),
        sa.Column('evaluator_version', S(length=32), nullable=False),
        sa.Column('judge', sa.JSON(), nullable=False),
        sa.Column('transform_matcher', sa.JSON(), nullable=False),
        sa.Column('mode', S(length=16), nullable=False),
        sa.Column('k', sa.Integer(), nullable=False),
        sa.Column('source', S(length=8), nullable=False),
        sa.Column('rescore_of_id', sa.Integer(), nullable=True),
        sa.Column('created_by_id', sa.Integer(), nullable=True),
        sa.Column('created_at', TS(timezone=True), nullable=False),
        sa.Column('status', S(length=16), nullable=False),
        sa.Column('progress_done', sa.Integer(), nullable=False),
        sa.Column('progress_total', sa.Integer(), nullable=False),
        sa.Column('stage', S(length=256), nullable=False),
        sa.Column('message', S(), nullable=False),
        sa.Column('cancel_requested', sa.Boolean(), nullable=False),
        sa.Column('started_at', TS(timezone=True), nullable=True),
        sa.Column('finished_at', TS(timezone=True), nullable=True),
        sa.Column('heartbeat_at', TS(timezone=True), nullable=True),
        sa.Column('result_path', S(length=512), nullable=True),
        sa.Column('scores', sa.JSON(), nullable=True),
        sa.Column('scores_effective', sa.JSON(), nullable=True),
        sa.Column('official', sa.Boolean(), nullable=False),
        sa.Column('official_by_id', sa.Integer(), nullable=True),
        sa.Column('official_at', TS(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['created_by_id'], ['user.id'], ),
        sa.ForeignKeyConstraint(['official_by_id'], ['user.id'], ),
        sa.ForeignKeyConstraint(['rescore_of_id'], ['scoring_run.id'], ),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('scoring_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_scoring_run_agent'), ['agent'], unique=False)
        batch_op.create_index(batch_op.f('ix_scoring_run_release_version'), ['release_version'], unique=False)
        batch_op.create_index(batch_op.f('ix_scoring_run_status'), ['status'], unique=False)

    op.create_table(
        'score_override',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('dataset', S(length=128), nullable=False),
        sa.Column('analysis_key', S(length=64), nullable=False),
        sa.Column('kind', S(length=16), nullable=False),
        sa.Column('item', S(length=256), nullable=False),
        sa.Column('label', S(), nullable=False),
        sa.Column('original', sa.Boolean(), nullable=False),
        sa.Column('value', sa.Boolean(), nullable=False),
        sa.Column('reason', S(), nullable=False),
        sa.Column('author_id', sa.Integer(), nullable=False),
        sa.Column('created_at', TS(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['author_id'], ['user.id'], ),
        sa.ForeignKeyConstraint(['run_id'], ['scoring_run.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id', 'dataset', 'analysis_key', 'kind', 'item'),
    )
    with op.batch_alter_table('score_override', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_score_override_run_id'), ['run_id'], unique=False)


    op.create_table(
        'judge_label',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=False),
        sa.Column('dataset', S(length=128), nullable=False),
        sa.Column('analysis_key', S(length=64), nullable=False),
        sa.Column('kind', S(length=16), nullable=False),
        sa.Column('item', S(length=256), nullable=False),
        sa.Column('judge', S(length=32), nullable=False),
        sa.Column('ground_truth', S(), nullable=False),
        sa.Column('agent', S(), nullable=False),
        sa.Column('judge_rationale', S(), nullable=False),
        sa.Column('judge_value', sa.Boolean(), nullable=False),
        sa.Column('expert_value', sa.Boolean(), nullable=True),
        sa.Column('expert_id', sa.Integer(), nullable=True),
        sa.Column('labelled_at', TS(timezone=True), nullable=True),
        sa.Column('created_at', TS(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['expert_id'], ['user.id'], ),
        sa.ForeignKeyConstraint(['run_id'], ['scoring_run.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('run_id', 'dataset', 'analysis_key', 'kind', 'item'),
    )
    with op.batch_alter_table('judge_label', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_judge_label_run_id'), ['run_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('judge_label', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_judge_label_run_id'))
    op.drop_table('judge_label')
    with op.batch_alter_table('score_override', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_score_override_run_id'))
    op.drop_table('score_override')
    with op.batch_alter_table('scoring_run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_scoring_run_status'))
        batch_op.drop_index(batch_op.f('ix_scoring_run_release_version'))
        batch_op.drop_index(batch_op.f('ix_scoring_run_agent'))
    op.drop_table('scoring_run')
