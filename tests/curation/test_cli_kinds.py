"""A kind's own commands are one module named after it in ``curation/cli_kinds/``, found by a scan (as the task
registry finds the kinds), not listed by hand in the command line's router."""

from __future__ import annotations

import argparse
import sys

from curation.cli import build_parser
from curation.cli_kinds import kind_command_modules
from evaluation.tasks import KINDS


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    return set(next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices)


def test_each_module_is_a_registered_kind_and_its_commands_are_on_the_command_line() -> None:
    modules = kind_command_modules()
    assert modules and set(modules) <= set(KINDS), f"modules that name no registered kind: {set(modules) - set(KINDS)}"
    commands = _commands(build_parser(kind_imports=False))
    for command in ("check", "alternatives", "mcq", "score-mcq", "hypotheses", "checks"):  # analyses, mcq, ...
        assert command in commands


def test_a_new_kinds_module_adds_its_commands_without_touching_the_router(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import curation.cli_kinds as package

    (tmp_path / "toy.py").write_text(
        "def add_commands(sub):\n"
        "    sub.add_parser('toy-stats', help='the toy kind').set_defaults(func=lambda args, settings: 7)\n")
    try:
        with monkeypatch.context() as patch:
            patch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
            assert "toy" in kind_command_modules()
            parser = build_parser(kind_imports=False)
            assert "toy-stats" in _commands(parser)
            assert parser.parse_args(["toy-stats"]).func(None, None) == 7
    finally:
        sys.modules.pop("curation.cli_kinds.toy", None)
    assert "toy-stats" not in _commands(build_parser(kind_imports=False))  # gone with its module


def test_score_schema_lists_the_kinds_that_publish_one_and_score_refuses_a_mode_no_kind_declares(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What ``score-schema`` and ``score --mode`` accept comes from the registry, not from lists in the parser."""
    from curation.settings import PROJECT_ROOT
    from evaluation.tasks import kinds_with
    from tests.cli_runner import forkpaths

    listed = forkpaths(tmp_path, "score-schema", cwd=PROJECT_ROOT)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [k.name for k in kinds_with("submission_schema")]
    undocumented = next(k.name for k in KINDS.values() if k.submission_schema is None)
    refused = forkpaths(tmp_path, "score-schema", undocumented, cwd=PROJECT_ROOT)
    assert refused.returncode == 2 and "publish a JSON schema: " in refused.stderr

    answers = tmp_path / "answers.json"
    answers.write_text("{}")
    bad = forkpaths(tmp_path, "score", "--release", "1.0.0", "--submission", str(answers), "--mode", "no-such-mode",
                    "--out", str(tmp_path / "out.json"), cwd=PROJECT_ROOT)
    assert bad.returncode == 2 and "Unknown mode 'no-such-mode'" in bad.stderr, bad.stderr
