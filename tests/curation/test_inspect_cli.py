"""The real ``inspect eval forkpaths/mcq -T release=1.0.0`` (inspect's own command, finding forkpaths through its
entry point, the model behind inspect's openai-api provider being the scripted server on 127.0.0.1), then
``forkpaths import-inspect`` on its log; and the logs it refuses, each with a sentence naming it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from curation.settings import PROJECT_ROOT
from tests.cli_runner import cli_env, forkpaths
from tests.inspect_support import inspect_entry_point  # noqa: F401 - fixture
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.usefixtures("inspect_entry_point")


def _cli(tmp_path: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    return forkpaths(tmp_path, *args, cwd=PROJECT_ROOT, process=process)


def _inspect_eval(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """inspect's own command in a process of its own, with this checkout and the entry point on its path."""
    extra = [p for p in sys.path if "entry-point" in p]
    env = cli_env(tmp_path / "data", SCRIPTED_BASE_URL=url, SCRIPTED_API_KEY="test-key",
                  PYTHONPATH=os.pathsep.join([str(PROJECT_ROOT), *extra]), INSPECT_LOG_DIR=str(tmp_path / "logs"))
    return subprocess.run([sys.executable, "-m", "inspect_ai", "eval", *args, "--display", "none"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


@pytest.fixture
def released(tmp_path, shared_blade):
    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    return tmp_path


def test_inspect_eval_of_a_release_version_then_import_inspect(released, tmp_path):
    with ScriptedLLM(responder=lambda _r: '{"answer": "A", "rationale": "scripted"}') as llm:
        done = _inspect_eval(tmp_path, llm.url, "forkpaths/mcq", "-T", "release=1.0.0",
                             "--model", "openai-api/scripted/scripted-model", "--epochs", "2")
        asked = len(llm.requests)
    assert done.returncode == 0, done.stderr[-3000:]
    logs = sorted((tmp_path / "logs").glob("*.eval"))
    assert len(logs) == 1 and asked > 0 and asked % 2 == 0
    got = _cli(tmp_path, "import-inspect", str(logs[0]), "--agent", "inspect-mcq", process=True)
    assert got.returncode == 0, got.stderr
    assert got.stdout.count("MCQ accuracy") == 2, got.stdout  # one run per epoch
    listed = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)
    assert [(r["agent"], r["kind"], r["model_name"], r["source"], r["status"]) for r in listed] == [
        ("inspect-mcq", "mcq", "openai-api/scripted/scripted-model", "inspect", "succeeded")] * 2


def test_logs_that_cannot_be_imported_are_named_and_the_others_are_kept(released, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    from evaluation.inspect_bridge.answers import inspect_kinds

    with ScriptedLLM(responder=lambda _r: '{"answer": "B", "rationale": "scripted"}') as llm:
        assert _inspect_eval(tmp_path, llm.url, "forkpaths/mcq", "-T", "release=1.0.0",
                             "--model", "openai-api/scripted/m").returncode == 0
    good = next((tmp_path / "logs").glob("*.eval"))
    truncated = tmp_path / "cut.eval"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    other = read_eval_log(str(good))
    other.eval.task = "someone/else"
    write_eval_log(other, str(tmp_path / "other.json"))
    missing = tmp_path / "nowhere.eval"
    got = _cli(tmp_path, "import-inspect", str(missing), str(truncated), str(tmp_path / "other.json"), str(good))
    assert got.returncode == 1
    errors = [line for line in got.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: The inspect log {missing} does not exist; give the path of a .eval or .json log.",
        next(e for e in errors if e.startswith("error: The inspect log cut.eval cannot be read (a .eval log is a "
                                               "zip file: this one is cut short or damaged): ")),
        "error: The inspect log other.json is a log of task 'someone/else', which is not a forkpaths task; "
        f"forkpaths imports logs of {', '.join('forkpaths/' + k for k in inspect_kinds())}. Nothing was imported.",
    ], got.stderr
    assert got.stdout.count("MCQ accuracy") == 1  # the good log was imported all the same
    again = _cli(tmp_path, "import-inspect", str(good))
    assert again.returncode == 1 and again.stderr.startswith(f"error: The inspect log {good.name} (sha256 ")
    assert "was already imported as agent run 1 (scoring runs 1); nothing was imported again." in again.stderr
