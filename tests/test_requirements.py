"""The switch that makes CI prove the whole suite ran: a missing capability is a skip, or a failure when required."""

from __future__ import annotations

import pytest

from tests.conftest import CAPABILITIES, required_capabilities, unavailable


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_a_missing_capability_skips_with_its_reason(capability: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FORKPATHS_TEST_REQUIRE", raising=False)
    with pytest.raises(pytest.skip.Exception, match="nothing here"):
        unavailable(capability, "nothing here")


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_a_required_capability_that_is_missing_fails(capability: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKPATHS_TEST_REQUIRE", f" {capability} ")
    with pytest.raises(pytest.fail.Exception, match=f"nothing here .*requires {capability}"):
        unavailable(capability, "nothing here")


def test_requiring_one_capability_leaves_the_others_skippable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKPATHS_TEST_REQUIRE", "postgres, browser")
    assert required_capabilities() == {"postgres", "browser"}
    with pytest.raises(pytest.skip.Exception):
        unavailable("bwrap", "no sandbox")


def test_all_requires_every_capability(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKPATHS_TEST_REQUIRE", "all")
    assert required_capabilities() == set(CAPABILITIES)


def test_an_unknown_capability_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKPATHS_TEST_REQUIRE", "postgres,chromium")
    with pytest.raises(pytest.UsageError, match="chromium, which is not one of postgres, browser, bwrap, shared"):
        required_capabilities()


def test_ci_requires_every_capability() -> None:
    from pathlib import Path

    script = (Path(__file__).resolve().parents[1] / ".ci" / "run").read_text(encoding="utf-8")
    assert 'FORKPATHS_TEST_REQUIRE="${FORKPATHS_TEST_REQUIRE:-postgres,browser,bwrap,shared}"' in script

