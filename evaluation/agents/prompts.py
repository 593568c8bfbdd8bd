"""The agents' prompt templates, versioned: a run records the versions it used, and each version is part of every
call's cache key. Bump a version whenever its wording changes.

Everything from the release (question, dictionary, sample rows) reaches the prompt quoted as data
(:mod:`evaluation.llm.quoting`); the task's brief is built by the kind's hook.
"""

from __future__ import annotations

from typing import Any

from evaluation.agents.base import AgentTask
from evaluation.llm.quoting import DATA_NOTICE

__all__ = ["ONESHOT_TEMPLATE", "REACT_TEMPLATE", "TEMPLATES", "TOOL", "oneshot_messages", "react_messages",
           "repair_message", "WORKFLOW_NOTE"]

ONESHOT_TEMPLATE = "agent-oneshot@1"
REACT_TEMPLATE = "agent-react@1"
TEMPLATES = {"oneshot": ONESHOT_TEMPLATE, "react": REACT_TEMPLATE}

_SYSTEM = ("You are a careful data scientist. You answer a data-analysis task with one JSON object in the shape "
           "asked for, and nothing else. " + DATA_NOTICE)

WORKFLOW_NOTE = ("Also write a \"workflow\": a plain-language narrative of the analysis, step by step, from which "
                 "another person could rewrite your code without seeing it (which rows and columns, which "
                 "transformations, which model and why).")

TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "run_python",
        "description": ("Run Python code on the task's data table, in a fresh sandboxed process: the table is "
                        "loaded as the pandas DataFrame `df` (pandas as `pd`, numpy as `np`; statsmodels and scipy "
                        "can be imported). Nothing carries over between calls. What the code prints, and the value "
                        "of a last bare expression, come back (truncated); no network, no files outside the "
                        "scratch folder."),
        "parameters": {"type": "object", "properties": {"code": {"type": "string", "description": "Python code"}},
                       "required": ["code"]},
    },
}


def _ask(task: AgentTask, shape: str, workflow: bool) -> str:
    return (f"{task.brief}\n\nAnswer with one JSON object of this shape and nothing else:\n{shape}"
            + (f"\n\n{WORKFLOW_NOTE}" if workflow else ""))


def oneshot_messages(task: AgentTask, shape: str, *, workflow: bool) -> list[dict[str, Any]]:
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _ask(task, shape, workflow)}]


def react_messages(task: AgentTask, shape: str, *, workflow: bool, max_steps: int) -> list[dict[str, Any]]:
    tools = (f"Before answering, explore the data with the run_python tool (at most {max_steps} calls; each call "
             "is a fresh process, so load what you need each time from `df`). When you are done, answer without "
             "calling the tool.")
    return [{"role": "system", "content": _SYSTEM + " " + tools},
            {"role": "user", "content": _ask(task, shape, workflow)}]


def repair_message(error: str, shape: str) -> dict[str, Any]:
    """The one repair turn: the validation error, shown to the model, and the shape again."""
    return {"role": "user", "content": (f"Your answer could not be used: {error}\nAnswer again with one JSON object "
                                        f"of this shape and nothing else:\n{shape}")}


def final_message(shape: str) -> dict[str, Any]:
    """ReAct, after the last allowed tool call: answer now."""
    return {"role": "user", "content": ("You have used every tool call you were allowed. Give your final answer "
                                        f"now, as one JSON object of this shape and nothing else:\n{shape}")}


def nudge_message() -> dict[str, Any]:
    """ReAct, when the model answered in prose instead of calling the tool or answering in JSON."""
    return {"role": "user", "content": ("Either call the run_python tool to look at the data, or give your final "
                                        "answer as the JSON object asked for.")}
