"""The reproducibility facet's cost per item beyond the model's own time, its LLM calls per item, and re-judging
from the cache (issue 19; prints figures, asserts nothing).

A run of N BLADE analyses with workflows (each workflow worded differently, so no prompt is shared) is judged by
the scripted inspector on 127.0.0.1 (tests/llm_server.py), which answers at once: the time the server spends per
answer is measured and subtracted, so what remains is forkpaths' own overhead per item (building prompts, HTTP,
parsing, both codes in the bubblewrap sandbox, the result). The same run is then judged again with a fresh client
on the same cache: every answer comes from the cache.
Run: .venv/bin/python benchmarks/reproducibility.py [items]   (default: 30)
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    from evaluation.llm import LLMClient, LLMConfig
    from evaluation.sandbox import prewarm
    from evaluation.scoring import RunBudget
    from evaluation.tasks import ScoringContext, ScoringLimits, task_kind
    from tests.evaluation.repro_world import blade_file, inspector_responder, release_folder
    from tests.llm_server import ScriptedLLM

    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-repro-"))
    release, folder = release_folder(tmp)
    scenarios = ["good"] * (n - n // 3) + ["differ"] * (n // 3)
    files = [("toy.json", blade_file(*[f"Step {i}: fit y on x by OLS and report the slope (variant {i}). "
                                       f"[scenario: {sc}]" for i, sc in enumerate(scenarios)]))]
    server_seconds = [0.0]

    def timed(request: dict[str, Any]) -> str:
        start = time.perf_counter()
        try:
            return inspector_responder(request)
        finally:
            server_seconds[0] += time.perf_counter() - start

    kind = task_kind("reproducibility")
    prewarm(wait=True)  # the app prewarms the sandbox at start; a benchmark of the facet should not pay for it
    with ScriptedLLM(timed) as server:
        def run(label: str) -> tuple[Any, LLMClient, float, float]:
            client = LLMClient(LLMConfig(base_url=server.url, model="inspector-bench", cache_dir=tmp / "cache",
                                         max_retries=0))
            ctx = ScoringContext(release=release, release_folder=folder, files=files, judge=lambda: None,
                                 mode="default", k=10, ground_truth_hash="", limits=ScoringLimits(),
                                 budget=RunBudget(), llm=lambda: client)
            server_seconds[0] = 0.0
            start = time.perf_counter()
            scored = kind.score(ctx)
            return scored, client, time.perf_counter() - start, server_seconds[0]

        first, client1, wall1, model1 = run("first")
        again, client2, wall2, model2 = run("cache")
    items = json.loads(first.result_bytes)["items"]
    calls = [i["calls"] for i in items]
    sandbox = [i["original_run"]["seconds"] + (i["inspector_run"] or {}).get("seconds", 0.0) for i in items]
    code = [i["original_run"]["code_seconds"] + (i["inspector_run"] or {}).get("code_seconds", 0.0) for i in items]
    asked = [i["calls"] + i["cached"] for i in items]
    outcomes: dict[str, int] = {}
    for i in items:
        outcomes[i["outcome"]] = outcomes.get(i["outcome"], 0) + 1
    print(f"reproducibility facet, {len(items)} items ({', '.join(f'{v} {k}' for k, v in outcomes.items())})")
    print(f"  first judging:   {wall1:.2f} s wall, {model1:.3f} s in the model (scripted server)")
    per_item = (wall1 - model1) / len(items)
    print(f"  time per item beyond the model: {per_item:.3f} s, of which the two sandbox jobs "
          f"{statistics.mean(sandbox):.3f} s and the analyses' own code inside them {statistics.mean(code):.3f} s")
    print(f"  overhead per item beyond the model and the analyses' own code: {per_item - statistics.mean(code):.3f} s"
          "  [goal: <= 0.5 s]")
    print(f"  LLM calls asked per item: mean {statistics.mean(asked):.2f}, max {max(asked)} [goal: <= 3]; "
          f"sent per item (identical prompts answered by the cache): mean {statistics.mean(calls):.2f}; "
          f"requests sent {client1.calls}")
    print(f"  re-judging from the cache: {client2.calls} calls sent, {client2.cache_hits} answers from the cache, "
          f"{wall2:.2f} s wall ({(wall2 - model2) / len(items):.3f} s per item, the sandbox runs again)  [goal: 0 calls]")
    same = [a["outcome"] for a in json.loads(again.result_bytes)["items"]] == [i["outcome"] for i in items]
    print(f"  same outcomes when re-judged: {same}")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
