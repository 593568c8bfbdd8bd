"""``forkpaths agreement``: the inter-rater agreement of the stage-2 votes, over every kind of decision item."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from curation.cli_actor import acting_operator, dataset_named

if TYPE_CHECKING:
    from curation.settings import Settings

# The database and the services are imported inside the commands (see curation/cli.py).

__all__ = ["add_curation_commands"]


def _cmd_agreement(args: argparse.Namespace, settings: Settings) -> int:
    import dataclasses
    import json

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.agreement import agreement_report

    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user)
        dataset_id = dataset_named(session=session, name=args.dataset).id if args.dataset else None
        result = agreement_report(session=session, actor=actor, dataset_id=dataset_id)
    if args.json:
        print(json.dumps(dataclasses.asdict(result), indent=2))
        return 0

    def fmt(x: float | None) -> str:
        return "   n/a" if x is None else f"{x:6.3f}"

    print(f"Agreement on {', '.join(result.datasets) or 'no dataset in stage 2'} ({result.voters} voters)")
    print(f"{'scope':<9} {'group':<24} {'used':>5} {'dropped':>7} {'% agree':>7} {'kappa':>6} {'alpha':>6}")
    for r in result.rows:
        print(f"{r.scope:<9} {r.group:<24} {r.items_used:>5} {r.items_dropped:>7} {fmt(r.percent_agreement):>7} "
              f"{fmt(r.fleiss_kappa)} {fmt(r.krippendorff_alpha)}")
    if result.split:
        print("\nSplit items (justifiable / unjustifiable):")
        for s in result.split:
            print(f"  {s.dataset} {s.target_kind} {s.target_id[:8]}  {s.justifiable} / {s.unjustifiable}")
    return 0



def add_curation_commands(sub: Any) -> None:
    ag = sub.add_parser("agreement", help="inter-rater agreement of stage-2 votes (one dataset, or all)")
    ag.add_argument("dataset", nargs="?", help="dataset name (default: every dataset past stage 1)")
    ag.add_argument("--json", action="store_true", help="machine-readable output")
    ag.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    ag.set_defaults(func=_cmd_agreement)
