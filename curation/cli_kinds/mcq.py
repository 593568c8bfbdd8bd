"""The MCQ kind's commands: ``forkpaths mcq generate|audit`` (MCQs built from a dataset's ground-truth statuses,
and their audit against the votes) and ``score-mcq`` (an answers file, or a model asked every MCQ, scored against a
release)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from curation.cli_actor import acting_operator, dataset_named
from curation.cli_progress import ProgressBar, frozen_heap_after_first_item
from curation.cli_scoring import report_run, score_files
from curation.errors import ScoringError

if TYPE_CHECKING:
    from curation.settings import Settings

# The database, the tables and the services are imported inside the commands (see curation/cli.py).

__all__ = ["add_commands"]

KIND = "mcq"
"""The task kind whose commands these are (its runs, its agent runs)."""


def _cmd_mcq(args: argparse.Namespace, settings: Settings) -> int:
    import dataclasses
    import json

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.mcq_audit import audit_mcqs
    from curation.services.mcq_generate import MCQSettings, generate_mcqs

    report = initialise(settings)
    if args.mcq_command == "generate":
        with session_scope(report.engine) as session:
            actor = acting_operator(session=session, username=getattr(args, "as_user", None))
            result = generate_mcqs(session=session, actor=actor, dataset_id=dataset_named(session=session, name=args.dataset).id or 0,
                                   settings=MCQSettings(seed=args.seed))
        counts = ", ".join(f"{n} {k}" for k, n in result.counts().items())
        print(f"{args.dataset}: {len(result.mcqs)} MCQs from rule {result.rule}, seed {result.seed} ({counts}); "
              f"{result.created} stored, {result.kept} already reviewed kept, {result.removed} unreviewed replaced.")
        for note in result.notes:
            print(f"  not built: {note}")
        return 0
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=getattr(args, "as_user", None))
        audit = audit_mcqs(session=session, actor=actor, dataset_id=dataset_named(session=session, name=args.dataset).id or 0)
    if args.json:
        print(json.dumps(dataclasses.asdict(audit) | {"flagged": audit.flagged, "flag_counts": audit.flag_counts()},
                         indent=2))
        return 0
    kinds = ", ".join(f"{n} {k}" for k, n in audit.by_kind.items()) or "none"
    print(f"{audit.dataset}: {audit.total} MCQs ({kinds}); rule {audit.rule}")
    print(f"  {audit.checked} checked, {audit.unlinked_keys} with a key that matches no item "
          f"({audit.unlinked_options} of {audit.options} options unlinked); {audit.flagged} flagged")
    for flag, n in audit.flag_counts().items():
        print(f"  {flag}: {n}")
    for f in audit.findings:
        where = f" '{f.concept.strip()}'" if f.concept else ""
        print(f"  {f.mcq_id[:40]:<40} {f.kind} {f.mc_type}{where}: {f.message}")
    return 0



def _ask_model(args: argparse.Namespace, settings: Settings, engine: Any) -> int:
    """Ask the model under test every MCQ of the release, as an agent run (kind mcq, one-shot in BLADE's strict
    protocol, temperature 0, every call cached; tokens, cost and transcripts kept, on the Agent runs page too),
    then print and write its scored run like any other.

    The answers file the run writes keeps the raw answers and where they came from; it is scored like any answers
    file, so an unparseable answer counts as unparseable, never guessed.
    """
    from curation.db import session_scope
    from curation.services import agent_runs as ar
    from curation.services.background_jobs import execute_job
    from curation.services.scoring import get_run, mcq_release
    from evaluation.submissions import printable

    base_url = args.base_url or settings.llm_base_url
    if not base_url:
        raise ScoringError("Say where the model under test answers: --base-url URL (an OpenAI-compatible "
                           "endpoint) or FORKPATHS_LLM_BASE_URL.")
    if args.model and args.model != args.ask_model:
        raise ScoringError(f"--model {printable(args.model)} names the model of an answers file; with --ask-model "
                           "the model asked is the run's model. Drop --model (or use --agent to name the run).")
    with session_scope(engine) as s:
        actor = acting_operator(session=s, username=args.as_user)
        release = mcq_release(session=s, actor=actor, release_version=args.release,
                              artifacts=settings.artifact_store())
        run = ar.start_agent_run(session=s, actor=actor, release_version=release.version, model=args.ask_model,
                                 base_url=base_url, strategy="oneshot", kind=KIND, runs_per_task=1,
                                 temperature=0.0, seed=0, agent=args.agent or args.ask_model,
                                 prices=settings.agent_prices, artifacts=settings.artifact_store())
        run_id, job_id, total = int(run.id or 0), int(run.job_id or 0), run.tasks_total
    print(f"Asking {args.ask_model} at {base_url} the {total} MCQs of release {release.version} "
          f"(temperature 0; answers are cached) as agent run {run_id}.", file=sys.stderr)
    with frozen_heap_after_first_item(ProgressBar()) as progress:
        execute_job(engine, job_id, settings, on_progress=progress)
    with session_scope(engine) as s:
        actor = acting_operator(session=s, username=args.as_user)
        done = ar.get_agent_run(session=s, actor=actor, run_id=run_id)
        rows = ar.task_runs(session=s, actor=actor, run_id=run_id)
        scored = next((i for i in done.scoring_run_ids if i), None)
        scoring = get_run(session=s, actor=actor, run_id=scored) if scored else None
        s.expunge_all()
    failed = [r for r in rows if r.status not in ("answered", "invalid_answer")]
    if failed:
        print(f"warning: {len(failed)} question(s) got no answer (they count as unanswered); first: "
              f"{failed[0].task_key}: {failed[0].message}", file=sys.stderr)
    cost = "no price set (FORKPATHS_AGENT_PRICES)" if done.cost is None else f"${done.cost:.4f}"
    print(f"Agent run {run_id}: {done.prompt_tokens} tokens in, {done.completion_tokens} out; cost {cost}; "
          f"{done.calls} requests sent, {done.cache_hits} answers from the cache.", file=sys.stderr)
    if scoring is None:
        print(f"error: agent run {run_id} {done.status}: {done.message}", file=sys.stderr)
        return 1
    return report_run(scoring, settings, args.out)


def _score_mcq(args: argparse.Namespace, settings: Settings) -> int:
    return score_files(args, settings, KIND, ask=_ask_model if args.ask_model else None)


def add_commands(sub: Any) -> None:
    mcq = sub.add_parser("mcq", help="MCQs built from the ground-truth statuses, and their audit")
    mcqsub = mcq.add_subparsers(dest="mcq_command", required=True)
    mg = mcqsub.add_parser("generate", help="generate MCQs (deterministic for a seed; reviewed ones are kept)")
    mg.add_argument("dataset")
    mg.add_argument("--seed", type=int, default=0)
    ma = mcqsub.add_parser("audit", help="flag MCQs whose key disagrees with the votes (generated or imported)")
    ma.add_argument("dataset")
    ma.add_argument("--json", action="store_true")
    mcq.set_defaults(func=_cmd_mcq)
    score = sub.add_parser("score-mcq", help="score an MCQ answers file (question id → letter), or a model asked "
                                           "every MCQ, against a release")
    score.add_argument("--release", required=True)
    given = score.add_mutually_exclusive_group(required=True)
    given.add_argument("--answers", help="a JSON object {question id: letter} (or {'answers': {...}})")
    given.add_argument("--ask-model", metavar="MODEL", help="ask this model under test every MCQ, at temperature 0")
    score.add_argument("--base-url", help="its OpenAI-compatible endpoint (default: FORKPATHS_LLM_BASE_URL, which "
                                        "alone gets FORKPATHS_AGENT_API_KEY or FORKPATHS_LLM_API_KEY; another URL "
                                        "gets its key from FORKPATHS_AGENT_ENDPOINT_KEYS, or none); asked as an "
                                        "agent run (forkpaths agent show N)")
    score.add_argument("--agent")
    score.add_argument("--model")
    score.add_argument("--out", required=True)
    score.add_argument("--as", dest="as_user")
    score.set_defaults(func=_score_mcq)
