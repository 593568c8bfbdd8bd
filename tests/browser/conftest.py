"""Real-browser fixtures: Debian's Chromium (installed when missing), the app served on a free port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from curation.bootstrap import initialise
from curation.settings import Settings
from tests.conftest import apt_install

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
ADMIN_PASSWORD = "admin password 1"
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
        pytest.skip("Chromium is not installed and could not be installed with apt-get (needs root)")
    return path


@pytest.fixture(scope="session")
def browser(chromium: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        yield b
        b.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveApp:
    url: str
    settings: Settings
    log: Path


@pytest.fixture
def live_app(tmp_path: Path) -> Iterator[LiveApp]:
    """The app as a user runs it (streamlit run), on its own SQLite file and data folder."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("FORKPATHS_")},
        "FORKPATHS_DATA_DIR": str(tmp_path / "data"),
        "FORKPATHS_ADMIN_PASSWORD": ADMIN_PASSWORD,
        "FORKPATHS_LOAD_STARTER_DATASETS": "false",
    }
    old = {k: os.environ.get(k) for k in env if k.startswith("FORKPATHS_")}
    os.environ.update({k: v for k, v in env.items() if k.startswith("FORKPATHS_")})
    try:
        settings = Settings()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    initialise(settings)
    port = free_port()
    log = tmp_path / "streamlit.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "annotate_app" / "app.py"),
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the app did not start; its log:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)
    try:
        yield LiveApp(url, settings, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Path:
    """Where a test's screenshots go (tests/browser/artifacts/<test name>/), for a person to look at."""
    folder = ARTIFACTS / request.node.name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder
