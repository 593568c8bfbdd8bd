"""Start-up: build the engine, apply migrations, create the first admin, clear the dataset files a killed import
staged, register the starter datasets, and put the releases folder in order (interrupted writes removed,
unrecorded release files set aside)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import select

from curation.dataset_staging import sweep_staging
from curation.db import make_engine, migrate, session_scope
from curation.errors import CurationError
from curation.models import Dataset, DatasetAssignment
from curation.services.accounts import ensure_first_admin, forget_stale_password_file
from curation.services.background_jobs import interrupt_dead_jobs
from curation.services.release_store import ReleaseStoreReport, reconcile_release_store
from curation.services.run_lifecycle import interrupt_dead_runs
from curation.services.sandbox_setting import configure_sandbox
from curation.settings import Settings

# pandas and the dataset services are imported where they are used (registering the starters), so that
# importing this module (every CLI command does) stays light

__all__ = ["StartupReport", "initialise"]

log = logging.getLogger(__name__)
PASSWORD_FILE = "first-admin-password.txt"  # Settings.first_admin_password_file


@dataclass
class StartupReport:
    engine: Engine
    admin_username: str
    generated_password: str | None
    password_file: Path | None
    starters_registered: list[str]
    releases: ReleaseStoreReport = field(default_factory=ReleaseStoreReport)


def _register_starters(engine: Engine, settings: Settings, admin_id: int | None) -> list[str]:
    root = settings.starter_datasets_dir
    if not settings.load_starter_datasets or root is None or not Path(root).is_dir():
        return []
    with session_scope(engine) as session:
        if session.exec(select(Dataset)).first() is not None:
            return []  # only on first start: curators may have removed or renamed them since
    from curation.dataset_files import read_blade_folder  # pandas: only when there is something to register
    from curation.services.datasets import register_dataset
    from curation.starters import list_starter_dirs

    names = []
    for folder in list_starter_dirs(Path(root)):
        try:
            bundle = read_blade_folder(folder, max_bytes=settings.max_upload_bytes)
            with session_scope(engine) as session:
                ds = register_dataset(session=session, actor=None, bundle=bundle, store=settings.datasets_store)
                if admin_id is not None:
                    # The first admin can start annotating at once; analysts are assigned on the admin page.
                    session.add(DatasetAssignment(dataset_id=ds.id or 0, user_id=admin_id))
            names.append(bundle.name)
        except CurationError as exc:
            log.error("starter dataset %s was not registered: %s", folder, exc)
    if names:  # the starter programmatic tasks (issue 20) go with the starter datasets they read
        from curation.programmatic_starters import register_starter_tasks

        try:
            with session_scope(engine) as session:
                register_starter_tasks(session=session, datasets_dir=Path(root))
        except (CurationError, ValueError, OSError) as exc:
            log.error("the starter programmatic tasks were not registered: %s", exc)
    return names


def initialise(settings: Settings, *, runs_code: bool = True) -> StartupReport:
    """Everything the app and the CLI need before serving: idempotent, safe to run at every start.

    ``runs_code=False`` (a command that only reads records, such as listing runs) sets the sandbox up without
    probing how strongly it isolates here: the probe starts bubblewrap and a Python process, and says nothing a
    command that runs no code needs."""
    settings.resolved_data_dir.mkdir(parents=True, exist_ok=True)
    if runs_code:
        configure_sandbox(mode=settings.sandbox, data_dir=settings.resolved_data_dir)
    else:
        from evaluation import sandbox

        sandbox.configure(mode=settings.sandbox, hidden_paths=[settings.resolved_data_dir])
    engine = make_engine(settings.resolved_database_url)
    migrate(engine)
    password = settings.admin_password.get_secret_value() if settings.admin_password else None
    with session_scope(engine) as session:
        admin, generated = ensure_first_admin(session=session, username=settings.admin_username, password=password)
        admin_id, admin_name = admin.id, admin.username
    password_file = None
    if generated:
        password_file = settings.resolved_data_dir / PASSWORD_FILE
        password_file.write_text(
            f"user name: {admin_name}\npassword: {generated}\n"
            "Sign in, then change it on the Account page: this file is removed once the password is changed.\n",
            encoding="utf-8",
        )
        os.chmod(password_file, 0o600)
    else:
        # The admin changed that password while the app was stopped (or the CLI reset it): the file goes.
        with session_scope(engine) as session:
            forget_stale_password_file(session=session, path=settings.first_admin_password_file)
    with session_scope(engine) as session:  # dataset files staged by an import that was killed
        sweep_staging(session=session, store=settings.datasets_store)
    starters = _register_starters(engine, settings, admin_id)
    with session_scope(engine) as session:
        releases = reconcile_release_store(session=session, artifacts=settings.artifact_store())
    with session_scope(engine) as session:  # runs and releases of the layout before the artifact store
        from curation.services.artifact_import import import_old_layout

        import_old_layout(session=session, artifacts=settings.artifact_store(), runs_root=settings.runs_store)
    with session_scope(engine) as session:  # a run (or a job) whose process died does not stay "running"
        interrupt_dead_runs(session=session)
        interrupt_dead_jobs(session=session)
    return StartupReport(engine, admin_name, generated, password_file, starters, releases)
