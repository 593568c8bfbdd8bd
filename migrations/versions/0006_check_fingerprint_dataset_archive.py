"""passing sanity checks remembered with a fingerprint of the code they ran; datasets can be archived

Revision ID: 0006
Revises: 0003
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

from curation.models import UTCDateTime

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DECISION_TABLES = ("transform", "statmodel")


def upgrade() -> None:
    # No backfill: a check stored before this revision did not record the parents' code it ran after, so the
    # decisions of draft analyses need one more check before they can be submitted (submitted ones are locked).
    for table in DECISION_TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("passed_check_sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
    with op.batch_alter_table("dataset") as batch:
        batch.add_column(sa.Column("archived_at", UTCDateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("archived_by_id", sa.Integer(), nullable=True))
        batch.create_foreign_key("fk_dataset_archived_by_id_user", "user", ["archived_by_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("dataset") as batch:
        batch.drop_constraint("fk_dataset_archived_by_id_user", type_="foreignkey")
        batch.drop_column("archived_by_id")
        batch.drop_column("archived_at")
    for table in DECISION_TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("passed_check_sha256")
