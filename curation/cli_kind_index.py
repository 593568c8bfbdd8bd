"""The ``import-<kind>`` commands (name, help, kind), read from the task registry and kept beside the registry's
sources, so that ``forkpaths --help`` and a mistyped command do not load every kind (their part models, judges
and agent hooks: ~0.7 s CPU) to print one line per kind.

The registry stays the only source: what is kept is what it declared, keyed by the size and modification time
of every source file of ``evaluation`` and ``exports`` (a kind and everything it can import live there), and read
again from the registry whenever one of them changed or a package was installed or removed (a ``site-packages``
folder of ``sys.path`` changed), when the registry is already loaded in this process (a kind registered by a test), and
always when an installed package publishes kinds (``forkpaths.kinds`` entry points, whose sources are
elsewhere). Where the folder is not writable, the registry is read every time.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from importlib.util import find_spec
from pathlib import Path

__all__ = ["ENTRY_POINT_GROUP", "KindImport", "kind_imports"]

KindImport = tuple[str, str, str]
"""One ``import-<kind>`` command: its name, its help line and the kind it imports for."""

ENTRY_POINT_GROUP = "forkpaths.kinds"  # evaluation.tasks.registry.ENTRY_POINT_GROUP (a test keeps them equal)
_CACHE_NAME = "cli-kind-imports.json"
_SOURCES = ("evaluation", "exports")


def _from_registry() -> list[KindImport]:
    from evaluation.tasks import KINDS

    return [(f"import-{kind.name.replace('_', '-')}",
             f"import {kind.importer.source} as datasets with their {kind.release_part.noun} and gold", kind.name)
            for kind in KINDS.values() if kind.importer is not None and kind.release_part is not None]


def _package_dir(name: str) -> Path | None:
    spec = find_spec(name)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None


def _sources_key(roots: list[Path]) -> list[list[object]]:
    key: list[list[object]] = [[entry, os.stat(entry).st_mtime_ns] for entry in sys.path  # where packages install
                               if entry.endswith(("site-packages", "dist-packages")) and os.path.isdir(entry)]
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(folder, name))
                    key.append([os.path.join(folder, name), stat.st_mtime_ns, stat.st_size])
    return key


def _write(path: Path, content: str) -> None:
    import tempfile

    with contextlib.suppress(OSError):  # a read-only install: the registry is read every time
        path.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cli-kinds-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(tmp, path)


def kind_imports(*, sources: list[Path] | None = None, cache: Path | None = None) -> list[KindImport]:
    """Every ``import-<kind>`` command the registry declares, in its kinds' order (``sources`` and ``cache``:
    the folders whose files key what is kept, and where it is kept; by default ``evaluation`` and ``exports``,
    and a file in ``evaluation/tasks/__pycache__``)."""
    roots = sources if sources is not None else [_package_dir(name) for name in _SOURCES]
    if "evaluation.tasks" in sys.modules or not roots or any(root is None for root in roots):
        return _from_registry()
    key = _sources_key([root for root in roots if root is not None])
    cache = cache or Path(str(roots[0])) / "tasks" / "__pycache__" / _CACHE_NAME
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        kept = json.loads(cache.read_text(encoding="utf-8"))
        if kept["sources"] == key and kept["commands"] is not None:  # None: installed packages publish kinds
            return [(str(name), str(text), str(kind)) for name, text, kind in kept["commands"]]
        if kept["sources"] == key:
            return _from_registry()
    from importlib.metadata import entry_points

    commands = _from_registry()
    plugins = bool(entry_points(group=ENTRY_POINT_GROUP))
    _write(cache, json.dumps({"sources": key, "commands": None if plugins else commands}))
    return commands
