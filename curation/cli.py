"""The ``forkpaths`` command: run the app, manage users and datasets from a terminal."""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys
from pathlib import Path

from curation.bootstrap import initialise
from curation.dataset_files import read_blade_folder
from curation.db import session_scope
from curation.errors import CurationError
from curation.models import Role
from curation.services.accounts import create_user, generate_password
from curation.services.datasets import assign_analysts, register_dataset
from curation.settings import PROJECT_ROOT, Settings

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace, settings: Settings) -> int:
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
           "--server.headless", "true", "--browser.gatherUsageStats", "false"]
    if args.address:
        cmd += ["--server.address", args.address]
    print(f"  Open http://{args.address or 'localhost'}:{args.port} in your browser.\n", flush=True)
    os.execv(sys.executable, cmd)
    return 0  # pragma: no cover


def _cmd_init(_args: argparse.Namespace, settings: Settings) -> int:
    report = initialise(settings)
    print(f"Database ready at {settings.resolved_database_url.split('@')[-1]}")
    if report.generated_password:
        print(f"First admin '{report.admin_username}', password: {report.generated_password}")
    return 0


def _cmd_create_user(args: argparse.Namespace, settings: Settings) -> int:
    report = initialise(settings)
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    elif sys.stdin.isatty():
        password = getpass.getpass(f"Password for {args.username} (empty: generate one): ")
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

    from curation.models import Dataset, User
    from curation.services.datasets import assigned_user_ids

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


def _operator(session, username: str | None):  # type: ignore[no-untyped-def]
    """Who a terminal command acts as: --as USER, else the first active admin (the operator has the machine)."""
    from sqlmodel import col, select

    from curation.models import User

    stmt = select(User).where(User.is_active == True)  # noqa: E712
    stmt = stmt.where(User.username == username) if username else stmt.where(User.role == Role.ADMIN.value)
    user = session.exec(stmt.order_by(col(User.id))).first()
    if user is None:
        raise CurationError(f"No active user '{username}'." if username else "There is no active admin.")
    return user


def _cmd_import_blade(args: argparse.Namespace, settings: Settings) -> int:
    from curation.services.blade_import import import_blade

    report = initialise(settings)
    with session_scope(report.engine) as session:
        results = import_blade(session=session, actor=None, path=Path(args.path), store=settings.datasets_store,
                               max_bytes=settings.max_upload_bytes)
    for r in results:
        print(f"Imported '{r.dataset}': {r.variables} variables, {r.transforms} transforms, {r.models} models, "
              f"{r.alternatives} reviewed alternatives ({r.votes} votes), {r.mcqs} MCQs.")
    return 0


def _progress(stage: str, fraction: float) -> None:
    print(f"  [{fraction:>4.0%}] {stage}", flush=True)


def _cmd_release(args: argparse.Namespace, settings: Settings) -> int:
    from curation.services import releases as rel

    report = initialise(settings)
    root = settings.releases_store
    with session_scope(report.engine) as session:
        actor = _operator(session, args.as_user)
        if args.release_command == "create":
            record = rel.cut_release(session=session, actor=actor, version=args.version, notes=args.notes or "",
                                     releases_root=root, store=settings.datasets_store,
                                     dataset_names=args.dataset or None, progress=_progress)
            print(f"Release {record.version} cut at {root / record.path} (manifest {record.manifest_sha256[:12]}…).")
        elif args.release_command == "list":
            records = rel.list_release_records(session=session, actor=actor)
            if not records:
                print("No releases yet.")
            for r in records:
                counts = ", ".join(f"{name}" for name in r.summary)
                print(f"{r.version:<10} {r.created_at:%Y-%m-%d %H:%M} UTC  {counts}  {r.notes}")
        elif args.release_command == "diff":
            from exports.changelog import render_changelog

            diff = rel.diff_release_versions(session=session, actor=actor, old=args.old, new=args.new,
                                             releases_root=root)
            print(render_changelog(diff))
        elif args.release_command == "export":
            out = rel.export_release(session=session, actor=actor, version=args.version, fmt=args.format,
                                     out=Path(args.out), releases_root=root)
            print(f"Exported release {args.version} ({args.format}) to {out}.")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="forkpaths", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start the web app (migrates the database first)")
    run.add_argument("--port", type=int, default=8501)
    run.add_argument("--address", default=None, help="address to listen on (default: all)")
    run.set_defaults(func=_cmd_run)
    sub.add_parser("init", help="create / migrate the database and the first admin").set_defaults(func=_cmd_init)
    cu = sub.add_parser("create-user", help="create an account")
    cu.add_argument("username")
    cu.add_argument("--role", choices=[r.value for r in Role], default=Role.ANALYST.value)
    cu.add_argument("--display-name")
    cu.add_argument("--password-stdin", action="store_true", help="read the password from standard input")
    cu.set_defaults(func=_cmd_create_user)
    ad = sub.add_parser("add-dataset", help="register a dataset folder in BLADE layout (info.json + data.csv)")
    ad.add_argument("path")
    ad.add_argument("--name", help="register under this name instead of the folder's")
    ad.set_defaults(func=_cmd_add_dataset)
    asg = sub.add_parser("assign", help="assign users to a dataset")
    asg.add_argument("dataset")
    asg.add_argument("users", nargs="+")
    asg.set_defaults(func=_cmd_assign)
    ib = sub.add_parser("import-blade", help="import a BLADE dataset folder, or a folder of them, with its ground truth")
    ib.add_argument("path")
    ib.set_defaults(func=_cmd_import_blade)
    rel = sub.add_parser("release", help="cut, list, compare and export benchmark releases")
    rel.add_argument("--as", dest="as_user", help="act as this user (default: the first active admin)")
    rsub = rel.add_subparsers(dest="release_command", required=True)
    rc = rsub.add_parser("create", help="cut a new, immutable release of the current ground truth")
    rc.add_argument("--version", required=True, help="semantic version X.Y.Z, higher than the latest")
    rc.add_argument("--notes", default="")
    rc.add_argument("--dataset", action="append", help="only this dataset (repeatable; default: all)")
    rsub.add_parser("list", help="list releases")
    rd = rsub.add_parser("diff", help="what changed between two releases")
    rd.add_argument("old")
    rd.add_argument("new")
    rx = rsub.add_parser("export", help="write a release in forkpaths' or BLADE's layout")
    rx.add_argument("version")
    rx.add_argument("--format", choices=["native", "blade"], default="native")
    rx.add_argument("--out", required=True)
    rel.set_defaults(func=_cmd_release)
    return p


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args, Settings()))
    except CurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
