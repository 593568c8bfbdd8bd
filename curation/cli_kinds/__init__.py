"""The commands a kind of task owns, one module per kind named after it (``curation/cli_kinds/<kind>.py``, e.g.
``mcq generate|audit`` and ``score-mcq`` in ``mcq.py``), each defining ``add_commands(sub)``.

They are found by a scan of this package, as the task registry finds the kinds (``evaluation/tasks/``), not listed
by hand; a module here names a registered kind (tests/curation/test_cli_kinds.py). The scan imports them when the
parser is built, for every command and ``--help``: a module here imports nothing heavy at its top (the database,
the services, the task registry and the data libraries are imported inside its commands; see curation/cli.py).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__all__ = ["add_kind_commands", "kind_command_modules"]


def kind_command_modules() -> list[str]:
    """The names of this package's modules (each a task kind's name), in name order. (A listing of its folders,
    not pkgutil, which would import ``inspect`` at every command's start.)"""
    return sorted({path.stem for folder in __path__ for path in Path(folder).glob("*.py")
                   if not path.stem.startswith("_")})


def add_kind_commands(sub: Any) -> None:
    """Every kind's own commands, added to ``sub`` (the ``forkpaths`` subcommands)."""
    for name in kind_command_modules():
        importlib.import_module(f"{__name__}.{name}").add_commands(sub)
