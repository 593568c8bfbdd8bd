"""The one check of a zip's entry names, run at upload for every kind of zip forkpaths takes (an agent's outputs,
a dataset folder, a DiscoveryBench tree), before anything in it is read or unpacked.

A zip can hold names that no folder can: the same path as a file and as a folder (``a`` and ``a/b``), a path
5,000 folders deep, a name of 300 characters. Such a zip used to be accepted at upload and the run then failed
whole in the sandbox ("Scoring failed after 6 of 7 analyses: SandboxError… FileExistsError"). It is refused
here with a sentence that names the entry, in the words of what the zip holds (:class:`ArchiveWords`).

Limits: at most :data:`MAX_DEPTH` folders deep, each name at most :data:`MAX_NAME_BYTES` bytes in UTF-8 (what
Linux, macOS and Windows file systems allow), and at most the caller's number of entries.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from exports.errors import FormatError

__all__ = ["MAX_DEPTH", "MAX_NAME_BYTES", "ArchiveNameError", "ArchiveWords", "check_entry_names"]

MAX_DEPTH = 32
MAX_NAME_BYTES = 255


class ArchiveNameError(FormatError):
    """A zip whose entry names cannot be unpacked as they are (which entry, what is wrong)."""


@dataclass(frozen=True)
class ArchiveWords:
    """How a message names what the zip holds: ``what`` is the zip ("the outputs zip"), ``unit`` what each top
    folder is ("a task's output folder"), ``action`` what was not done ("nothing was stored")."""

    what: str = "the zip"
    unit: str = "folder"
    action: str = "nothing was read"


def _short(name: str, limit: int = 80) -> str:
    return name if len(name) <= limit else f"{name[:limit - 1]}…"


def check_entry_names(names: Iterable[str], *, label: str, max_entries: int,
                      words: ArchiveWords = ArchiveWords()) -> None:
    """Refuse a set of entry names (``/``-separated, directory entries ending in ``/``) that cannot be unpacked.

    Raises:
        ArchiveNameError: more than ``max_entries`` entries; a path deeper than :data:`MAX_DEPTH`; a name longer
            than :data:`MAX_NAME_BYTES` bytes; the same path as a file and as a folder, or as two files.
    """
    files: dict[str, str] = {}  # path -> the entry's name as given
    folders: dict[str, str] = {}  # a folder path -> an entry under it (or the folder entry itself)
    count = 0
    for raw in names:
        count += 1
        if count > max_entries:
            raise ArchiveNameError(f"{label} has more than {max_entries:,} entries; {words.what} may hold at most "
                                   f"{max_entries:,}, so {words.action}.")
        name = raw.replace("\\", "/")
        is_dir = name.endswith("/")
        parts = [p for p in PurePosixPath(name).parts if p not in ("", ".", "/")]
        if not parts:
            continue
        if len(parts) > MAX_DEPTH:
            raise ArchiveNameError(f"{label}: the entry '{_short(raw)}' is {len(parts)} levels deep; {words.what} may "
                                   f"nest at most {MAX_DEPTH} levels, so {words.action}.")
        for part in parts:
            if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
                raise ArchiveNameError(
                    f"{label}: the entry '{_short(raw)}' has a name of {len(part.encode('utf-8', 'surrogatepass'))} "
                    f"bytes ('{_short(part, 40)}'); a file or folder name may be at most {MAX_NAME_BYTES} bytes, so "
                    f"{words.action}.")
        path = "/".join(parts)
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder in files:
                raise ArchiveNameError(
                    f"{label}: '{_short(folder)}' is both a file and a folder (the folder holds "
                    f"'{_short(path)}'); {words.unit} cannot hold both at one path, so {words.action}. Rename one.")
            folders.setdefault(folder, path)
        if is_dir:
            if path in files:
                raise ArchiveNameError(
                    f"{label}: '{_short(path)}' is both a file and a folder; {words.unit} cannot hold both at one "
                    f"path, so {words.action}. Rename one.")
            folders.setdefault(path, path)
            continue
        if path in folders:
            raise ArchiveNameError(
                f"{label}: '{_short(path)}' is both a file and a folder (the folder holds '{_short(folders[path])}'); "
                f"{words.unit} cannot hold both at one path, so {words.action}. Rename one.")
        if path in files:
            raise ArchiveNameError(f"{label}: the entry '{_short(path)}' appears twice; {words.action}.")
        files[path] = raw
