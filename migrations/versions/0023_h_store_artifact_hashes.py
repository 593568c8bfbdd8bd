"""scoring runs record their release's and their result's SHA-256: the artifact store addresses them by content

Revision ID: 0023_h_store
Revises: 0022_h_repro
Create Date: 2026-11-25 02:40:00
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0023_h_store"
down_revision: str | None = "0022_h_repro"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    with op.batch_alter_table('scoring_run') as batch:
        batch.add_column(sa.Column('release_sha256', S(length=64), nullable=True))
        batch.add_column(sa.Column('result_sha256', S(length=64), nullable=True))
    # a run's release is the one of its version, whose MANIFEST hash was recorded when it was cut; results are
    # put in the store (and their hash recorded) by the start-up import of the old runs/ folder
    op.execute('UPDATE scoring_run SET release_sha256 = (SELECT r.manifest_sha256 FROM "release" r '
               'WHERE r.version = scoring_run.release_version)')


def downgrade() -> None:
    with op.batch_alter_table('scoring_run') as batch:
        batch.drop_column('result_sha256')
        batch.drop_column('release_sha256')
