"""``forkpaths agent run|resume|cancel|list|show``: agent runs from a terminal, the same jobs the page starts."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from curation.cli_actor import acting_operator
from curation.cli_progress import ProgressBar, frozen_heap_after_first_item
from curation.errors import ScoringError

if TYPE_CHECKING:
    from curation.settings import Settings

# The database, the tables and the agent engine are imported inside the commands (see curation/cli.py).

__all__ = ["add_agent_commands"]



def check_enqueue(args: argparse.Namespace, engine: Any) -> None:
    from curation.services.jobs import is_postgres

    if getattr(args, "enqueue", False) and not is_postgres(engine):
        raise ScoringError("--enqueue hands the run to `forkpaths worker` processes, which take jobs from PostgreSQL "
                           "(set FORKPATHS_DATABASE_URL); on SQLite run it without --enqueue, or start it from the "
                           "app's Agent runs page.")


def _follow(engine: Any, job_id: int, run_id: int, settings: Settings) -> int:
    """Run the job here, with a progress bar, and print how it ended."""
    from curation.db import session_scope
    from curation.models import RunStatus
    from curation.services import agent_runs as ar
    from curation.services.background_jobs import execute_job

    with frozen_heap_after_first_item(ProgressBar()) as progress:  # the agent run and its scoring
        execute_job(engine, job_id, settings, on_progress=progress)
    with session_scope(engine) as s:
        run = ar.get_agent_run(session=s, actor=acting_operator(session=s, username=None), run_id=run_id)
        cost = "no price set (FORKPATHS_AGENT_PRICES)" if run.cost is None else f"${run.cost:.4f}"
        print(f"Agent run {run.id} {run.status}: {run.message}")
        print(f"Tokens: {run.prompt_tokens} in, {run.completion_tokens} out; cost {cost}; {run.calls} requests "
              f"sent, {run.cache_hits} answers from the cache.")
        for sid in run.scoring_run_ids:
            if sid:
                print(f"Scoring run {sid}: forkpaths runs show {sid}")
    return 0 if run.status == RunStatus.SUCCEEDED.value else 1


def _typed_key(args: argparse.Namespace, settings: Settings, base_url: str) -> Settings:
    """``--api-key-env NAME``: the endpoint's key, read from that environment variable (not the command line, where
    other users of the machine could read it), for this process's run at ``base_url`` only."""
    name = getattr(args, "api_key_env", None)
    if not name:
        return settings
    if getattr(args, "enqueue", False):
        raise ScoringError("--api-key-env gives a key to this process only, and --enqueue hands the run to a worker "
                           "that cannot see it: run without --enqueue, or have an admin configure the endpoint's "
                           "key in FORKPATHS_AGENT_ENDPOINT_KEYS.")
    key = os.environ.get(name, "")
    if not key:
        raise ScoringError(f"--api-key-env {name}: the environment variable {name} is not set or is empty; set it "
                           "to the endpoint's key.")
    return settings.with_endpoint_key(base_url, key)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from pydantic import ValidationError

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services import agent_runs as ar
    from evaluation.agents import AgentSettings

    report = initialise(settings)
    check_enqueue(args, report.engine)
    base_url = args.base_url or settings.llm_base_url
    if not base_url:
        raise ScoringError("Say where the model under test answers: --base-url URL (an OpenAI-compatible endpoint) "
                           "or FORKPATHS_LLM_BASE_URL.")
    settings = _typed_key(args, settings, base_url)
    try:
        limits = AgentSettings(max_steps=args.max_steps, step_timeout_s=args.step_timeout)
    except ValidationError as exc:
        err = exc.errors()[0]
        flag = {"max_steps": "--max-steps", "step_timeout_s": "--step-timeout"}.get(str(err["loc"][0]), "")
        raise ScoringError(f"{flag}: {err['msg']}.") from None
    with session_scope(report.engine) as s:
        run = ar.start_agent_run(
            session=s, actor=acting_operator(session=s, username=args.as_user), release_version=args.release, model=args.model,
            base_url=base_url, strategy=args.strategy, runs_per_task=args.runs, kind=args.kind,
            workflow=args.workflow, temperature=args.temperature, seed=args.seed, only=args.dataset or [],
            agent=args.agent or "", settings=limits, prices=settings.agent_prices,
            artifacts=settings.artifact_store())
        run_id, job_id, total, run_kind = int(run.id or 0), int(run.job_id or 0), run.tasks_total, run.kind
    from evaluation.tasks import task_kind

    advice = task_kind(run_kind).min_runs_per_task  # (runs, why), declared by the kind
    if advice is not None and args.runs < advice[0]:
        print(f"note: {advice[1]} (--runs {advice[0]}); with {args.runs} it is not defined.", file=sys.stderr)
    if args.enqueue:
        from curation.services.jobs import enqueue_job

        enqueue_job(report.engine, job_id)
        print(f"Agent run {run_id} queued ({total} task runs): a worker runs it (forkpaths worker); follow it on "
              f"the Agent runs page or with 'forkpaths agent show {run_id}'.", file=sys.stderr)
        print(run_id)
        return 0
    print(f"Agent run {run_id}: {args.model} at {base_url}, {args.strategy}, {total} task runs on release "
          f"{args.release}.", file=sys.stderr)
    return _follow(report.engine, job_id, run_id, settings)


def _act(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services import agent_runs as ar

    report = initialise(settings)
    if args.agent_command == "resume":
        check_enqueue(args, report.engine)
        with session_scope(report.engine) as s:
            run = ar.resume_agent_run(session=s, actor=acting_operator(session=s, username=args.as_user), run_id=args.run)
            job_id = int(run.job_id or 0)
            settings = _typed_key(args, settings, run.base_url)
        if args.enqueue:
            from curation.services.jobs import enqueue_job

            enqueue_job(report.engine, job_id)
            print(args.run)
            return 0
        return _follow(report.engine, job_id, args.run, settings)
    with session_scope(report.engine) as s:
        actor = acting_operator(session=s, username=args.as_user)
        if args.agent_command == "cancel":
            run = ar.cancel_agent_run(session=s, actor=actor, run_id=args.run)
            print(f"Agent run {run.id}: cancel asked; it stops at the next step of the task under way (a running "
                  f"tool call is killed); finished tasks are kept ({run.status}).")
            return 0
        if args.agent_command == "list":
            for r in ar.list_agent_runs(session=s, actor=actor, release_version=args.release):
                cost = "-" if r.cost is None else f"${r.cost:.4f}"
                print(f"{r.id}\t{r.status}\t{r.tasks_done}/{r.tasks_total}\t{r.model}\t{r.strategy}\t"
                      f"{r.release_version}\t{cost}\t{r.message[:80]}")
            return 0
        run = ar.get_agent_run(session=s, actor=actor, run_id=args.run)
        rows = ar.task_runs(session=s, actor=actor, run_id=args.run)
        data = {**run.model_dump(mode="json"),
                "tasks": [{"task": t.task_key, "run": t.replicate, "status": t.status, "message": t.message,
                           "tokens": [t.prompt_tokens, t.completion_tokens], "cost": t.cost,
                           "tool_calls": t.tool_calls} for t in rows]}
        print(json.dumps(data, indent=1, ensure_ascii=False))
    return 0


def add_agent_commands(sub: Any) -> None:
    ag = sub.add_parser("agent", help="agent runs: a model answers a release's tasks; each run is scored")
    ag.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    asub = ag.add_subparsers(dest="agent_command", required=True)
    r = asub.add_parser("run", help="run a model on a release's tasks with a strategy, then score it")
    r.add_argument("--release", required=True, help="the release whose tasks the model answers")
    r.add_argument("--model", required=True, help="the model under test, as its endpoint names it")
    r.add_argument("--base-url", help="its OpenAI-compatible endpoint (default: FORKPATHS_LLM_BASE_URL). The "
                                      "server's key (FORKPATHS_AGENT_API_KEY or FORKPATHS_LLM_API_KEY) goes only to "
                                      "FORKPATHS_LLM_BASE_URL; another URL gets the key configured for it in "
                                      "FORKPATHS_AGENT_ENDPOINT_KEYS, or --api-key-env, or none")
    r.add_argument("--api-key-env", metavar="NAME", help="the environment variable holding this endpoint's key "
                                                          "(sent to --base-url only; not with --enqueue)")
    r.add_argument("--strategy", choices=["oneshot", "react"], default="oneshot",
                   help="oneshot: one answer from the task prompt (repaired once if invalid); react: a loop "
                        "whose one tool runs Python in the sandbox on the task's data (default oneshot)")
    r.add_argument("--workflow", action="store_true", help="also write a workflow per answer (a narrative a person could redo the code from); "
                                                        "forkpaths reproduce RUN then checks it on the scored run")
    r.add_argument("--runs", type=int, default=1, help="runs per task (BLADE's coverage@10 needs 11)")
    r.add_argument("--dataset", action="append", help="only this dataset (or task key); repeatable")
    r.add_argument("--kind", default=None,
                   help="the kind of task to answer, as registered in evaluation.tasks: analyses (BLADE, the "
                        "default: the first kind agents answer), hypotheses (DiscoveryBench), mcq, ...; the run "
                        "is scored by that kind, with its own judge (hypotheses: hms, at FORKPATHS_LLM_BASE_URL)")
    r.add_argument("--temperature", type=float, default=0.0, help="recorded with the run (default 0)")
    r.add_argument("--seed", type=int, default=0, help="run i is asked with seed + i")
    r.add_argument("--agent", help="its name on the leaderboard (default: '<strategy> agent #<run>', this run's own; "
                   "give two runs one name to show an MCQ accuracy beside the analyses of the same agent)")
    r.add_argument("--max-steps", type=int, default=12, help="ReAct: tool calls at most")
    r.add_argument("--step-timeout", type=float, default=30.0, help="ReAct: seconds one code run may take")
    r.add_argument("--enqueue", action="store_true", help="hand it to the workers (PostgreSQL), print its id")
    r.set_defaults(func=_run)
    for name, text in (("resume", "do the rest of an interrupted, cancelled or failed run (finished tasks kept)"),
                       ("cancel", "stop a run at the next step of the task under way"), ("show", "a run and its tasks, as JSON")):
        p = asub.add_parser(name, help=text)
        p.add_argument("run", type=int)
        if name == "resume":
            p.add_argument("--enqueue", action="store_true")
            p.add_argument("--api-key-env", metavar="NAME", help="the environment variable holding the run's "
                                                                  "endpoint key (as for agent run)")
        p.set_defaults(func=_act)
    ls = asub.add_parser("list", help="agent runs, newest first")
    ls.add_argument("--release")
    ls.set_defaults(func=_act)
