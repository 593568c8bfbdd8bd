"""``forkpaths release create|list|diff|export`` and ``gt build``: releases and the ground truth built from them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curation.cli_actor import acting_operator

if TYPE_CHECKING:
    from curation.settings import Settings
    from exports.schema import Release

# The database, the services and the release format are imported inside the commands (see curation/cli.py).

__all__ = ["add_release_commands"]


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
    from curation.services import release_exports as rex
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
            out = rex.export_release(session=session, actor=actor, version=args.version, fmt=args.format,
                                     out=Path(args.out), artifacts=artifacts)
            print(f"Exported release {args.version} ({args.format}) to {out}.")
            skipped = rex.export_skips(session=session, actor=actor, version=args.version, fmt=args.format)
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



def add_release_commands(sub: Any) -> None:
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
