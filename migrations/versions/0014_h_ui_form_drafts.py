"""form drafts: half-filled forms kept on the server per user, so a reload brings them back

Revision ID: 0014_h_ui
Revises: 0013_h_queue
Create Date: 2026-11-24 23:30:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0014_h_ui"
down_revision: str | None = "0013_h_queue"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime


def upgrade() -> None:
    op.create_table(
        'form_draft',
        sa.Column('user_id', sa.Integer(), nullable=False),
        sa.Column('name', S(length=128), nullable=False),
        sa.Column('data', sa.JSON(), nullable=False),
        sa.Column('updated_at', TS(), nullable=False),
        sa.ForeignKeyConstraint(['user_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('user_id', 'name'),
    )


def downgrade() -> None:
    op.drop_table('form_draft')
