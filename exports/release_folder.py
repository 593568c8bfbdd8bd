"""The folder that holds every release: which versions it holds, leftovers of interrupted writes, and the
quarantine where files that must not be served are set aside (kept for a person to look at, never deleted).

Layout of ``<dest_root>``::

    <version>/  <version>.zip                      published releases (see :mod:`exports.native`)
    .<version>.partial-<pid>-<random>              a write in progress, or the leftover of an interrupted one
    quarantine/<stamp>-<name>                      a folder or zip set aside (e.g. release files without a record)
    quarantine/<stamp>-<name>.reason.json          why, when, and where it came from
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "QUARANTINE_DIR",
    "SetAside",
    "cleanup_partials",
    "list_releases",
    "list_set_aside",
    "parse_version",
    "set_aside",
]

logger = logging.getLogger(__name__)

#: The folder inside the releases folder where files that must not be served are moved.
QUARANTINE_DIR = "quarantine"
_REASON_SUFFIX = ".reason.json"
_VERSION = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")
_PARTIAL = re.compile(r"^\.(?P<name>.+)\.partial-(?P<pid>[0-9]+)-[0-9a-f]+$")


def parse_version(version: str) -> tuple[int, int, int] | None:
    """Return ``(major, minor, patch)`` for a plain semantic version ``X.Y.Z``, or None for anything else."""
    match = _VERSION.match(version)
    return None if match is None else (int(match[1]), int(match[2]), int(match[3]))


def list_releases(dest_root: Path) -> list[str]:
    """Return the versions released in ``dest_root`` (as a folder or a zip), sorted semantically.

    Hidden entries (``.partial`` leftovers of interrupted writes), the quarantine and names that are not
    ``X.Y.Z`` are ignored.
    """
    dest_root = Path(dest_root)
    if not dest_root.is_dir():
        return []
    versions: set[str] = set()
    for entry in dest_root.iterdir():
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and parse_version(entry.name):
            versions.add(entry.name)
        elif entry.is_file() and entry.name.endswith(".zip") and parse_version(entry.name[: -len(".zip")]):
            versions.add(entry.name[: -len(".zip")])
    return sorted(versions, key=lambda v: parse_version(v) or (0, 0, 0))


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _partials(dest_root: Path) -> Iterator[tuple[Path, int]]:
    for entry in dest_root.iterdir():
        match = _PARTIAL.match(entry.name)
        if match is not None:
            yield entry, int(match["pid"])


def cleanup_partials(dest_root: Path, *, include_live: bool = False) -> list[Path]:
    """Remove the leftovers of interrupted writes (``.<version>.partial-<pid>-<random>`` folders and zips).

    Leftovers whose writing process still runs on this machine are kept unless ``include_live`` is true, so
    a write in progress is not destroyed. Run it on the machine that writes the releases. A caller that
    knows no write can be in progress (it holds the writers' lock) passes ``include_live=True``: after a
    restart a dead writer's pid may belong to another process.

    Returns:
        The paths removed.
    """
    dest_root = Path(dest_root)
    if not dest_root.is_dir():
        return []
    removed = []
    for entry, pid in sorted(_partials(dest_root)):
        if not include_live and _pid_alive(pid):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
        removed.append(entry)
        logger.info("removed interrupted release write %s", entry)
    return removed


@dataclass(frozen=True)
class SetAside:
    """A folder or zip moved out of the releases folder into the quarantine.

    Attributes:
        name: its name in the releases folder, e.g. ``1.0.0`` or ``1.0.0.zip``.
        path: where it is now.
        reason: a sentence saying why it was set aside.
        set_aside_at: when (UTC).
    """

    name: str
    path: Path
    reason: str
    set_aside_at: datetime


def set_aside(dest_root: Path, name: str, reason: str) -> SetAside:
    """Move ``dest_root/name`` into ``dest_root/quarantine/`` with a note saying why (logged as a warning).

    Nothing is deleted: a person decides what to do with it (move it back once its record is restored, or
    delete it).

    Raises:
        FileNotFoundError: there is no ``dest_root/name``.
        ValueError: ``name`` is not a plain entry of the releases folder.
    """
    dest_root = Path(dest_root)
    if not name or "/" in name or name in {".", "..", QUARANTINE_DIR}:
        raise ValueError(f"cannot set aside {name!r}: not an entry of the releases folder")
    source = dest_root / name
    if not os.path.lexists(source):
        raise FileNotFoundError(f"{source}: nothing to set aside")
    quarantine = dest_root / QUARANTINE_DIR
    quarantine.mkdir(exist_ok=True)
    moment = datetime.now(UTC).replace(microsecond=0)
    stamp = moment.strftime("%Y%m%dT%H%M%SZ")
    target = quarantine / f"{stamp}-{name}"
    counter = 1
    while os.path.lexists(target) or os.path.lexists(target.with_name(target.name + _REASON_SUFFIX)):
        counter += 1
        target = quarantine / f"{stamp}-{counter}-{name}"
    os.rename(source, target)  # same file system: atomic, and the files keep every byte
    note = {"name": name, "reason": reason, "set_aside_at": moment.isoformat(), "from": str(source)}
    target.with_name(target.name + _REASON_SUFFIX).write_text(
        json.dumps(note, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    logger.warning("set aside %s as %s: %s", source, target, reason)
    return SetAside(name=name, path=target, reason=reason, set_aside_at=moment)


def _read_note(path: Path) -> dict[str, str]:
    try:
        note = json.loads(path.with_name(path.name + _REASON_SUFFIX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return note if isinstance(note, dict) else {}


def list_set_aside(dest_root: Path) -> list[SetAside]:
    """Everything in the quarantine, newest first (an entry whose note is missing says so)."""
    quarantine = Path(dest_root) / QUARANTINE_DIR
    if not quarantine.is_dir():
        return []
    found = []
    for entry in quarantine.iterdir():
        if entry.name.endswith(_REASON_SUFFIX):
            continue
        note = _read_note(entry)
        try:
            moment = datetime.fromisoformat(str(note["set_aside_at"]))
        except (KeyError, ValueError):
            moment = datetime.fromtimestamp(entry.lstat().st_mtime, UTC).replace(microsecond=0)
        found.append(SetAside(
            name=str(note.get("name") or entry.name),
            path=entry,
            reason=str(note.get("reason") or "no note says why (the note file is missing or unreadable)"),
            set_aside_at=moment,
        ))
    return sorted(found, key=lambda s: (s.set_aside_at, s.path.name), reverse=True)
