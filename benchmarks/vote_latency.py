"""Vote commit latency under 20 concurrent voters, on SQLite and on PostgreSQL (issue 9; prints figures).

Saturated: each of 20 analysts casts --votes votes as fast as the database lets them, all starting at once;
every vote is one `session_scope` transaction around `cast_vote` (what one click in the review page costs the
database), all in one Python process as in the app. Latency then measures the queue: N voters x the CPU time
of one vote. Paced: the same 20 analysts click every --think seconds on average (jittered): a brisk human
pace, 40 votes/s in all, which is what the app sees in a review session.
Goal: p95 ≤ 50 ms on PostgreSQL.
Run: .venv/bin/python benchmarks/vote_latency.py [--votes N] [--pg-url URL]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, text  # noqa: E402

from curation.db import make_engine, migrate, session_scope  # noqa: E402
from curation.models import Role, Stage  # noqa: E402
from curation.services.analyses.review_queue import review_queue  # noqa: E402
from curation.services.annotation import submit_analysis  # noqa: E402
from curation.services.stages import set_stage  # noqa: E402
from curation.services.votes import QUESTIONS, cast_vote  # noqa: E402
from tests import factories as f  # noqa: E402

VOTERS = 20


def seed(engine, store: Path):
    analysts = [f.user(engine, f"v{i:02d}") for i in range(VOTERS)]
    ds = f.dataset(engine, store, assign=analysts)
    for a in analysts:
        f.full_analysis(engine, a, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=a, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=f.user(engine, "curator", Role.CURATOR), dataset_id=ds.id, stage=Stage.REVIEW)
    plans = {}
    for a in analysts:
        with session_scope(engine) as s:
            items = [i for i in review_queue(session=s, actor=a, dataset_id=ds.id).items if not i.own]
        plans[a.id] = [(i.target_kind, i.target_id, q.key) for i in items for q in QUESTIONS[i.kind]]
    return analysts, plans


def run(engine, store: Path, votes_each: int, paced_each: int, think_s: float) -> list[float]:
    analysts, plans = seed(engine, store)
    serial = []
    for kind, tid, q in plans[analysts[0].id][:50]:  # one voter alone: the floor without contention
        t0 = time.perf_counter()
        with session_scope(engine) as s:
            cast_vote(session=s, actor=analysts[0], target_kind=kind, target_id=tid, question=q, answer="yes" if q == "justifiable" else "unsure")
        serial.append(time.perf_counter() - t0)
    report("  alone", serial)
    start = threading.Barrier(VOTERS)
    latencies: list[float] = []
    lock = threading.Lock()

    def work(actor):
        mine = []
        start.wait()
        for kind, tid, q in plans[actor.id][:votes_each]:
            t0 = time.perf_counter()
            with session_scope(engine) as s:
                cast_vote(session=s, actor=actor, target_kind=kind, target_id=tid, question=q, answer="yes")
            mine.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(mine)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=VOTERS) as pool:
        list(pool.map(work, analysts))
    wall = time.perf_counter() - t0
    print(f"  {len(latencies)} votes in {wall:.1f} s ({len(latencies) / wall:.0f} votes/s)")

    # 20 analysts at a brisk human pace: each clicks a vote every think_s seconds on average (jittered), on
    # the same questions with another answer ("unsure"), so the votes are writes (the verdict keeps its "yes")
    paced: list[float] = []
    start_paced = threading.Barrier(VOTERS)

    def click(actor):
        rng, mine = random.Random(actor.id), []
        start_paced.wait()
        for kind, tid, q in plans[actor.id][:paced_each]:
            time.sleep(rng.uniform(0, 2 * think_s))
            t0 = time.perf_counter()
            with session_scope(engine) as s:
                cast_vote(session=s, actor=actor, target_kind=kind, target_id=tid, question=q,
                          answer="yes" if q == "justifiable" else "unsure")
            mine.append(time.perf_counter() - t0)
        with lock:
            paced.extend(mine)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=VOTERS) as pool:
        list(pool.map(click, analysts))
    wall = time.perf_counter() - t0
    print(f"  paced: {len(paced)} votes in {wall:.1f} s ({len(paced) / wall:.0f} votes/s), "
          f"one click per {think_s:g} s per analyst on average")
    report("  paced", paced)
    return latencies


def report(name: str, latencies: list[float]) -> None:
    qs = statistics.quantiles([x * 1000 for x in latencies], n=100)
    print(f"{name:<11} p50 {qs[49]:6.1f} ms   p95 {qs[94]:6.1f} ms   max {max(latencies) * 1000:6.1f} ms")


def main() -> None:
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    p = argparse.ArgumentParser()
    p.add_argument("--votes", type=int, default=200, help="votes per voter (at most 228 with this seed)")
    p.add_argument("--paced", type=int, default=40, help="votes per voter in the paced run")
    p.add_argument("--think", type=float, default=0.5, help="mean seconds between one voter's clicks (paced)")
    p.add_argument("--pg-url", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-votes-"))
    (tmp / "store").mkdir()
    print(f"{VOTERS} concurrent voters × {args.votes} votes")
    print("SQLite (WAL):")
    eng = make_engine(f"sqlite:///{tmp / 'bench.db'}")
    migrate(eng)
    report("SQLite", run(eng, tmp / "store", args.votes, args.paced, args.think))
    eng.dispose()

    schema = f"fp_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(args.pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        print("PostgreSQL:")
        eng = make_engine(args.pg_url, pool_size=VOTERS, connect_args={"options": f"-csearch_path={schema}"})
        migrate(eng)
        (tmp / "store2").mkdir()
        report("PostgreSQL", run(eng, tmp / "store2", args.votes, args.paced, args.think))
        print(f"load average after: {os.getloadavg()[0]:.1f}")
        eng.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
