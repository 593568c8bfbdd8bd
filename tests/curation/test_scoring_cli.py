"""``forkpaths score``, ``score-mcq`` and ``runs`` as an operator uses them: a real database; the command runs in
this process (tests/cli_runner.py), and as a real process where that is what is tested."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from curation.settings import PROJECT_ROOT
from tests.cli_runner import forkpaths


def _cli(tmp_path: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    return forkpaths(tmp_path, *args, cwd=PROJECT_ROOT, process=process)


def test_score_registers_a_run_and_runs_lists_shows_compares_exports(tmp_path, shared_blade):
    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    sub = shared_blade / "examples" / "multirun_analyses.json"
    out = tmp_path / "out" / "result.json"
    done = _cli(tmp_path, "score", "--release", "1.0.0", "--submission", str(sub), "--agent", "react-agent",
                "--model", "gpt-x", "--out", str(out), process=True)  # the real command, once
    assert done.returncode == 0, done.stderr
    assert "Run 1 registered" in done.stderr
    # not a terminal: no progress lines and no INFO logs (tests/curation/test_cli_progress.py shows the bar)
    assert "/10" not in done.stderr and "INFO" not in done.stderr, done.stderr
    assert "weighted" in done.stdout and out.is_file()
    assert json.loads(out.read_text())["provenance"]["release_version"] == "1.0.0"
    second = _cli(tmp_path, "score", "--release", "1.0.0", "--submission", str(sub), "--mode", "blade",
                  "--out", str(tmp_path / "b.json"))
    assert second.returncode == 0, second.stderr

    listed = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)
    assert [(r["id"], r["agent"], r["source"], r["status"]) for r in listed] == [
        (2, "multirun_analyses", "cli", "succeeded"), (1, "react-agent", "cli", "succeeded")]
    shown = _cli(tmp_path, "runs", "show", "1")
    assert "submission_sha256" in shown.stdout and "react-agent" in shown.stdout
    compared = _cli(tmp_path, "runs", "compare", "1", "2", "--bootstrap", "50", "--json")
    assert compared.returncode == 0, compared.stderr
    assert {d["decision_type"] for d in json.loads(compared.stdout)["differences"]} == {
        "cvar", "model", "model_cvar", "value", "graph"}
    exported = _cli(tmp_path, "runs", "export", "--release", "1.0.0", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert {r["agent"] for r in rows} == {"react-agent", "multirun_analyses"} and "f1.cvar.low" in rows[0]
    as_json = json.loads(_cli(tmp_path, "runs", "export", "--release", "1.0.0", "--json").stdout)
    assert len(as_json) == 2

    mcqs = json.loads((shared_blade / "datasets" / "hurricane" / "mcq_dataset.json").read_text())
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"not-a-question": "A"}))
    mcq = _cli(tmp_path, "score-mcq", "--release", "1.0.0", "--answers", str(answers), "--agent", "react-agent",
               "--model", "gpt-x", "--out", str(tmp_path / "mcq.json"))
    assert mcq.returncode == 0, mcq.stderr
    assert "MCQ accuracy 0.000" in mcq.stdout and mcqs  # nothing answered: every question counts as wrong
    rows = json.loads(_cli(tmp_path, "runs", "export", "--release", "1.0.0", "--json").stdout)
    assert {r["mcq_accuracy"] for r in rows if r["agent"] == "react-agent"} == {0.0}


def test_bad_input_exits_with_a_sentence(tmp_path, shared_blade):
    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "fish")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    sub = shared_blade / "examples" / "multirun_analyses.json"
    bad = _cli(tmp_path, "score", "--release", "1.0.0", "--submission", str(sub), "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "'hurricane', which release 1.0.0 does not have (it has: fish)" in bad.stderr
    missing = _cli(tmp_path, "score", "--release", "1.0.0", "--submission", str(tmp_path / "nope.json"),
                   "--out", str(tmp_path / "x"))
    assert missing.returncode == 2 and "Cannot read" in missing.stderr
    assert "No scoring runs yet." in _cli(tmp_path, "runs", "list").stdout


def test_score_mcq_asks_a_model_under_test_at_temperature_zero(tmp_path, shared_blade):
    from tests.llm_server import ScriptedLLM

    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    refused = _cli(tmp_path, "score-mcq", "--release", "1.0.0", "--ask-model", "m", "--out", str(tmp_path / "x"))
    assert refused.returncode == 2 and "--base-url" in refused.stderr  # nowhere to ask: a sentence, no run

    asked: list[int] = []

    def answer(request):  # the first question gets prose the strict parser must not guess from
        asked.append(1)
        return "I think maybe the second one?" if len(asked) == 1 else json.dumps({"answer": "A", "rationale": "x"})

    with ScriptedLLM(answer) as server:
        out = tmp_path / "mcq.json"
        done = _cli(tmp_path, "score-mcq", "--release", "1.0.0", "--ask-model", "model-under-test",
                    "--base-url", server.url, "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert len(server.requests) == 5 and {r["temperature"] for r in server.requests} == {0}
        assert {r["model"] for r in server.requests} == {"model-under-test"}
        report = json.loads(out.read_text())
        statuses = [i["status"] for i in report["items"]]
        assert statuses.count("unparseable") == 1 and statuses.count("unanswered") == 0
        for item in report["items"]:
            if item["status"] != "unparseable":
                assert item["parsed"] == "A" and item["status"] == ("correct" if item["correct"] == "A" else "wrong")
        assert report["source"]["asked"]["model"] == "model-under-test"
        correct = statuses.count("correct") / len(statuses)
        assert f"MCQ accuracy {correct:.3f}" in done.stdout

        again = _cli(tmp_path, "score-mcq", "--release", "1.0.0", "--ask-model", "model-under-test",
                     "--base-url", server.url, "--out", str(tmp_path / "again.json"))
        assert again.returncode == 0, again.stderr
        # the four answers with a letter came from the cache; the prose one was never cached: asked again
        assert len(server.requests) == 6
        again_items = json.loads((tmp_path / "again.json").read_text())["items"]
        assert [i["status"] for i in again_items].count("unparseable") == 0
    runs = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)
    mine = [r for r in runs if r["agent"] == "model-under-test"]
    assert [(r["kind"], r["status"], r["model_name"]) for r in mine] == [("mcq", "succeeded", "model-under-test")] * 2
    assert correct in [r["scores"]["mcq"]["accuracy"] for r in mine]
    # asked through the agent-run machinery: each ask is an agent run with its settings, templates and tokens
    shown = json.loads(_cli(tmp_path, "agent", "show", "1").stdout)
    assert (shown["kind"], shown["strategy"], shown["temperature"], shown["seed"]) == ("mcq", "oneshot", 0.0, 0)
    assert shown["templates"] == {"oneshot": "agent-oneshot@1", "mcq": "blade-mcq@2"}
    assert [t["status"] for t in shown["tasks"]].count("invalid_answer") == 1 and len(shown["tasks"]) == 5
    clash = _cli(tmp_path, "score-mcq", "--release", "1.0.0", "--ask-model", "m", "--model", "other",
                 "--base-url", "http://127.0.0.1:1/v1", "--out", str(tmp_path / "y"))
    assert clash.returncode == 2 and "--model other names the model of an answers file" in clash.stderr


def test_an_out_path_that_cannot_be_written_gets_a_sentence(tmp_path, shared_blade):
    """``--out`` naming a directory, or a place that cannot be created, ended in IsADirectoryError or
    FileNotFoundError tracebacks after the whole run."""
    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"hurricane:cvar:0": "A"}))
    folder = _cli(tmp_path, "score-mcq", "--release", "1.0.0", "--answers", str(answers), "--out", str(tmp_path))
    assert folder.returncode == 2 and "Traceback" not in folder.stderr
    assert f"--out {tmp_path} is a directory; name the file to write" in folder.stderr
    assert "No scoring runs yet." in _cli(tmp_path, "runs", "list").stdout  # refused before anything was stored
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder would go")
    nowhere = _cli(tmp_path, "score-mcq", "--release", "1.0.0", "--answers", str(answers),
                   "--out", str(blocker / "r.json"))
    assert nowhere.returncode == 2 and "Traceback" not in nowhere.stderr
    assert f"could not be written to {blocker / 'r.json'}" in nowhere.stderr and "kept as run 1" in nowhere.stderr


def test_a_submission_that_is_not_a_regular_file_or_too_big_is_refused_before_reading(tmp_path):
    """``--submission /dev/zero`` (or a pipe) was read whole before the size limit was checked: memory without
    end, or a command that never returns. The size limit is checked on the file before it is read. (A real
    process: a command that hangs on the pipe is stopped by the timeout instead of hanging the tests.)"""
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    env = dict(os.environ, FORKPATHS_DATA_DIR=str(tmp_path / "data"), FORKPATHS_LOAD_STARTER_DATASETS="false",
               FORKPATHS_ADMIN_PASSWORD="admin password 1", FORKPATHS_MAX_SUBMISSION_MB="1")
    env.pop("FORKPATHS_DATABASE_URL", None)
    big = tmp_path / "big.json"
    with big.open("wb") as fh:  # sparse: 2 MB on paper, nothing on disk
        fh.truncate(2 * 2**20)
    for path, says in ((pipe, "is not a regular file"), (big, "is 2.0 MB; the limit is 1.0 MB")):
        r = subprocess.run([sys.executable, "-m", "curation.cli", "score", "--release", "1.0.0", "--submission",
                            str(path), "--out", str(tmp_path / "r.json")], cwd=PROJECT_ROOT, env=env,
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and says in r.stderr, r.stderr
