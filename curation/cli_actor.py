"""Who a terminal command acts as, and the dataset it names, found without loading the database at the command
line's start."""

from __future__ import annotations

from typing import Any

from curation.errors import CurationError

__all__ = ["acting_operator", "dataset_named"]


def acting_operator(*, session: Any, username: str | None) -> Any:
    """The account a terminal command acts as (``--as USER``, default the first active admin): the accounts
    service's :func:`~curation.services.accounts.operator_account`, imported when a command needs it so that
    the CLI's light paths (``--help``, argument errors) load no database library."""
    from curation.services.accounts import operator_account

    return operator_account(session=session, username=username)


def dataset_named(*, session: Any, name: str) -> Any:
    """The registered dataset called ``name`` (a :class:`~curation.models.Dataset`).

    Raises:
        CurationError: there is none.
    """
    from sqlmodel import select

    from curation.models import Dataset

    ds = session.exec(select(Dataset).where(Dataset.name == name)).first()
    if ds is None:
        raise CurationError(f"There is no dataset called '{name}'.")
    return ds
