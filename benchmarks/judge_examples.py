"""Judging BLADE's ten example analyses (hurricane): seconds per analysis with the offline judge, and LLM calls
per analysis with the llm judge (scripted chat server on 127.0.0.1, cold and warm cache). Prints figures,
asserts nothing. Transform execution/matching is not included (measured by the transform benchmarks).

Goal (issue 10): offline ≤ 0.5 s per analysis beyond executing the agent's code; llm ≤ 6 calls per analysis
(BLADE: 54 for one hurricane analysis).
Run: .venv/bin/python benchmarks/judge_examples.py [../shared/blade]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.judges import decisions_from_release, judge_analysis, make_judge  # noqa: E402
from evaluation.judges.decisions import ground_truth_counts  # noqa: E402
from evaluation.llm import LLMClient, LLMConfig  # noqa: E402
from evaluation.metrics import DatasetRuns, score_runs  # noqa: E402
from evaluation.submissions import read_submission  # noqa: E402
from tests.evaluation.blade_release import blade_release_dataset  # noqa: E402
from tests.evaluation.chat_server import ChatServer  # noqa: E402
from tests.evaluation.test_llm_judge import scripted  # noqa: E402


def model_code_agreement(shared: Path) -> None:
    """Static reading of every expert model's code against the family its specification names."""
    from evaluation.judges.model_code import analyse_model_code

    total = agree = 0
    t = time.perf_counter()
    for folder in sorted((shared / "datasets").iterdir()):
        if not (folder / "annotations.csv").exists():
            continue
        for m in blade_release_dataset(folder).models:
            total += 1
            read = analyse_model_code(m.code)
            agree += m.family in {read.family} | {c.family for c in read.calls}
    print(f"static model reading vs the experts' model family: {agree}/{total} "
          f"({agree / max(total, 1):.1%}), {time.perf_counter() - t:.2f} s incl. reading the nine releases")


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "blade"
    if not shared.is_dir():
        sys.exit(f"no BLADE data at {shared}")
    model_code_agreement(shared)
    t0 = time.perf_counter()
    ds = blade_release_dataset(shared / "datasets" / "hurricane")
    gt = decisions_from_release(ds)
    sub = read_submission(shared / "examples" / "submission_analyses.json", known_datasets=["hurricane"])
    print(f"read release dataset + submission: {time.perf_counter() - t0:.3f} s")

    judge = make_judge("offline")
    times = []
    records = []
    for _ in range(5):
        records = []
        for a in sub.analyses:
            t = time.perf_counter()
            records.append(judge_analysis(gt, a, judge).record)
            times.append(time.perf_counter() - t)
    print(f"offline judge: median {statistics.median(times) * 1000:.2f} ms, max {max(times) * 1000:.2f} ms "
          f"per analysis ({len(times)} judged)")
    t = time.perf_counter()
    scores = score_runs([DatasetRuns(counts=ground_truth_counts(ds), runs=records)], n_bootstrap=1000)
    print(f"metrics incl. 1,000 bootstrap replicates: {time.perf_counter() - t:.3f} s "
          f"(cvar precision {scores.precision['cvar']:.3f}, coverage {scores.coverage['cvar']:.3f})")

    with tempfile.TemporaryDirectory() as cache, ChatServer(scripted) as server:
        for label in ("cold cache", "warm cache"):
            llm = make_judge("llm", client=LLMClient(LLMConfig(base_url=server.base_url, model="scripted",
                                                               cache_dir=Path(cache))))
            per = []
            t = time.perf_counter()
            for a in sub.analyses:
                before = llm.calls  # type: ignore[attr-defined]
                judge_analysis(gt, a, llm)
                per.append(llm.calls - before)  # type: ignore[attr-defined]
            print(f"llm judge, {label}: calls per analysis {per} (max {max(per)}, total {sum(per)}), "
                  f"{(time.perf_counter() - t) / len(per) * 1000:.1f} ms per analysis")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
