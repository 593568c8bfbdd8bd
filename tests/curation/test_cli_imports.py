"""Every ``forkpaths`` command pays for what ``curation.cli`` imports at module level: it must not load the
heavy libraries (they are imported inside the commands that use them). Checked in a fresh interpreter through
``sys.modules``, not by timing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

HEAVY = ["pandas", "numpy", "networkx", "streamlit", "statsmodels", "sklearn", "scipy", "openai", "plotly",
         "alembic", "inspect_ai"]


def _loaded_after(module: str) -> list[str]:
    code = (f"import json, sys; import {module}; "
            f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("module", ["curation.cli", "curation.cli_scoring", "curation.cli_inspect", "curation.bootstrap",
                                    "evaluation.sandbox",
                                    "evaluation.sandbox.server"])  # gt build starts the sandbox before pandas
def test_importing_the_cli_loads_no_heavy_library(module: str) -> None:
    assert _loaded_after(module) == []


def test_the_check_sees_a_heavy_import() -> None:
    assert _loaded_after("curation.services.checks") != []  # the sandbox checks do need pandas


def test_the_lazy_sandbox_names_resolve() -> None:
    import evaluation.sandbox as sandbox

    for name in sandbox.__all__:
        assert getattr(sandbox, name) is not None
    with pytest.raises(AttributeError):
        sandbox.no_such_name  # noqa: B018


def test_script_heads_are_alembics_heads() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from curation.db import MIGRATIONS_DIR, script_heads

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert script_heads() == set(ScriptDirectory.from_config(cfg).get_heads())


def _migrate_in_fresh_process(url: str) -> dict[str, object]:
    code = ("import json, sys; from curation.db import make_engine, migrate; from sqlalchemy import text; "
            f"e = make_engine({url!r}); migrate(e); "
            "v = [r[0] for r in e.connect().execute(text('SELECT version_num FROM alembic_version'))]; "
            "print(json.dumps({'alembic': 'alembic' in sys.modules, 'versions': v}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_database_at_head_is_not_migrated_again_and_an_older_one_is(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from alembic import command

    from curation.db import _alembic_config, make_engine, script_heads

    heads = sorted(script_heads() or [])
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert _migrate_in_fresh_process(url) == {"alembic": True, "versions": heads}  # created by alembic
    assert _migrate_in_fresh_process(url) == {"alembic": False, "versions": heads}  # at head: left alone

    old = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(old)
    with engine.begin() as conn:
        cfg = _alembic_config(engine)
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0010")
    engine.dispose()
    assert _migrate_in_fresh_process(old) == {"alembic": True, "versions": heads}  # behind: upgraded


def test_the_start_every_command_runs_loads_no_heavy_library(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``forkpaths init`` on an initialised data folder is the start-up every database command runs first (the
    engine, the migration check, the first admin, the starter datasets, the release store, the old layout's
    import): none of it needs pandas or alembic when there is nothing to do. Listing releases or runs reads
    records alone. The data folder is the default one, with the bundled starter datasets."""
    import os

    env = {**os.environ, "FORKPATHS_DATA_DIR": str(tmp_path / "data"), "FORKPATHS_ADMIN_PASSWORD": "admin password 1"}
    for name in ("FORKPATHS_DATABASE_URL", "FORKPATHS_LOAD_STARTER_DATASETS", "FORKPATHS_STARTER_DATASETS_DIR"):
        env.pop(name, None)
    first = subprocess.run([sys.executable, "-m", "curation.cli", "init"], capture_output=True, text=True, env=env,
                           cwd=tmp_path)  # migrates (alembic) and registers the starter datasets (pandas)
    assert first.returncode == 0, first.stderr
    with closing(sqlite3.connect(tmp_path / "data" / "forkpaths.db")) as db:
        assert db.execute("select count(*) from dataset").fetchone()[0] > 0  # the later starts find them there
    for command in (["init"], ["release", "list"], ["runs", "list"]):
        code = (f"import json, sys; from curation.cli import main; assert main({command!r}) == 0; "
                f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert (command, json.loads(done.stdout.strip().splitlines()[-1])) == (command, [])


#: What argument parsing alone may load: no settings, no database, no tables, no data library.
PARSING_HEAVY = [*HEAVY, "sqlalchemy", "sqlmodel", "pydantic", "pydantic_settings", "argon2", "zxcvbn", "exports"]


def test_help_and_argument_errors_load_nothing_but_the_parser() -> None:
    """Every ``forkpaths COMMAND [SUBCOMMAND] --help`` and a mistyped option are answered by argparse alone:
    checked in one fresh interpreter, through ``sys.modules`` after each of them (not by timing). (The top-level
    help lists the ``import-<kind>`` commands of the kinds that import datasets: it loads the task registry.)"""
    code = f"""
import argparse, json, sys
from curation.cli import build_parser, main

def commands(parser, prefix):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield [*prefix, name]
                yield from commands(sub, [*prefix, name])

asked = list(commands(build_parser(kind_imports=False), []))
codes = []
for argv in [*([*a, "--help"] for a in asked), ["score", "--no-such-option"], ["runs", "no-such-subcommand"]]:
    try:
        main(argv)
    except SystemExit as exc:
        codes.append(exc.code)
print(json.dumps({{"asked": len(asked), "codes": sorted(set(codes)),
                  "loaded": sorted({{m.split('.')[0] for m in sys.modules}} & set({PARSING_HEAVY!r}))}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["asked"] > 40  # every command and subcommand was asked for its help
    assert seen["codes"] == [0, 2]  # help printed, errors refused
    assert seen["loaded"] == []


def test_gt_build_of_a_release_folder_opens_no_database(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A release folder from elsewhere is read as it is (no record to check it against): `forkpaths gt build
    FOLDER` loads neither the database nor the tables. Here the folder holds no release, so the build refuses it
    after the command's start-up, the part checked (a fresh interpreter; its sys.modules afterwards)."""
    import os

    env = {**os.environ, "FORKPATHS_DATA_DIR": str(tmp_path / "data")}
    env.pop("FORKPATHS_DATABASE_URL", None)
    folder = tmp_path / "not-a-release"
    folder.mkdir()
    code = (f"import json, sys; from curation.cli import main; code = main(['gt', 'build', {str(folder)!r}]); "
            "print(json.dumps([code, sorted({m.split('.')[0] for m in sys.modules} & "
            "{'sqlalchemy', 'sqlmodel', 'alembic', 'argon2'})]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2, []]
    assert "not-a-release" in done.stderr  # refused with the folder named
    assert not (tmp_path / "data" / "forkpaths.db").exists()


def test_scoring_mcq_answers_starts_no_sandbox_process(tmp_path, shared_blade) -> None:  # type: ignore[no-untyped-def]
    """Scoring an MCQ answers file runs no code: the command starts no sandbox process (the sandbox's template
    costs about two seconds of CPU; it starts when code must run). Checked in a fresh interpreter, in which
    the command ran, through the sandbox's own record of its template process."""
    from tests.cli_runner import cli_env, forkpaths

    assert forkpaths(tmp_path, "import-blade", str(shared_blade / "datasets" / "fish")).returncode == 0
    assert forkpaths(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"not-a-question": "A"}))
    args = ["score-mcq", "--release", "1.0.0", "--answers", str(answers), "--out", str(tmp_path / "mcq.json")]
    code = (f"import json, sys; from curation.cli import main; code = main({args!r}); "
            "server = sys.modules.get('evaluation.sandbox.server'); "
            "print(json.dumps([code, server is not None and server._SANDBOX._zygote is not None]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=cli_env(tmp_path / "data"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [0, False], done.stderr
    assert (tmp_path / "mcq.json").is_file()
    control = ("import sys; from evaluation.sandbox import prewarm; prewarm(); "
               "print(sys.modules['evaluation.sandbox.server']._SANDBOX._zygote is not None)")
    seen = subprocess.run([sys.executable, "-c", control], capture_output=True, text=True, check=True)
    assert seen.stdout.split() == ["True"]  # the record the check reads does show a template that started
