"""``forkpaths score --kind hypotheses`` as an operator runs it: a real process, a real database, the scripted
judge on 127.0.0.1; the submission's JSON schema from ``forkpaths score-schema``."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest
from sqlalchemy import create_engine

from curation.settings import PROJECT_ROOT, Settings
from evaluation.tasks.hypotheses import SCHEMA_PATH, submission_schema
from tests.cli_runner import run_cli, run_cli_process
from tests.curation.hms_world import answers_file, cut_hypotheses_release, standard_script
from tests.llm_server import ScriptedLLM


def _env(tmp_path: Path, server: ScriptedLLM) -> dict[str, str]:
    env = dict(os.environ, FORKPATHS_DATA_DIR=str(tmp_path / "data"), FORKPATHS_LOAD_STARTER_DATASETS="false",
               FORKPATHS_ADMIN_PASSWORD="admin password 1", FORKPATHS_LLM_BASE_URL=server.url,
               FORKPATHS_LLM_MODEL="judge-model", FORKPATHS_LLM_MAX_RETRIES="0")
    env.pop("FORKPATHS_DATABASE_URL", None)
    return env


def _cli(env: dict[str, str], *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    """In this process (tests/cli_runner.py); ``process``: the real command."""
    return (run_cli_process if process else run_cli)(args, env=env, cwd=PROJECT_ROOT)


@pytest.fixture
def cli(tmp_path, monkeypatch):
    with ScriptedLLM(standard_script()) as server:
        env = _env(tmp_path, server)
        assert _cli(env, "runs", "list").returncode == 0  # initialises the data folder and the database
        for k, v in env.items():
            if k.startswith("FORKPATHS_"):
                monkeypatch.setenv(k, v)
        settings = Settings()
        cut_hypotheses_release(create_engine(settings.resolved_database_url), settings.releases_store, tmp_path)
        yield env, server


def test_score_kind_hypotheses_from_the_terminal(cli, tmp_path):
    env, server = cli
    sub = tmp_path / "answers.json"
    sub.write_bytes(answers_file())
    out = tmp_path / "out" / "hms.json"
    done = _cli(env, "score", "--kind", "hypotheses", "--release", "2.0.0", "--submission", str(sub),
                "--agent", "react", "--out", str(out), process=True)  # the real command, once
    assert done.returncode == 0, done.stderr
    # every gold query of the datasets answered is scored (an unanswered one counts 0): said when it is queued
    assert "Run 1 registered: react on release 2.0.0 (4 queries)" in done.stderr
    assert "HMS 0.333 [" in done.stdout and "1 unanswered" in done.stdout
    result = json.loads(out.read_text())
    assert result["format"] == "forkpaths-hms-result" and result["judge"]["name"] == "hms"
    assert len(result["items"]) == 4  # as many as the queued run said
    calls = len(server.requests)
    again = _cli(env, "runs", "rescore", "1", "--out", str(tmp_path / "again.json"))
    assert again.returncode == 0, again.stderr and len(server.requests) == calls  # all from the cache
    assert json.loads((tmp_path / "again.json").read_text())["scores"]["calls"] == 0
    db = _cli(env, "score", "--kind", "hypotheses", "--mode", "discoverybench", "--release", "2.0.0",
              "--submission", str(sub), "--out", str(tmp_path / "db.json"))
    assert db.returncode == 0, db.stderr
    exported = _cli(env, "runs", "export", "--release", "2.0.0", "--kind", "hypotheses")
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert [r["mode"] for r in rows].count("discoverybench") == 1 and "hms.low" in rows[0]

    bad = tmp_path / "bad.json"
    doc = json.loads(answers_file())
    doc["answers"][1]["task"] = "real/test/crops/metadata_0/q5"
    bad.write_text(json.dumps(doc))
    refused = _cli(env, "score", "--kind", "hypotheses", "--release", "2.0.0", "--submission", str(bad),
                   "--out", str(tmp_path / "x.json"))
    assert refused.returncode != 0
    assert "bad.json: answer 2 is for task 'real/test/crops/metadata_0/q5'" in refused.stderr
    wrong_judge = _cli(env, "score", "--kind", "hypotheses", "--judge", "offline", "--release", "2.0.0",
                       "--submission", str(sub), "--out", str(tmp_path / "y.json"))
    assert "The offline judge cannot score hypotheses runs; choose hms" in wrong_judge.stderr
    blade_with_hms = _cli(env, "score", "--judge", "hms", "--release", "2.0.0", "--submission", str(sub),
                          "--out", str(tmp_path / "z.json"))
    assert "The hms judge scores other kinds of task" in blade_with_hms.stderr

    schema = _cli(env, "score-schema", "hypotheses")
    assert schema.returncode == 0 and json.loads(schema.stdout)["title"] == "HypothesisSubmission"


def test_the_schema_file_documents_the_model_and_accepts_a_valid_submission():
    on_disk = json.loads(SCHEMA_PATH.read_text())
    assert on_disk == submission_schema()  # regenerate the file when the model changes
    jsonschema.validate(json.loads(answers_file(code="hypothesis_values = df['a']")), on_disk)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"format": "forkpaths-hypotheses", "format_version": "1.0",
                             "answers": [{"task": "t", "workflow": "w"}]}, on_disk)
