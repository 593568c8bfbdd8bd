"""Agent runs without a database: a model answers a release's tasks with a strategy, and its answers become the
task kind's own submission, scored like an uploaded one.

* :mod:`evaluation.agents.strategies`: one-shot and ReAct (:func:`run_task`);
* :mod:`evaluation.agents.prompts`: the versioned prompt templates and the one tool;
* one hook per task kind, which the kind declares (``TaskKind.agent``: a module here, or the kind's own), found by
  the kind's name (:func:`agent_kind`, which reads the registry of kinds).
"""

from evaluation.agents.base import (
    ANSWERED,
    CANCELLED,
    STRATEGIES,
    AgentKind,
    AgentSettings,
    AgentTask,
    Submission,
    TaskAnswer,
    TaskFile,
    TaskOutcome,
    UnknownAgentKind,
    agent_kind,
    agent_kind_names,
)
from evaluation.agents.prompts import TEMPLATES
from evaluation.agents.strategies import run_task

__all__ = ["ANSWERED", "CANCELLED", "STRATEGIES", "TEMPLATES", "AgentKind", "AgentSettings", "AgentTask", "Submission",
           "TaskAnswer", "TaskFile", "TaskOutcome", "UnknownAgentKind", "agent_kind", "agent_kind_names",
           "run_task"]
