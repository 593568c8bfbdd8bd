"""The programmatic kind's commands, ``forkpaths checks``: programmatic tasks from a terminal.

* ``checks run TASK --outputs DIR [--release V] [--json]`` scores one output folder headless and prints each
  check's outcome and which release's checks ran (release V's, read from its files; default the newest release
  holding TASK; or ``--datascibench ROOT`` to read it from a DataSciBench tree with no database at all);
* ``checks generate TASK [--samples N]`` — the LLM generation (the page's background job, run here);
* ``checks list`` — the tasks with their candidates and what is released;
* ``checks import-datascibench ROOT [--dataset [TASK=]NAME ...]`` — store a DataSciBench tree's tasks (curators),
  each with a dataset of its own input files unless a named dataset holds them byte for byte;
* ``checks export-datascibench OUT`` — write the released tasks in DataSciBench's layout, with their input files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curation.settings import Settings

__all__ = ["add_commands", "format_outcome"]


def format_outcome(outcome: Any) -> str:
    """The lines ``checks run`` prints: one per check (score, status, label, sentence), then the task's CR."""
    lines = [f"task {outcome.task}: {len(outcome.checks)} checks on {len(outcome.files)} output files"]
    for c in outcome.checks:
        lines.append(f"  {c.score}  {c.status:<12} {c.check_id[:10]:<10} [{c.task_type}] {c.function} / {c.metric}")
        lines.append(f"       {c.sentence}")
    cr = outcome.completion_rate
    lines.append(f"completion rate {'—' if cr is None else f'{cr:.3f}'}  "
                 f"({'passed: every check returned True' if outcome.passed else 'not passed'})")
    return "\n".join(lines)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from curation.errors import CurationError
    from curation.services.sandbox_setting import configure_sandbox
    from evaluation.programmatic.outputs import OutputsError, read_output_folder
    from evaluation.programmatic.runner import CheckLimits, run_checks

    try:
        files = read_output_folder(Path(args.outputs))
    except OutputsError as exc:
        raise CurationError(str(exc)) from exc
    inputs: dict[str, bytes] = {}
    if args.datascibench:
        from exports.datascibench import DataSciBenchError, read_task

        try:
            read = read_task(Path(args.datascibench), args.task, max_input_bytes=settings.max_upload_bytes)
        except DataSciBenchError as exc:
            raise CurationError(str(exc)) from exc
        task, inputs = read.task, read.inputs
        configure_sandbox(mode=settings.sandbox, data_dir=settings.resolved_data_dir)
        source = f"DataSciBench tree {args.datascibench}"
        version = None
    else:
        from sqlmodel import Session

        from curation.bootstrap import initialise
        from curation.cli_actor import acting_operator
        from curation.services.programmatic import released_task

        report = initialise(settings)
        with Session(report.engine) as session:  # read only: closed without a commit, nothing is written
            task, version = released_task(session=session, actor=acting_operator(session=session, username=getattr(args, "as_user", None)),
                                          key=args.task, releases_root=settings.releases_store,
                                          version=args.release, inputs=inputs)
        source = f"release {version}" + ("" if args.release else " (the newest release holding the task)")
    if not task.checks:
        raise CurationError(f"Task {task.key} has no released check in {source}.")
    outcome = run_checks(task, files, inputs=inputs, mode=args.mode, limits=CheckLimits(check_timeout_s=args.timeout))
    if args.json:
        print(json.dumps({"release": version, "source": source, "mode": args.mode,
                          **outcome.model_dump(mode="json")}, indent=1))
    else:
        print(f"checks of {source}" + (" (DataSciBench's scoring rule)" if args.mode == "datascibench" else ""))
        print(format_outcome(outcome))
    return 0


def _generate(args: argparse.Namespace, settings: Settings) -> int:
    """The LLM generation as the page runs it (the same background job), run here with a progress bar."""
    import sys

    from curation.bootstrap import initialise
    from curation.cli_actor import acting_operator
    from curation.cli_progress import ProgressBar
    from curation.db import session_scope
    from curation.errors import NotFoundError
    from curation.services.background_jobs import execute_job
    from curation.services.curated import item_by_key
    from curation.services.programmatic import KIND
    from curation.services.programmatic_generation import generation_report, start_candidate_generation
    from evaluation.llm import LLMClient

    LLMClient(settings.llm_config())  # raises LLMNotConfigured (how to set it up) before anything is recorded
    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=getattr(args, "as_user", None))
        task = item_by_key(session=session, kind=KIND, key=args.task)
        if task is None:
            raise NotFoundError(f"There is no programmatic task {args.task!r}.")
        job_id = start_candidate_generation(session=session, actor=actor, task_id=task.id or 0,
                                            samples=args.samples, store=settings.datasets_store)
    job = execute_job(report.engine, job_id, settings, on_progress=ProgressBar())
    if not job.result or job.status == "failed":
        print(f"The generation {job.status}: {job.message}", file=sys.stderr)
        return 1
    print(generation_report(job.result)[1].replace("  \n", "\n"))
    for err in job.result.get("errors") or []:
        print(f"  a sample failed: {err}")
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.cli_actor import acting_operator
    from curation.db import session_scope
    from curation.services.programmatic import list_programmatic_tasks

    report = initialise(settings)
    with session_scope(report.engine) as session:
        views = list_programmatic_tasks(session=session, actor=acting_operator(session=session, username=getattr(args, "as_user", None)))
        rows: list[dict[str, Any]] = [{"task": v.task.key, "dataset": v.dataset,
                 "checks": [{"id": c.item.id, "status": c.status, "released": c.released,
                             "function": c.item.payload.get("function")} for c in v.checks],
                 "artifacts": [{"id": a.item.id, "path": a.item.payload.get("path"), "status": a.status}
                               for a in v.artifacts]} for v in views]
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            released = sum(c["released"] for c in r["checks"])
            print(f"{r['task']:<34} {r['dataset']:<18} checks {released} released of {len(r['checks'])}  "
                  f"artifacts {sum(a['status'] == 'justifiable' for a in r['artifacts'])} accepted of "
                  f"{len(r['artifacts'])}")
    return 0


def _dataset_choice(values: list[str] | None) -> dict[str, str]:
    """``--dataset NAME`` (every task) or ``--dataset TASK=NAME`` (one task), repeatable."""
    from curation.errors import CurationError

    out: dict[str, str] = {}
    for value in values or []:
        task, sep, name = value.partition("=")
        key, name = (task.strip(), name.strip()) if sep else ("*", task.strip())
        if not name or not key:
            raise CurationError(f"--dataset {value!r}: give NAME or TASK=NAME.")
        if key in out:
            raise CurationError(f"--dataset names a dataset for {'every task' if key == '*' else key} twice.")
        out[key] = name
    return out


def _import(args: argparse.Namespace, settings: Settings) -> int:
    from sqlmodel import select

    from curation.bootstrap import initialise
    from curation.cli_actor import acting_operator
    from curation.db import session_scope
    from curation.errors import CurationError
    from curation.models import Dataset
    from curation.services.programmatic import import_datascibench_tasks
    from exports.datascibench import DataSciBenchError, read_tree

    chosen = _dataset_choice(args.dataset)
    try:
        read = read_tree(Path(args.root), max_input_bytes=settings.max_upload_bytes)
    except DataSciBenchError as exc:
        raise CurationError(str(exc)) from exc
    unknown = sorted(set(chosen) - {"*"} - {r.task.key for r in read})
    if unknown:
        raise CurationError(f"--dataset names task{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}, which the "
                            f"tree does not have (it has: {', '.join(r.task.key for r in read)}).")
    report = initialise(settings)
    with session_scope(report.engine) as session:  # one action: every task, or none
        actor = acting_operator(session=session, username=getattr(args, "as_user", None))
        stored = import_datascibench_tasks(session=session, actor=actor, tasks=read, store=settings.datasets_store,
                                           datasets=chosen, accept=not args.no_accept, run_gate=not args.no_accept)
        names = {d.id: d.name for d in session.exec(select(Dataset)).all()}
        lines = [f"  {t.key}: dataset {names.get(t.dataset_id, '?')} ({len(t.input_files)} input file"
                 f"{'s' if len(t.input_files) != 1 else ''})" for t in stored]
    print(f"imported {len(stored)} programmatic task{'s' if len(stored) != 1 else ''}:")
    print("\n".join(lines))
    return 0


def _export(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.cli_actor import acting_operator
    from curation.db import session_scope
    from curation.services.curated import items_of
    from curation.services.programmatic import KIND, task_for_scoring, task_inputs
    from exports.datascibench import write_task

    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=getattr(args, "as_user", None))
        rows = items_of(session=session, kind=KIND)
        tasks = []
        for row in rows:
            task = task_for_scoring(session=session, actor=actor, key=row.key)
            # the inputs go back into the task's folder unless the task reads a dataset it names (starters)
            named = (task.extra.get("prompt_json") or {}).get("dataset")
            tasks.append((task, {} if named else task_inputs(session=session, task=row,
                                                             store=settings.datasets_store)))
    out = Path(args.out)
    for t, inputs in tasks:
        write_task(out, t, inputs)
    print(f"wrote {len(tasks)} task{'s' if len(tasks) != 1 else ''} in DataSciBench's layout to {out}")
    return 0


def add_commands(sub: Any) -> None:
    ck = sub.add_parser("checks", help="programmatic tasks: run checks on an output folder, list, import, export")
    csub = ck.add_subparsers(dest="checks_command", required=True)
    run = csub.add_parser("run", help="score one output folder against a task's checks (in the sandbox)")
    run.add_argument("task", help="the task's key")
    run.add_argument("--outputs", required=True, help="the agent's output folder for this task")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--release", metavar="V",
                       help="the checks of release V, read from its files (default: the newest release holding the "
                            "task)")
    where.add_argument("--datascibench", metavar="ROOT",
                       help="read the task from a DataSciBench tree instead of a release (no database at all)")
    run.add_argument("--timeout", type=float, default=30.0, help="seconds each check may run (default 30)")
    run.add_argument("--mode", choices=["default", "datascibench"], default="default",
                     help="datascibench: upstream's scoring rule (keyed by metric, first function, a float from 3 "
                          "passes, bool() of anything else); default: a check must return a boolean")
    run.add_argument("--json", action="store_true", help="print the outcome as JSON")
    run.set_defaults(func=_run)
    gen = csub.add_parser("generate", help="LLM candidates for a task: N solutions run in the sandbox, the agreed "
                                           "outputs and proposed checks stored for review (curators)")
    gen.add_argument("task", help="the task's key")
    gen.add_argument("--samples", type=int, default=3, help="how many solutions to ask for (2 to 20, default 3)")
    gen.set_defaults(func=_generate)
    ls = csub.add_parser("list", help="the programmatic tasks, their checks and artifacts")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(func=_list)
    im = csub.add_parser("import-datascibench", help="store a DataSciBench tree's tasks (data/<task>/ and "
                                                     "metric/<task>/metric.yaml), each with its own input files")
    im.add_argument("root")
    im.add_argument("--dataset", action="append", metavar="[TASK=]NAME",
                    help="use registered dataset NAME for every task (or for TASK) instead of a dataset of the "
                         "task's own: each input must be byte-identical to one of its files (repeatable)")
    im.add_argument("--no-accept", action="store_true",
                    help="store the checks and artifacts as candidates for review instead of accepted ground truth")
    im.set_defaults(func=_import)
    ex = csub.add_parser("export-datascibench", help="write the released programmatic tasks in DataSciBench's layout")
    ex.add_argument("out")
    ex.set_defaults(func=_export)
