"""The ``forkpaths`` command: run the app; from a terminal, manage users and datasets, import BLADE,
DiscoveryBench and DataSciBench data, cut and export releases, score submissions of every task kind, run agents
and check the reproducibility of their analyses. ``forkpaths COMMAND --help`` tells more."""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from curation.account_rules import MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, PASSWORD_RULE, Role
from curation.cli_actor import acting_operator
from curation.errors import USER_ERRORS, CurationError

if TYPE_CHECKING:
    from curation.settings import Settings
    from exports.schema import Release

# Everything else (the settings, the database, the tables, the services, the data libraries) is imported inside
# the commands that use it: every command pays for what is imported here, and `--help` or a mistyped option
# must answer at once (tests/curation/test_cli_imports.py keeps it light).

__all__ = ["main"]


def _ensure_bubblewrap(settings: Settings, *, install: bool) -> None:
    """Install Debian's bubblewrap when it is missing and the sandbox needs it (as root, with apt-get).

    Interactive runs are asked first; unattended runs as root install it. Otherwise say what to do.
    """
    if settings.sandbox != "bwrap" or shutil.which("bwrap"):
        return
    can = os.geteuid() == 0 and shutil.which("apt-get") is not None
    if can and install and sys.stdin.isatty():
        answer = input("  bubblewrap isolates analysts' code and is not installed. Install it now with apt-get? [Y/n] ")
        install = answer.strip().lower() in ("", "y", "yes")
    if not (can and install):
        print("  bubblewrap is not installed, so sanity checks will be refused: install it "
              "(apt-get install bubblewrap) or set FORKPATHS_SANDBOX=process for weak isolation.", flush=True)
        return
    print("  Installing bubblewrap (apt-get install bubblewrap), which isolates analysts' code…", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
    done = subprocess.run(["apt-get", "install", "-y", "-qq", "bubblewrap"], env=env, check=False)
    if done.returncode != 0:
        print("  Installing bubblewrap failed; sanity checks will be refused until it is installed.", flush=True)


PORTS_TRIED = 100
"""How many ports after the asked one ``forkpaths run`` tries when the asked one is taken."""


def port_taken(address: str | None, port: int) -> bool:
    """True when something already listens on ``port`` (at ``address``, or any address): another program, or
    another app, whose page a newcomer would open by mistake. Bound the way the app's server binds
    (SO_REUSEADDR: a port in TIME_WAIT is free), and asked on the loopback too (a server on 127.0.0.1 only)."""
    import socket

    host = address or ""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        return False  # an address the server cannot use either: it says so itself
    for family, kind, proto, _name, where in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(where)
            except OSError:
                return True
    with socket.socket() as client:
        client.settimeout(0.5)
        return client.connect_ex(("127.0.0.1" if host in ("", "0.0.0.0") else host, port)) == 0  # noqa: S104


def _free_port(address: str | None, port: int) -> int | None:
    """``port`` if it is free, else the next free one (None when none of the next PORTS_TRIED is), saying so."""
    if not port_taken(address, port):
        return port
    for other in range(port + 1, min(port + 1 + PORTS_TRIED, 65536)):
        if not port_taken(address, other):
            print(f"  Port {port} is taken: another program (perhaps another app) listens there. Using port "
                  f"{other} instead; choose one with --port.", flush=True)
            return other
    return None


def _cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.settings import PROJECT_ROOT

    port = _free_port(args.address, args.port)
    if port is None:
        print(f"Port {args.port} and the {PORTS_TRIED} after it are taken; choose a free one with --port.",
              file=sys.stderr, flush=True)
        return 2
    args.port = port
    _ensure_bubblewrap(settings, install=not args.no_install)
    report = initialise(settings)
    if report.generated_password:
        print(
            "\n  First start: an admin account was created.\n"
            f"    user name: {report.admin_username}\n    password:  {report.generated_password}\n"
            f"  (also saved in {report.password_file})\n",
            flush=True,
        )
    if report.starters_registered:
        print(f"  Starter datasets registered: {', '.join(report.starters_registered)}", flush=True)
    app = PROJECT_ROOT / "annotate_app" / "app.py"
    cmd = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(args.port),
           "--server.headless", "true", "--browser.gatherUsageStats", "false",
           "--client.toolbarMode", "minimal",  # no "Deploy" button
           "--server.maxUploadSize", str(settings.server_upload_mb)]  # each uploader states its own limit
    if args.address:
        cmd += ["--server.address", args.address]
    from curation.services.sso import streamlit_auth_args

    cmd += streamlit_auth_args(settings)  # single sign-on: the FORKPATHS_OIDC_* settings as Streamlit's [auth]
    print(f"  Open http://{args.address or 'localhost'}:{args.port} in your browser.\n", flush=True)
    if args.no_worker or not settings.resolved_database_url.startswith("postgresql"):
        os.execv(sys.executable, cmd)  # SQLite: the app scores runs in its own process
        return 0  # pragma: no cover
    # PostgreSQL: runs are scored by workers; one starts beside the app (more: `forkpaths worker` anywhere)
    worker = subprocess.Popen([sys.executable, "-m", "curation.cli", "worker"])
    print(f"  A scoring worker runs beside the app (pid {worker.pid}).\n", flush=True)
    try:
        return subprocess.call(cmd)
    finally:
        worker.terminate()
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()


def _cmd_init(_args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise

    report = initialise(settings)
    print(f"Database ready at {settings.resolved_database_url.split('@')[-1]}")
    if report.generated_password:
        print(f"First admin '{report.admin_username}', password: {report.generated_password}")
    return 0


def _cmd_create_user(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.accounts import create_user, generate_password

    report = initialise(settings)
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    elif sys.stdin.isatty():
        password = getpass.getpass(f"Password for {args.username} ({MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH:,} "
                                   "characters; empty: generate one): ")
    else:
        password = ""
    generated = not password
    password = password or generate_password()
    with session_scope(report.engine) as session:
        user = create_user(session=session, actor=None, username=args.username, password=password,
                           role=Role(args.role), display_name=args.display_name or "")
        print(f"Created {user.role} '{user.username}'.")
    if generated:
        print(f"Generated password: {password}")
    return 0


def _cmd_add_dataset(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.dataset_files import read_blade_folder
    from curation.db import session_scope
    from curation.services.datasets import register_dataset

    report = initialise(settings)
    bundle = read_blade_folder(Path(args.path), max_bytes=settings.max_upload_bytes)
    if args.name:
        bundle = bundle.model_copy(update={"name": args.name})
    with session_scope(report.engine) as session:
        ds = register_dataset(session=session, actor=None, bundle=bundle, store=settings.datasets_store)
        print(f"Registered dataset '{ds.name}': {ds.num_rows} rows × {ds.num_columns} columns.")
    return 0


def _cmd_assign(args: argparse.Namespace, settings: Settings) -> int:
    from sqlmodel import select

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.models import Dataset, User
    from curation.services.datasets import assign_analysts, assigned_user_ids

    report = initialise(settings)
    with session_scope(report.engine) as session:
        ds = session.exec(select(Dataset).where(Dataset.name == args.dataset)).first()
        if ds is None:
            raise CurationError(f"There is no dataset called '{args.dataset}'.")
        ids = set(assigned_user_ids(session=session, dataset_id=ds.id or 0))
        for name in args.users:
            user = session.exec(select(User).where(User.username == name)).first()
            if user is None:
                raise CurationError(f"There is no user called '{name}'.")
            ids.add(user.id or 0)
        admin = session.exec(select(User).where(User.role == Role.ADMIN.value, User.is_active == True)).first()  # noqa: E712
        assert admin is not None
        assign_analysts(session=session, actor=admin, dataset_id=ds.id or 0, user_ids=sorted(ids))
        print(f"Assigned {', '.join(args.users)} to '{ds.name}'.")
    return 0


def _cmd_import_blade(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.blade_import import import_blade

    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user) if getattr(args, "as_user", None) else None
        results = import_blade(session=session, actor=actor, path=Path(args.path), store=settings.datasets_store,
                               max_bytes=settings.max_upload_bytes)
    for r in results:
        print(f"Imported '{r.dataset}': {r.variables} variables, {r.transforms} transforms, {r.models} models, "
              f"{r.alternatives} reviewed alternatives ({r.votes} votes), {r.mcqs} MCQs.")
    return 0


def _cmd_import_discoverybench(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.discoverybench_import import import_discoverybench

    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user) if getattr(args, "as_user", None) else None
        r = import_discoverybench(session=session, actor=actor, path=Path(args.path), store=settings.datasets_store,
                                  max_bytes=settings.max_upload_bytes, replace=args.replace,
                                  without_gold=args.without_gold)
    for line in r.lines():
        print(line)
    for sentence in r.refused:  # the other folders were imported (and committed above)
        print(f"Not imported: {sentence}", file=sys.stderr)
    return 1 if r.refused else 0


def _cmd_import_kind(args: argparse.Namespace, settings: Settings) -> int:
    """``forkpaths import-<kind> PATH``: any kind that declares an importer (see curation.services.kind_import)."""
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.kind_import import import_kind

    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user) if getattr(args, "as_user", None) else None
        r = import_kind(session=session, actor=actor, kind=args.import_kind, path=Path(args.path),
                        store=settings.datasets_store, max_bytes=settings.max_upload_bytes)
    for line in r.lines():
        print(line)
    for sentence in r.refused:  # the other datasets were imported (and committed above)
        print(f"Not imported: {sentence}", file=sys.stderr)
    return 1 if r.refused else 0


def _add_kind_imports(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """One ``import-<kind>`` command per registered kind that imports datasets (the registry says which)."""
    from evaluation.tasks import KINDS

    for kind in KINDS.values():
        if kind.importer is None or kind.release_part is None:
            continue
        cmd = sub.add_parser(f"import-{kind.name.replace('_', '-')}",
                             help=f"import {kind.importer.source} as datasets with their {kind.release_part.noun} "
                                  "and gold")
        cmd.add_argument("path")
        cmd.add_argument("--as", dest="as_user", help="act as this user (default: the CLI's operator)")
        cmd.set_defaults(func=_cmd_import_kind, import_kind=kind.name)


def _cmd_dataset(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services.datasets import archive_dataset, restore_dataset

    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user)
        if args.dataset_command == "archive":
            archive_dataset(session=session, actor=actor, name=args.name)
            print(f"Archived '{args.name}': hidden from annotation and left out of new releases "
                  f"(restore it with: forkpaths dataset restore {args.name}).")
        else:
            restore_dataset(session=session, actor=actor, name=args.name)
            print(f"Restored '{args.name}': it is annotated and released again.")
    return 0


def _cmd_check(args: argparse.Namespace, settings: Settings) -> int:
    from sqlmodel import select

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.models import Dataset
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
        dataset = session.exec(select(Dataset).where(Dataset.name == args.dataset)).first()
        if dataset is None:
            raise CurationError(f"There is no dataset called '{args.dataset}'.")
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


def _release_list(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.services import release_records as rr
    from curation.services.release_store import release_store_problems

    report = initialise(settings, runs_code=False)
    artifacts = settings.artifact_store()
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user)
        records = rr.list_release_records(session=session, actor=actor)
        if not records:
            print("No releases yet.")
        for r in records:
            counts = ", ".join(f"{name}" for name in r.summary)
            withheld = rr.withheld_in_release(session=session, actor=actor, version=r.version)
            hidden = f"  [withheld from you: {', '.join(withheld)}]" if withheld else ""
            print(f"{r.version:<10} {r.created_at:%Y-%m-%d %H:%M} UTC  {counts}  {r.notes}{hidden}")
        problems = release_store_problems(session=session, actor=actor, artifacts=artifacts)
        if problems:
            print("\nNeeds attention:")
            for problem in problems:
                print(f"  - {problem}")
    return 0


def _cmd_release(args: argparse.Namespace, settings: Settings) -> int:
    from curation.bootstrap import initialise
    from curation.cli_progress import ProgressBar
    from curation.db import one_snapshot, session_scope

    if args.release_command == "list":  # records alone: none of the data libraries the other commands need
        return _release_list(args, settings)
    from curation.services import releases as rel
    from curation.services.release_data import RELEASE_TABLES

    report = initialise(settings)
    artifacts = settings.artifact_store()
    root = artifacts.releases_root
    with session_scope(report.engine) as session:
        if args.release_command == "create":  # the cut's one snapshot starts before the operator is read
            one_snapshot(session=session, tables=RELEASE_TABLES)
        actor = acting_operator(session=session, username=args.as_user)
        if args.release_command == "create":
            _, empty = rel.release_candidates(session=session, actor=actor)
            record = rel.cut_release(session=session, actor=actor, version=args.version, notes=args.notes or "",
                                     artifacts=artifacts, store=settings.datasets_store,
                                     dataset_names=args.dataset or None, include_empty=args.include_empty,
                                     progress=ProgressBar().fraction)
            print(f"Release {record.version} cut at {root / record.path} (manifest {record.manifest_sha256[:12]}…).")
            for name, counts in sorted(record.summary.items()):
                print(f"  {name}: {rel.summary_sentence(counts)}")
            # datasets named with --dataset are the release's whole list: the others were not left out
            left_out = [n for n in empty if n not in record.summary and (not args.dataset or n in args.dataset)]
            if left_out:
                print(f"Left out, with no ground truth yet: {', '.join(left_out)} (add --include-empty to release "
                      "their data alone).")
            if note := rel.unreviewed_note(record.summary):
                print(note)
        elif args.release_command == "diff":
            comparison = rel.diff_release_versions(session=session, actor=actor, old=args.old, new=args.new,
                                                   artifacts=artifacts)
            print(comparison.markdown())
        elif args.release_command == "export":
            out = rel.export_release(session=session, actor=actor, version=args.version, fmt=args.format,
                                     out=Path(args.out), artifacts=artifacts)
            print(f"Exported release {args.version} ({args.format}) to {out}.")
            skipped = rel.export_skips(session=session, actor=actor, version=args.version, fmt=args.format)
            if skipped:
                print(f"Not exported (listed in {out / 'NOT_EXPORTED.md'}):")
                for why in skipped.values():
                    print(f"  - {why}")
    return 0


def _cmd_gt(args: argparse.Namespace, settings: Settings) -> int:
    import json

    from curation.services.sandbox_setting import configure_sandbox

    # The sandbox's template process (about two seconds of CPU) is started by the build itself, once it finds a
    # dataset that is not in the cache: a build found whole in the cache starts no process.
    configure_sandbox(mode=settings.sandbox, data_dir=settings.resolved_data_dir)

    from evaluation.groundtruth import BuildResult, build_release
    from exports.errors import FormatError

    path = Path(args.release)
    datasets = args.dataset or None
    version = _recorded_release_of(path, settings) if path.exists() else args.release
    release: Release | None = None  # read once: by the checks of a recorded release, else by the build
    if version is not None:  # a release version (or its folder): the recorded, verified release, as its reader may
        from curation.bootstrap import initialise  # the database: only for a recorded release
        from curation.db import session_scope
        from curation.errors import BlindingViolation
        from curation.services.blinding import withheld_ground_truth
        from curation.services.scoring import verified_release

        report = initialise(settings)
        with session_scope(report.engine) as session:
            actor = acting_operator(session=session, username=args.as_user)
            release, path = verified_release(session=session, actor=actor, release_version=version,
                                             artifacts=settings.artifact_store())
            withheld, why = withheld_ground_truth(session=session, actor=actor, release_version=version,
                                                  names=datasets)
        if withheld:
            names = datasets or [d.name for d in release.datasets if d.transforms]  # what a build builds
            datasets = [n for n in names if n not in withheld]
            if not datasets:
                raise BlindingViolation(why)
            print(f"warning: {why} It is left out.", file=sys.stderr)
    cache = None if args.no_cache else settings.resolved_data_dir / "cache" / "groundtruth"

    def show(r: BuildResult) -> None:
        s = r.summary()
        for e in s["errors"]:  # expert code that failed cuts paths short: say so where it is seen, JSON or not
            print(f"warning: {e}", file=sys.stderr, flush=True)
        if args.json:
            print(json.dumps(s), flush=True)
            return
        print(f"{s['dataset']}: {s['paths']} paths, {s['units']} units, {len(s['value_hashes'])} value hashes, "
              f"{len(s['graph_hashes'])} graph hashes, {s['seconds']:.2f} s{' (cached)' if r.cached else ''}")
        print(f"  units: {', '.join(s['unit_names'])}")
        print(f"  value hashes: {' '.join(h[:12] for h in s['value_hashes'])}")
        print(f"  graph hashes: {' '.join(h[:12] for h in s['graph_hashes'])}")
        if s["date_inferred_columns"]:
            print(f"  read as dates by pandas' inference (value hashes may differ from BLADE's published ones): "
                  f"{', '.join(s['date_inferred_columns'])}")
        if s.get("date_derived_columns"):
            print(f"  computed by the expert code from dates pandas 2 reads differently from BLADE's pandas 1.5 "
                  f"(value hashes differ from BLADE's published ones): {', '.join(s['date_derived_columns'])}")

    try:
        build_release(path, datasets=datasets, cache_dir=cache, on_dataset=show, release=release)
    except FormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _recorded_release_of(path: Path, settings: Settings) -> str | None:
    """The version of the recorded release whose folder ``path`` is (in the data directory's releases folder),
    or None for a folder from elsewhere (read as it is: whoever holds the folder holds its content)."""
    root = settings.releases_store.resolve()
    try:
        rel = path.resolve().relative_to(root)
    except ValueError:
        return None
    return rel.parts[0] if len(rel.parts) == 1 else None


def _cmd_agreement(args: argparse.Namespace, settings: Settings) -> int:
    import dataclasses
    import json

    from sqlmodel import select

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.models import Dataset
    from curation.services.agreement import agreement_report

    report = initialise(settings)
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user)
        dataset_id = None
        if args.dataset:
            ds = session.exec(select(Dataset).where(Dataset.name == args.dataset)).first()
            if ds is None:
                raise CurationError(f"There is no dataset called '{args.dataset}'.")
            dataset_id = ds.id
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


def _cmd_alternatives(args: argparse.Namespace, settings: Settings) -> int:
    """Generation as a background job (recorded, one per dataset, seen on the Review page): run here in the
    foreground, or with ``--enqueue`` handed to the workers (PostgreSQL) and followed from the page."""
    from sqlmodel import select

    from curation.bootstrap import initialise
    from curation.cli_progress import ProgressBar
    from curation.db import session_scope
    from curation.models import Dataset, RunStatus
    from curation.services.background_jobs import execute_job
    from curation.services.jobs import enqueue_job, is_postgres
    from curation.services.llm_alternatives import GenerationReport, start_generation
    from evaluation.llm import LLMClient

    LLMClient(settings.llm_config())  # raises LLMNotConfigured (how to set it up) before anything is recorded
    report = initialise(settings)
    if args.enqueue and not is_postgres(report.engine):
        raise CurationError("--enqueue hands the generation to `forkpaths worker` processes, which take jobs from "
                            "PostgreSQL (set FORKPATHS_DATABASE_URL); on SQLite run it without --enqueue.")
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=args.as_user)
        ds = session.exec(select(Dataset).where(Dataset.name == args.dataset)).first()
        if ds is None:
            raise CurationError(f"There is no dataset called '{args.dataset}'.")
        job_id = start_generation(session=session, actor=actor, dataset_id=ds.id or 0)
    if args.enqueue:
        enqueue_job(report.engine, job_id)
        print(f"Generation job {job_id} queued; a worker runs it (the Review page shows its progress).")
        return 0
    job = execute_job(report.engine, job_id, settings, on_progress=ProgressBar())
    if job.result is None:
        print(f"The generation {job.status}: {job.message}", file=sys.stderr)
        return 1
    result = GenerationReport(**job.result)
    if result.cancelled:
        print(f"Cancelled after {result.seeds_done} of {result.seeds_total} seeds (from the page).")
    print(f"{result.created} alternatives stored ({result.duplicates} flagged as duplicates, "
          f"{result.failed_checks} transforms whose code failed, shown with their error); {result.already_stored} "
          f"already stored; {result.calls} LLM answers, {result.cached} from the cache.")
    for line in result.rejected:
        print(f"  rejected: {line}")
    for line in result.errors:
        print(f"  failed: {line}", file=sys.stderr)
    failed = result.errors and not result.created and not result.already_stored
    return 1 if failed or job.status == RunStatus.FAILED.value else 0


def _dataset_id(session, name: str) -> int:  # type: ignore[no-untyped-def]
    from sqlmodel import select

    from curation.models import Dataset

    ds = session.exec(select(Dataset).where(Dataset.name == name)).first()
    if ds is None:
        raise CurationError(f"There is no dataset called '{name}'.")
    return int(ds.id or 0)


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
            result = generate_mcqs(session=session, actor=actor, dataset_id=_dataset_id(session, args.dataset),
                                   settings=MCQSettings(seed=args.seed))
        counts = ", ".join(f"{n} {k}" for k, n in result.counts().items())
        print(f"{args.dataset}: {len(result.mcqs)} MCQs from rule {result.rule}, seed {result.seed} ({counts}); "
              f"{result.created} stored, {result.kept} already reviewed kept, {result.removed} unreviewed replaced.")
        for note in result.notes:
            print(f"  not built: {note}")
        return 0
    with session_scope(report.engine) as session:
        actor = acting_operator(session=session, username=getattr(args, "as_user", None))
        audit = audit_mcqs(session=session, actor=actor, dataset_id=_dataset_id(session, args.dataset))
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


def build_parser(*, kind_imports: bool = True) -> argparse.ArgumentParser:
    """The whole command line; without ``kind_imports``, without the ``import-<kind>`` commands, whose list
    comes from the task registry, which imports every kind (their scoring libraries among them)."""
    p = argparse.ArgumentParser(prog="forkpaths", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also print progress logs (INFO); accepted anywhere on the command line")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start the web app (migrates the database first)")
    run.add_argument("--port", type=int, default=8501)
    run.add_argument("--address", default=None, help="address to listen on (default: all)")
    run.add_argument("--no-worker", action="store_true",
                     help="on PostgreSQL, do not start a scoring worker beside the app (run `forkpaths worker` "
                          "elsewhere)")
    run.add_argument("--no-install", action="store_true",
                     help="do not install bubblewrap when it is missing (it is installed as root with apt-get)")
    run.set_defaults(func=_cmd_run)
    ck = sub.add_parser("check", help="run the annotate page's sanity check on a code file and print its result")
    ck.add_argument("dataset", help="the dataset's name")
    ck.add_argument("--code-file", required=True, help="the transform's (or with --model the model's) code; - for stdin")
    ck.add_argument("--after", nargs="+", metavar="SPEC_ID",
                    help="the transforms (ids or names, of the acting user's analysis) that run first")
    ck.add_argument("--model", action="store_true", help="fit it as model code instead of running a transform")
    ck.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    ck.add_argument("--json", action="store_true", help="print the whole check as JSON")
    ck.set_defaults(func=_cmd_check)
    sub.add_parser("init", help="create / migrate the database and the first admin").set_defaults(func=_cmd_init)
    cu = sub.add_parser("create-user", help="create an account")
    cu.add_argument("username")
    cu.add_argument("--role", choices=[r.value for r in Role], default=Role.ANALYST.value)
    cu.add_argument("--display-name")
    cu.add_argument("--password-stdin", action="store_true", help=f"read the password from standard input. {PASSWORD_RULE}")
    cu.set_defaults(func=_cmd_create_user)
    ad = sub.add_parser("add-dataset", help="register a dataset folder in BLADE layout (info.json + data.csv)")
    ad.add_argument("path")
    ad.add_argument("--name", help="register under this name instead of the folder's")
    ad.set_defaults(func=_cmd_add_dataset)
    asg = sub.add_parser("assign", help="assign users to a dataset")
    asg.add_argument("dataset")
    asg.add_argument("users", nargs="+")
    asg.set_defaults(func=_cmd_assign)
    dsp = sub.add_parser("dataset", help="archive or restore a registered dataset")
    dsp.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    dsub = dsp.add_subparsers(dest="dataset_command", required=True)
    dsub.add_parser("archive", help="hide a dataset from annotation and from new releases (nothing is deleted)"
                    ).add_argument("name")
    dsub.add_parser("restore", help="bring an archived dataset back").add_argument("name")
    dsp.set_defaults(func=_cmd_dataset)
    ib = sub.add_parser("import-blade", help="import a BLADE dataset folder, or a folder of them, with its ground truth")
    ib.add_argument("path")
    ib.set_defaults(func=_cmd_import_blade)
    idb = sub.add_parser("import-discoverybench",
                         help="import a DiscoveryBench folder or tree (real and synth, all splits, answer keys) as "
                              "datasets and hypothesis tasks")
    idb.add_argument("path")
    idb.add_argument("--replace", action="store_true",
                     help="re-import a folder imported before whose content changed, while no curated work rests "
                          "on it (otherwise such a folder is refused, and the others are imported)")
    idb.add_argument("--without-gold", action="store_true",
                     help="import the queries without their gold hypotheses (metadata and answer keys), to curate "
                          "them from scratch in stage 1")
    idb.set_defaults(func=_cmd_import_discoverybench)
    if kind_imports:
        _add_kind_imports(sub)
    rel = sub.add_parser("release", help="cut, list, compare and export benchmark releases")
    rel.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    rsub = rel.add_subparsers(dest="release_command", required=True)
    rc = rsub.add_parser("create", help="cut a new, immutable release of the current ground truth")
    rc.add_argument("--version", required=True, help="semantic version X.Y.Z, higher than the latest")
    rc.add_argument("--notes", default="")
    rc.add_argument("--dataset", action="append",
                    help="only this dataset (repeatable; default: every dataset that has ground truth)")
    rc.add_argument("--include-empty", action="store_true",
                    help="also release the datasets without ground truth yet (their data alone)")
    rsub.add_parser("list", help="list releases")
    rd = rsub.add_parser("diff", help="what changed between two releases")
    rd.add_argument("old")
    rd.add_argument("new")
    rx = rsub.add_parser("export", help="write a release in forkpaths', BLADE's or DiscoveryBench's layout, "
                                                     "or as a Hugging Face dataset")
    rx.add_argument("version", help="the release version (forkpaths release list)")
    rx.add_argument("--format", choices=["native", "blade", "discoverybench", "hf"], default="native",
                    help="native: the release folder and zip; blade: BLADE's layout (its BLADE datasets); "
                         "discoverybench: the DiscoveryBench tree its hypothesis tasks were imported from, with "
                         "answer keys; hf: a Hugging Face dataset folder (Parquet per kind and split, dataset "
                         "card) to publish with huggingface-cli upload")
    rx.add_argument("--out", required=True, help="the folder to write (created; must be empty)")
    rel.set_defaults(func=_cmd_release)
    gt = sub.add_parser("gt", help="ground truth of a release (paths, units, value and graph hashes)")
    gsub = gt.add_subparsers(dest="gt_command", required=True)
    gb = gsub.add_parser("build", help="build (or load from the cache) the ground truth of a release")
    gb.add_argument("release", help="a release version in the data directory, or a release folder")
    gb.add_argument("--dataset", action="append", help="only this dataset (repeatable; default: all)")
    gb.add_argument("--json", action="store_true", help="one JSON object per dataset, full hashes")
    gb.add_argument("--no-cache", action="store_true", help="rebuild without reading or writing the cache")
    gb.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    gb.set_defaults(func=_cmd_gt)
    ag = sub.add_parser("agreement", help="inter-rater agreement of stage-2 votes (one dataset, or all)")
    ag.add_argument("dataset", nargs="?", help="dataset name (default: every dataset past stage 1)")
    ag.add_argument("--json", action="store_true", help="machine-readable output")
    ag.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    ag.set_defaults(func=_cmd_agreement)
    alt = sub.add_parser("alternatives", help="LLM-generated alternatives for stage 2")
    alt.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    altsub = alt.add_subparsers(dest="alternatives_command", required=True)
    gen = altsub.add_parser("generate", help="generate alternatives seeded by the analysts' decisions (cached)")
    gen.add_argument("dataset")
    gen.add_argument("--enqueue", action="store_true",
                     help="PostgreSQL: hand it to the workers, print the job id and return")
    alt.set_defaults(func=_cmd_alternatives)
    mcq = sub.add_parser("mcq", help="MCQs built from the ground-truth statuses, and their audit")
    mcqsub = mcq.add_subparsers(dest="mcq_command", required=True)
    mg = mcqsub.add_parser("generate", help="generate MCQs (deterministic for a seed; reviewed ones are kept)")
    mg.add_argument("dataset")
    mg.add_argument("--seed", type=int, default=0)
    ma = mcqsub.add_parser("audit", help="flag MCQs whose key disagrees with the votes (generated or imported)")
    ma.add_argument("dataset")
    ma.add_argument("--json", action="store_true")
    mcq.set_defaults(func=_cmd_mcq)
    from curation.cli_hypotheses import add_hypothesis_commands
    from curation.cli_scoring import add_scoring_commands

    add_scoring_commands(sub)
    from curation.cli_checks import add_checks_commands

    add_checks_commands(sub)
    add_hypothesis_commands(sub)
    from curation.cli_agent import add_agent_commands

    add_agent_commands(sub)
    from curation.cli_inspect import add_inspect_commands

    add_inspect_commands(sub)
    return p


def _take_as(argv: list[str]) -> tuple[list[str], str | None]:
    """``argv`` without its ``--as USER`` (or ``--as=USER``), wherever it stands, and that user.

    Everything after a bare ``--`` is left alone. Saying ``--as`` twice with different users is an error.
    """
    rest: list[str] = []
    users: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            rest += argv[i:]
            break
        if arg == "--as":
            if i + 1 >= len(argv) or argv[i + 1].startswith("-"):
                raise CurationError("--as needs a user name: --as USER.")
            users.append(argv[i + 1])
            i += 2
            continue
        if arg.startswith("--as="):
            users.append(arg.removeprefix("--as="))
            i += 1
            continue
        rest.append(arg)
        i += 1
    if len(set(users)) > 1:
        raise CurationError(f"--as is given twice with different users ({', '.join(users)}); say it once.")
    return rest, (users[0] if users else None)


#: Commands that do not act as a user (they run as the machine's operator), so --as means nothing to them.
_WITHOUT_ACTOR = ("run", "init", "create-user", "add-dataset", "assign")

VERBOSE_FLAGS = ("--verbose", "-v")


def _parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The parser ``argv`` needs: every command but the ``import-<kind>`` ones, when it names one of them (the
    task registry is loaded only for an ``import-<kind>`` command, the top-level help, or a command not found)."""
    parser = build_parser(kind_imports=False)
    named = next((a for a in argv if not a.startswith("-")), None)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return parser if named in commands else build_parser()


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = any(a in VERBOSE_FLAGS for a in argv)  # anywhere on the command line
    argv = [a for a in argv if a not in VERBOSE_FLAGS]
    # the libraries' and services' INFO logs only when asked for; warnings and errors always
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", force=True)
    try:
        argv, as_user = _take_as(argv)
        for arg in argv:  # a non-UTF-8 byte from the terminal arrives as a lone surrogate (surrogateescape)
            if any("\ud800" <= ch <= "\udfff" for ch in arg):
                shown = arg.encode("utf-8", "backslashreplace").decode("utf-8")
                raise CurationError(f"the argument '{shown}' is not UTF-8 text; set the terminal to UTF-8 "
                                    "and type it again.")
    except CurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args = _parser_for(argv).parse_args(argv)
    # only now, past --help and the argument errors argparse answers by itself
    from pydantic import ValidationError

    from curation.settings import Settings

    if as_user is not None:
        if args.command in _WITHOUT_ACTOR:
            print(f"error: forkpaths {args.command} does not act as a user; leave out --as.", file=sys.stderr)
            return 2
        args.as_user = as_user
    try:
        settings = Settings()
    except ValidationError as exc:  # a setting that does not parse: which variable, what it holds, what is wrong
        for err in exc.errors():
            name = "FORKPATHS_" + "_".join(str(p) for p in err.get("loc", ())).upper()
            shown = "(hidden)" if "KEY" in name or "PASSWORD" in name else repr(err.get("input"))  # no secret echoed
            print(f"error: {name}={shown} (from the environment or .env): {err.get('msg')}.", file=sys.stderr)
        return 2
    try:
        return int(args.func(args, settings))
    except USER_ERRORS as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
