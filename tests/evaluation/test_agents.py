"""Agent strategies against the scripted chat-completions server on 127.0.0.1 and the real sandbox: a one-shot
agent, a ReAct agent (calls the tool, reads the observation, answers), and a broken agent (each fault)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evaluation.agents import AgentSettings, AgentTask, TaskAnswer, agent_kind, run_task
from evaluation.llm import LLMClient, LLMConfig
from exports.hypotheses_part import HypothesesPart, HypothesisTaskRelease
from exports.schema import DatasetRelease, Release, ReleaseFile
from tests.llm_server import ScriptedLLM

ANALYSIS = {"cvars": {"ivs": [{"description": "storm severity", "columns": ["wind"]}],
                      "dv": {"description": "deaths", "columns": ["deaths"]}, "controls": []},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('deaths ~ wind', data=df).fit()"}
PROXY_PAGE = "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1>nginx</body></html>"


def _client(url: str, tmp_path: Path, **kw) -> LLMClient:
    return LLMClient(LLMConfig(base_url=url, model="scripted", cache_dir=tmp_path / "cache", backoff_s=0.01,
                               max_retries=kw.pop("max_retries", 1), **kw))


@pytest.fixture
def task(tmp_path: Path) -> AgentTask:
    data = tmp_path / "data.csv"
    data.write_text("wind,deaths\n" + "".join(f"{w},{w // 10}\n" for w in range(40, 140, 5)), encoding="utf-8")
    return AgentTask(key="storms", kind="analyses", title="storms", brief="Research question: \"do storms kill?\"",
                     data_path=data, dataset="storms", columns=("wind", "deaths"))


KIND = agent_kind("analyses")


def _call(code: str) -> dict:
    return {"tool_calls": [{"name": "run_python", "arguments": {"code": code}}]}


# ------------------------------------------------------------------------------------ one-shot


def test_oneshot_answers_and_a_rerun_sends_no_request(tmp_path, task):
    with ScriptedLLM() as llm:
        llm.script = [{"content": json.dumps(ANALYSIS), "usage": {"prompt_tokens": 120, "completion_tokens": 80}}]
        out = run_task(_client(llm.url, tmp_path, seed=3), KIND, task, AgentSettings())
        assert out.status == "answered", out.message
        assert out.answer["cvars"]["dv"]["columns"] == ["deaths"]
        assert (out.prompt_tokens, out.completion_tokens, out.calls) == (120, 80, 1)
        sent = llm.requests[0]
        assert sent["seed"] == 3 and sent["response_format"] == {"type": "json_object"}
        assert "do storms kill?" in sent["messages"][1]["content"]
        assert [m["role"] for m in out.transcript] == ["system", "user", "assistant"]
        again = run_task(_client(llm.url, tmp_path, seed=3), KIND, task, AgentSettings())
        assert len(llm.requests) == 1 and again.calls == 0 and again.cache_hits == 1
        assert again.answer == out.answer
        llm.script = [{"content": json.dumps(ANALYSIS)}]
        other_seed = run_task(_client(llm.url, tmp_path, seed=4), KIND, task, AgentSettings())
        assert len(llm.requests) == 2 and other_seed.calls == 1  # the seed is part of the key: a new run asks


def test_oneshot_repairs_once_showing_the_validation_error(tmp_path, task):
    broken = {**ANALYSIS, "m_code": "def model(df) return 1"}
    with ScriptedLLM() as llm:
        llm.script = [{"content": json.dumps(broken)}, {"content": "```json\n" + json.dumps(ANALYSIS) + "\n```"}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings())
    assert out.status == "answered" and "one repair" in out.message
    repair = llm.requests[1]["messages"][-1]["content"]
    assert "m_code" in repair and "not valid Python" in repair


def test_workflow_is_asked_for_and_required(tmp_path, task):
    with ScriptedLLM() as llm:
        llm.script = [{"content": json.dumps(ANALYSIS)},
                      {"content": json.dumps({**ANALYSIS, "workflow": "Fit OLS of deaths on wind speed."})}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(workflow=True))
    assert "workflow" in llm.requests[0]["messages"][1]["content"]
    assert "workflow is missing" in llm.requests[1]["messages"][-1]["content"]
    assert out.status == "answered" and out.answer["workflow"].startswith("Fit OLS")


# ------------------------------------------------------------------------------------ ReAct


def test_react_calls_the_tool_reads_the_observation_and_answers(tmp_path, task, os_sandbox):
    with ScriptedLLM() as llm:
        llm.script = [_call("print(df.shape)\ndf['deaths'].max()"), {"content": json.dumps(ANALYSIS)}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react"))
    assert out.status == "answered", out.message
    assert out.tool_calls == 1 and "1 tool call" in out.message
    assert llm.requests[0]["tools"][0]["function"]["name"] == "run_python"
    observation = llm.requests[1]["messages"][-1]
    assert observation["role"] == "tool" and "(20, 2)" in observation["content"] and "13" in observation["content"]
    assert [m["role"] for m in out.transcript] == ["system", "user", "assistant", "tool", "assistant"]


# ------------------------------------------------------------------------------------ a broken agent


def test_not_json_twice_is_invalid_answer(tmp_path, task):
    with ScriptedLLM() as llm:
        llm.script = [{"content": "I think wind matters."}, {"content": "Still prose."}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings())
    assert out.status == "invalid_answer" and "not JSON" in out.message and out.answer is None


def test_wrong_shape_twice_is_invalid_answer_naming_the_field(tmp_path, task):
    with ScriptedLLM() as llm:
        llm.script = [{"content": json.dumps({"cvars": {}})}, {"content": json.dumps({"answer": 42})}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings())
    assert out.status == "invalid_answer" and "transform_code" in out.message


def test_code_that_attacks_the_sandbox_or_loops_is_an_observation(tmp_path, task, os_sandbox):
    attack = "import socket\nsocket.create_connection(('1.1.1.1', 80))"
    with ScriptedLLM() as llm:
        llm.script = [_call(attack), _call("while True:\n    pass"), _call("import os\nos.system('id')"),
                      _call("raise SystemExit(0)"), {"content": json.dumps(ANALYSIS)}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react", step_timeout_s=1.5))
    assert out.status == "answered", out.message
    obs = [m["content"] for m in out.transcript if m["role"] == "tool"]
    assert "network" in obs[0] and "refused" in obs[0]
    assert "longer than the 1.5 s limit" in obs[1]
    assert "SystemExit" in obs[3]


def test_observations_are_truncated(tmp_path, task, os_sandbox):
    with ScriptedLLM() as llm:
        llm.script = [_call("print('x' * 50000)"), {"content": json.dumps(ANALYSIS)}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react", observation_chars=500))
    obs = next(m["content"] for m in out.transcript if m["role"] == "tool")
    assert len(obs) < 700 and "truncated" in obs


def test_a_model_that_never_calls_the_tool(tmp_path, task):
    with ScriptedLLM() as llm:
        llm.script = [{"content": "Let me think about it."}, {"content": json.dumps(ANALYSIS)}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react"))
    assert out.status == "answered_without_code" and out.answer is not None
    assert "run_python" in llm.requests[1]["messages"][-1]["content"]  # nudged once


def test_a_model_that_calls_the_tool_forever(tmp_path, task, os_sandbox):
    with ScriptedLLM(responder=lambda _r: _call("1 + 1")) as llm:
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react", max_steps=3))
    assert out.status == "step_limit" and "3 tool calls" in out.message
    assert out.tool_calls == 3 and len(llm.requests) == 4
    assert "tools" not in llm.requests[-1]  # the last turn is offered no tool


def test_many_tool_calls_in_one_turn_stop_at_the_limit(tmp_path, task, os_sandbox):
    many = {"tool_calls": [{"name": "run_python", "arguments": {"code": f"print({i})"}} for i in range(6)]}
    with ScriptedLLM() as llm:
        llm.script = [many, {"content": json.dumps(ANALYSIS)}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react", max_steps=2))
    obs = [m["content"] for m in out.transcript if m["role"] == "tool"]
    assert out.tool_calls == 2 and len(obs) == 6 and obs[2].startswith("Not run: the limit of 2")
    assert out.status == "answered" and "tools" not in llm.requests[1]


def test_an_unknown_tool_or_bad_arguments_are_observations(tmp_path, task):
    with ScriptedLLM() as llm:
        llm.script = [{"tool_calls": [{"name": "shell", "arguments": {"cmd": "ls"}}]},
                      {"tool_calls": [{"name": "run_python", "arguments": "{not json"}]},
                      {"content": json.dumps(ANALYSIS)}]
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react"))
    obs = [m["content"] for m in out.transcript if m["role"] == "tool"]
    assert "no tool called 'shell'" in obs[0] and "not JSON" in obs[1] and out.status == "answered"


@pytest.mark.parametrize("fault, words", [
    ("down", "cannot connect"), ("rate", "HTTP 429"), ("html", "HTML page"), ("slow", "no answer within")])
def test_endpoint_faults_give_the_task_a_status_and_a_sentence(tmp_path, task, fault, words):
    with ScriptedLLM() as llm:
        url = ScriptedLLM.down_url() if fault == "down" else llm.url
        llm.script = {"rate": [{"status": 429}] * 3, "html": [{"raw": PROXY_PAGE, "content_type": "text/html"}] * 3,
                      "slow": [{"delay": 1.0, "content": "{}"}] * 3}.get(fault, [])
        out = run_task(_client(url, tmp_path, timeout_s=0.3), KIND, task, AgentSettings())
    assert out.status == "endpoint_error" and words in out.message, out.message
    assert out.answer is None


# ------------------------------------------------------------------------------------ the hypotheses hook


def _hypothesis_release(folder: Path) -> Release:
    data = folder / "data" / "nls" / "nls_ses.csv"
    data.parent.mkdir(parents=True)
    data.write_text("age,income,educ\n30,100,12\n40,200,16\n50,150,14\n", encoding="utf-8")
    task = HypothesisTaskRelease(key="real/test/nls/metadata_0/q0", source="real", split="test", metadata_k=0, qid=0,
                                 question="How does education relate to income?", domain="sociology",
                                 data_files=["nls_ses.csv"])
    ds = DatasetRelease(name="nls", research_question="-", data_file="data/nls/nls_ses.csv", data_sha256="",
                        num_rows=3, num_columns=3,
                        files=[ReleaseFile(name="nls_ses.csv", path="data/nls/nls_ses.csv", sha256="", size=1,
                                           columns=[{"name": "educ", "description": "years of schooling"}])],
                        ).with_parts(hypotheses=HypothesesPart(tasks=[task]))
    return Release(version="1.0.0", created_at=datetime.now(UTC), app_version="t", datasets=[ds])


def test_hypothesis_strategy_writes_the_documented_submission(tmp_path, os_sandbox):
    release = _hypothesis_release(tmp_path / "rel")
    hook = agent_kind("hypotheses")
    tasks = hook.tasks(release, tmp_path / "rel")
    assert [t.key for t in tasks] == ["real/test/nls/metadata_0/q0"] and tasks[0].columns == ("age", "income", "educ")
    assert "years of schooling" in tasks[0].brief and "education relate to income" in tasks[0].brief
    reply = {"hypothesis": "More education goes with higher income.", "workflow": "Correlate educ with income.",
             "variables": ["educ", "income"], "relationship": "positive"}
    with ScriptedLLM() as llm:
        llm.script = [_call("df[['educ','income']].corr()"), {"content": json.dumps(reply)}]
        out = run_task(_client(llm.url, tmp_path), hook, tasks[0], AgentSettings(strategy="react"))
    assert out.status == "answered", out.message
    assert "income" in next(m["content"] for m in out.transcript if m["role"] == "tool")
    subs = hook.submissions(release, [TaskAnswer(tasks[0].key, 0, out.status, out.message, out.answer),
                                      TaskAnswer(tasks[0].key, 1, "invalid_answer", "not JSON", None)], source={})
    assert [s.label for s in subs] == ["run 0", "run 1"]
    body = json.loads(subs[0].files[0][1])
    assert body == {"format": "forkpaths-hypotheses", "format_version": "1.0",
                    "answers": [{"task": "real/test/nls/metadata_0/q0", **reply}]}
    assert json.loads(subs[1].files[0][1])["answers"] == []
    try:  # the hypotheses kind (built beside this) reads it, once it is installed
        from evaluation.tasks.hypotheses import HypothesisSubmission
    except ImportError:
        return
    HypothesisSubmission.model_validate(body)


# ------------------------------------------------------------------------------------ a task of several files


def _multi_file_release(folder: Path) -> Release:
    """A hand-made DiscoveryBench-like folder: a UTF-8 CSV (the first table: df), a cp1252 CSV and a Stata file."""
    import pandas as pd

    data = folder / "data" / "towns"
    data.mkdir(parents=True)
    (data / "towns.csv").write_text("town,people\nA,10\nB,20\nC,30\n", encoding="utf-8")
    (data / "capital.csv").write_bytes("town,name\nA,Café Zürich\nB,Straße\n".encode("cp1252"))
    pd.DataFrame({"town": ["A", "B"], "rain": [1.5, 2.5]}).to_stata(
        data / "weather.dta", write_index=False, variable_labels={"rain": "yearly rain in metres"})
    names = ["towns.csv", "capital.csv", "weather.dta"]
    task = HypothesisTaskRelease(key="real/test/towns/metadata_0/q0", source="real", split="test", metadata_k=0,
                                 qid=0, question="Do rainy towns have more people?", data_files=names)
    ds = DatasetRelease(name="towns", research_question="-", data_file="data/towns/towns.csv", data_sha256="",
                        num_rows=3, num_columns=2,
                        files=[ReleaseFile(name=n, path=f"data/towns/{n}", sha256="", size=1) for n in names],
                        ).with_parts(hypotheses=HypothesesPart(tasks=[task]))
    return Release(version="1.0.0", created_at=datetime.now(UTC), app_version="t", datasets=[ds])


def test_a_task_of_several_files_shows_them_all_and_the_tool_has_them_by_name(tmp_path, os_sandbox):
    release = _multi_file_release(tmp_path / "rel")
    hook = agent_kind("hypotheses")
    [task] = hook.tasks(release, tmp_path / "rel")
    assert [f.name for f in task.files] == ["towns.csv", "capital.csv", "weather.dta"]
    assert [(f.format, f.encoding) for f in task.files] == [("csv", "utf-8"), ("csv", "cp1252"), ("stata", None)]
    # the one-shot prompt: every file with its columns and first rows, the cp1252 one read right, the .dta too
    assert "Café Zürich" in task.brief and "Straße" in task.brief
    assert "weather.dta" in task.brief and "yearly rain in metres" in task.brief and "2.5" in task.brief
    assert '`df` is "towns.csv", already loaded' in task.brief
    code = ("print(df.shape)\nc = pd.read_csv('capital.csv')\nprint(c['name'].tolist())\n"
            "w = pd.read_stata('weather.dta')\nprint(w['rain'].sum())\nimport os\nprint(sorted(os.listdir('.')))")
    reply = {"hypothesis": "Rain goes with people.", "workflow": "Join the tables on town."}
    with ScriptedLLM() as llm:
        llm.script = [_call(code), {"content": json.dumps(reply)}]
        out = run_task(_client(llm.url, tmp_path), hook, task, AgentSettings(strategy="react"))
    assert out.status == "answered", out.message
    obs = next(m["content"] for m in out.transcript if m["role"] == "tool")
    assert "(3, 2)" in obs and "['Café Zürich', 'Straße']" in obs and "4.0" in obs, obs
    assert "['capital.csv', 'towns.csv', 'weather.dta']" in obs, obs


def test_df_is_the_first_table_even_when_it_is_a_stata_file(tmp_path, os_sandbox):
    from evaluation.agents.briefs import task_file
    from evaluation.agents.strategies import run_python_tool

    release = _multi_file_release(tmp_path / "rel")
    folder = tmp_path / "rel" / "data" / "towns"
    files = (task_file("notes.txt", folder / "towns.csv"), task_file("weather.dta", folder / "weather.dta"))
    assert files[0].format == "other"  # a .txt is handed over, not loaded
    text, ok = run_python_tool("print(list(df.columns), len(df))", None, AgentSettings(), files=files)
    assert ok and "['town', 'rain'] 2" in text, text
    _ = release


# ------------------------------------------------------------------------------------ cancel


def test_cancel_reaches_a_react_loop_between_steps(tmp_path, task, os_sandbox):
    with ScriptedLLM(responder=lambda _r: _call("1 + 1")) as llm:
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react", max_steps=10),
                       should_stop=lambda: len(llm.requests) >= 2)
    # asked twice; the second answer's tool call is not run: the cancel was seen before it
    assert out.status == "cancelled" and out.tool_calls == 1 and len(llm.requests) == 2, out.message
    assert "Cancelled while the task was under way" in out.message


def test_cancel_kills_a_running_tool_call(tmp_path, task, os_sandbox):
    import threading
    import time

    stop = threading.Event()
    with ScriptedLLM(responder=lambda _r: _call("import time\ntime.sleep(120)")) as llm:
        threading.Timer(2.0, stop.set).start()
        started = time.monotonic()
        out = run_task(_client(llm.url, tmp_path), KIND, task, AgentSettings(strategy="react", step_timeout_s=300),
                       should_stop=stop.is_set)
        took = time.monotonic() - started
    assert out.status == "cancelled" and out.tool_calls == 1 and len(llm.requests) == 1, out.message
    assert took < 60, took  # the two-minute step was killed, not waited for (a bound, not a speed goal)
