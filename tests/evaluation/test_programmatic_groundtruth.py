"""Ground truth for programmatic tasks: the self-consistency rule on scripted samples, candidate solutions run in
the sandbox, the release gate (a check that passes on everything is refused), and the LLM's part through the
scripted chat-completions server (garbage answers refused with the reason)."""

from __future__ import annotations

import json

import pytest

from evaluation.llm import LLMAnswerError, LLMClient, LLMConfig
from evaluation.programmatic.groundtruth import (
    SolutionRun,
    agree,
    ask_checks,
    ask_solutions,
    fingerprint,
    gate,
    run_solution,
    wrong_outputs,
)
from evaluation.programmatic.runner import CheckLimits
from exports.programmatic_part import ProgrammaticCheck, ProgrammaticTaskRelease
from tests.llm_server import ScriptedLLM

CLEAN = "data cleaning & preprocessing"
TASK = ProgrammaticTaskRelease(key="t", prompt="Drop rows with a missing value; write clean.csv.",
                               input_files=["data.csv"])
FAST = CheckLimits(check_timeout_s=5.0)


def run(files: dict[str, bytes], ok: bool = True) -> SolutionRun:
    return SolutionRun(code="", ok=ok, files=files)


# --------------------------------------------------------------------------------------------- the agreement rule


def test_tables_agree_up_to_row_and_column_order_and_float_noise() -> None:
    a = b"x,y\n1,0.3\n2,0.5\n"
    b = b"y,x\n0.5,2\n0.30000000001,1\n"
    assert fingerprint("t.csv", a) == fingerprint("t.csv", b)
    assert fingerprint("t.csv", a) != fingerprint("t.csv", b"x,y\n1,0.3\n2,0.6\n")
    assert fingerprint("r.json", b'{"a": 0.1, "b": [1, 2]}') == fingerprint("r.json", b'{"b":[1,2],"a":0.10000000001}')
    assert fingerprint("r.md", b"Mean  2.8600000001\nvisits") == fingerprint("r.md", b"Mean 2.86 visits")
    assert fingerprint("p.png", b"\x89PNG1") != fingerprint("p.png", b"\x89PNG2")


def test_a_strict_majority_of_the_samples_that_ran_and_at_least_two() -> None:
    good, other = b"a\n1\n", b"a\n2\n"
    # 3 of 4 ran; 2 agree on clean.csv: 2 > 3/2 -> agreed; summary.json only one sample wrote -> not agreed
    result = agree([run({"clean.csv": good, "summary.json": b"{}"}), run({"clean.csv": good}),
                    run({"clean.csv": other}), run({}, ok=False)])
    assert result.samples == 4 and result.ok_samples == 3
    assert result.artifact_bytes() == {"clean.csv": good} and result.support == {"clean.csv": 2}
    assert result.disagreeing == {"summary.json": [1]}
    # 2 of 4 agree: not a strict majority of 4
    tie = agree([run({"c.csv": good}), run({"c.csv": good}), run({"c.csv": other}), run({"c.csv": b"a\n3\n"})])
    assert tie.artifacts == {} and tie.disagreeing == {"c.csv": [2, 1, 1]}
    # one sample alone is never self-consistent
    assert agree([run({"c.csv": good})]).artifacts == {}
    # failed samples do not count against the majority
    assert agree([run({"c.csv": good}), run({"c.csv": good}), run({}, False), run({}, False)]).support == {"c.csv": 2}


@pytest.mark.usefixtures("os_sandbox")
def test_candidate_solutions_run_in_the_sandbox_and_agree() -> None:
    inputs = {"data.csv": b"a,b\n1,2\n,4\n3,\n5,6\n"}
    codes = ["import pandas as pd\npd.read_csv('data.csv').dropna().to_csv('clean.csv', index=False)\n",
             "import pandas as pd\ndf = pd.read_csv('data.csv')\ndf[df.notna().all(axis=1)].to_csv('clean.csv', "
             "index=False)\n",
             "import pandas as pd\npd.read_csv('data.csv').fillna(0).to_csv('clean.csv', index=False)\n",
             "raise ValueError('no')\n"]
    runs = [run_solution(c, inputs, timeout_s=30) for c in codes]
    assert [r.ok for r in runs] == [True, True, True, False] and "ValueError" in runs[3].error
    assert set(runs[0].files) == {"clean.csv"}  # the inputs and the script itself are not outputs
    result = agree(runs)
    assert result.support == {"clean.csv": 2}
    assert result.artifact_bytes()["clean.csv"].splitlines()[1:] == [b"1.0,2.0", b"5.0,6.0"]


# --------------------------------------------------------------------------------------------- the release gate


def test_wrong_outputs_are_made_from_the_accepted_artifacts() -> None:
    wrong = wrong_outputs({"c.csv": b"a,b\n1,2\n3,4\n", "r.json": b'{"n": 2}', "p.png": b"png"})
    assert set(wrong) == {"c.csv: first row duplicated", "c.csv: last row dropped", "c.csv: numbers shifted by 10 %",
                          "c.csv: a missing value", "r.json: numbers shifted by 10 %", "p.png: a blank image"}
    assert wrong["c.csv: last row dropped"]["c.csv"] == b"a,b\n1,2\n"
    assert json.loads(wrong["r.json: numbers shifted by 10 %"]["r.json"]) == {"n": 3.2}


@pytest.mark.usefixtures("os_sandbox")
def test_the_gate_releases_a_discriminating_check_and_refuses_one_that_passes_on_everything() -> None:
    accepted = {"clean.csv": b"a,b\n1,2\n3,4\n"}
    good = ProgrammaticCheck(id="g", task_type=CLEAN, function="Data Completeness", metric="no missing values",
                             code="import pandas as pd\ndef f(gt):\n    return bool(pd.read_csv('clean.csv').notna()"
                                  ".all().all())")
    result = gate(TASK, good, accepted, limits=FAST)
    assert result.released and result.on_accepted["status"] == "true"
    assert {w["label"]: w["status"] for w in result.on_wrong}["clean.csv: a missing value"] == "false"
    always = good.model_copy(update={"code": "def f(gt):\n    return True"})
    refused = gate(TASK, always, accepted, limits=FAST)
    assert not refused.released and "passes on every output" in refused.sentence
    assert all(w["status"] == "true" for w in refused.on_wrong)
    failing = good.model_copy(update={"code": "def f(gt):\n    return False"})
    assert not gate(TASK, failing, accepted, limits=FAST).released
    broken = good.model_copy(update={"code": "def f(gt) return"})
    assert "does not parse" in gate(TASK, broken, accepted, limits=FAST).sentence
    # an analyst's known wrong output counts too
    exact = good.model_copy(update={"code": "def f(gt):\n    return open('clean.csv').read().count('\\n') == 3"})
    with_own = gate(TASK, exact, {"clean.csv": b"a,b\n1,2\n3,4\n"}, limits=FAST,
                    wrong={"analyst: an empty table": {"clean.csv": b"a,b\n"}})
    assert with_own.released and any(w["label"] == "analyst: an empty table" and w["status"] == "false"
                                     for w in with_own.on_wrong)


# --------------------------------------------------------------------------------------------- the LLM's part


def client(server: ScriptedLLM, tmp_path) -> LLMClient:
    return LLMClient(LLMConfig(base_url=server.url, model="m", max_retries=0, cache_dir=tmp_path / "cache"))


def test_solutions_and_checks_come_from_the_llm_and_garbage_is_refused(tmp_path) -> None:
    solution = json.dumps({"code": "import pandas as pd\nprint(1)\n", "outputs": ["clean.csv"]})
    checks = json.dumps({"checks": [{"task_type": "Data Cleaning and Preprocessing", "function": "Data Completeness",
                                     "metric": "no missing", "code": "def f(gt):\n    return True",
                                     "rule": None, "ground_truth": "clean.csv"}]})
    with ScriptedLLM() as server:
        server.script += [{"content": solution}, {"content": solution}, {"content": checks}]
        llm = client(server, tmp_path)
        assert ask_solutions(llm, TASK, 2, {"data.csv": ["a", "b"]}) == ["import pandas as pd\nprint(1)\n"] * 2
        # each sample is its own request (its own cache entry)
        assert "Candidate 1 of 2" in server.requests[0]["messages"][1]["content"]
        assert "Candidate 2 of 2" in server.requests[1]["messages"][1]["content"]
        proposed = ask_checks(llm, TASK, ["clean.csv"])
        assert proposed[0].task_type == CLEAN and proposed[0].ground_truth == "clean.csv"
        server.script += [{"content": "I cannot help with that."}]
        with pytest.raises(LLMAnswerError, match="not usable"):
            ask_solutions(llm, TASK.model_copy(update={"prompt": "other"}), 1)
        server.script += [{"content": json.dumps({"code": "def (:"})}]
        with pytest.raises(LLMAnswerError, match="does not parse"):
            ask_solutions(llm, TASK.model_copy(update={"prompt": "third"}), 1)
        bad_type = json.dumps({"checks": [{"task_type": "astrology", "function": "f", "metric": "m",
                                           "code": "def f(gt):\n    return True"}]})
        server.script += [{"content": bad_type}]
        with pytest.raises(LLMAnswerError, match="none of the six task types"):
            ask_checks(llm, TASK, ["x.csv"])
        server.script += [{"content": json.dumps({"checks": [{"task_type": CLEAN, "function": "f", "metric": "m",
                                                              "code": "x = 1"}]})}]
        with pytest.raises(LLMAnswerError, match="defines no function"):
            ask_checks(llm, TASK, ["y.csv"])


@pytest.mark.usefixtures("os_sandbox")
def test_a_solution_finds_inputs_in_subfolders_at_their_paths() -> None:
    """dl_0's inputs sit in data/: a candidate solution reads them there, as an agent would."""
    from evaluation.programmatic.groundtruth import run_solution

    code = "import pandas as pd\npd.read_csv('data/part.csv').to_csv('out.csv', index=False)\n"
    run = run_solution(code, {"data/part.csv": b"a\n1\n2\n"}, timeout_s=30)
    assert run.ok, run.error
    assert run.files == {"out.csv": b"a\n1\n2\n"}  # the inputs are not outputs


def test_an_answer_of_the_wrong_shape_is_one_sentence_not_a_pydantic_dump(tmp_path) -> None:
    """Issue 26 point 11: ``checks generate`` printed pydantic's multi-line dump (input repeated, a web address)."""
    with ScriptedLLM() as server:
        llm = client(server, tmp_path)
        server.script += [{"content": json.dumps({"outputs": ["clean.csv"]})}]
        with pytest.raises(LLMAnswerError) as caught:
            ask_solutions(llm, TASK.model_copy(update={"prompt": "shape"}), 1)
        assert "'code' is missing" in str(caught.value)
        server.script += [{"content": json.dumps({"checks": [{"task_type": CLEAN, "function": ["f"], "metric": "m"}]})}]
        with pytest.raises(LLMAnswerError) as caught:
            ask_checks(llm, TASK, ["z.csv"])
        message = str(caught.value)
        assert "'checks/0/function' is wrong (input should be a valid string)" in message
        assert "'checks/0/code' is missing" in message
    for said in (message,):
        assert "validation error" not in said and "errors.pydantic.dev" not in said and "input_value" not in said
