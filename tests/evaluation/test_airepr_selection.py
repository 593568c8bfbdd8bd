"""Which step of an AIRepr sample is the one AIRepr judged, per agent type and model, case by case against
upstream's code (Anonymous-2025-Repr/LLM-DS-Reproducibility, commit 3b4a5a8: ``eval/run_reproducibility.py``
lines 74-103 pick the step, ``eval/reproducibility.py`` lines 79-82 and ``utils/output_parser.py`` lines 17-23 the
code in it); and an imported file keeps every step while its sample is that step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evaluation.reproducibility.airepr import read_airepr_files, select_step, upstream_code


def st(workflow: str = "", action_input: str = "", content: str = "", observation: str = "") -> dict[str, Any]:
    return {"workflow": workflow, "action_input": action_input, "content": content, "observation": observation}


def py(code: str) -> str:
    return f"```python\n{code}\n```"


THREE = [st("W0", py("a = 0")), st("W1", py("a = 1")), st("", "")]  # code, code, then the final answer
CASES = [
    # (agent, model, steps, code step, workflow step, code, workflow, upstream lines)
    ("COT", "gpt-4o", THREE, 0, 0, "a = 0\n", "W0", "run_reproducibility.py:83-91"),
    ("ROT", "gpt-4o", THREE, 0, 0, "a = 0\n", "W0", "run_reproducibility.py:83-91 (any agent but REACT/REFLEXION)"),
    ("REACT", "gpt-4o", THREE, 1, 1, "a = 1\n", "W1", "run_reproducibility.py:74-82"),
    ("REFLEXION", "gpt-4o", THREE, 1, 1, "a = 1\n", "W1", "run_reproducibility.py:74-82"),
    ("react", "gpt-4o", THREE, 0, 0, "a = 0\n", "W0", "run_reproducibility.py:74 (compared as written)"),
    ("REACT", "gpt-4o", [st("W0", py("a = 0")), st("W1", ""), st("", py("a = 2"))], 2, 1, "a = 2\n", "W1",
     "run_reproducibility.py:75-82 (code and workflow looked up apart)"),
    ("COT", "gpt-4o", [st("W0", ""), st("", py("a = 1"))], 1, 0, "a = 1\n", "W0", "run_reproducibility.py:84-91"),
    ("REACT", "gpt-4o", [st("W0", py("a = 0")), st("", " ")], 1, 0, " ", "W0",
     "run_reproducibility.py:76 (a blank action_input is not empty)"),
    ("REACT", "gpt-4o", [st("W0", ""), st("", "")], None, 0, "", "W0", "run_reproducibility.py:75-78 (default '')"),
    ("COT", "gpt-4o", [st("W", py("a = 0") + "\n" + py("a = 9"))], 0, 0, "a = 0\n", "W",
     "output_parser.py:17-23 (the first block)"),
    ("COT", "gpt-4o", [st("W", "```py\na = 0\n```")], 0, 0, "```py\na = 0\n```", "W",
     "reproducibility.py:79-82 (no ```python block: the text as it is)"),
    ("REACT", "deepseek-r1", [st("W0", py("a = 0"), content="Plan A\n" + py("a = 0")),
                              st("W1", py("a = 1"), content="Plan B\n" + py("a = 1")),
                              st("", "", content="Final Answer: 1")], 1, 1, "a = 1\n", "Plan B\n",
     "run_reproducibility.py:94-98"),
    ("COT", "deepseek-r1", [st("W0", py("a = 0"), content="Think\n" + py("a = 0"))], 0, 0, "a = 0\n", "Think\n",
     "run_reproducibility.py:99-103"),
    ("COT", "deepseek-r1", [st("W0", py("a = 0"), content="No code here."), st("", py("a = 1"))], 0, 0, "a = 0\n",
     "No code here", "run_reproducibility.py:101 (find gives -1: the last character dropped)"),
]


@pytest.mark.parametrize(("agent", "model", "steps", "code_step", "workflow_step", "code", "workflow", "line"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{n}" for n, c in enumerate(CASES)])
def test_the_step_upstream_judged(agent, model, steps, code_step, workflow_step, code, workflow, line):
    got = select_step(steps, agent=agent, model=model)
    assert (got.code_step, got.workflow_step, got.code, got.workflow) == (code_step, workflow_step, code, workflow), line


def test_upstream_code_extraction():
    assert upstream_code(py("print(1)")) == "print(1)\n"
    assert upstream_code("print(1)") == "print(1)"
    assert upstream_code("Action Input: " + py("x = 1") + " then " + py("x = 2")) == "x = 1\n"


def test_an_imported_react_sample_is_its_last_step_with_every_step_kept():
    steps = [{"workflow": "1. Load.", "action": "python_repl_ast", "action_input": py("print('first')"),
              "observation": "first\n", "content": "…"},
             {"workflow": "1. Load. 2. Regress.", "action": "python_repl_ast", "action_input": py("print('last')"),
              "observation": "last\n", "content": "…"},
             {"workflow": "", "action": "", "action_input": "", "observation": "", "content": "Final Answer: 1",
              "final_answer": "1"}]
    files = [(f"gpt-4o_QRData_{agent}.json", json.dumps({"0": {"steps": steps, "final_answer": "1"}}).encode())
             for agent in ("REACT", "COT")]
    runs = {r.agent: r for r in read_airepr_files(files)}
    react, cot = runs["REACT"].samples[0], runs["COT"].samples[0]
    assert (react.code, react.workflow, react.output) == ("print('last')\n", "1. Load. 2. Regress.", "last\n")
    assert (cot.code, cot.workflow, cot.output) == ("print('first')\n", "1. Load.", "first\n")
    assert [s["code"] for s in react.published["steps"]] == ["print('first')\n", "print('last')\n", ""]
    assert react.published["selection"]["code_step"] == 1 and "REACT: the last step" in \
        react.published["selection"]["rule"]
