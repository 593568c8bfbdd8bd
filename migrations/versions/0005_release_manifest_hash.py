"""release integrity: the zip's SHA-256 next to the MANIFEST's

The MANIFEST's own SHA-256 has been recorded since 0003 (``release.manifest_sha256``); from now on every read
compares it, so a MANIFEST rewritten with matching checksums is refused. This revision adds the SHA-256 of the
release's zip, recorded when a release is cut, so that a zip whose bytes changed anywhere (members, headers,
comment) is refused too.

Releases cut before this revision have no zip hash (NULL). They are not trusted blindly: the first read that
checks their folder and every member of their zip against the recorded MANIFEST hash records the zip's hash
(with a log line), and later reads compare with it. A release that fails that first check is refused and gets
no hash.

Revision ID: 0005
Revises: 0003
"""
from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("release") as batch:
        batch.add_column(sa.Column("zip_sha256", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("release") as batch:
        batch.drop_column("zip_sha256")
