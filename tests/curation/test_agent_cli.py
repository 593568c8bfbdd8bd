"""``forkpaths agent run|list|show|resume`` as an operator uses them: a real database (the run itself in a real
process, the rest in this one: tests/cli_runner.py), the scripted model on 127.0.0.1 with a ReAct agent that
runs code in the sandbox."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from curation.settings import PROJECT_ROOT
from tests.cli_runner import forkpaths
from tests.llm_server import ScriptedLLM

ANALYSIS = {"cvars": {"ivs": [{"description": "name femininity", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('alldeaths ~ masfem', data=df).fit()"}


def _cli(tmp_path: Path, *args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
    return forkpaths(tmp_path, *args, cwd=PROJECT_ROOT, process=process, FORKPATHS_LLM_MAX_RETRIES="0",
                     FORKPATHS_AGENT_PRICES='{"scripted": [1.0, 4.0]}')


def test_agent_run_from_the_terminal(tmp_path, shared_blade, os_sandbox):
    assert _cli(tmp_path, "import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert _cli(tmp_path, "release", "create", "--version", "1.0.0").returncode == 0

    def respond(req):
        if req["messages"][-1]["role"] == "tool":
            return {"content": json.dumps(ANALYSIS), "usage": {"prompt_tokens": 500, "completion_tokens": 100}}
        return {"tool_calls": [{"name": "run_python", "arguments": {"code": "df[['masfem','alldeaths']].corr()"}}],
                "usage": {"prompt_tokens": 400, "completion_tokens": 50}}

    with ScriptedLLM(responder=respond) as llm:
        done = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "scripted", "--base-url", llm.url,
                    "--strategy", "react", "--runs", "2", process=True)  # the real command, once
        assert done.returncode == 0, done.stderr
        assert "coverage@10 needs at least 11 runs" in done.stderr
        assert "Agent run 1 succeeded: 2 of 2 task runs answered. Scored as run #1." in done.stdout
        assert "Tokens: 1800 in, 300 out; cost $0.0030; 4 requests sent" in done.stdout
        tool_obs = [m for m in llm.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
        assert "masfem" in tool_obs and "alldeaths" in tool_obs
        shown = json.loads(_cli(tmp_path, "agent", "show", "1").stdout)
        assert shown["strategy"] == "react" and [t["tool_calls"] for t in shown["tasks"]] == [1, 1]
        listed = _cli(tmp_path, "agent", "list").stdout
        assert listed.startswith("1\tsucceeded\t2/2\tscripted\treact")
        runs = json.loads(_cli(tmp_path, "runs", "list", "--json").stdout)
        assert [(r["agent"], r["model_name"], r["source"], r["status"]) for r in runs] == [
            ("react agent #1", "scripted", "agent", "succeeded")]
        bad = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "scripted", "--base-url", llm.url,
                   "--max-steps", "0")
        assert bad.returncode == 2 and "--max-steps" in bad.stderr
        missing = _cli(tmp_path, "agent", "run", "--release", "9.9.9", "--model", "m", "--base-url", llm.url)
        assert missing.returncode == 2 and "9.9.9" in missing.stderr
        enq = _cli(tmp_path, "agent", "run", "--release", "1.0.0", "--model", "m", "--base-url", llm.url, "--enqueue")
        assert enq.returncode == 2 and "PostgreSQL" in enq.stderr
        resumed = _cli(tmp_path, "agent", "resume", "1")
        assert resumed.returncode == 2 and "has finished" in resumed.stderr
