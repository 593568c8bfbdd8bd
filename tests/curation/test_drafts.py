"""Half-filled forms kept on the server: per user and per form, replaced in place, bounded, discarded."""

from __future__ import annotations

import pytest

from curation.db import session_scope
from curation.errors import CurationError, SessionExpired
from curation.models import Role
from curation.services.accounts import set_user_active
from curation.services.drafts import MAX_DRAFT_BYTES, discard_draft, load_draft, save_draft
from tests import factories as f


def test_drafts_are_per_user_and_form_and_replaced_in_place(engine):
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    with session_scope(engine) as s:
        save_draft(session=s, actor=ana, name="annotate.1.var", data={"concept": "storm", "columns": ["o:wind"]})
        save_draft(session=s, actor=ana, name="annotate.2.var", data={"concept": "other dataset"})
    with session_scope(engine) as s:
        save_draft(session=s, actor=ana, name="annotate.1.var", data={"concept": "storm strength"})
    with session_scope(engine) as s:
        assert load_draft(session=s, actor=ana, name="annotate.1.var") == {"concept": "storm strength"}
        assert load_draft(session=s, actor=ana, name="annotate.2.var") == {"concept": "other dataset"}
        assert load_draft(session=s, actor=bob, name="annotate.1.var") is None  # nobody reads another's draft
        discard_draft(session=s, actor=ana, name="annotate.1.var")
        discard_draft(session=s, actor=ana, name="never.saved")  # nothing to discard is fine
    with session_scope(engine) as s:
        assert load_draft(session=s, actor=ana, name="annotate.1.var") is None


def test_an_oversized_draft_is_refused_with_a_sentence_and_a_stale_actor_is_refused(engine):
    ana = f.user(engine, "ana")
    admin = f.user(engine, "boss", Role.ADMIN)
    with session_scope(engine) as s, pytest.raises(CurationError, match="save the form to keep what you typed"):
        save_draft(session=s, actor=ana, name="releases.notes", data={"notes": "x" * (MAX_DRAFT_BYTES + 1)})
    with session_scope(engine) as s:
        assert load_draft(session=s, actor=ana, name="releases.notes") is None  # nothing half-stored
    with session_scope(engine) as s:
        set_user_active(session=s, actor=admin, user_id=ana.id, active=False)
    with session_scope(engine) as s, pytest.raises((SessionExpired, CurationError)):  # a deactivated account
        save_draft(session=s, actor=ana, name="releases.notes", data={"notes": "late"})
