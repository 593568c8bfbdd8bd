"""The releases the scoring pages work with (Scoring runs, Agent runs, Leaderboard)."""

from __future__ import annotations

import streamlit as st

from annotate_app import context
from curation.models import ReleaseRecord, User
from curation.services.scoring import scorable_releases

__all__ = ["scorable_releases_or_stop"]


def scorable_releases_or_stop(user: User, none_yet: str) -> list[ReleaseRecord]:
    """The releases ``user`` can score against, newest first; with none cut yet, ``none_yet`` is shown and the
    page stops there."""
    records = context.attempt(lambda s: scorable_releases(session=s, actor=user)) or []
    if not records:
        st.info(none_yet)
        st.stop()
    return records
