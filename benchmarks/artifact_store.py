"""The artifact store, timed (prints figures, asserts nothing).

1. put and get throughput (every get hashes what it read): many small objects (4 KiB, like MCQ answers) and
   fewer large ones (1 MiB, 16 MiB: submissions, results, data tables), in objects/s and MiB/s;
2. a release of every BLADE dataset in ``../shared/blade/datasets`` (the shared ones; BLADE's mortgage and soccer
   are not shared): cut (written, published and put in the store), then what a scoring job pays to get it:
   materialised cold into a fresh cache (every file copied and checked) and read (every file checked against the
   MANIFEST), and warm (already in this machine's cache: read and checked only); next to what scoring paid before
   the store (the published folder and zip checked: ``read_published_release``).

The store and caches are in a temporary folder on the local disk; on a network filesystem every figure is bounded
by its bandwidth instead. Run: .venv/bin/python benchmarks/artifact_store.py [--blade ../shared/blade/datasets]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curation.artifacts import ArtifactStore  # noqa: E402


def _timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def throughput(store: ArtifactStore) -> None:
    print("put / get (get = read + sha256 check):")
    for size, count in ((4 * 1024, 2000), (2**20, 200), (16 * 2**20, 16)):
        blobs = [os.urandom(size) for _ in range(count)]
        shas, put_s = _timed(lambda blobs=blobs: [store.put_bytes(b) for b in blobs])
        _, again_s = _timed(lambda blobs=blobs: [store.put_bytes(b) for b in blobs])
        _, get_s = _timed(lambda shas=shas: [store.get_bytes(s, what="x") for s in shas])
        mib = size * count / 2**20
        label = f"{size // 1024} KiB" if size < 2**20 else f"{size // 2**20} MiB"
        print(f"  {count:5d} x {label:<7} put {count / put_s:8.0f} obj/s {mib / put_s:7.1f} MiB/s   "
              f"get {count / get_s:8.0f} obj/s {mib / get_s:7.1f} MiB/s   "
              f"put of present content {count / again_s:8.0f} obj/s")


def release(store: ArtifactStore, tmp: Path, blade: Path) -> None:
    from sqlmodel import select

    from curation.db import make_engine, migrate, session_scope
    from curation.models import ReleaseRecord, Role, User
    from curation.services.accounts import create_user
    from curation.services.blade_import import import_blade
    from curation.services.releases import cut_release, stored_release
    from exports.published import read_published_release

    names = sorted(p.name for p in blade.iterdir() if (p / "data.csv").is_file() or (p / "info.json").is_file())
    src = tmp / "in"
    src.mkdir()
    for name in names:
        os.symlink(blade / name, src / name)
    engine = make_engine(f"sqlite:///{tmp / 'bench.db'}")
    migrate(engine)
    with session_scope(engine) as s:
        admin = create_user(session=s, actor=None, username=f"bench{uuid.uuid4().hex[:6]}",
                            password="bench password", role=Role.ADMIN)
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=src, store=tmp / "datasets", max_bytes=2**30)

    def cut() -> ReleaseRecord:
        with session_scope(engine) as s:
            return cut_release(session=s, actor=s.get(User, admin.id), version="1.0.0", notes="bench",
                               artifacts=store, store=tmp / "datasets", include_empty=True)

    record, cut_s = _timed(cut)
    with session_scope(engine) as s:
        record = s.exec(select(ReleaseRecord)).one()
    folder = store.releases_root / record.path
    files = [p for p in folder.rglob("*") if p.is_file()]
    size = sum(p.stat().st_size for p in files) / 2**20
    print(f"release of {len(names)} BLADE datasets ({', '.join(names)}): {len(files)} files, {size:.1f} MiB")
    print(f"  cut (write, publish, zip, check, put in the store)      {cut_s:7.2f} s")
    _, before_s = _timed(lambda: read_published_release(folder, "1.0.0", manifest_sha256=record.manifest_sha256,
                                                        zip_sha256=record.zip_sha256))
    print(f"  before the store: published folder + zip checked         {before_s:7.2f} s")
    colds, warms = [], []
    for i in range(3):
        machine = ArtifactStore.at(tmp / f"machine-{i}", store.root)  # a fresh machine each time: empty cache
        _, materialise_s = _timed(lambda m=machine: m.release_folder(record.manifest_sha256, what="release 1.0.0"))
        machine.forget_release_folder(record.manifest_sha256)
        colds.append(_timed(lambda m=machine: stored_release(record, m))[1])
        warms.append(_timed(lambda m=machine: stored_release(record, m))[1])
        if i == 0:
            print(f"  materialise only (copy + check every file), cold         {materialise_s:7.2f} s "
                  f"({size / materialise_s:.0f} MiB/s)")
    print(f"  scoring's read, cold (materialise + read + check)        {min(colds):7.2f} s (best of 3)")
    print(f"  scoring's read, warm (cached copy read + checked)        {min(warms):7.2f} s (best of 3)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blade", type=Path, default=ROOT.parent / "shared" / "blade" / "datasets")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-store-"))
    try:
        throughput(ArtifactStore.at(tmp / "throughput"))
        if args.blade.is_dir():
            release(ArtifactStore.at(tmp / "app"), tmp, args.blade)
        else:
            print(f"no BLADE datasets at {args.blade}: release figures skipped")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
