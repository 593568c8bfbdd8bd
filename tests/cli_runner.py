"""The ``forkpaths`` command run in the test process: what it prints, returns and stores, without paying for a
Python start-up and the imports at every call (0.7 to 1 s of CPU each).

:func:`run_cli` gives what ``subprocess.run([sys.executable, "-m", "curation.cli", *args], env=..., cwd=...,
input=..., capture_output=True, text=True)`` gives: a :class:`subprocess.CompletedProcess` with the return code
and the decoded output. During the call the process has exactly the given environment (variables left out are
unset), the working directory, a standard input that is not a terminal, and standard output and error encoded
as a pipe's are; all are put back afterwards, with the root logger (``main`` calls ``basicConfig(force=True)``),
the sandbox's setting (``configure``) and the engines the command opened (disposed). An exit (argparse's usage
error: 2) becomes the return code; an exception that escapes ``main`` is printed as a traceback on standard
error with return code 1, as the interpreter does.

Tests where the process boundary is the thing tested (killing it, signals, a terminal, import cost, workers) run
the real command with :func:`run_cli_process`; each converted test file keeps at least one such call so the
entry point itself stays covered.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Engine

from curation.settings import PROJECT_ROOT

__all__ = ["cli_env", "forkpaths", "run_cli", "run_cli_process"]

_PROCESS_ONLY = ("run", "worker")
"""Commands that replace the process (``run`` execs Streamlit) or serve until stopped (``worker``)."""


def cli_env(data_dir: Path, *, starters: bool = False, **variables: str) -> dict[str, str]:
    """The environment most command tests give: this process's, with ``data_dir``, the first admin's password
    and no ``FORKPATHS_DATABASE_URL`` (SQLite in ``data_dir``); the starter datasets off unless ``starters``.
    ``variables`` are added (an empty string sets the variable empty)."""
    env = {**os.environ, "FORKPATHS_DATA_DIR": str(data_dir), "FORKPATHS_ADMIN_PASSWORD": "admin password 1"}
    env.pop("FORKPATHS_DATABASE_URL", None)
    if starters:
        env.pop("FORKPATHS_LOAD_STARTER_DATASETS", None)
        env.pop("FORKPATHS_STARTER_DATASETS_DIR", None)
    else:
        env["FORKPATHS_LOAD_STARTER_DATASETS"] = "false"
    env.update(variables)
    return env


def forkpaths(tmp_path: Path, *args: str, stdin: str = "", cwd: Path | str | None = None, process: bool = False,
              starters: bool = False, **variables: str) -> subprocess.CompletedProcess[str]:
    """``forkpaths ARGS`` on the SQLite database in ``tmp_path / "data"`` (:func:`cli_env`), run from ``cwd``
    (default ``tmp_path``): in this process, or with ``process`` the real command in a process of its own."""
    env = cli_env(tmp_path / "data", starters=starters, **variables)
    where = tmp_path if cwd is None else cwd
    if process:
        return run_cli_process(args, env=env, cwd=where, stdin=stdin)
    return run_cli(args, env=env, cwd=where, stdin=stdin)


def run_cli_process(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | str = PROJECT_ROOT,
                    stdin: str | None = "", timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The real ``python -m curation.cli`` in a process of its own."""
    return subprocess.run([sys.executable, "-m", "curation.cli", *args], input=stdin, capture_output=True,
                          text=True, env=dict(env) if env is not None else None, cwd=cwd, timeout=timeout)


def run_cli(args: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path | str = PROJECT_ROOT,
            stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``curation.cli.main(args)`` in this process, seen as :func:`run_cli_process` sees the real command."""
    argv = [str(a) for a in args]
    command = next((a for a in argv if not a.startswith("-")), None)
    if command in _PROCESS_ONLY:
        raise ValueError(f"forkpaths {command} must run in a process of its own: use run_cli_process")
    from curation.cli import main

    out, err = _pipe("strict"), _pipe("backslashreplace")
    with _process_state(env, cwd, stdin, out, err), _disposing_engines():
        try:
            code = main(argv)
        except SystemExit as exc:
            code = _exit_status(exc.code, err)
        except KeyboardInterrupt:
            raise
        except BaseException:  # noqa: BLE001 - what escapes main: the interpreter prints it and exits with 1
            traceback.print_exc(file=err)
            code = 1
        with contextlib.suppress(Exception):  # a real process flushes at exit; an unencodable text fails there
            out.flush()
        err.flush()
    return subprocess.CompletedProcess(["forkpaths", *argv], code, _text(out), _text(err))


def _pipe(errors: str) -> io.TextIOWrapper:
    """Standard output or error as Python sets them up for a pipe: UTF-8 (as ``LANG=C.UTF-8`` gives), not a
    terminal, errors as the interpreter handles them (strict on output, backslashes on error)."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    """What ``text=True`` makes of the bytes: UTF-8 with universal newlines."""
    raw = stream.buffer
    assert isinstance(raw, io.BytesIO)
    return io.TextIOWrapper(io.BytesIO(raw.getvalue()), encoding="utf-8").read()


def _exit_status(code: object, err: io.TextIOWrapper) -> int:
    """The status ``sys.exit(code)`` gives a process: None is 0, an int is itself, anything else is printed."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


@contextlib.contextmanager
def _process_state(env: Mapping[str, str] | None, cwd: Path | str, stdin: str, out: io.TextIOWrapper,
                   err: io.TextIOWrapper) -> Iterator[None]:
    from evaluation.sandbox import isolation

    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    saved_sandbox = isolation.current_mode(), isolation.hidden_paths()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(cwd)
        # the original streams too: argparse's help reads the terminal's width from sys.__stdout__ (a pipe: 80)
        sys.stdin = sys.__stdin__ = io.StringIO(stdin)
        sys.stdout = sys.__stdout__ = out
        sys.stderr = sys.__stderr__ = err
        root.handlers = []  # basicConfig(force=True) would close pytest's own handlers
        yield
    finally:
        for handler in root.handlers:
            handler.close()
        root.handlers, root.level = saved_handlers, saved_level
        sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__ = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        isolation.configure(mode=saved_sandbox[0], hidden_paths=saved_sandbox[1])


@contextlib.contextmanager
def _disposing_engines() -> Iterator[None]:
    """Dispose of the engines the command connected with (a process's end closes their connections)."""
    used: list[Engine] = []

    def seen(conn):  # type: ignore[no-untyped-def]
        if all(e is not conn.engine for e in used):
            used.append(conn.engine)

    event.listen(Engine, "engine_connect", seen)
    try:
        yield
    finally:
        event.remove(Engine, "engine_connect", seen)
        for engine in used:
            engine.dispose()
