"""Half-filled forms kept on the server, per user: a reload, a new tab or a restart brings them back.

A draft is the form's values as JSON (at most ``MAX_DRAFT_BYTES``); its name says which form (and which
dataset or release) it belongs to. Saving or cancelling the form discards it.
"""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import Session

from curation.errors import CurationError
from curation.models import FormDraft, User, utcnow
from curation.services.actor import judges_actor

__all__ = ["MAX_DRAFT_BYTES", "discard_draft", "load_draft", "save_draft"]

MAX_DRAFT_BYTES = 512 * 1024


@judges_actor
def load_draft(*, session: Session, actor: User, name: str) -> dict[str, Any] | None:
    row = session.get(FormDraft, (actor.id, name))
    return dict(row.data) if row is not None else None


@judges_actor
def save_draft(*, session: Session, actor: User, name: str, data: dict[str, Any]) -> None:
    """Store (or replace) the actor's draft of form ``name``."""
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise CurationError(f"The draft of form '{name}' holds a value that cannot be kept ({exc}).") from exc
    if len(text.encode("utf-8")) > MAX_DRAFT_BYTES:
        raise CurationError(f"The draft of form '{name}' is over {MAX_DRAFT_BYTES // 1024} KB and was not kept; "
                            "save the form to keep what you typed.")
    row = session.get(FormDraft, (actor.id, name))
    if row is None:
        row = FormDraft(user_id=actor.id or 0, name=name, data=json.loads(text))
    else:
        row.data = json.loads(text)
        row.updated_at = utcnow()
    session.add(row)
    session.flush()


@judges_actor
def discard_draft(*, session: Session, actor: User, name: str) -> None:
    row = session.get(FormDraft, (actor.id, name))
    if row is not None:
        session.delete(row)
        session.flush()
