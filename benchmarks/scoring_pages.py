"""Scoring in the browser, timed (prints figures, asserts nothing):

1. leaderboard re-render with 50 runs × 12 datasets (goal ≤ 500 ms): the service alone and the whole page in
   Streamlit's AppTest (first render, then re-render);
2. drill-down render of a 20-analysis dataset (BLADE's multi-run example, doubled);
3. re-scoring a run after a release changed its ground truth: offline, and with the llm judge through a scripted
   OpenAI-compatible server on 127.0.0.1 (cold cache vs re-score from cache: LLM calls and seconds).

Run: .venv/bin/python benchmarks/scoring_pages.py [../shared/blade]
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlmodel import select  # noqa: E402

from curation.bootstrap import initialise  # noqa: E402
from curation.db import session_scope  # noqa: E402
from curation.models import ReleaseRecord, Role, RunStatus, ScoringRun, User, utcnow  # noqa: E402
from curation.services import releases as rel  # noqa: E402
from curation.services.blade_import import import_blade  # noqa: E402
from curation.services.leaderboard import leaderboard  # noqa: E402
from curation.services.scoring import JudgeSettings, execute_run, register_run, rescore_run, scores_summary  # noqa: E402
from curation.settings import Settings  # noqa: E402
from evaluation.llm import LLMConfig  # noqa: E402
from evaluation.records import GroundTruthCounts, RunRecord, VariableMatchRecord  # noqa: E402
from evaluation.results import AnalysisResult, DatasetResult, build_result  # noqa: E402
from tests import factories as f  # noqa: E402

APP = ROOT / "annotate_app" / "app.py"


def _env(tmp: Path) -> Settings:
    os.environ["FORKPATHS_DATA_DIR"] = str(tmp / "data")
    os.environ["FORKPATHS_ADMIN_PASSWORD"] = "admin password 1"
    os.environ["FORKPATHS_LOAD_STARTER_DATASETS"] = "false"
    os.environ.pop("FORKPATHS_DATABASE_URL", None)
    return Settings()


def _app(user: User):
    from streamlit.testing.v1 import AppTest

    from curation.db import make_engine
    from curation.services.sessions import start_auth_session

    at = AppTest.from_file(str(APP), default_timeout=120)
    settings = Settings()
    engine = make_engine(settings.resolved_database_url)
    with session_scope(engine) as s:  # signed in as the sign-in page does: a server-side session
        at.session_state["fp.session_token"] = start_auth_session(session=s, user=user,
                                                                  policy=settings.session_policy)
    engine.dispose()
    return at


def _synthetic_result(seed: int):
    rng = random.Random(seed)
    datasets = []
    for d in range(12):
        gt = [f"IV: concept {i}" for i in range(6)]
        analyses = []
        for a in range(10):
            hit = rng.sample(gt, rng.randint(0, 4))
            rec = RunRecord(key=str(a), matched_cvars=hit, matched_cvars2=[f"agent {h}" for h in hit], num_cvars2=5,
                            num_cvars2_shown=5, matched_models=["ols"] if rng.random() < 0.6 else [],
                            matched_models_cvar=["ols [m1]"] if rng.random() < 0.3 else [])
            variables = [VariableMatchRecord(gt_id=f"g{i}", gt_text=h, agent_index=i, agent_text=f"agent {h}",
                                             role="IV", similarity=9, judge="offline", rationale="rule")
                         for i, h in enumerate(hit)]
            analyses.append(AnalysisResult(key=str(a), status="ok", record=rec, variables=variables))
        datasets.append(DatasetResult(dataset=f"dataset{d:02d}", counts=GroundTruthCounts(
            dataset=f"dataset{d:02d}", num_cvars=6, num_models=4, num_models_unique=2), analyses=analyses))
    return build_result(datasets, release_version="1.0.0", ground_truth_hash="h" * 64, judge={"name": "offline"})


def bench_leaderboard(tmp: Path) -> None:
    settings = _env(tmp / "lb")
    report = initialise(settings)
    evaluator = f.user(report.engine, "evie", Role.EVALUATOR)
    t = time.perf_counter()
    summaries = [scores_summary(_synthetic_result(seed)) for seed in range(5)]
    per = (time.perf_counter() - t) / 5
    print(f"scores summary of one 12-dataset × 10-analysis run (overall + 12 per-dataset bootstraps of 1,000): "
          f"{per:.2f} s (paid once, when the run finishes or an override is saved)")
    with session_scope(report.engine) as s:
        s.add(ReleaseRecord(version="1.0.0", format_version="1", path="1.0.0", manifest_sha256="0" * 64,
                            summary={f"dataset{d:02d}": {} for d in range(12)}))
        for i in range(50):
            s.add(ScoringRun(kind="analyses", agent=f"agent-{i % 7}", model_name=f"model-{i % 3}", release_version="1.0.0",
                             ground_truth_hash="h" * 64, dataset_hashes={f"dataset{d:02d}": "x" for d in range(12)},
                             submission_sha256="s" * 64, evaluator_version="0.1.0", judge={"name": "offline"},
                             status=RunStatus.SUCCEEDED.value, scores=summaries[i % 5],
                             scores_effective=summaries[i % 5], finished_at=utcnow()))
    times = []
    for _ in range(20):
        t = time.perf_counter()
        with session_scope(report.engine) as s:
            rows = leaderboard(session=s, actor=evaluator, release_version="1.0.0",
                               artifacts=settings.artifact_store())
        times.append(time.perf_counter() - t)
    print(f"leaderboard service, 50 runs × 12 datasets: median {statistics.median(times) * 1000:.1f} ms "
          f"({len(rows)} rows)")
    at = _app(evaluator)
    t = time.perf_counter()
    at.run()
    first = time.perf_counter() - t
    assert not at.exception, at.exception
    renders = []
    for _ in range(5):
        t = time.perf_counter()
        at.run()
        renders.append(time.perf_counter() - t)
    print(f"leaderboard page (AppTest, table + 2 charts + judge card), 50 runs × 12 datasets: first render "
          f"{first * 1000:.0f} ms, re-render median {statistics.median(renders) * 1000:.0f} ms (goal ≤ 500 ms)")
    at.selectbox(key="leaderboard.dataset").select("dataset05")
    t = time.perf_counter()
    at.run()
    print(f"  filtered to one dataset: {(time.perf_counter() - t) * 1000:.0f} ms")
    report.engine.dispose()


def bench_drilldown_and_rescore(tmp: Path, shared: Path) -> None:
    settings = _env(tmp / "dd")
    report = initialise(settings)
    engine = report.engine
    curator = f.user(engine, "cura", Role.CURATOR)
    evaluator = f.user(engine, "evie", Role.EVALUATOR)
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared / "datasets" / "hurricane", store=settings.datasets_store,
                     max_bytes=200 * 2**20)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=settings.artifact_store(),
                        store=settings.datasets_store)
    multi = json.loads((shared / "examples" / "multirun_analyses.json").read_text())
    multi["analyses"].update({str(int(k) + 10): v for k, v in list(multi["analyses"].items())})
    multi["n"] = 20
    data = json.dumps(multi).encode()
    kw = dict(artifacts=settings.artifact_store())
    with session_scope(engine) as s:
        run = register_run(session=s, actor=evaluator, release_version="1.0.0", files=[("m20.json", data)],
                           agent="react", max_bytes=settings.max_submission_bytes, **kw)
    t = time.perf_counter()
    run = execute_run(engine, run.id, **kw)
    print(f"scoring 20 analyses offline (incl. registration of progress per analysis and the summary): "
          f"{time.perf_counter() - t:.2f} s, status {run.status}")
    at = _app(evaluator)
    at.run()
    at.switch_page("app_pages/run_details.py")
    t = time.perf_counter()
    at.run()
    first = time.perf_counter() - t
    assert not at.exception, at.exception
    assert "Run details" in at.title[0].value and len(at.dataframe[0].value) == 20, "the drill-down did not render"
    renders = []
    for key in ("5", "12", "19"):
        at.selectbox(key="details.analysis").select(key)
        t = time.perf_counter()
        at.run()
        renders.append(time.perf_counter() - t)
    print(f"drill-down page, 20-analysis dataset: first render {first * 1000:.0f} ms, switching analysis "
          f"median {statistics.median(renders) * 1000:.0f} ms")

    # a release changes the ground truth: re-score from cache
    from curation.models import ConceptualVariable
    from tests.evaluation.chat_server import ChatServer
    from tests.evaluation.test_llm_judge import scripted

    with ChatServer(scripted) as server:
        judges = JudgeSettings(llm=LLMConfig(base_url=server.base_url, model="scripted",
                                             cache_dir=settings.llm_cache_dir))
        with session_scope(engine) as s:
            llm_run = register_run(session=s, actor=evaluator, release_version="1.0.0", files=[("m20.json", data)],
                                   agent="react", judge="llm", judges=judges, max_bytes=settings.max_submission_bytes,
                                   **kw)
        before = len(server.requests)
        t = time.perf_counter()
        llm_run = execute_run(engine, llm_run.id, judges=judges, **kw)
        cold = time.perf_counter() - t
        cold_calls = len(server.requests) - before
        with session_scope(engine) as s:
            var = s.exec(select(ConceptualVariable).order_by(ConceptualVariable.id)).first()
            var.rationale = (var.rationale or "") + " (clarified)"
            s.add(var)
        with session_scope(engine) as s:
            rel.cut_release(session=s, actor=curator, version="1.1.0", notes="",
                            artifacts=settings.artifact_store(), store=settings.datasets_store)
        for label, old, js in (("offline", run, None), ("llm", llm_run, judges)):
            before = len(server.requests)
            t = time.perf_counter()
            with session_scope(engine) as s:
                new = rescore_run(session=s, actor=evaluator, run_id=old.id, release_version="1.1.0",
                                  max_bytes=settings.max_submission_bytes, judges=js, **kw)
            new = execute_run(engine, new.id, judges=js or JudgeSettings(), **kw)
            took = time.perf_counter() - t
            extra = (f", LLM calls {len(server.requests) - before} (first scoring: {cold_calls} calls, "
                     f"{cold:.2f} s)") if label == "llm" else ""
            print(f"re-score on release 1.1.0 after a ground-truth change, {label} judge, 20 analyses: "
                  f"{took:.2f} s, {new.status}{extra}")
    engine.dispose()


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "blade"
    with tempfile.TemporaryDirectory() as tmp:
        bench_leaderboard(Path(tmp))
        if shared.is_dir():
            bench_drilldown_and_rescore(Path(tmp), shared)
        else:
            print(f"no BLADE data at {shared}: drill-down and re-scoring benchmarks skipped")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
