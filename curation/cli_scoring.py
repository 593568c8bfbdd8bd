"""``forkpaths score``, ``score-schema``, ``runs``, ``reproduce``, ``import-airepr``, ``worker`` and ``artifacts``:
scoring from a terminal, registered like runs from the browser (a kind's own scoring commands are in
:mod:`curation.cli_kinds`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.cli_actor import acting_operator
from curation.cli_progress import ProgressBar, frozen_heap_after_first_item
from curation.errors import ScoringError

if TYPE_CHECKING:
    from curation.models import ScoringRun
    from curation.settings import Settings

# The database, the tables and the scoring engine are imported inside the commands (see curation/cli.py).

__all__ = ["add_scoring_commands", "check_enqueue", "judge_settings", "queue_for_workers", "report_run",
           "score_files", "score_in_foreground", "scoring_limits"]


def judge_settings(settings: Settings) -> Any:
    from curation.services.scoring import JudgeSettings

    return JudgeSettings.from_settings(settings)


def scoring_limits(settings: Settings) -> Any:
    from curation.services.scoring import ScoringLimits

    return ScoringLimits.from_settings(settings)


def score_files(args: argparse.Namespace, settings: Settings, kind: str | None,
                ask: Callable[[argparse.Namespace, Settings, Any], int] | None = None) -> int:
    """Score the files a command names (``--submission`` or ``--answers``) as a run of ``kind`` (None: the first
    ranked kind of the registry), in the foreground; or, with ``ask``, the command's own way of making the answers
    (a kind's command that asks a model, e.g. ``score-mcq --ask-model``), once the database is ready."""
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.scoring import default_judge, kind_of, register_run
    from evaluation.submissions import printable
    from evaluation.tasks import ranked_kinds
    from evaluation.tasks.base import count_of

    check_enqueue(args, settings)
    if getattr(args, "out", None) and Path(args.out).is_dir():  # said before anything runs: nowhere to go
        raise ScoringError(f"--out {printable(args.out)} is a directory; name the file to write the result to.")
    # --enqueue: a worker runs the code, so this process does not probe how strongly the sandbox isolates here
    report = initialise(settings, runs_code=ask is not None or not getattr(args, "enqueue", False))
    if ask is not None:
        return ask(args, settings, report.engine)
    kind = kind or ranked_kinds()[0].name
    files = []
    paths = [Path(p) for p in (getattr(args, "submission", None) or [args.answers])]
    for p in paths:
        try:  # the size limit is checked before reading: /dev/zero or a pipe would be read without end
            if p.exists() and not p.is_file():
                raise ScoringError(f"{printable(str(p))} is not a regular file; give a submission file.")
            if p.exists() and (size := p.stat().st_size) > settings.max_submission_bytes:
                raise ScoringError(f"{printable(str(p))} is {size / 2**20:.1f} MB; the limit is "
                                   f"{settings.max_submission_bytes / 2**20:.1f} MB (FORKPATHS_MAX_SUBMISSION_MB). "
                                   "Nothing was stored.")
            files.append((p.name, p.read_bytes()))
        except OSError as exc:
            raise ScoringError(f"Cannot read {printable(str(p))}: {exc.strerror or exc}.") from exc
    with session_scope(report.engine) as s:
        run = register_run(session=s, actor=acting_operator(session=s, username=args.as_user), release_version=args.release, files=files,
                           agent=args.agent or paths[0].stem, model_name=args.model or "",
                           judge=getattr(args, "judge", None) or default_judge(kind),
                           mode=getattr(args, "mode", "default"),
                           k=getattr(args, "k", 10), kind=kind, artifacts=settings.artifact_store(),
                           max_bytes=settings.max_submission_bytes,
                           judges=judge_settings(settings), source="cli", limits=scoring_limits(settings),
                           llm_model=getattr(args, "llm_model", None) or "")
    print(f"Run {run.id} registered: {run.agent} on release {run.release_version} "
          f"({count_of(run.progress_total, kind_of(kind).item_noun)}).", file=sys.stderr)
    if getattr(args, "enqueue", False):
        queue_for_workers(report.engine, run.id or 0)
        print(run.id)
        return 0
    return score_in_foreground(report.engine, run.id or 0, settings, args.out)


def queue_for_workers(engine: Any, run_id: int) -> None:
    from curation.services.jobs import enqueue_run

    enqueue_run(engine, run_id)
    print(f"Run {run_id} queued: a worker scores it (forkpaths worker); follow it with "
          f"'forkpaths runs wait {run_id}'.", file=sys.stderr)


def check_enqueue(args: argparse.Namespace, settings: Settings) -> None:
    """--enqueue needs workers, which need PostgreSQL: refused before anything is registered."""
    if getattr(args, "enqueue", False) and not settings.resolved_database_url.startswith("postgresql"):
        raise ScoringError("--enqueue needs the database to be PostgreSQL (FORKPATHS_DATABASE_URL), where "
                           "'forkpaths worker' takes queued runs; on SQLite, score in the foreground (without "
                           "--enqueue) or from the app's Runs page.")


def _wait(args: argparse.Namespace, settings: Settings) -> int:
    """``forkpaths runs wait RUN``: follow a run (scored anywhere) to its end, with the progress bar."""
    import time

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.models import RunStatus
    from curation.services.run_lifecycle import interrupt_dead_runs
    from curation.services.scoring import get_run

    report = initialise(settings)
    bar = ProgressBar()
    seen: tuple[int, int, str] | None = None
    while True:
        with session_scope(report.engine) as s:
            interrupt_dead_runs(session=s)
            run = get_run(session=s, actor=acting_operator(session=s, username=args.as_user), run_id=args.run)
        now = (run.progress_done, run.progress_total, run.stage or run.status)
        if run.status == RunStatus.RUNNING.value and now != seen:
            bar(*now)
            seen = now
        if run.status in (RunStatus.SUCCEEDED.value, RunStatus.FAILED.value, RunStatus.CANCELLED.value,
                          RunStatus.INTERRUPTED.value):
            break
        time.sleep(args.poll)
    if run.status != RunStatus.SUCCEEDED.value:
        print(f"error: run {run.id} {run.status}: {run.message}", file=sys.stderr)
        return 1
    print(_summary_line(run))
    if args.out:
        _write_result(run, settings, args.out)
    return 0


def _worker(args: argparse.Namespace, settings: Settings) -> int:
    """``forkpaths worker``: score queued runs until stopped (PostgreSQL)."""
    from curation.bootstrap import initialise
    from curation.services.jobs import run_queue_worker, warm_up
    from curation.services.run_lifecycle import this_executor

    if not settings.resolved_database_url.startswith("postgresql"):
        raise ScoringError("A worker takes jobs from PostgreSQL (set FORKPATHS_DATABASE_URL); on the SQLite "
                           "default the app scores runs in its own process and needs no worker.")
    if not 1 <= args.concurrency <= 64:
        raise ScoringError(f"--concurrency must be between 1 and 64 (got {args.concurrency}).")
    # every connection of this worker (its jobs' and procrastinate's) names it in pg_stat_activity
    os.environ.setdefault("PGAPPNAME", f"forkpaths-worker/{os.getpid()}")
    report = initialise(settings)
    from evaluation.sandbox import prewarm

    prewarm(wait=False)  # the sandbox's template process imports pandas while the worker connects, not in its first run
    warm_up()  # and this process what its jobs import, meanwhile
    print(f"Worker {this_executor()} "
          f"takes scoring runs and background jobs from {settings.resolved_database_url.split('@')[-1]} (concurrency "
          f"{args.concurrency}); Ctrl-C stops it after the runs it holds.", file=sys.stderr, flush=True)
    run_queue_worker(report.engine, artifacts=settings.artifact_store(),
                     judges=judge_settings(settings), limits=scoring_limits(settings),
                     concurrency=args.concurrency, settings=settings)
    return 0


def _cmd_artifacts(args: argparse.Namespace, settings: Settings) -> int:
    """``forkpaths artifacts check``: every object intact, every recorded artifact present."""
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.artifact_check import check_artifacts

    report = initialise(settings)
    artifacts = settings.artifact_store()
    with session_scope(report.engine) as s:
        found = check_artifacts(session=s, actor=acting_operator(session=s, username=args.as_user), artifacts=artifacts)
    for problem in found.problems:
        print(f"- {problem}")
    print(f"Artifact store {artifacts.root}: {found.objects} objects checked, {found.referenced} recorded "
          f"artifacts looked up, {len(found.problems)} problem(s).")
    return 1 if found.problems else 0


def score_in_foreground(engine: Any, run_id: int, settings: Settings, out_path: str | None) -> int:
    """Score a registered run in this process, with a progress bar; its result copied to ``out_path``."""
    from curation.services.scoring import execute_run

    with frozen_heap_after_first_item(ProgressBar()) as progress:
        done = execute_run(engine, run_id, artifacts=settings.artifact_store(),
                           judges=judge_settings(settings), on_progress=progress, limits=scoring_limits(settings))
    return report_run(done, settings, out_path)


def report_run(done: ScoringRun, settings: Settings, out_path: str | None) -> int:
    """How a scored run ended: its summary line, its result copied to ``out_path``."""
    from curation.models import RunStatus

    if done.status != RunStatus.SUCCEEDED.value:
        print(f"error: run {done.id} {done.status}: {done.message}", file=sys.stderr)
        return 1
    if done.message:
        print(f"note: {done.message}", file=sys.stderr)
    print(_summary_line(done))
    if out_path:
        _write_result(done, settings, out_path)
    return 0


def _write_result(run: Any, settings: Settings, out_path: str) -> None:
    """Copy a succeeded run's result file out of the artifact store to ``out_path``."""
    from curation.services.scoring import stored_result
    from evaluation.submissions import printable

    out = Path(out_path)
    data = stored_result(run, settings.artifact_store())
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    except OSError as exc:
        raise ScoringError(f"The result could not be written to {printable(str(out))}: {exc.strerror or exc}. "
                           f"It is kept as run {run.id} (forkpaths runs show {run.id}).") from exc
    print(f"Result written to {out} (kept as run {run.id}).")


def _rescore(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.scoring import items_noun, rescore_run
    from evaluation.tasks.base import count_of

    check_enqueue(args, settings)
    report = initialise(settings, runs_code=not args.enqueue)  # --enqueue: a worker runs the code
    with session_scope(report.engine) as s:
        run = rescore_run(session=s, actor=acting_operator(session=s, username=args.as_user), run_id=args.run, release_version=args.release,
                          artifacts=settings.artifact_store(),
                          max_bytes=settings.max_submission_bytes, judges=judge_settings(settings),
                          limits=scoring_limits(settings))
    print(f"Run {run.id} registered: run {args.run} re-scored on release {run.release_version} ({run.agent}, "
          f"{count_of(run.progress_total, items_noun(run.kind))}; run {args.run} is kept).", file=sys.stderr)
    if args.enqueue:
        queue_for_workers(report.engine, run.id or 0)
        print(run.id)
        return 0
    return score_in_foreground(report.engine, run.id or 0, settings, args.out)


def _schema(args: argparse.Namespace, settings: Settings) -> int:
    """``forkpaths score-schema KIND``: the JSON schema file documenting a kind's submission; without KIND, the
    kinds that publish one (the registry says which)."""
    from curation.services.scoring import kind_of
    from evaluation.tasks import kinds_with

    documented = kinds_with("submission_schema")
    if args.kind is None:
        for kind in documented:
            print(f"{kind.name:<16} {kind.label}")
        return 0
    path = kind_of(args.kind).submission_schema
    if path is None:
        raise ScoringError(f"The {args.kind} kind documents its submission elsewhere (see forkpaths score --help); "
                           f"these kinds publish a JSON schema: {', '.join(k.name for k in documented)}.")
    print(Path(path).read_text(encoding="utf-8"), end="")
    return 0


def _fmt(x: Any) -> str:
    return "—" if x is None else f"{x:.3f}"


def _summary_line(run: ScoringRun) -> str:
    from curation.services.scoring import kind_of

    return f"run {run.id}: {kind_of(run.kind).summary_line(run.scores_effective or {})}"


def _run_dict(run: ScoringRun) -> dict[str, Any]:
    return run.model_dump(mode="json")


def _runs_list(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services import run_records as rr

    report = initialise(settings, runs_code=False)
    with session_scope(report.engine) as s:
        actor = acting_operator(session=s, username=args.as_user)
        runs = rr.list_runs(session=s, actor=actor, release_version=args.release)
        if args.json:
            print(json.dumps([_run_dict(r) for r in runs], indent=2))
        elif not runs:
            print("No scoring runs yet.")
        for r in [] if args.json else runs:
            print(f"{r.id:>4}  {r.status:<9} {r.release_version:<8} {r.kind:<8} {r.agent:<20} "
                  f"{r.model_name:<16} {r.judge.get('name', '-'):<7} {r.mode:<7} {r.created_at:%Y-%m-%d %H:%M}"
                  f"{'  official' if r.official else ''}  {r.message[:60]}")
    return 0


def _cmd_runs(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope

    if args.runs_command == "list":  # rows alone: none of the data libraries scoring needs
        return _runs_list(args, settings)
    from curation.services import leaderboard as lb
    from curation.services import scoring as sc

    if args.runs_command == "rescore":
        return _rescore(args, settings)
    if args.runs_command == "wait":
        return _wait(args, settings)
    report = initialise(settings)
    with session_scope(report.engine) as s:
        actor = acting_operator(session=s, username=args.as_user)
        if args.runs_command == "show":
            run = sc.get_run(session=s, actor=actor, run_id=args.run)
            overrides = lb.list_overrides(session=s, actor=actor, run_id=args.run)
            if args.json:
                print(json.dumps({"run": _run_dict(run), "overrides": [o.model_dump(mode="json")
                                                                       for o in overrides]}, indent=2))
            else:
                for key in ("id", "status", "agent", "model_name", "release_version", "ground_truth_hash",
                            "submission_sha256", "evaluator_version", "mode", "k", "source", "created_at",
                            "started_at", "finished_at", "release_sha256", "result_sha256", "message"):
                    print(f"{key:<18} {getattr(run, key)}")
                print(f"{'judge':<18} {json.dumps(run.judge)}")
                if run.scores_effective:
                    print(_summary_line(run))
                for o in overrides:
                    print(f"override: {o.dataset}/{o.analysis_key} {o.kind} {o.label}: {o.original} → {o.value} "
                          f"({o.reason})")
        elif args.runs_command == "compare":
            cmp = lb.compare_run_results(session=s, actor=actor, run_a=args.a, run_b=args.b,
                                         artifacts=settings.artifact_store(), n_bootstrap=args.bootstrap)
            if args.json:
                print(cmp.model_dump_json(indent=2))
            else:
                print(f"F1(run {args.a}) − F1(run {args.b}), paired bootstrap 95 % CI ({cmp.n_bootstrap} replicates)")
                for d in cmp.differences:
                    print(f"{d.dataset:<14} {d.decision_type:<11} {_fmt(d.f1_a)} − {_fmt(d.f1_b)} = {_fmt(d.diff)}"
                          f"  [{_fmt(d.ci_low)}, {_fmt(d.ci_high)}]{'' if d.paired else '  (unpaired)'}")
                for n in cmp.notes:
                    print(f"note: {n}")
        elif args.runs_command == "export":
            rows = lb.leaderboard(session=s, actor=actor, release_version=args.release,
                                  artifacts=settings.artifact_store(), dataset=args.dataset, kind=args.kind)
            text = lb.leaderboard_csv(rows) if args.format == "csv" else json.dumps(rows, indent=2) + "\n"
            if args.out:
                Path(args.out).write_text(text, encoding="utf-8")
                print(f"Leaderboard of release {args.release} ({len(rows)} runs) written to {args.out}.")
            else:
                print(text, end="")
    return 0


def _reproduce(args: argparse.Namespace, settings: Settings) -> int:
    """``forkpaths reproduce RUN``: check the reproducibility of a run's analyses (or re-judge an imported
    AIRepr run) as a new reproducibility run."""
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.reproducibility import reproduce_run
    from curation.services.scoring import items_noun
    from evaluation.tasks.base import count_of

    check_enqueue(args, settings)
    report = initialise(settings, runs_code=not args.enqueue)  # --enqueue: a worker runs the code
    with session_scope(report.engine) as s:
        run = reproduce_run(session=s, actor=acting_operator(session=s, username=args.as_user), run_id=args.run,
                            artifacts=settings.artifact_store(),
                            max_bytes=settings.max_submission_bytes, judges=judge_settings(settings),
                            limits=scoring_limits(settings), inspector_model=args.inspector_model or "")
    print(f"Run {run.id} registered: the reproducibility of run {args.run} ({count_of(run.progress_total, items_noun(run.kind))}; inspector {run.judge.get('model')}).", file=sys.stderr)
    if args.enqueue:
        queue_for_workers(report.engine, run.id or 0)
        print(run.id)
        return 0
    return score_in_foreground(report.engine, run.id or 0, settings, args.out)


def _import_airepr(args: argparse.Namespace, settings: Settings) -> int:
    """``forkpaths import-airepr PATH``: AIRepr's published result files as viewable reproducibility runs."""
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.reproducibility import import_airepr

    report = initialise(settings)
    with session_scope(report.engine) as s:
        runs = import_airepr(session=s, actor=acting_operator(session=s, username=args.as_user), path=Path(args.path),
                             artifacts=settings.artifact_store(),
                             release_version=args.release)
        lines = [f"Run {r.id}: {r.agent} · {r.model_name} on release {r.release_version}: "
                 f"{_summary_line(r).split(': ', 1)[1]}" for r in runs]
    print("\n".join(lines))
    print(f"Imported {len(runs)} AIRepr run(s); re-judge one with 'forkpaths reproduce RUN'.", file=sys.stderr)
    return 0


def add_scoring_commands(sub: Any) -> None:
    sc = sub.add_parser("score", help="score an agent's submission against a release (registered as a run)")
    sc.add_argument("--release", required=True, help="the release version to score against")
    sc.add_argument("--submission", required=True, action="append",
                    help="BLADE single- or multi-run file (repeatable: one per dataset); for --kind hypotheses a "
                         "hypotheses file (forkpaths score-schema hypotheses prints its JSON schema)")
    # judges are registered by name in evaluation.judges; an unknown name is refused at registration with the list
    # (not with argparse choices, which would import the judges for every command)
    sc.add_argument("--judge", default=None, help="a registered judge: offline (no LLM, the default for analyses) or "
                                               "llm; hms for hypotheses (its default)")
    # a kind may declare modes of its own (TaskKind.modes): an unknown one is refused at registration with the
    # kind's list, as a judge is
    sc.add_argument("--mode", default="default",
                    help="the scoring mode: default, or one the kind declares, e.g. blade: BLADE's definitions "
                         "(analyses); discoverybench: upstream's HMS step by step (hypotheses); datascibench: "
                         "upstream's scoring rule for checks (programmatic)")
    sc.add_argument("--k", type=int, default=10, help="analyses: k of coverage@k (default 10)")
    sc.add_argument("--agent", help="agent name (default: the submission file's name)")
    sc.add_argument("--model", help="the agent's language model")
    sc.add_argument("--out", help="where to copy the result file (required without --enqueue)")
    sc.add_argument("--enqueue", action="store_true",
                    help="queue the run for the workers (PostgreSQL), print its id and return")
    sc.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    sc.add_argument("--kind", default=None,
                    help="the task kind of the submission, as registered in evaluation.tasks (default: the first "
                         "ranked kind, analyses); "
                         "an unknown kind is refused with the list of known ones, and 'forkpaths score-schema KIND' "
                         "documents each kind's format")
    sc.add_argument("--llm-model", help="for a kind that asks a model of its own (reproducibility: the "
                                        "inspector): which model (default FORKPATHS_LLM_MODEL)")
    sc.set_defaults(func=lambda a, s: score_files(a, s, a.kind) if a.enqueue or a.out else sc.error(
        "--out is required (where to copy the result file), unless --enqueue"))
    sch = sub.add_parser("score-schema", help="print the JSON schema of a kind's submission file")
    sch.add_argument("kind", nargs="?", help="a registered task kind that publishes a schema of its submission "
                                             "(without it: the list of those kinds)")
    sch.set_defaults(func=_schema)
    runs = sub.add_parser("runs", help="list, show, compare and export scoring runs")
    runs.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    rs = runs.add_subparsers(dest="runs_command", required=True)
    ls = rs.add_parser("list")
    ls.add_argument("--release")
    ls.add_argument("--json", action="store_true")
    sh = rs.add_parser("show")
    sh.add_argument("run", type=int)
    sh.add_argument("--json", action="store_true")
    rsc = rs.add_parser("rescore", help="score a run's submission again as a new run (after it was interrupted, "
                                        "failed or cancelled, or on another release); the old run is kept")
    rsc.add_argument("run", type=int)
    rsc.add_argument("--release", help="the release to score it on (default: the run's own)")
    rsc.add_argument("--out", help="where to copy the result file")
    rsc.add_argument("--enqueue", action="store_true", help="queue it for the workers, print its id and return")
    wt = rs.add_parser("wait", help="follow a run (scored by a worker, the app or another terminal) to its end")
    wt.add_argument("run", type=int)
    wt.add_argument("--out", help="where to copy the result file once it succeeded")
    wt.add_argument("--poll", type=float, default=1.0, help=argparse.SUPPRESS)
    cp = rs.add_parser("compare", help="paired bootstrap comparison of two runs on the same release")
    cp.add_argument("a", type=int)
    cp.add_argument("b", type=int)
    cp.add_argument("--bootstrap", type=int, default=1000)
    cp.add_argument("--json", action="store_true")
    ex = rs.add_parser("export", help="the leaderboard of a release")
    ex.add_argument("--release", required=True)
    ex.add_argument("--dataset")
    ex.add_argument("--kind", help="the ranked kind whose leaderboard to export (default: analyses)")
    ex.add_argument("--format", choices=["csv", "json"], default="csv")
    ex.add_argument("--json", dest="format", action="store_const", const="json")
    ex.add_argument("--out")
    runs.set_defaults(func=_cmd_runs)
    rp = sub.add_parser("reproduce", help="check whether an inspector model can redo a run's analyses from their "
                                          "workflows (a reproducibility run); re-judges an imported AIRepr run")
    rp.add_argument("run", type=int, help="a succeeded scoring run (forkpaths runs list): BLADE analyses with "
                                          "a workflow, hypotheses with code, an agent run --workflow, or an "
                                          "imported AIRepr run; the inspector is asked at "
                                          "FORKPATHS_LLM_BASE_URL")
    rp.add_argument("--inspector-model", help="the model to ask (default FORKPATHS_LLM_MODEL, at its endpoint)")
    rp.add_argument("--out", help="where to copy the result file")
    rp.add_argument("--enqueue", action="store_true", help="queue it for the workers, print its id and return")
    rp.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    rp.set_defaults(func=_reproduce)
    ia = sub.add_parser("import-airepr", help="import AIRepr's result files (results/{model}_{dataset}_{agent}*.json)"
                                              " as reproducibility runs to view and re-judge")
    ia.add_argument("path", help="AIRepr's results/ folder, a folder holding it, or one file")
    ia.add_argument("--release", help="the release the runs are filed under (default: the newest)")
    ia.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    ia.set_defaults(func=_import_airepr)
    wk = sub.add_parser("worker", help="score queued runs (PostgreSQL): start one on any machine that reaches the "
                                       "database and mounts the artifact store (FORKPATHS_ARTIFACT_DIR)")
    wk.add_argument("--concurrency", type=int, default=1, help="runs scored at once by this worker (default 1)")
    wk.set_defaults(func=_worker)
    art = sub.add_parser("artifacts", help="the artifact store (releases, submissions, results by sha256)")
    art.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    ars = art.add_subparsers(dest="artifacts_command", required=True)
    ars.add_parser("check", help="check every object against its sha256 (damaged ones are set aside) and that "
                                 "everything the database refers to is there")
    art.set_defaults(func=_cmd_artifacts)
