"""Agent runs without a database: a model answers a release's tasks with a strategy, and its answers become the
task kind's own submission, scored like an uploaded one.

* :mod:`evaluation.agents.strategies`: one-shot and ReAct (:func:`run_task`);
* :mod:`evaluation.agents.prompts`: the versioned prompt templates and the one tool;
* one hook per task kind (:mod:`~evaluation.agents.analyses`, :mod:`~evaluation.agents.hypotheses`,
  :mod:`~evaluation.agents.mcq`), found by the kind's name (:func:`agent_kind`).
"""

from evaluation.agents import analyses as _analyses  # noqa: F401 - registers the hook
from evaluation.agents import hypotheses as _hypotheses  # noqa: F401 - registers the hook
from evaluation.agents import mcq as _mcq  # noqa: F401 - registers the hook
from evaluation.agents import programmatic as _programmatic  # noqa: F401 - registers the hook
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
    register_agent_kind,
)
from evaluation.agents.prompts import TEMPLATES
from evaluation.agents.strategies import run_task

__all__ = ["ANSWERED", "CANCELLED", "STRATEGIES", "TEMPLATES", "AgentKind", "AgentSettings", "AgentTask", "Submission",
           "TaskAnswer", "TaskFile", "TaskOutcome", "UnknownAgentKind", "agent_kind", "agent_kind_names", "register_agent_kind",
           "run_task"]
