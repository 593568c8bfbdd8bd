"""Real-browser fixtures: Debian's Chromium (installed when missing), the app served on a free port."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.helpers import AppServer, LiveApp, WatchedBrowser
from tests.conftest import apt_install, unavailable

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's Chromium; installed with apt-get when missing (CI runs as root on a fresh machine)."""
    path = _chromium_path()
    if path is None and apt_install("chromium", "fonts-noto-color-emoji", present=lambda: _chromium_path() is not None):
        path = _chromium_path()
    if path is None:
        unavailable("browser", "Chromium is not installed and could not be installed with apt-get (needs root)")
    return path


@pytest.fixture(scope="session")
def browser(chromium: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        yield WatchedBrowser(b)
        b.close()


@pytest.fixture(autouse=True)
def close_browser_pages(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each browser test, close the contexts and pages it opened (their renderer processes go with them)."""
    yield
    if "browser" in request.fixturenames:
        request.getfixturevalue("browser").close_opened()


@pytest.fixture(scope="session")
def app_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """The app as a user runs it (streamlit run), started once per worker and shared by its tests one after the
    other (starting it, and the first page's imports, cost seconds of CPU per test on a busy machine)."""
    server = AppServer(tmp_path_factory.mktemp("app-server"))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def live_app(app_server: AppServer, tmp_path: Path) -> LiveApp:
    """The app, on this test's own SQLite file and data folder (under ``tmp_path``): no other test's data."""
    return app_server.serve(tmp_path)


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Path:
    """Where a test's screenshots go (tests/browser/artifacts/<test name>/), for a person to look at."""
    folder = ARTIFACTS / request.node.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder
