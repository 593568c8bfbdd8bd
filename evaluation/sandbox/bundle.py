"""Several named data files for one sandbox job, and reading a table the way the import layer does.

The sandbox hands a job ONE read-only file. To give code several files by name, they are packed into one zip
(:func:`pack_files`) and the job unpacks it into its private scratch directory, its working directory
(:func:`unpack_files`), before any untrusted code runs; the code then reads them by name
(``pd.read_csv("data.csv")``). The reproducibility script job and the model check of a hypothesis' supporting
code both go through here.

:func:`read_table` reads a table as the DiscoveryBench import does (``exports.discoverybench``): a Stata ``.dta``
file with :func:`pandas.read_stata`, a CSV in the encoding it was imported in, else UTF-8 with cp1252 as the
fallback (upstream ships cp1252 files). This module imports nothing heavy at import time (the zygote imports it
before forking).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

__all__ = ["BUNDLE_DIR", "DataFile", "bundle_for", "pack_files", "read_table", "safe_member", "table_format", "unpack_files"]

BUNDLE_DIR = "forkpaths-bundles"
TABLE_FORMATS = ("csv", "stata")


class DataFile(NamedTuple):
    """A file a job gets in its working directory: its name there, where it is, and (for a table) its format
    (``csv``, ``stata``) and a CSV's encoding as imported."""

    name: str
    path: Path
    format: str | None = None
    encoding: str | None = None


def safe_member(name: str) -> bool:
    """A relative name with no ``..``: it unpacks inside the working directory."""
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


def pack_files(files: Sequence[tuple[str, Path]], target: Path) -> list[str]:
    """Write ``files`` ((name in the working directory, path)) into the zip ``target``; a file that is not there
    is left out (the code's own FileNotFoundError then says so). Returns the names packed."""
    packed = []
    with open(target, "wb") as raw, zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, path in files:
            if safe_member(name) and Path(path).is_file():  # an unsafe name would unpack outside: left out
                zf.write(path, arcname=name)
                packed.append(name)
    return packed


def bundle_for(files: Sequence[tuple[str, Path]], *, folder: Path | None = None) -> Path:
    """The zip of ``files``, kept in ``folder`` (default: this user's own folder under the temporary folder) by
    what it holds (names, paths, sizes, times of change), so checking code again on the same files packs nothing.
    Written atomically; bundles unused for a day are removed.

    Raises:
        PermissionError: the default folder belongs to another user or others may write in it.
    """
    key = hashlib.sha256()
    for name, path in files:
        stat = Path(path).stat() if Path(path).is_file() else None
        key.update(f"{name}\0{Path(path).resolve()}\0{stat.st_size if stat else -1}\0"
                   f"{stat.st_mtime_ns if stat else -1}\n".encode())
    where = folder or Path(tempfile.gettempdir()) / f"{BUNDLE_DIR}-{os.getuid()}"
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = where.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o022:  # another user could plant a bundle there
        raise PermissionError(f"{where} is not this user's own folder; remove it")
    target = where / f"{key.hexdigest()[:32]}.zip"
    try:
        os.utime(target)  # there already, and in use: kept by the pruning
        return target
    except FileNotFoundError:
        pass
    _prune(where)
    fd, partial = tempfile.mkstemp(dir=where, suffix=".partial")
    os.close(fd)
    try:
        pack_files(files, Path(partial))
        os.replace(partial, target)
    finally:
        Path(partial).unlink(missing_ok=True)
    return target


def _prune(where: Path, max_age_s: float = 24 * 3600) -> None:
    """Forget bundles nobody asked for in a day (a job holds its bundle open, so removing it is harmless)."""
    import time

    cutoff = time.time() - max_age_s
    for old in where.glob("*.zip"):
        try:
            if old.stat().st_mtime < cutoff:
                old.unlink()
        except OSError:
            continue


def unpack_files(data: IO[bytes], work: Path) -> list[str]:
    """Unpack the zip ``data`` into ``work`` (members that would land outside it are skipped); the names."""
    names: list[str] = []
    with zipfile.ZipFile(data) as bundle:
        for member in bundle.infolist():
            if member.is_dir() or not safe_member(member.filename):
                continue
            target = work / member.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            with bundle.open(member) as src, open(target, "wb") as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            names.append(member.filename)
    return names


def table_format(name: str, declared: str | None = None) -> str | None:
    """``csv`` or ``stata`` (by the declared format, else the file's suffix); None for a file that is no table."""
    fmt = (declared or "").lower() or {".csv": "csv", ".dta": "stata"}.get(Path(name).suffix.lower(), "")
    if fmt in ("dta",):
        fmt = "stata"
    return fmt if fmt in TABLE_FORMATS else None


def read_table(path: Path, *, fmt: str | None = None, encoding: str | None = None) -> Any:
    """The table at ``path`` as a pandas frame: Stata with :func:`pandas.read_stata`; a CSV in ``encoding`` when
    given, else UTF-8 and then cp1252.

    Raises:
        ValueError: not a table, or a CSV neither UTF-8 nor cp1252 (the file is named).
    """
    import pandas as pd

    kind = table_format(Path(path).name, fmt)
    if kind == "stata":
        return pd.read_stata(path)
    if kind != "csv":
        raise ValueError(f"'{Path(path).name}' is not a table (CSV or Stata .dta)")
    for attempt in dict.fromkeys([encoding or "utf-8", "utf-8", "cp1252"]):
        try:
            return pd.read_csv(path, encoding=attempt, encoding_errors="strict")
        except UnicodeDecodeError:
            continue
    raise ValueError(f"'{Path(path).name}' is neither UTF-8 nor cp1252 text")
