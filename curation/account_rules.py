"""What an account may be, without the database: its roles and the password rule.

The ``forkpaths`` command line states them in its help (``create-user --role``, ``--password-stdin``), which must
not load the tables or the password hasher to do so; :mod:`curation.models` and :mod:`curation.services.accounts`
re-export them."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["MAX_PASSWORD_LENGTH", "MIN_PASSWORD_LENGTH", "PASSWORD_RULE", "Role"]


class Role(StrEnum):
    ANALYST = "analyst"
    CURATOR = "curator"
    ADMIN = "admin"
    EVALUATOR = "evaluator"


MIN_PASSWORD_LENGTH = 10
#: Checked before any hashing, at sign-in too: Argon2 reads the whole password, and a 50 MB one cost 1.1 s.
MAX_PASSWORD_LENGTH = 1024
PASSWORD_RULE = (f"A password has {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH:,} characters and is not one of the "
                 "common passwords anyone guessing tries first; a few words of your own are easy to remember.")

