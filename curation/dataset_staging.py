"""Where a dataset's files wait until the transaction that records them commits, and the sweep that clears it.

An import writes every file of a dataset to ``<store>.staging/<host>-<pid>/<folder>/`` (a sibling of the
dataset store, on the same file system), and moves the folder into the store only after its database row is
committed (:func:`curation.services.datasets.register_dataset`). A rolled-back import deletes its staged files
itself; a killed one (``kill -9``, the OOM killer, a power cut) cannot, so every start of the app and of each
command (:func:`curation.bootstrap.initialise`) runs :func:`sweep_staging`:

- the folder of a process that is still running on this machine is left alone (it is importing now);
- a staged folder whose dataset row was committed (the process died between the commit and the move) is moved
  into the store, where the row expects it;
- every other staged folder is deleted.

A folder staged by another machine is left to that machine's next start unless it is a day old.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the CLI imports this module at start: the tables load only when a sweep runs
    from sqlmodel import Session

__all__ = ["StagingSweep", "staging_folder", "staging_root", "sweep_staging"]

log = logging.getLogger(__name__)

#: A staged folder of another machine older than this is deleted by any start.
FOREIGN_AGE_S = 24 * 3600


def staging_root(store: Path) -> Path:
    """``<store>.staging``: beside the store, so that moving a folder in is a rename."""
    store = Path(store)
    return store.with_name(store.name + ".staging")


def _owner() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def staging_folder(store: Path) -> Path:
    """This process's staging folder (created)."""
    folder = staging_root(store) / _owner()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _alive(owner: str) -> bool | None:
    """Whether the process that owns a staging folder runs; None when it is another machine's."""
    host, _, pid = owner.rpartition("-")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    if int(pid) == os.getpid():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class StagingSweep:
    """What a start found in the staging area."""

    removed: list[str] = field(default_factory=list)  # staged folders deleted (no committed row)
    moved_in: list[str] = field(default_factory=list)  # committed, then the process died before moving them


def sweep_staging(*, session: Session, store: Path) -> StagingSweep:
    """Clear the staging leftovers of processes that are gone (see the module's text)."""
    report = StagingSweep()
    root = staging_root(store)
    if not root.is_dir():
        return report
    from sqlmodel import col, select

    from curation.models import Dataset
    for owner in sorted(root.iterdir()):
        alive = _alive(owner.name)
        if alive or (alive is None and time.time() - owner.stat().st_mtime < FOREIGN_AGE_S):
            continue
        for staged in sorted(owner.iterdir()) if owner.is_dir() else []:
            committed = session.exec(
                select(Dataset.id).where(col(Dataset.data_relpath).startswith(f"{staged.name}/"))
            ).first()
            target = Path(store) / staged.name
            if committed is not None and not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                staged.rename(target)
                report.moved_in.append(staged.name)
                log.warning("moved %s into the dataset store: its dataset was committed, then the import stopped",
                            staged.name)
            else:
                if staged.is_dir():
                    shutil.rmtree(staged, ignore_errors=True)
                else:
                    staged.unlink(missing_ok=True)
                report.removed.append(staged.name)
                log.warning("removed the staged files of %s: the import that wrote them stopped before its "
                            "dataset was recorded", staged.name)
        if owner.is_dir():
            shutil.rmtree(owner, ignore_errors=True)
        else:
            owner.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # not empty: an import of a running process is staged there
        root.rmdir()
    return report
