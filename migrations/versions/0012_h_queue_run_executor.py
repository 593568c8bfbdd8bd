"""scoring runs record the process scoring them (host/pid/start), so a dead scorer is told from a slow one;
how often they were claimed, and their job on the queue

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
        batch.add_column(sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("job_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scoring_run") as batch:
        batch.drop_column("job_id")
        batch.drop_column("attempts")
        batch.drop_column("executor")
