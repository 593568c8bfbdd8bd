"""A forkpaths release as an inspect_ai task, for any kind an agent can answer (imports inspect_ai: load lazily).

One sample per task of the kind's agent hook: its input is the prompt an agent run sends (the brief, quoted as
data, and the answer's shape), its files are the task's data files (``Sample.files``, by name), its metadata says
which task it is and never holds ground truth. Solvers are inspect's own: ``generate`` (one answer) or inspect's
ReAct agent, whose one tool, ``run_python``, runs code through forkpaths's sandbox boundary exactly as the agent
runs' ReAct tool does (:func:`evaluation.agents.strategies.run_python_tool`). The scorer is the kind's own engine:
the sample's final answer becomes the kind's submission (its hook) and the kind scores it, so a value in
inspect's log is forkpaths's score of the same answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from inspect_ai import Task
from inspect_ai.agent import AgentPrompt, as_solver, react
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver
from inspect_ai.tool import Tool, ToolError, tool

from evaluation.agents import AgentSettings, AgentTask, agent_kind, prompts
from evaluation.agents.strategies import run_python_tool
from evaluation.errors import EvaluationError
from evaluation.inspect_bridge.answers import InspectError, answer_of, sample_values, score_answers
from evaluation.judges.base import Judge
from evaluation.tasks import KINDS, ScoringLimits, SubmissionCheckError
from exports.native.read import read_release
from exports.schema import Release

__all__ = ["SOLVERS", "kind_task"]

SOLVERS = ("generate", "react")
REACT_INSTRUCTIONS = ("Explore the data with the run_python tool before answering (each call is a fresh sandboxed "
                      "process: load what you need each time from `df` or the files in the working folder). When "
                      "you are done, call submit() with your final answer: one JSON object of the shape asked for.")


def _samples(tasks: Sequence[AgentTask], kind: str, shape: Callable[[AgentTask], str], workflow: bool
             ) -> list[Sample]:
    out = []
    for t in tasks:
        system, user = prompts.oneshot_messages(t, shape(t), workflow=workflow)
        files = {f.name: str(f.path) for f in t.files if f.path.is_file()}
        if not files and t.data_path is not None and t.data_path.is_file():
            files = {t.data_path.name: str(t.data_path)}
        out.append(Sample(id=t.key, input=[ChatMessageSystem(content=system["content"]),
                                           ChatMessageUser(content=user["content"])],
                          files=files or None,
                          metadata={"forkpaths_kind": kind, "task": t.key, "dataset": t.dataset, "title": t.title}))
    return out


def _python_tool(task: AgentTask, settings: AgentSettings) -> Tool:
    @tool(name="run_python")
    def run_python() -> Tool:
        async def execute(code: str) -> str:
            """Run Python code on the task's data in a fresh sandboxed process: the data table is the pandas
            DataFrame `df` (pandas as `pd`, numpy as `np`; statsmodels and scipy can be imported), and every data
            file of the task is in the working folder under its name. Nothing carries over between calls; what
            the code prints, and a last bare expression's value, come back (truncated).

            Args:
              code (str): Python code to run.
            """
            try:
                text, _ok = await asyncio.to_thread(run_python_tool, code, task.data_path, settings,
                                                    files=task.files)
            except EvaluationError as exc:  # the sandbox could not run it at all
                raise ToolError(f"The code could not be run: {exc}") from exc
            return text

        return execute

    return run_python()


def _react_solver(by_key: dict[str, AgentTask], max_steps: int, step_timeout_s: float) -> Solver:
    """inspect's ReAct agent with one tool, run_python, through forkpaths's sandbox (bound to the sample's task)."""
    settings = AgentSettings(strategy="react", max_steps=max_steps, step_timeout_s=step_timeout_s)

    @solver(name="forkpaths_react")
    def forkpaths_react(max_steps: int = max_steps, step_timeout_s: float = step_timeout_s) -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            task = by_key[str(state.sample_id)]
            agent = react(prompt=AgentPrompt(instructions=REACT_INSTRUCTIONS),
                          tools=[_python_tool(task, settings)], attempts=1)
            return await as_solver(agent)(state, generate)

        return solve

    return forkpaths_react()


def _scorer(kind: str, release: Release, folder: Path, tasks: dict[str, AgentTask], *, judge: Callable[[], Judge],
            mode: str, k: int, workflow: bool, limits: ScoringLimits, gt_cache: Path | None) -> Scorer:
    hook, task_kind = agent_kind(kind), KINDS[kind]

    @scorer(metrics={"*": [mean(), stderr()]}, name=f"forkpaths_{kind}")
    def forkpaths_score() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            t = tasks[str(state.sample_id)]
            text = state.output.completion if state.output else ""
            answer = answer_of(hook, t, text, state.epoch - 1, workflow=workflow)
            narrow = getattr(hook, "narrow", None)  # the release as it holds this task only
            try:
                done = await asyncio.to_thread(score_answers, kind, narrow(release, t.key) if narrow else release,
                                               folder, [answer], judge=judge,
                                               mode=mode, k=k, limits=limits, gt_cache=gt_cache)
            except SubmissionCheckError as exc:
                done, why = [], str(exc)
            else:
                why = answer.message
            if not done:  # nothing the kind can score (e.g. no usable answer): every column scores 0
                zero = {c.key: 0.0 for c in task_kind.leaderboard.columns if c.format in ("ci", "number")}
                return Score(value=zero, answer=text, explanation=why,
                             metadata={"status": answer.status})
            scores = done[0].scored.scores
            return Score(value=sample_values(task_kind, scores) or {"scored": 1.0}, answer=text,
                         explanation=f"{answer.message} {task_kind.summary_line(scores)}".strip(),
                         metadata={"status": answer.status, "forkpaths_scores": scores})

        return score

    return forkpaths_score()


def kind_task(kind: str, release_folder: Path, *, solver_name: Literal["generate", "react"] | str = "generate",
              judge: Callable[[], Judge], mode: str = "default", k: int = 10, workflow: bool = False,
              only: Sequence[str] | None = None, max_steps: int = 12, step_timeout_s: float = 30.0,
              limits: ScoringLimits | None = None, release_label: str = "", gt_cache: Path | None = None) -> Task:
    """The inspect task of ``kind`` on the release in ``release_folder``.

    ``gt_cache``: where the kind keeps the ground truth it builds from the release (the scoring runs' cache), so
    that each sample does not build it again.

    Raises:
        InspectError: the kind cannot be answered by an agent, the solver is unknown, or the release holds no task
            of the kind.
    """
    if kind not in KINDS:
        raise InspectError(f"Unknown task kind '{kind}'; the known kinds are {', '.join(KINDS)}.")
    if solver_name not in SOLVERS:
        raise InspectError(f"Unknown solver '{solver_name}'; choose {' or '.join(SOLVERS)}.")
    hook = agent_kind(kind)
    if solver_name == "react" and "react" not in hook.strategies:
        raise InspectError(f"Tasks of kind {kind} are answered in one shot only; use solver=generate.")
    release = read_release(release_folder)
    tasks = hook.tasks(release, release_folder, only=only)
    if not tasks:
        raise InspectError(f"Release {release.version} ({release_label or release_folder}) holds no task of kind "
                           f"{kind}.")
    by_key = {t.key: t for t in tasks}
    samples = _samples(tasks, kind, lambda t: hook.answer_shape(t, workflow=workflow), workflow)
    chosen: Any = _react_solver(by_key, max_steps, step_timeout_s) if solver_name == "react" else generate()
    return Task(dataset=MemoryDataset(samples, name=f"forkpaths-{kind}-{release.version}"), solver=chosen,
                scorer=_scorer(kind, release, release_folder, by_key, judge=judge, mode=mode, k=k, workflow=workflow,
                               limits=limits or ScoringLimits(), gt_cache=gt_cache),
                metadata={"forkpaths": {"kind": kind, "release": release.version, "solver": solver_name,
                                        "mode": mode, "k": k, "workflow": workflow}})
