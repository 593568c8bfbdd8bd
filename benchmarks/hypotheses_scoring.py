"""Hypotheses scoring (HMS), timed (prints figures, asserts nothing):

1. judge calls and seconds of overhead per query against the scripted OpenAI-compatible server on 127.0.0.1, in
   both modes, with one and with three sub-hypotheses on each side (the server answers at once, so the seconds are forkpaths' own: prompts, HTTP, parsing, caching);
2. re-scoring the same queries from the cache: judge calls (goal 0) and seconds;
3. the leaderboard of 20 hypotheses runs × 250 queries (goal ≤ 500 ms): the service alone and the whole page in
   Streamlit's AppTest (re-render after the kind is chosen).

Run: .venv/bin/python benchmarks/hypotheses_scoring.py
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from curation.bootstrap import initialise  # noqa: E402
from curation.db import session_scope  # noqa: E402
from curation.models import Role, RunStatus, ScoringRun, utcnow  # noqa: E402
from curation.services.leaderboard import leaderboard  # noqa: E402
from curation.settings import Settings  # noqa: E402
from evaluation.hms import GoldHypothesis, HMSJudge, ItemResult, Prediction, score_item  # noqa: E402
from evaluation.hms.formula import settle, variables_from_counts  # noqa: E402
from evaluation.hms.records import Decomposition, PairResult, RelationshipFacet, SubHypothesis  # noqa: E402
from evaluation.llm import LLMClient, LLMConfig  # noqa: E402
from evaluation.tasks.hypotheses import aggregate  # noqa: E402
from tests import factories as f  # noqa: E402
from tests.curation.hms_world import cut_hypotheses_release  # noqa: E402
from tests.evaluation.hms_script import HMSScript, sub  # noqa: E402
from tests.llm_server import ScriptedLLM  # noqa: E402

APP = ROOT / "annotate_app" / "app.py"
N_QUERIES = 50


def _script() -> HMSScript:
    decomps = {}
    for n in range(N_QUERIES):
        decomps[f"gold {n}"] = [sub(f"g{n}", f"context {n}", [f"x{n}", "y"], "positive")]
        decomps[f"pred {n}"] = [sub(f"p{n}", f"setting {n}", [f"x{n}", "z"], "positive and linear")]
    return HMSScript(decompositions=decomps, contexts={(f"context {n}", f"setting {n}"): True
                                                       for n in range(N_QUERIES)},
                     pair_contexts={"P0|G0": True}, variables={"P0|G0": [[1, 1]]}, relationships={"P0|G0": "B"},
                     variables_full='{"sizeA": 2, "sizeB": 2, "intersection": 1, "explanation": "e"}',
                     relationship_full='{"answer": "B"}')


def _script_3x3() -> HMSScript:
    """Three gold and three predicted sub-hypotheses per query, every context pair left to the judge (upstream
    would ask one context question per pair its scan reaches)."""
    decomps = {}
    for n in range(N_QUERIES):
        decomps[f"gold {n}"] = [sub(f"g{n}.{j}", f"context {n}.{j}", [f"x{j}", "y"], "positive") for j in range(3)]
        decomps[f"pred {n}"] = [sub(f"p{n}.{i}", f"setting {n}.{i}", [f"x{i}", "z"], "positive") for i in range(3)]
    return HMSScript(decompositions=decomps,
                     contexts={(f"context {n}.{j}", f"setting {n}.{(j + 1) % 3}"): True
                               for n in range(N_QUERIES) for j in range(3)},
                     variables={f"P{i}|G{(i + 2) % 3}": [[1, 1]] for i in range(3)},
                     relationships={f"P{i}|G{(i + 2) % 3}": "A" for i in range(3)},
                     variables_full='{"sizeA": 6, "sizeB": 6, "intersection": 3, "explanation": "e"}', relationship_full='{"answer": "A"}')


def bench_judge(tmp: Path) -> None:
    for shape, script in (("1x1", _script()), ("3x3", _script_3x3())):
        _bench_judge(tmp / shape, shape, script)


def _bench_judge(tmp: Path, shape: str, script: HMSScript) -> None:
    with ScriptedLLM(script) as server:
        for mode in ("default", "discoverybench"):
            cache = tmp / f"cache-{mode}"
            for label in ("cold cache", "re-score from cache"):
                judge = HMSJudge(LLMClient(LLMConfig(base_url=server.url, model="judge", cache_dir=cache,
                                                     max_retries=0)))
                sent = len(server.requests)
                t = time.perf_counter()
                items = [score_item(ItemResult(task=f"real/test/f{n % 5}/metadata_0/q{n}", dataset=f"f{n % 5}",
                                               question=f"q{n}", status="scored"),
                                    GoldHypothesis(f"gold {n}", "wf"), Prediction(f"pred {n}", "wf"), judge=judge,
                                    mode=mode, datasets=[{"name": "data.csv", "columns": []}])  # type: ignore[arg-type]
                         for n in range(N_QUERIES)]
                seconds = time.perf_counter() - t
                calls = len(server.requests) - sent
                assert all(i.status == "scored" for i in items), [i.message for i in items][:2]
                print(f"{shape} sub-hypotheses, {mode:<15} {label:<20} {N_QUERIES} queries: "
                      f"{calls / N_QUERIES:.1f} judge calls per query "
                      f"(max {max(i.calls for i in items)}), {seconds / N_QUERIES * 1000:.1f} ms per query, "
                      f"HMS {items[0].hms:.3f}")


def _items(rng: random.Random, n: int) -> list[ItemResult]:
    out = []
    for q in range(n):
        folder = f"folder{q % 25:02d}"
        item = ItemResult(task=f"real/test/{folder}/metadata_{q % 7}/q{q}", dataset=folder, status="scored",
                          domain=["sociology", "economics", "biology", "humanities"][q % 4],
                          question_type=["context", "variables", "relationship"][q % 3],
                          gold=Decomposition(source="given", sub_hypo=[SubHypothesis(context="c")]),
                          predicted=Decomposition(source="judge", sub_hypo=[SubHypothesis(context="c")]))
        from evaluation.hms.records import ContextCheck

        item.contexts = [ContextCheck(pred=0, gold=0, match=rng.random() < 0.8, how="judge")]
        g = rng.randint(1, 4)
        item.facets = [PairResult(pred=0, gold=0, variables=variables_from_counts(g, g, rng.randint(0, g)),
                                  relationship=RelationshipFacet(level="B", score=rng.choice([0.0, 0.5, 1.0])))]
        out.append(settle(item, "default"))
    return out


def bench_leaderboard(tmp: Path) -> None:
    os.environ["FORKPATHS_DATA_DIR"] = str(tmp / "data")
    os.environ["FORKPATHS_ADMIN_PASSWORD"] = "admin password 1"
    os.environ["FORKPATHS_LOAD_STARTER_DATASETS"] = "false"
    os.environ.pop("FORKPATHS_DATABASE_URL", None)
    settings = Settings()
    report = initialise(settings)
    engine = report.engine
    cut_hypotheses_release(engine, settings.releases_store, tmp)
    evaluator = f.user(engine, "bench-eva", Role.EVALUATOR)
    rng = random.Random(0)
    t = time.perf_counter()
    scores = [aggregate(_items(rng, 250)) for _ in range(20)]
    print(f"aggregation of 250 queries (HMS + clustered bootstrap of 1,000 overall, per folder, domain and question "
          f"type): {(time.perf_counter() - t) / 20 * 1000:.0f} ms per run")
    with session_scope(engine) as s:
        for n, sc in enumerate(scores):
            s.add(ScoringRun(kind="hypotheses", agent=f"agent{n:02d}", model_name="m", release_version="2.0.0",
                             ground_truth_hash="x", dataset_hashes={}, submission_sha256="x", evaluator_version="x",
                             judge={"name": "hms"}, mode="default", k=10, source="cli", created_by_id=evaluator.id,
                             status=RunStatus.SUCCEEDED.value, scores=sc, scores_effective=sc, finished_at=utcnow()))
    times = []
    for _ in range(10):
        with session_scope(engine) as s:
            t = time.perf_counter()
            rows = leaderboard(session=s, actor=evaluator, release_version="2.0.0",
                               artifacts=settings.artifact_store(), kind="hypotheses")
            times.append(time.perf_counter() - t)
    print(f"leaderboard service, 20 hypotheses runs × 250 queries: median {statistics.median(times) * 1000:.1f} ms "
          f"({len(rows)} rows)")

    from streamlit.testing.v1 import AppTest

    from curation.services.sessions import start_auth_session

    at = AppTest.from_file(str(APP), default_timeout=120)
    with session_scope(engine) as s:
        at.session_state["fp.session_token"] = start_auth_session(session=s, user=evaluator,
                                                                  policy=settings.session_policy)
    at.run()
    at.switch_page("app_pages/leaderboard.py")
    at.run()
    next(sb for sb in at.selectbox if sb.label == "Kind of task").set_value("hypotheses")
    t = time.perf_counter()
    at.run()
    first = time.perf_counter() - t
    assert not at.exception, at.exception
    assert len(at.dataframe[0].value) == 20, "the leaderboard did not render"
    renders = []
    for _ in range(5):
        t = time.perf_counter()
        at.run()
        renders.append(time.perf_counter() - t)
    print(f"leaderboard page (AppTest: table, HMS chart, facet judge card), 20 runs × 250 queries: first render "
          f"{first * 1000:.0f} ms, re-render median {statistics.median(renders) * 1000:.0f} ms")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    with tempfile.TemporaryDirectory() as d:
        bench_judge(Path(d))
        bench_leaderboard(Path(d))
