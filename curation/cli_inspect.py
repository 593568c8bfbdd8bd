"""``forkpaths import-inspect LOG...``: inspect_ai logs (``.eval`` or ``.json``) of ``inspect eval
forkpaths/<kind>`` registered and scored as runs (:mod:`curation.services.inspect_import`).

Each log is one transaction: a log that cannot be imported is named with the reason and the next one is tried;
a sample left out or answered unusably is named and the others are kept. The runs are scored here, one after the
other (``--enqueue``: by ``forkpaths worker`` processes, on PostgreSQL).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curation.settings import Settings

__all__ = ["add_inspect_commands"]


def _read(path: Path, settings: Settings) -> bytes:
    from curation.errors import ScoringError
    from evaluation.submissions import printable

    shown = printable(str(path))
    if not path.exists():
        raise ScoringError(f"The inspect log {shown} does not exist; give the path of a .eval or .json log.")
    if not path.is_file():
        raise ScoringError(f"The inspect log {shown} is not a regular file; give a .eval or .json log.")
    if path.stat().st_size > settings.max_submission_bytes:
        raise ScoringError(f"The inspect log {shown} is {path.stat().st_size / 2**20:.1f} MB; the limit is "
                           f"{settings.max_submission_bytes / 2**20:.1f} MB (FORKPATHS_MAX_SUBMISSION_MB).")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ScoringError(f"The inspect log {shown} cannot be read: {exc.strerror or exc}.") from exc


def _import(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.cli_actor import acting_operator
    from curation.cli_scoring import (
        check_enqueue,
        judge_settings,
        queue_for_workers,
        score_in_foreground,
        scoring_limits,
    )
    from curation.db import session_scope
    from curation.errors import USER_ERRORS
    from curation.services.inspect_import import import_inspect_log

    check_enqueue(args, settings)
    report = initialise(settings)
    failed = 0
    for raw in args.logs:
        path = Path(raw)
        try:
            data = _read(path, settings)
            with session_scope(report.engine) as s:
                got = import_inspect_log(session=s, actor=acting_operator(session=s, username=getattr(args, "as_user", None)),
                                         name=path.name, data=data, artifacts=settings.artifact_store(),
                                         max_bytes=settings.max_submission_bytes, agent=args.agent or "",
                                         judges=judge_settings(settings), limits=scoring_limits(settings))
        except USER_ERRORS as exc:
            print(f"error: {exc}", file=sys.stderr)
            failed += 1
            continue
        for problem in got.problems:
            print(f"note: {problem}", file=sys.stderr)
        print(f"{got.log}: agent run {got.agent_run_id}, {got.samples} sample answer(s), scoring run(s) "
              f"{', '.join(str(i) for i in got.scoring_run_ids)}.", file=sys.stderr)
        for run_id in got.scoring_run_ids:
            if args.enqueue:
                queue_for_workers(report.engine, run_id)
            elif score_in_foreground(report.engine, run_id, settings, None) != 0:
                failed += 1
    return 1 if failed else 0


def add_inspect_commands(sub: Any) -> None:
    p = sub.add_parser("import-inspect", help="import inspect_ai logs (.eval, .json) of `inspect eval forkpaths/<kind>` "
                                              "as scoring runs, with their transcripts")
    p.add_argument("logs", nargs="+", metavar="LOG", help="an inspect_ai log file (.eval or .json)")
    p.add_argument("--agent", help="the name the runs have on the leaderboard (default: 'inspect <solver>')")
    p.add_argument("--enqueue", action="store_true", help="queue the runs for `forkpaths worker` (PostgreSQL)")
    p.set_defaults(func=_import)
