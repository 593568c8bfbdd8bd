"""``forkpaths --help``, ``runs list`` and ``release list`` load only what they use (issue 30: <= 0.4 s CPU each):
the help loads no task kind and no model library (its ``import-<kind>`` lines are kept between starts by
curation.cli_kind_index, and read again from the registry when a source changes); the lists load no task kind,
no release part model and no LLM client. Checked in the fresh interpreter that ran the command, through
``sys.modules`` (timing lives in benchmarks/cli_fixed_cost.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from curation.settings import PROJECT_ROOT

#: what the light commands must not load: the task registry and its kinds, the release format's models, the LLM
#: client and the data libraries
KINDS_AND_ENGINE = ["evaluation.tasks", "evaluation.tasks.base", "exports.schema", "exports.parts",
                    "exports.upgrade", "evaluation.llm", "evaluation.judges", "pandas", "numpy", "networkx"]
#: what --help must not load besides: the database and model libraries
MODEL_LIBRARIES = ["pydantic", "pydantic_settings", "sqlalchemy", "sqlmodel", "psycopg"]


def _run(args: list[str], env: dict[str, str], watch: list[str]) -> tuple[int, str, list[str]]:
    """Exit code, output and the ``watch`` modules loaded, of ``forkpaths ARGS`` in a fresh interpreter."""
    code = ("import contextlib, io, json, sys\nfrom curation.cli import main\nbuf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n    try:\n"
            f"        code = main({args!r})\n    except SystemExit as exc:\n        code = exc.code\n"
            f"print(json.dumps([code, buf.getvalue(), sorted(set(sys.modules) & set({watch!r}))]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    exit_code, out, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    return int(exit_code or 0), str(out), list(loaded)


@pytest.fixture
def cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ, FORKPATHS_DATA_DIR=str(tmp_path / "data"), FORKPATHS_LOAD_STARTER_DATASETS="false",
               FORKPATHS_ADMIN_PASSWORD="admin password 1", FORKPATHS_SANDBOX="process")
    env.pop("FORKPATHS_DATABASE_URL", None)
    return env


def test_the_help_lists_the_registrys_import_commands_without_loading_a_kind(
        cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluation.tasks as tasks
    from curation.cli import build_parser

    cli_env["COLUMNS"] = "100"
    _run(["--help"], cli_env, [])  # the first start after a change reads the registry
    code, out, loaded = _run(["--help"], cli_env, KINDS_AND_ENGINE + MODEL_LIBRARIES)
    assert code == 0 and loaded == []
    monkeypatch.setenv("COLUMNS", "100")
    assert out == build_parser().format_help()  # the registry's commands and lines, word for word (it is loaded here)
    importers = [k for k in tasks.KINDS.values() if k.importer is not None and k.release_part is not None]
    assert importers and all(f"import-{k.name.replace('_', '-')}" in out for k in importers)


def test_a_mistyped_command_is_answered_without_loading_a_kind(cli_env: dict[str, str]) -> None:
    _run(["--help"], cli_env, [])
    done = subprocess.run([sys.executable, "-c", "from curation.cli import main; main(['import-nothing', 'x'])"],
                          capture_output=True, text=True, env=cli_env, cwd=PROJECT_ROOT, timeout=300)
    assert done.returncode == 2 and "invalid choice: 'import-nothing'" in done.stderr
    assert "import-" + next(iter(_kept_commands()))[0].removeprefix("import-") in done.stderr  # the choices listed


def _kept_commands() -> list[tuple[str, str, str]]:
    done = subprocess.run([sys.executable, "-c", "import json; from curation.cli_kind_index import kind_imports; "
                           "print(json.dumps(kind_imports()))"], capture_output=True, text=True, cwd=PROJECT_ROOT,
                          timeout=300, check=True)
    return [tuple(c) for c in json.loads(done.stdout.strip().splitlines()[-1])]  # type: ignore[misc]


def test_what_is_kept_is_read_again_when_a_source_changes(tmp_path: Path) -> None:
    """The kept list is used while the sources are unchanged, and the registry is read again once one of them
    changes (a kind's file edited, added or removed)."""
    source = tmp_path / "src"
    source.mkdir()
    (source / "kind.py").write_text("KIND = None\n")
    cache = tmp_path / "kept.json"
    script = ("import json, sys; from pathlib import Path; from curation.cli_kind_index import kind_imports; "
              f"out = kind_imports(sources=[Path({str(source)!r})], cache=Path({str(cache)!r})); "
              "print(json.dumps([out, 'evaluation.tasks' in sys.modules]))")

    def run() -> tuple[list[list[str]], bool]:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=PROJECT_ROOT,
                              timeout=300, check=True)
        out, registry = json.loads(done.stdout.strip().splitlines()[-1])
        return out, registry

    first, read = run()
    assert read and first  # nothing kept yet: the registry was read
    kept = json.loads(cache.read_text())
    kept["commands"] = [["import-marker", "kept", "marker"]]
    cache.write_text(json.dumps(kept))
    assert run() == ([["import-marker", "kept", "marker"]], False)  # unchanged sources: what is kept, no registry
    (source / "kind.py").write_text("KIND = 'edited'\n")
    assert run() == (first, True)  # a source changed: the registry again


def test_the_index_names_the_registrys_entry_point_group() -> None:
    from curation.cli_kind_index import ENTRY_POINT_GROUP
    from evaluation.tasks import ENTRY_POINT_GROUP as REGISTRY_GROUP

    assert ENTRY_POINT_GROUP == REGISTRY_GROUP


@pytest.mark.parametrize("command", [["runs", "list"], ["release", "list"]])
def test_the_lists_load_no_kind_and_no_llm_client(cli_env: dict[str, str], command: list[str]) -> None:
    code, out, loaded = _run(command, cli_env, KINDS_AND_ENGINE + ["psycopg"])  # SQLite: no PostgreSQL driver
    assert code == 0 and loaded == []
    assert out.strip() in ("No scoring runs yet.", "No releases yet.")


def test_the_check_sees_the_registry_load() -> None:
    """The same check run on a command that needs the kinds finds them (it would see them sneak back)."""
    done = subprocess.run([sys.executable, "-c", "import json, sys; from curation.cli import main\n"
                           "try:\n    main(['score-schema'])\nexcept SystemExit:\n    pass\n"
                           "print(json.dumps('evaluation.tasks' in sys.modules))"],
                          capture_output=True, text=True, cwd=PROJECT_ROOT, timeout=300)
    assert json.loads(done.stdout.strip().splitlines()[-1]) is True
