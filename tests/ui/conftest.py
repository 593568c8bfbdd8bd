from __future__ import annotations

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
            at.session_state["fp.user_id"] = user.id
            at.session_state["fp.auth_epoch"] = user.auth_epoch
        return at


@pytest.fixture
def ui(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[UIEnv]:
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", ADMIN_PASSWORD)
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
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


def texts(at: AppTest) -> str:
    """Everything the page shows as text, for assertions."""
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "success", "info", "warning", "error",
                 "text", "code"):
        for el in getattr(at, kind, []):
            parts.append(str(getattr(el, "value", "")))
    return "\n".join(parts)
