"""imported kinds: a dataset keeps each imported kind's part (its items and their gold) as JSON, so a new imported
kind needs no migration

Revision ID: 0031_dataset_parts
Revises: 0030_sso_identity
Create Date: 2026-11-28 10:00:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031_dataset_parts"
down_revision: str | None = "0030_sso_identity"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("dataset") as batch:
        batch.add_column(sa.Column("parts", sa.JSON(), nullable=False, server_default="{}"))


def downgrade() -> None:
    with op.batch_alter_table("dataset") as batch:
        batch.drop_column("parts")
