"""Release the shared DiscoveryBench data and export it in DiscoveryBench's layout: seconds (prints figures,
asserts nothing).

Each run imports the tree into a fresh SQLite database (not timed), then times ``cut_release`` of every folder
(one snapshot, every file copied and checksummed, release.json, card, changelog, manifest, zip, verification) and
``export_release --format discoverybench`` (the release verified again, the tree and answer keys written).
Best and median over several runs.
Run: .venv/bin/python benchmarks/discoverybench_release.py [PATH]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "discoverybench"
RUNS = 3


def main() -> None:
    from curation.artifacts import ArtifactStore
    from curation.db import make_engine, migrate, session_scope
    from curation.models import Role
    from curation.services.accounts import create_user
    from curation.services.discoverybench_import import import_discoverybench
    from curation.services.release_exports import export_release
    from curation.services.releases import cut_release

    source = Path(sys.argv[1]) if len(sys.argv) > 1 else SHARED
    if not source.is_dir():
        print(f"no DiscoveryBench data at {source}")
        return
    cuts, exports = [], []
    summary = ""
    for _ in range(RUNS):
        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            engine = make_engine(f"sqlite:///{root / 'bench.db'}")
            migrate(engine)
            with session_scope(engine) as session:
                import_discoverybench(session=session, actor=None, path=source, store=root / "store",
                                      max_bytes=500 * 2**20)
                curator = create_user(session=session, actor=None, username="bench", password="bench password 1",
                                      role=Role.CURATOR)
            start = time.perf_counter()
            with session_scope(engine) as session:
                record = cut_release(session=session, actor=curator, version="1.0.0", notes="",
                                     artifacts=ArtifactStore.at(root), store=root / "store")
            cuts.append(time.perf_counter() - start)
            start = time.perf_counter()
            with session_scope(engine) as session:
                export_release(session=session, actor=curator, version="1.0.0", fmt="discoverybench",
                               out=root / "out", artifacts=ArtifactStore.at(root))
            exports.append(time.perf_counter() - start)
            files = sum(c.get("files", 0) for c in record.summary.values())
            tasks = sum(c.get("hypothesis_tasks", 0) for c in record.summary.values())
            summary = f"{len(record.summary)} datasets, {files} files, {tasks} hypothesis tasks"
            engine.dispose()
    print(f"DiscoveryBench release of {source}: {summary}, SQLite, {RUNS} runs")
    print(f"  cut release:                best {min(cuts):.2f} s, median {statistics.median(cuts):.2f} s")
    print(f"  export --format discoverybench: best {min(exports):.2f} s, median {statistics.median(exports):.2f} s")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
