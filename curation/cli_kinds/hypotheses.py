"""The DiscoveryBench hypotheses kind's commands, ``forkpaths hypotheses ...``: curating its hypothesis tasks.

* ``hypotheses generate DATASET``: LLM hypotheses for the queries still to curate (stage 2 open), as the
  background job the Review page starts, run here in the foreground;
* ``hypotheses gold DATASET``: per query, the candidates with their status under the decision rule (or the
  meeting) and the gold decided, with its provenance (``--json`` for machines).
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from curation.cli_actor import acting_operator, dataset_named
from curation.cli_progress import ProgressBar

if TYPE_CHECKING:
    from curation.settings import Settings

# The database, the tables and the services are imported inside the commands (see curation/cli.py).

__all__ = ["add_commands"]


def _cmd_generate(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.cli_generation import generation_exit
    from curation.db import session_scope
    from curation.services.background_jobs import execute_job
    from curation.services.hypotheses.llm import HypothesisGenerationReport, start_hypothesis_generation
    from evaluation.llm import LLMClient

    LLMClient(settings.llm_config())  # raises LLMNotConfigured (how to set it up) before anything is recorded
    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user)
        job_id = start_hypothesis_generation(session=session, actor=actor,
                                             dataset_id=dataset_named(session=session, name=args.dataset).id or 0)
    job = execute_job(report.engine, job_id, settings, on_progress=ProgressBar())
    return generation_exit(job, HypothesisGenerationReport, lambda r: (
        f"{r.created} LLM hypotheses stored ({r.duplicates} flagged as duplicates); {r.already_stored} already "
        f"stored; {r.calls} LLM answers, {r.cached} from the cache."))


def _cmd_gold(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.hypotheses import gold_board

    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user)
        board = gold_board(session=session, actor=actor, dataset_id=dataset_named(session=session, name=args.dataset).id or 0)
        rows: list[dict[str, Any]] = [{"task": tg.task.key, "question": tg.task.question, "status": tg.task.status,
                 "gold": tg.task.gold_hypothesis if tg.decided else None,
                 "provenance": tg.task.gold_provenance if tg.decided else None,
                 "candidates": [{"target_kind": c.target_kind, "target_id": c.target_id, "status": c.status,
                                 "why": c.why, "hypothesis": tg.payloads.get(c.key, {}).get("hypothesis", c.label)}
                                for c in tg.candidates]} for tg in board.tasks]
    if args.json:
        print(json.dumps({"dataset": args.dataset, "stage": board.stage, "rule": board.rule, "queries": rows},
                         indent=2, default=str))
        return 0
    print(f"{args.dataset}: stage {board.stage}, rule {board.rule}, {len(rows)} queries with hypotheses")
    for row in rows:
        print(f"\n{row['task']}  {row['question']}")
        if row["gold"]:
            print(f"  GOLD: {row['gold']}  ({row['provenance'].get('basis')}, decided {row['provenance'].get('decided_at')})")
        for c in row["candidates"]:
            print(f"  [{c['status']:<13}] {c['hypothesis']}  ({c['target_kind']} {c['target_id'][:8]}: {c['why']})")
    return 0


def add_commands(sub: Any) -> None:
    hyp = sub.add_parser("hypotheses", help="curating DiscoveryBench hypothesis tasks (LLM hypotheses, gold)")
    hyp.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    hsub = hyp.add_subparsers(dest="hypotheses_command", required=True)
    gen = hsub.add_parser("generate", help="LLM hypotheses for the queries still to curate (stage 2 open; cached)")
    gen.add_argument("dataset")
    gen.set_defaults(func=_cmd_generate)
    gold = hsub.add_parser("gold", help="per query: candidates, their status under the rule, and the gold decided")
    gold.add_argument("dataset")
    gold.add_argument("--json", action="store_true", help="machine-readable output")
    gold.set_defaults(func=_cmd_gold)
