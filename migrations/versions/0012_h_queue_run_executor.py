"""scoring runs record the process scoring them (host/pid/start), so a dead scorer is told from a slow one

Revision ID: 0012_h_queue
Revises: 0011
Create Date: 2026-11-24 23:30:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0012_h_queue"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("scoring_run") as batch:
        batch.add_column(sa.Column("executor", sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False,
                                   server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("scoring_run") as batch:
        batch.drop_column("executor")
