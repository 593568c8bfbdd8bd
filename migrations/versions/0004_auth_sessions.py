"""server-side sign-in sessions and sign-in throttling

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 11:30:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = '0004'
down_revision: str | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('auth_session',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('auth_epoch', sa.Integer(), nullable=False),
    sa.Column('created_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('ended_at', curation.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('end_reason', sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('auth_session', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_auth_session_token_hash'), ['token_hash'], unique=True)
        batch_op.create_index(batch_op.f('ix_auth_session_user_id'), ['user_id'], unique=False)

    op.create_table('sign_in_throttle',
    sa.Column('key', sqlmodel.sql.sqltypes.AutoString(length=80), nullable=False),
    sa.Column('failures', sa.Integer(), nullable=False),
    sa.Column('window_started_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.Column('locked_until', curation.models.UTCDateTime(timezone=True), nullable=True),
    sa.Column('updated_at', curation.models.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key')
    )


def downgrade() -> None:
    op.drop_table('sign_in_throttle')
    with op.batch_alter_table('auth_session', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_auth_session_user_id'))
        batch_op.drop_index(batch_op.f('ix_auth_session_token_hash'))

    op.drop_table('auth_session')
