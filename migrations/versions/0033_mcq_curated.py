"""MCQs in the generic curated tables: each MCQ and its review become one curated_item of the MCQ kind (its id the
item's key, its review state the item's status, the question, its position and its review in the payload), with
nothing lost; the mcq and mcq_review tables go (see curation/services/mcq_store.py for the mapping and why)

Revision ID: 0033_mcq_curated
Revises: 0032_curated_items
Create Date: 2026-11-28 16:30:00
"""
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
import sqlmodel
from alembic import op

import curation.models

revision: str = "0033_mcq_curated"
down_revision: str | None = "0032_curated_items"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

S = sqlmodel.sql.sqltypes.AutoString
TS = curation.models.UTCDateTime
MCQ_KIND = "mcq"  # the kind whose two tables move (its name at this revision)
PENDING = "pending"  # an MCQ no curator reviewed: its item's status
QUESTION = ("kind", "mc_type", "concept", "options", "correct_index", "extra", "position")  # the payload's
BATCH = 200

# the tables as this migration reads and writes them (never the models, which move on)
OLD_MCQ = sa.table(
    "mcq", sa.column("id", S()), sa.column("dataset_id", sa.Integer()), sa.column("kind", S()),
    sa.column("mc_type", S()), sa.column("concept", S()), sa.column("options", sa.JSON()),
    sa.column("correct_index", sa.Integer()), sa.column("extra", sa.JSON()), sa.column("position", sa.Integer()),
    sa.column("created_at", TS()))
OLD_REVIEW = sa.table(
    "mcq_review", sa.column("mcq_id", S()), sa.column("dataset_id", sa.Integer()), sa.column("status", S()),
    sa.column("note", S()), sa.column("reviewed_by_id", sa.Integer()), sa.column("reviewed_at", TS()),
    sa.column("history", sa.JSON()))
ITEM = sa.table(
    "curated_item", sa.column("id", sa.Integer()), sa.column("dataset_id", sa.Integer()), sa.column("kind", S()),
    sa.column("key", S()), sa.column("status", S()), sa.column("payload", sa.JSON()),
    sa.column("created_at", TS()), sa.column("created_by_id", sa.Integer()))


def _restart_sequence(bind: Any) -> None:
    """PostgreSQL: curated_item's id sequence continues after the ids written (SQLite needs nothing)."""
    if bind.dialect.name == "postgresql":
        bind.execute(sa.text("SELECT setval(pg_get_serial_sequence('curated_item', 'id'), "
                             "COALESCE((SELECT MAX(id) FROM curated_item), 0) + 1, false)"))


def _refuse_if_lossy(bind: Any) -> None:
    """A review filed under another dataset than its MCQ's (no service writes one) would lose that dataset."""
    odd = bind.execute(sa.select(OLD_REVIEW.c.mcq_id).select_from(
        OLD_REVIEW.join(OLD_MCQ, OLD_MCQ.c.id == OLD_REVIEW.c.mcq_id)).where(
        OLD_REVIEW.c.dataset_id != OLD_MCQ.c.dataset_id)).all()
    if odd:
        raise RuntimeError(f"Cannot upgrade to 0033_mcq_curated: {len(odd)} MCQ review(s) belong to another dataset "
                           f"than their MCQ (first: {sorted(r[0] for r in odd)[0]}); moving them would lose that. "
                           "Nothing was changed.")


def _item(mcq: Any, review: Any) -> dict[str, Any]:
    payload = {k: mcq[k] for k in QUESTION}
    payload["review"] = None if review is None else {
        "note": review["note"], "reviewed_by_id": review["reviewed_by_id"],
        "reviewed_at": review["reviewed_at"].isoformat(), "history": review["history"]}
    return {"dataset_id": mcq["dataset_id"], "kind": MCQ_KIND, "key": mcq["id"],
            "status": PENDING if review is None else review["status"], "payload": payload,
            "created_at": mcq["created_at"], "created_by_id": None}


def _drop_mcq_tables() -> None:
    with op.batch_alter_table('mcq_review') as batch:
        batch.drop_index(batch.f('ix_mcq_review_dataset_id'))
    op.drop_table('mcq_review')
    with op.batch_alter_table('mcq') as batch:
        batch.drop_index(batch.f('ix_mcq_dataset_id'))
    op.drop_table('mcq')


def _create_mcq_tables() -> None:
    """The two tables as migrations 0003 and 0010 made them."""
    op.create_table(
        'mcq',
        sa.Column('id', S(length=64), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('kind', S(length=16), nullable=False),
        sa.Column('mc_type', S(length=16), nullable=False),
        sa.Column('concept', S(), nullable=False),
        sa.Column('options', sa.JSON(), nullable=False),
        sa.Column('correct_index', sa.Integer(), nullable=False),
        sa.Column('extra', sa.JSON(), nullable=False),
        sa.Column('position', sa.Integer(), nullable=False),
        sa.Column('created_at', TS(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('mcq') as batch:
        batch.create_index(batch.f('ix_mcq_dataset_id'), ['dataset_id'], unique=False)
    op.create_table(
        'mcq_review',
        sa.Column('mcq_id', S(length=64), nullable=False),
        sa.Column('dataset_id', sa.Integer(), nullable=False),
        sa.Column('status', S(length=16), nullable=False),
        sa.Column('note', S(), nullable=False),
        sa.Column('reviewed_by_id', sa.Integer(), nullable=True),
        sa.Column('reviewed_at', TS(timezone=True), nullable=False),
        sa.Column('history', sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(['dataset_id'], ['dataset.id'], ),
        sa.ForeignKeyConstraint(['mcq_id'], ['mcq.id'], ),
        sa.ForeignKeyConstraint(['reviewed_by_id'], ['user.id'], ),
        sa.PrimaryKeyConstraint('mcq_id'),
    )
    with op.batch_alter_table('mcq_review') as batch:
        batch.create_index(batch.f('ix_mcq_review_dataset_id'), ['dataset_id'], unique=False)


def upgrade() -> None:
    """Every MCQ with its review, a batch at a time; the items' ids follow the highest id there, in the order of
    the MCQs' ids (so the same database always gets the same item ids)."""
    bind = op.get_bind()
    _refuse_if_lossy(bind)
    keys = sorted(r[0] for r in bind.execute(sa.select(OLD_MCQ.c.id)))  # by code point, on every backend
    first = bind.execute(sa.select(sa.func.coalesce(sa.func.max(ITEM.c.id), 0))).scalar_one() + 1
    for start in range(0, len(keys), BATCH):
        batch = keys[start:start + BATCH]
        mcqs = {r._mapping["id"]: r._mapping for r in bind.execute(
            sa.select(OLD_MCQ).where(OLD_MCQ.c.id.in_(batch)))}
        reviews = {r._mapping["mcq_id"]: r._mapping for r in bind.execute(
            sa.select(OLD_REVIEW).where(OLD_REVIEW.c.mcq_id.in_(batch)))}
        bind.execute(sa.insert(ITEM), [{"id": first + start + n, **_item(mcqs[k], reviews.get(k))}
                                       for n, k in enumerate(batch)])
    _restart_sequence(bind)
    _drop_mcq_tables()


def _aware(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def downgrade() -> None:
    """Every MCQ item back to its MCQ row and, when it was reviewed, its review row; the items go."""
    bind = op.get_bind()
    _create_mcq_tables()
    ids = [r[0] for r in bind.execute(sa.select(ITEM.c.id).where(ITEM.c.kind == MCQ_KIND).order_by(ITEM.c.id))]
    for start in range(0, len(ids), BATCH):
        rows = [r._mapping for r in bind.execute(
            sa.select(ITEM).where(ITEM.c.id.in_(ids[start:start + BATCH])).order_by(ITEM.c.id))]
        bind.execute(sa.insert(OLD_MCQ), [
            {"id": r["key"], "dataset_id": r["dataset_id"], "created_at": r["created_at"],
             **{k: r["payload"][k] for k in QUESTION}} for r in rows])
        reviews = [{"mcq_id": r["key"], "dataset_id": r["dataset_id"], "status": r["status"],
                    "note": p["note"], "reviewed_by_id": p["reviewed_by_id"], "reviewed_at": _aware(p["reviewed_at"]),
                    "history": p["history"]} for r in rows if (p := r["payload"].get("review")) is not None]
        if reviews:
            bind.execute(sa.insert(OLD_REVIEW), reviews)
    bind.execute(sa.delete(ITEM).where(ITEM.c.kind == MCQ_KIND))
    _restart_sequence(bind)
