"""Fixtures shared by the engine's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evaluation.sandbox import isolation


@pytest.fixture(params=[True, False], ids=["hook_on", "hook_off"])
def audit_hook(request: pytest.FixtureRequest) -> Iterator[bool]:
    """Each test twice: with the sandbox's audit hook, and without it, so that the operating-system boundary alone
    is what contains the code (the hook only explains what the code tried)."""
    isolation.set_audit_hook(request.param)
    try:
        yield request.param
    finally:
        isolation.set_audit_hook(True)
