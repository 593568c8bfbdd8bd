"""The ``forkpaths`` command: run the app; from a terminal, manage users and datasets, import BLADE,
DiscoveryBench and DataSciBench data, cut and export releases, score submissions of every task kind, run agents
and check the reproducibility of their analyses. ``forkpaths COMMAND --help`` tells more."""

from __future__ import annotations

import argparse
import logging
import sys

from curation.cli_agent import add_agent_commands
from curation.cli_app import add_app_commands
from curation.cli_curation import add_curation_commands
from curation.cli_datasets import add_dataset_commands, add_kind_imports
from curation.cli_inspect import add_inspect_commands
from curation.cli_kinds import add_kind_commands
from curation.cli_releases import add_release_commands
from curation.cli_scoring import add_scoring_commands
from curation.errors import USER_ERRORS, CurationError

# This module only routes: the commands are in the cli_* modules (a kind's own in curation/cli_kinds/<kind>.py).
# Everything else (the settings, the database, the tables, the services, the data libraries) is imported inside
# the commands that use it: every command pays for what is imported here, and `--help` or a mistyped option
# must answer at once (tests/curation/test_cli_imports.py keeps it light).

__all__ = ["build_parser", "main"]


def build_parser(*, kind_imports: bool = True) -> argparse.ArgumentParser:
    """The whole command line; without ``kind_imports``, without the ``import-<kind>`` commands, whose list
    comes from the task registry (kept between starts by :mod:`curation.cli_kind_index`: loading the registry
    imports every kind)."""
    p = argparse.ArgumentParser(prog="forkpaths", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print progress logs (INFO); accepted anywhere on the command line")
    sub = p.add_subparsers(dest="command", required=True)
    add_app_commands(sub)
    add_dataset_commands(sub)
    if kind_imports:
        add_kind_imports(sub)
    add_release_commands(sub)
    add_curation_commands(sub)
    add_kind_commands(sub)
    add_scoring_commands(sub)
    add_agent_commands(sub)
    add_inspect_commands(sub)
    return p


def _take_as(argv: list[str]) -> tuple[list[str], str | None]:
    """``argv`` without its ``--as USER`` (or ``--as=USER``), wherever it stands, and that user.

    Everything after a bare ``--`` is left alone. Saying ``--as`` twice with different users is an error.
    """
    rest: list[str] = []
    users: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        if arg == "--as":
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                raise CurationError("--as needs a user name: --as USER.")
            users.append(argv[i + 1])
            i += 2
            continue
        if arg.startswith("--as="):
            users.append(arg.removeprefix("--as="))
            i += 1
            continue
        rest.append(arg)
        i += 1
    if len(set(users)) > 1:
        raise CurationError(f"--as is given twice with different users ({', '.join(users)}); say it once.")
    return rest, (users[0] if users else None)


_WITHOUT_ACTOR = ("run", "init", "create-user", "add-dataset", "assign")


VERBOSE_FLAGS = ("--verbose", "-v")


def _parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser ``argv`` needs: every command but the ``import-<kind>`` ones, when it names one of them (their
    list is read only for an ``import-<kind>`` command, the top-level help, or a command not found)."""
    parser = build_parser(kind_imports=False)
    named = next((a for a in argv if not a.startswith("-")), None)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return parser if named in commands else build_parser()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = any(a in VERBOSE_FLAGS for a in argv)  # anywhere on the command line
    argv = [a for a in argv if a not in VERBOSE_FLAGS]
    # the libraries' and services' INFO logs only when asked for; warnings and errors always
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", force=True)
    try:
        argv, as_user = _take_as(argv)
        for arg in argv:  # a non-UTF-8 byte from the terminal arrives as a lone surrogate (surrogateescape)
            if any("\ud800" <= ch <= "\udfff" for ch in arg):
                shown = arg.encode("utf-8", "backslashreplace").decode("utf-8")
                raise CurationError(f"the argument '{shown}' is not UTF-8 text; set the terminal to UTF-8 "
                                    "and type it again.")
    except CurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = _parser_for(argv).parse_args(argv)
    # only now, past --help and the argument errors argparse answers by itself
    from pydantic import ValidationError

    from curation.settings import Settings

    if as_user is not None:
        if args.command in _WITHOUT_ACTOR:
            print(f"error: forkpaths {args.command} does not act as a user; leave out --as.", file=sys.stderr)
            return 2
        args.as_user = as_user
    try:
        settings = Settings()
    except ValidationError as exc:  # a setting that does not parse: which variable, what it holds, what is wrong
        for err in exc.errors():
            name = "FORKPATHS_" + "_".join(str(p) for p in err.get("loc", ())).upper()
            shown = "(hidden)" if "KEY" in name or "PASSWORD" in name else repr(err.get("input"))  # no secret echoed
            print(f"error: {name}={shown} (from the environment or .env): {err.get('msg')}.", file=sys.stderr)
        return 2
    try:
        return int(args.func(args, settings))
    except USER_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2



if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
