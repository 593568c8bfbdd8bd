"""An agent's output folders, read from an uploaded zip or from a folder on disk, within limits.

A zip is read entry by entry with the sizes *counted while decompressing* (the sizes a zip's header states are
the uploader's word, so a zip bomb that lies about them is stopped as soon as it has produced more than allowed).
Names are checked before anything is read: no absolute path, no ``..``, no drive letter, no symlink, no device.

The layout of a run's zip: one top-level folder per task, named by the task's key, holding that task's output
files (``<task key>/cleaned.csv``). A zip whose files all sit in one top-level folder that is not a task key but
holds task folders (what "compress this folder" makes) is read one level down.
"""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evaluation.errors import EvaluationError
from exports.archive_names import ArchiveNameError, ArchiveWords, check_entry_names

__all__ = ["OutputLimits", "OutputsError", "read_output_folder", "read_outputs_zip", "split_by_task"]


class OutputsError(EvaluationError):
    """An output folder or zip that cannot be scored (which file, what is wrong)."""


@dataclass(frozen=True)
class OutputLimits:
    """What an agent's outputs may hold (fixed defaults; the whole upload is also bounded by
    ``FORKPATHS_MAX_SUBMISSION_MB``)."""

    max_files: int = 2000
    max_total_mb: float = 200.0
    max_file_mb: float = 50.0
    max_ratio: float = 200.0  # uncompressed / compressed per entry above which an entry is a bomb

    @property
    def max_total_bytes(self) -> int:
        return int(self.max_total_mb * 1024 * 1024)

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * 1024 * 1024)


_WORDS = ArchiveWords(what="an outputs zip", unit="a task's output folder", action="nothing was read")


def _clean_name(name: str, *, where: str) -> str | None:
    """The entry's relative POSIX path, or None for a directory entry; raises for a dangerous name."""
    if "\x00" in name:
        raise OutputsError(f"{where}: the entry {name!r} has a NUL byte in its name; nothing was read.")
    name = name.replace("\\", "/")
    if name.endswith("/"):
        return None
    path = PurePosixPath(name)
    if path.is_absolute() or (path.parts and ":" in path.parts[0]):
        raise OutputsError(f"{where}: the entry {name!r} is an absolute path; a zip of outputs holds relative "
                           "paths only. Nothing was read.")
    if any(part == ".." for part in path.parts):
        raise OutputsError(f"{where}: the entry {name!r} climbs out of the folder with '..' (path traversal); "
                           "nothing was read.")
    parts = [p for p in path.parts if p not in ("", ".")]
    if not parts:
        return None
    return "/".join(parts)


def read_outputs_zip(data: bytes, *, label: str = "the zip", limits: OutputLimits = OutputLimits()) -> dict[str, bytes]:
    """Every file of the zip as {relative path: bytes}, checked and bounded.

    Raises:
        OutputsError: not a zip, a dangerous entry name, a symlink, too many files, a file or the total larger
            than allowed, or an entry that decompresses far beyond its compressed size (a zip bomb).
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise OutputsError(f"{label} is not a zip file ({exc}); upload the output folders as one .zip.") from None
    files: dict[str, bytes] = {}
    total = 0
    with archive:
        infos = archive.infolist()
        try:  # names that cannot be unpacked (a file and a folder at one path, too deep, too long), before reading
            check_entry_names((info.filename for info in infos), label=label, max_entries=limits.max_files * 2,
                              words=_WORDS)
        except ArchiveNameError as exc:
            raise OutputsError(str(exc)) from None
        for info in infos:
            name = _clean_name(info.filename, where=label)
            mode = info.external_attr >> 16
            if name is None or info.is_dir():
                continue
            if mode and (stat.S_ISLNK(mode) or not (stat.S_ISREG(mode) or stat.S_IFMT(mode) == 0)):
                raise OutputsError(f"{label}: the entry {name!r} is a symbolic link or a device, not a file; "
                                   "nothing was read.")
            if name in files:
                raise OutputsError(f"{label}: the entry {name!r} appears twice; nothing was read.")
            if len(files) >= limits.max_files:
                raise OutputsError(f"{label} holds more than {limits.max_files} files (a huge folder); "
                                   "nothing was read.")
            files[name] = _read_entry(archive, info, name, label=label, limits=limits, so_far=total)
            total += len(files[name])
    return files


def _read_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, *, label: str, limits: OutputLimits,
                so_far: int) -> bytes:
    cap = min(limits.max_file_bytes, limits.max_total_bytes - so_far)
    ratio_cap = max(int(info.compress_size * limits.max_ratio), 1024 * 1024)
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as handle:
            while True:
                chunk = handle.read(1024 * 1024)
                if not chunk:
                    break
                size += len(chunk)
                if size > ratio_cap:
                    raise OutputsError(
                        f"{label}: the entry {name!r} decompresses to more than {limits.max_ratio:g} times its "
                        f"compressed size ({info.compress_size} bytes): a zip bomb. Nothing was read.")
                if size > cap:
                    which = "the file" if cap == limits.max_file_bytes else "the outputs together"
                    raise OutputsError(
                        f"{label}: the entry {name!r} makes {which} larger than allowed ("
                        f"{limits.max_file_mb:g} MB per file, {limits.max_total_mb:g} MB in all); nothing was read.")
                chunks.append(chunk)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError,
            RuntimeError) as exc:
        raise OutputsError(f"{label}: the entry {name!r} cannot be read ({exc}).") from None
    return b"".join(chunks)


def read_output_folder(folder: Path, *, limits: OutputLimits = OutputLimits()) -> dict[str, bytes]:
    """Every regular file under ``folder`` as {relative path: bytes}; symlinks are refused, not followed.

    Raises:
        OutputsError: the folder is missing, holds a symlink, or more files or bytes than allowed.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise OutputsError(f"The output folder {folder} does not exist or is not a folder.")
    files: dict[str, bytes] = {}
    total = 0
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            raise OutputsError(f"{folder}: {rel} is a symbolic link; output folders hold plain files only.")
        if not path.is_file():
            continue
        if len(files) >= limits.max_files:
            raise OutputsError(f"{folder} holds more than {limits.max_files} files (a huge folder).")
        size = path.stat().st_size
        if size > limits.max_file_bytes or total + size > limits.max_total_bytes:
            raise OutputsError(f"{folder}: {rel} makes the outputs larger than allowed ({limits.max_file_mb:g} MB "
                               f"per file, {limits.max_total_mb:g} MB in all).")
        files[rel] = path.read_bytes()
        total += size
    return files


def split_by_task(files: Mapping[str, bytes], task_keys: Iterable[str], *,
                  label: str = "the zip") -> dict[str, dict[str, bytes]]:
    """The files grouped by their top-level folder, which must name a task; {task key: {path: bytes}}.

    Raises:
        OutputsError: a file outside any task folder, or a folder that names no task (listing the known ones).
    """
    keys = set(task_keys)
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and not (tops & keys):
        (top,) = tops
        inner = {name.split("/", 1)[1]: data for name, data in files.items() if "/" in name}
        if inner and {n.split("/", 1)[0] for n in inner} <= keys:
            files = inner
    out: dict[str, dict[str, bytes]] = {}
    for name, data in files.items():
        if "/" not in name:
            raise OutputsError(f"{label}: {name} is not inside a task folder; put each task's outputs in a folder "
                               f"named by its key ({', '.join(sorted(keys)) or 'no tasks'}).")
        top, rest = name.split("/", 1)
        if top not in keys:
            raise OutputsError(f"{label}: the folder {top!r} names no programmatic task of this release (known: "
                               f"{', '.join(sorted(keys)) or 'none'}).")
        out.setdefault(top, {})[rest] = data
    return out
