"""Import and export all nine shared BLADE datasets: seconds and peak memory (prints figures, asserts nothing).

Stages: import (parse + validate + store, one transaction), cut a native release (release.json, data, card,
changelog, manifest, zip, and one full check of both), a verified read and a verified native download (what
every comparison and download pays: the folder checked file by file against the recorded MANIFEST hash, the
zip against its recorded hash), export the release in BLADE's layout, then check the exported specs and MCQs
equal the originals. Run on SQLite, and on PostgreSQL when FORKPATHS_BENCH_PG_URL (or the test server) answers.
Run: .venv/bin/python benchmarks/blade_roundtrip.py
"""

from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "blade" / "datasets"
NINE = ["affairs", "amtl", "boxes", "caschools", "crofoot", "fish", "hurricane", "panda_nuts", "reading"]


def _stage(label: str, fn):
    tracemalloc.start()
    t0 = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"  {label:<38} {seconds:7.2f} s   peak Python heap {peak / 2**20:7.1f} MiB")
    return result


def run(url: str, label: str) -> None:
    from sqlmodel import select

    from curation.artifacts import ArtifactStore
    from curation.db import make_engine, migrate, session_scope
    from curation.models import Role, User
    from curation.services.accounts import create_user
    from curation.services.blade_import import import_blade
    from curation.services.release_exports import export_release, release_archive
    from curation.services.releases import cut_release, read_release_for
    from exports.blade_annotations import read_annotations

    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-blade-"))
    src = tmp / "in"
    src.mkdir()
    for name in NINE:
        os.symlink(SHARED / name, src / name)
    engine = make_engine(url)
    migrate(engine)
    print(f"{label}:")
    with session_scope(engine) as s:
        admin = create_user(session=s, actor=None, username=f"bench{uuid.uuid4().hex[:6]}", password="bench password",
                            role=Role.ADMIN)

    def do_import():
        with session_scope(engine) as s:
            return import_blade(session=s, actor=None, path=src, store=tmp / "store", max_bytes=2**30)

    reports = _stage("import nine datasets", do_import)
    print(f"    {sum(r.variables + r.transforms + r.models for r in reports)} decisions, "
          f"{sum(r.alternatives for r in reports)} alternatives, {sum(r.votes for r in reports)} votes, "
          f"{sum(r.mcqs for r in reports)} MCQs")

    def do_cut():
        with session_scope(engine) as s:
            actor = s.get(User, admin.id)
            return cut_release(session=s, actor=actor, version="1.0.0", notes="bench",
                               artifacts=ArtifactStore.at(tmp),
                               store=tmp / "store")

    _stage("cut native release (dir + zip)", do_cut)

    def do_read():  # what every comparison pays per release: folder and zip checked against the recorded hashes
        with session_scope(engine) as s:
            actor = s.get(User, admin.id)
            return read_release_for(session=s, actor=actor, version="1.0.0", artifacts=ArtifactStore.at(tmp))

    _stage("verified read (folder + zip hash)", do_read)

    def do_download():
        with session_scope(engine) as s:
            actor = s.get(User, admin.id)
            return release_archive(session=s, actor=actor, version="1.0.0", fmt="native",
                                   artifacts=ArtifactStore.at(tmp))

    name, data = _stage("verified native download", do_download)
    print(f"    {name}: {len(data) / 2**20:.1f} MiB")

    def do_export():
        with session_scope(engine) as s:
            actor = s.get(User, admin.id)
            return export_release(session=s, actor=actor, version="1.0.0", fmt="blade", out=tmp / "out",
                                  artifacts=ArtifactStore.at(tmp))

    out = _stage("export release in BLADE layout", do_export)

    def compare():
        same = 0
        for name in NINE:
            a = {r.spec_id: r.data for r in read_annotations(SHARED / name / "annotations.csv").rows}
            b = {r.spec_id: r.data for r in read_annotations(out / name / "annotations.csv").rows}
            m1 = json.loads((SHARED / name / "mcq_dataset.json").read_text())
            m2 = json.loads((out / name / "mcq_dataset.json").read_text())
            same += a == b and m1 == m2
        return same

    same = _stage("compare with the originals", compare)
    print(f"    {same}/{len(NINE)} datasets: exported specs and MCQs equal the originals")
    with session_scope(engine) as s:
        s.exec(select(User)).first()
    engine.dispose()


def main() -> None:
    if not SHARED.is_dir():
        print(f"skipped: {SHARED} is absent")
        return
    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-db-"))
    run(f"sqlite:///{tmp / 'bench.db'}", "SQLite")
    pg = os.environ.get("FORKPATHS_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
    try:
        from sqlalchemy import create_engine, text

        schema = f"fp_bench_{uuid.uuid4().hex[:8]}"
        admin = create_engine(pg, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
        with admin.connect() as c:
            c.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001
        print(f"PostgreSQL skipped: {exc}")
    else:
        try:
            run(f"{pg}?options=-csearch_path%3D{schema}", "PostgreSQL")
        finally:
            with admin.connect() as c:
                c.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    print(f"process peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
