"""``forkpaths add-dataset``, ``assign``, ``dataset archive|restore`` and the imports (``import-blade``,
``import-discoverybench``, and one ``import-<kind>`` per registered kind that declares an importer)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.account_rules import Role
from curation.cli_actor import acting_operator, dataset_named
from curation.errors import CurationError

if TYPE_CHECKING:
    from curation.settings import Settings

# The settings, the database, the services and the task registry are imported inside the commands (see
# curation/cli.py).

__all__ = ["add_dataset_commands", "add_kind_imports"]


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
    from curation.models import User
    from curation.services.datasets import assign_analysts, assigned_user_ids

    report = initialise(settings)
    with session_scope(report.engine) as session:
        ds = dataset_named(session=session, name=args.dataset)
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


def add_kind_imports(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """One ``import-<kind>`` command per registered kind that imports datasets (the registry says which, read
    through :func:`curation.cli_kind_index.kind_imports`, which does not load the kinds when nothing changed)."""
    from curation.cli_kind_index import kind_imports

    for name, help_line, kind in kind_imports():
        cmd = sub.add_parser(name, help=help_line)
        cmd.add_argument("path")
        cmd.add_argument("--as", dest="as_user", help="act as this user (default: the CLI's operator)")
        cmd.set_defaults(func=_cmd_import_kind, import_kind=kind)


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



def add_dataset_commands(sub: Any) -> None:
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
