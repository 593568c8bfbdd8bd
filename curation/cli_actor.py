"""Who a terminal command acts as, found without loading the database at the command line's start."""

from __future__ import annotations

from typing import Any

__all__ = ["acting_operator"]


def acting_operator(*, session: Any, username: str | None) -> Any:
    """The account a terminal command acts as (``--as USER``, default the first active admin): the accounts
    service's :func:`~curation.services.accounts.operator_account`, imported when a command needs it so that
    the CLI's light paths (``--help``, argument errors) load no database library."""
    from curation.services.accounts import operator_account

    return operator_account(session=session, username=username)
