"""single sign-on: accounts keyed by their identity provider's (issuer, subject); sessions remember the provider
sign-in they came from

Revision ID: 0030_sso_identity
Revises: 0023_h_store
Create Date: 2026-11-28 07:15:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0030_sso_identity"
down_revision: str | None = "0023_h_store"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    with op.batch_alter_table("user") as batch:
        batch.add_column(sa.Column("oidc_issuer", S(length=512), nullable=True))
        batch.add_column(sa.Column("oidc_subject", S(length=255), nullable=True))
        batch.add_column(sa.Column("role_from_claim", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.create_unique_constraint("uq_user_oidc_identity", ["oidc_issuer", "oidc_subject"])
    with op.batch_alter_table("auth_session") as batch:
        batch.add_column(sa.Column("sso_login", S(length=64), nullable=True))
        batch.create_index(batch.f("ix_auth_session_sso_login"), ["sso_login"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("auth_session") as batch:
        batch.drop_index(batch.f("ix_auth_session_sso_login"))
        batch.drop_column("sso_login")
    with op.batch_alter_table("user") as batch:
        batch.drop_constraint("uq_user_oidc_identity", type_="unique")
        batch.drop_column("role_from_claim")
        batch.drop_column("oidc_subject")
        batch.drop_column("oidc_issuer")
