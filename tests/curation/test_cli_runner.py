"""tests/cli_runner.py: the command run in the test process gives what the real process gives, and leaves the
test process as it found it."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

from evaluation.sandbox import isolation
from tests.cli_runner import cli_env, run_cli, run_cli_process


def _both(args: list[str], tmp_path: Path, stdin: str = "", data: str = "data"):  # type: ignore[no-untyped-def]
    """The command in this process on ``tmp_path/inside/data``, the real one on ``tmp_path/real/data``; their
    outputs with the folder written as ``HERE``."""
    done = []
    for where, run in (("inside", run_cli), ("real", run_cli_process)):
        folder = tmp_path / where
        folder.mkdir(exist_ok=True)
        r = run(args, env=cli_env(folder / data), cwd=folder, stdin=stdin)
        r.stdout, r.stderr = (t.replace(str(folder), "HERE") for t in (r.stdout, r.stderr))
        done.append(r)
    return done


def test_in_process_the_command_prints_and_returns_what_the_real_one_does(tmp_path: Path) -> None:
    for args, stdin in ((["create-user", "--help"], ""), (["no-such-command"], ""), (["init"], ""),
                        (["create-user", "bob", "--password-stdin"], "short\n"),
                        (["create-user", "bob", "--password-stdin"], "a long password\n"),
                        (["create-user", "bob", "--password-stdin"], "a long password\n")):
        inside, real = _both(args, tmp_path, stdin)
        assert (inside.returncode, inside.stdout, inside.stderr) == (real.returncode, real.stdout, real.stderr), args
    assert inside.returncode == 2 and "bob" in inside.stderr  # the last pair: 'bob' exists already
    usage, _ = _both(["no-such-command"], tmp_path)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: forkpaths") and usage.stdout == ""


def test_an_exception_that_escapes_main_is_a_traceback_and_status_1(tmp_path: Path) -> None:
    for where in ("inside", "real"):
        (tmp_path / where).mkdir()
        (tmp_path / where / "a-file").write_text("not a folder")
    # the data folder cannot be made: an OSError, not a user error
    inside, real = _both(["init"], tmp_path, data="a-file")
    assert inside.returncode == real.returncode == 1
    for done in (inside, real):
        assert done.stderr.startswith("Traceback (most recent call last):"), done.stderr
    assert inside.stderr.strip().splitlines()[-1] == real.stderr.strip().splitlines()[-1]
    assert "FileExistsError" in inside.stderr


def test_the_test_process_is_left_as_it_was(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FORKPATHS_DATABASE_URL", "sqlite:///nowhere-it-must-not-be-used.db")
    monkeypatch.setenv("FORKPATHS_SANDBOX", "bwrap")
    env = cli_env(tmp_path / "data", FORKPATHS_SANDBOX="process")  # without FORKPATHS_DATABASE_URL
    before_env, before_cwd = dict(os.environ), os.getcwd()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    streams = sys.stdin, sys.stdout, sys.stderr, sys.__stdout__
    mode, hidden = isolation.current_mode(), isolation.hidden_paths()

    done = run_cli(["-v", "init"], env=env, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert str(tmp_path / "data" / "forkpaths.db") in done.stdout  # the URL was unset during the call
    assert "INFO" in done.stderr  # --verbose: the logs went to the command's stderr
    assert dict(os.environ) == before_env and os.getcwd() == before_cwd
    assert root.handlers == handlers and root.level == level
    assert (sys.stdin, sys.stdout, sys.stderr, sys.__stdout__) == streams
    assert (isolation.current_mode(), isolation.hidden_paths()) == (mode, hidden)
