from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from streamlit.testing.v1 import AppTest

from curation.bootstrap import initialise
from curation.models import Role, User
from curation.settings import Settings
from tests import factories as f
from tests.conftest import migrated_sqlite

APP = Path(__file__).resolve().parents[2] / "annotate_app" / "app.py"
ADMIN_PASSWORD = "admin password 1"


@dataclass
class UIEnv:
    settings: Settings
    engine: Engine
    admin: User
    analyst: User
    curator: User
    dataset_id: int

    def app(self, user: User | None = None) -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=60)
        if user is not None:
            at.session_state["fp.session_token"] = self.token_for(user)
        return at

    def token_for(self, user: User) -> str:
        """A server-side session for ``user``, as signing in opens one."""
        return signed_in_token(self.engine, self.settings, user)


def signed_in_token(engine: Engine, settings: Settings, user: User) -> str:
    from curation.db import session_scope
    from curation.services.sessions import start_auth_session

    with session_scope(engine) as s:
        return start_auth_session(session=s, user=user, policy=settings.session_policy)


@pytest.fixture
def ui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[UIEnv]:
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", ADMIN_PASSWORD)
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
    # the app's start-up (initialise) runs in full on the copy; only the migrations are already applied
    migrated_sqlite(settings.resolved_data_dir / "forkpaths.db").dispose()  # tests/conftest.py's template
    assert settings.resolved_database_url == f"sqlite:///{settings.resolved_data_dir / 'forkpaths.db'}"
    report = initialise(settings)
    from sqlmodel import select

    from curation.db import session_scope
    from curation.models import User as U

    with session_scope(report.engine) as s:
        admin = s.exec(select(U).where(U.username == "admin")).one()
    analyst = f.user(report.engine, "ana")
    curator = f.user(report.engine, "cura", Role.CURATOR)
    ds = f.dataset(report.engine, settings.datasets_store, assign=[analyst, admin])
    yield UIEnv(settings, report.engine, admin, analyst, curator, ds.id)
    report.engine.dispose()
    # what the app built for this test's database (its engine, its run and job threads) is never used again:
    # release it, as a stopped app would, rather than keep every test's engine and caches alive in this process
    import streamlit as st

    st.cache_resource.clear()


@pytest.fixture(scope="session", autouse=True)
def _streamlit_start_up_once() -> Iterator[None]:
    """What a served app does once when its runtime starts, ``AppTest`` does on every run; done once here.

    * Every new ``AppTest`` scans all installed distributions for Streamlit v2 component manifests (~0.15 s of
      CPU, 16 threads, each time). The installed packages do not change during the session: scan once.
    * Every run compiles the entry script and the page anew (parse, Streamlit's "magic" rewrite, compile) in a
      fresh ``ScriptCache``; a served app keeps one for the runtime's life (cleared when a file changes, which
      the app's files do not during the tests): share one.
    """
    from streamlit.components.v2 import manifest_scanner
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    from streamlit.testing.v1 import app_test, local_script_runner

    found = manifest_scanner.scan_component_manifests()
    script_cache = ScriptCache()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(manifest_scanner, "scan_component_manifests", lambda max_workers=None: list(found))
        for module in (app_test, local_script_runner):
            assert module.ScriptCache is ScriptCache  # what is replaced is what AppTest builds
            mp.setattr(module, "ScriptCache", lambda: script_cache)
        yield


MARKDOWN_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")


def texts(at: AppTest, *, raw: bool = False) -> str:
    """Everything the page shows as text, for assertions: Markdown escapes removed as the browser removes
    them (``raw``: the Markdown source as sent)."""
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "success", "info", "warning", "error",
                 "text", "code", "toast"):
        for el in getattr(at, kind, []):
            value = str(getattr(el, "value", ""))
            parts.append(value if raw or kind == "code" else MARKDOWN_ESCAPE.sub(r"\1", value))
    return "\n".join(parts)


def settle(at: AppTest, timeout: float = 60.0) -> AppTest:
    """Rerun while a sanity check is still running, as the page's poll does, until its result shows."""
    import time

    deadline = time.monotonic() + timeout
    while "Running the sanity check" in texts(at) and time.monotonic() < deadline:
        time.sleep(0.3)
        at.run()
    return at
