"""hypothesis facet judgements: an override's detail (counts, level), longer task keys, categorical judge labels

Revision ID: 0018_h_hms
Revises: 0017_h_fanout
Create Date: 2026-11-25 02:40:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0018_h_hms"
down_revision: str | None = "0017_h_fanout"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    with op.batch_alter_table("score_override") as batch:
        batch.add_column(sa.Column("detail", sa.JSON(), nullable=True))
        batch.alter_column("analysis_key", type_=S(length=256), existing_type=S(length=64), existing_nullable=False)
    with op.batch_alter_table("judge_label") as batch:
        batch.add_column(sa.Column("judge_label", S(length=128), nullable=True))
        batch.add_column(sa.Column("expert_label", S(length=128), nullable=True))
        batch.add_column(sa.Column("reason", S(), nullable=True))
        batch.alter_column("analysis_key", type_=S(length=256), existing_type=S(length=64), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("judge_label") as batch:
        batch.alter_column("analysis_key", type_=S(length=64), existing_type=S(length=256), existing_nullable=False)
        batch.drop_column("reason")
        batch.drop_column("expert_label")
        batch.drop_column("judge_label")
    with op.batch_alter_table("score_override") as batch:
        batch.alter_column("analysis_key", type_=S(length=64), existing_type=S(length=256), existing_nullable=False)
        batch.drop_column("detail")
