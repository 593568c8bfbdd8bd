"""Scoring with the offline judge, engine only (no database, no queue): one sandbox job per analysis against one
batched job per file (evaluation/sandbox/batch.py), and two scoring processes side by side.

The file is BLADE's hurricane multi-run example (10 analyses) repeated ``--repeat`` times; the ground truth is
built once before timing. For each way it prints wall seconds, analyses per second, and CPU seconds per analysis
of the scoring process and of its sandbox (the template process and every job it forked, killed ones included:
the benchmark runs in a cgroup of its own where the machine allows, :class:`proc_cpu.OwnCgroup`). A job converts
a repeated code once (the measurer's memo), so the same figure is also printed for the 10 analyses once each: what
new code costs. ``2 processes`` runs two scorers at once, each on its own copy of the file, each with its own sandbox (what two
``forkpaths worker`` processes on 2 cores do, without the database). Also the fixed cost of a run: scoring a file of
1 analysis against one of N, the ground truth loaded from its cache and the result with its bootstrap CIs built, as
the analyses kind does. Prints figures only; nothing is asserted.

Run: ``.venv/bin/python benchmarks/scoring_batch.py [--repeat 5]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from proc_cpu import OwnCgroup, load, machine_speed  # noqa: E402 - benchmarks/ is this script's folder

BLADE = ROOT.parent / "shared" / "blade"


def _setup(cache: Path, repeat: int):  # noqa: ANN202
    from evaluation.groundtruth import sources_from_blade_folders
    from evaluation.submissions import parse_submission
    from evaluation.transform_credit import transform_credit

    blade = BLADE if BLADE.is_dir() else Path("/work/shared/blade")
    source = sources_from_blade_folders([blade / "datasets" / "hurricane"])[0]
    credit = transform_credit(source.dataset, source.data_path, cache_dir=cache)
    data = json.loads((blade / "examples" / "multirun_analyses.json").read_text())
    items = list(data["analyses"].items())
    big = dict(data, n=len(items) * repeat, analyses={f"{k}_{i}": v for i in range(repeat) for k, v in items})
    return source, credit, parse_submission(json.dumps(big).encode(), label="bench.json"), data


def _score(source, credit, submission, batched: bool):  # noqa: ANN001, ANN202
    from evaluation.judges.offline import OfflineJudge
    from evaluation.scoring import RunBudget, score_submission

    return score_submission(source.dataset, submission, judge=OfflineJudge(), transform_matcher=credit.match,
                            units=credit.units, budget=RunBudget(analysis_s=60.0),
                            transform_batch=credit.match_batch if batched else None)


def _full_run(source, cache: Path, submission) -> None:  # noqa: ANN001
    """What one run of the analyses kind does for one file: the ground truth from its cache, every analysis,
    the result with its bootstrap CIs."""
    from evaluation.judges.offline import OfflineJudge
    from evaluation.results import build_result
    from evaluation.scoring import RunBudget, score_submission
    from evaluation.transform_credit import transform_credit

    credit = transform_credit(source.dataset, source.data_path, cache_dir=cache)
    scored = score_submission(source.dataset, submission, judge=OfflineJudge(), transform_matcher=credit.match,
                              units=credit.units, budget=RunBudget(analysis_s=60.0),
                              transform_batch=credit.match_batch)
    build_result([scored], release_version="bench", ground_truth_hash="x", judge=OfflineJudge().configuration(),
                 transform_matcher={}, mode="default", k=10)


def _worker(cache: str, repeat: int, start: multiprocessing.synchronize.Event, out: multiprocessing.Queue) -> None:
    from evaluation import sandbox

    source, credit, submission, _ = _setup(Path(cache), repeat)
    sandbox.prewarm(wait=True)
    _score(source, credit, submission, True)  # warm
    out.put(("ready", 0))
    start.wait()
    _score(source, credit, submission, True)
    out.put(("done", len(submission.analyses)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="copies of the 10-analysis example in the file")
    args = parser.parse_args()
    from evaluation import sandbox
    from evaluation.submissions import parse_submission

    meter = OwnCgroup()  # before the sandbox starts: every process it forks counts, killed ones too
    print(f"at start: {load()}; {machine_speed()}; CPU counted per {meter.how}")
    with tempfile.TemporaryDirectory(prefix="scoring-bench-") as tmp:
        cache = Path(tmp)
        source, credit, submission, example = _setup(cache, args.repeat)
        n = len(submission.analyses)
        sandbox.prewarm(wait=True)
        _score(source, credit, submission, True)  # warm every lazy import
        results = {}
        for label, batched in (("one sandbox job per analysis", False), ("one batched job per file", True)):
            t0, c0 = time.perf_counter(), meter.cpu()
            scored = _score(source, credit, submission, batched)
            wall, cpu = time.perf_counter() - t0, meter.cpu() - c0
            results[label] = scored.model_dump_json()
            print(f"{label:<30} {n} analyses in {wall:6.2f} s -> {n / wall:5.1f} analyses/s; CPU {cpu:5.2f} s "
                  f"({cpu / n * 1000:.0f} ms per analysis, scorer and sandbox)")
        same = len(set(results.values())) == 1
        print(f"  the two give {'identical' if same else 'DIFFERENT'} results")
        distinct = parse_submission(json.dumps(example).encode(), label="distinct.json")
        _score(source, credit, distinct, True)
        t0, c0 = time.perf_counter(), meter.cpu()
        _score(source, credit, distinct, True)
        wall, cpu = time.perf_counter() - t0, meter.cpu() - c0
        m = len(distinct.analyses)
        print(f"{'batched, each analysis once':<30} {m} analyses in {wall:6.2f} s -> {m / wall:5.1f} analyses/s; "
              f"CPU {cpu:5.2f} s ({cpu / m * 1000:.0f} ms per analysis: no repeated code)")

        one = dict(example, n=1, analyses=dict(list(example["analyses"].items())[:1]))
        small = parse_submission(json.dumps(one).encode(), label="one.json")
        times = {}
        for label, sub in (("1", small), ("N", submission)):
            _full_run(source, cache, sub)
            t0, c0 = time.perf_counter(), meter.cpu()
            _full_run(source, cache, sub)
            times[label] = (time.perf_counter() - t0, meter.cpu() - c0)
        per_wall = (times["N"][0] - times["1"][0]) / (n - 1)
        per_cpu = (times["N"][1] - times["1"][1]) / (n - 1)
        print(f"a run (ground truth from its cache, scoring, result with bootstrap CIs): 1 analysis "
              f"{times['1'][0]:.2f} s wall / {times['1'][1]:.2f} s CPU, {n} analyses {times['N'][0]:.2f} s / "
              f"{times['N'][1]:.2f} s -> fixed cost {times['1'][0] - per_wall:.2f} s wall, "
              f"{times['1'][1] - per_cpu:.2f} s CPU per run")
        sandbox.shutdown()

        context = multiprocessing.get_context("spawn")
        start, out = context.Event(), context.Queue()
        procs = [context.Process(target=_worker, args=(tmp, args.repeat, start, out)) for _ in range(2)]
        for p in procs:
            p.start()
        for _ in procs:
            out.get()  # each has set up and warmed its sandbox, and waits for the start signal
        time.sleep(1.0)  # the spare job processes they fork ahead settle
        t0, c0 = time.perf_counter(), meter.cpu()
        start.set()
        total = sum(out.get()[1] for _ in procs)
        wall, cpu = time.perf_counter() - t0, meter.cpu() - c0
        for p in procs:
            p.join()
        print(f"2 processes, batched, side by side: {total} analyses in {wall:.2f} s -> {total / wall:.1f} analyses/s; "
              f"CPU {cpu:.2f} s ({cpu / total * 1000:.0f} ms per analysis) -> on 2 idle cores about "
              f"{2 / (cpu / total):.0f} analyses/s")
    print(f"at end: {load()}")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
