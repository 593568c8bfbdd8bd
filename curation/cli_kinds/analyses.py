"""The BLADE analyses kind's commands: ``forkpaths check`` (the annotate page's sanity check of a transform's or
a model's code, in the sandbox) and ``alternatives generate`` (LLM alternatives to the analysts' variables and
transforms for stage 2)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.cli_actor import acting_operator, dataset_named
from curation.errors import CurationError

if TYPE_CHECKING:
    from curation.settings import Settings

# The database, the services, the sandbox and the LLM client are imported inside the commands (see curation/cli.py).

__all__ = ["add_commands"]


def _cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.checks import (
        CheckedModel,
        CheckedTransform,
        check_model_code,
        check_transform_code,
    )
    from evaluation.sandbox import SandboxLimits
    from evaluation.specs import ROOT_SPEC_ID

    report = initialise(settings)
    path = Path(args.code_file)
    try:
        code = sys.stdin.read() if args.code_file == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CurationError(f"Could not read the code file {path}: {exc}") from exc
    limits = SandboxLimits(timeout_s=settings.sandbox_timeout_s, memory_mb=settings.sandbox_memory_mb)
    with session_scope(report.engine) as session:
        dataset = dataset_named(session=session, name=args.dataset)
        actor = acting_operator(session=session, username=args.as_user)
        after = args.after or []
        check: CheckedModel | CheckedTransform
        if args.model:
            check = check_model_code(session=session, actor=actor, dataset_id=dataset.id or 0, code=code,
                                     transform_ids=after, store=settings.datasets_store, limits=limits)
        else:
            check = check_transform_code(session=session, actor=actor, dataset_id=dataset.id or 0, code=code,
                                         dependencies=after or [ROOT_SPEC_ID], store=settings.datasets_store,
                                         limits=limits)
    if args.json:
        print(json.dumps(check.model_dump(mode="json"), indent=2))
    else:
        print(_describe_check(check))
    return 0 if check.ok else 1


def _describe_check(check) -> str:  # type: ignore[no-untyped-def]
    """The check as the page shows it, in plain text."""
    lines: list[str] = []
    if not check.ok:
        lines.append(f"FAILED: {check.error}")
        if check.traceback:
            lines += ["", check.traceback.rstrip()]
    elif hasattr(check, "summary"):
        lines += [f"OK: the model was fitted in {check.code_seconds:.2f} s.", "", (check.summary or "").rstrip()]
    else:
        change = check.change
        rows = f" Rows: {change.rows_before:,} → {change.rows_after:,}." if change else ""
        lines.append(f"OK: the code ran in {check.code_seconds:.2f} s.{rows}")
        if change:
            for label, cols in (("created", change.created), ("changed", change.changed), ("removed", change.removed)):
                if cols:
                    lines.append(f"  {label}: {', '.join(cols)}")
        if check.suggested_verb:
            mapping = "; ".join(f"{', '.join(m.inputs) or '∅'} → {m.output or '(whole frame)'}"
                                for m in check.suggested_mapping)
            lines.append(f"  suggested verb: {check.suggested_verb}" + (f"; mapping: {mapping}" if mapping else ""))
        if check.result_rows is not None:
            lines.append(f"  df: {check.result_rows:,} rows × {len(check.result_columns)} columns")
    if check.stdout:
        lines += ["", "printed:", check.stdout.rstrip()]
    return "\n".join(lines)


def _cmd_alternatives(args: argparse.Namespace, settings: Settings) -> int:
    """Generation as a background job (recorded, one per dataset, seen on the Review page): run here in the
    foreground, or with ``--enqueue`` handed to the workers (PostgreSQL) and followed from the page."""
    from curation.bootstrap import initialise
    from curation.cli_generation import generation_exit
    from curation.cli_progress import ProgressBar
    from curation.db import session_scope
    from curation.services.analyses.llm_alternatives import GenerationReport, start_generation
    from curation.services.background_jobs import execute_job
    from curation.services.jobs import enqueue_job, is_postgres
    from evaluation.llm import LLMClient

    LLMClient(settings.llm_config())  # raises LLMNotConfigured (how to set it up) before anything is recorded
    report = initialise(settings)
    if args.enqueue and not is_postgres(report.engine):
        raise CurationError("--enqueue hands the generation to `forkpaths worker` processes, which take jobs from "
                            "PostgreSQL (set FORKPATHS_DATABASE_URL); on SQLite run it without --enqueue.")
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user)
        job_id = start_generation(session=session, actor=actor,
                                  dataset_id=dataset_named(session=session, name=args.dataset).id or 0)
    if args.enqueue:
        enqueue_job(report.engine, job_id)
        print(f"Generation job {job_id} queued; a worker runs it (the Review page shows its progress).")
        return 0
    job = execute_job(report.engine, job_id, settings, on_progress=ProgressBar())
    return generation_exit(job, GenerationReport, _alternatives_stored)


def _alternatives_stored(result: Any) -> str:
    cancelled = (f"Cancelled after {result.seeds_done} of {result.seeds_total} seeds (from the page).\n"
                 if result.cancelled else "")
    return (f"{cancelled}{result.created} alternatives stored ({result.duplicates} flagged as duplicates, "
            f"{result.failed_checks} transforms whose code failed, shown with their error); {result.already_stored} "
            f"already stored; {result.calls} LLM answers, {result.cached} from the cache.")



def add_commands(sub: Any) -> None:
    ck = sub.add_parser("check", help="run the annotate page's sanity check on a code file and print its result")
    ck.add_argument("dataset", help="the dataset's name")
    ck.add_argument("--code-file", required=True, help="the transform's (or with --model the model's) code; - for stdin")
    ck.add_argument("--after", nargs="+", metavar="SPEC_ID",
                    help="the transforms (ids or names, of the acting user's analysis) that run first")
    ck.add_argument("--model", action="store_true", help="fit it as model code instead of running a transform")
    ck.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    ck.add_argument("--json", action="store_true", help="print the whole check as JSON")
    ck.set_defaults(func=_cmd_check)
    alt = sub.add_parser("alternatives", help="LLM-generated alternatives for stage 2")
    alt.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    altsub = alt.add_subparsers(dest="alternatives_command", required=True)
    gen = altsub.add_parser("generate", help="generate alternatives seeded by the analysts' decisions (cached)")
    gen.add_argument("dataset")
    gen.add_argument("--enqueue", action="store_true",
                     help="PostgreSQL: hand it to the workers, print the job id and return")
    alt.set_defaults(func=_cmd_alternatives)
