"""tags on every decision kind, random_effect on conceptual variables (BLADE spec fields)

Revision ID: 0002
Revises: 0001
"""
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("conceptualvariable", "transform", "statmodel")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("tags", sa.JSON(), nullable=False, server_default=sa.text("'[]'")))
    with op.batch_alter_table("conceptualvariable") as batch:
        batch.add_column(sa.Column("random_effect", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("conceptualvariable") as batch:
        batch.drop_column("random_effect")
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("tags")
