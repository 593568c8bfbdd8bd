"""Agent runs against the scripted chat-completions server (issue 18; prints figures, asserts nothing).

1. Overhead per task beyond the model's own time, through the whole job (prompt building, HTTP, validation,
   transcript file, the task's row and the run's totals in one transaction, progress): one-shot (goal 0.3 s or
   less) and ReAct per tool call (goal 0.3 s or less per call; the sandbox runs each cell in a fresh process).
   The figure is (time from the job's start to the last task stored − the model's time) / tasks.
2. Tasks per minute with the scripted model answering after a fixed delay, with 1 and 2 workers: first the
   app's in-process job threads on SQLite, then (when PostgreSQL answers at FORKPATHS_BENCH_PG_URL, default
   127.0.0.1:5432/test, in a schema of its own, dropped after) 1 and 2 `forkpaths worker` processes taking the
   jobs from procrastinate's queue: four agent runs of N task runs each are queued at once. The worker
   processes are started (and ready) before the jobs are queued; the figure runs from the first job's start to
   the last task run stored.

Scoring the generated submissions is not timed here (benchmarks/scoring_pages.py and queue_throughput.py).
Run: .venv/bin/python benchmarks/agent_runs.py [tasks]   (default 20)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BLADE = ROOT.parent / "shared" / "blade" / "datasets"
ANALYSIS = {"cvars": {"ivs": [{"description": "name", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('alldeaths ~ masfem', data=df).fit()"}
MODEL_DELAY_S = 0.25
PG_URL = os.environ.get("FORKPATHS_BENCH_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
# a `forkpaths worker` whose agent runs stop once every task run is stored (scoring is timed elsewhere)
WORKER = """
import sys
import curation.services.agent_runs as ar
from curation.services.background_jobs import JobOutcome
ar._submit_and_score = lambda *a, **k: JobOutcome("succeeded", "not scored (benchmark)")
from curation.cli import main
sys.exit(main(["worker"]))
"""


def _measured(engine: Any, run_ids: list[int], job_ids: list[int]) -> tuple[float, float, int, int]:
    from sqlmodel import select

    from curation.db import session_scope
    from curation.models import AgentTaskRun, BackgroundJob

    with session_scope(engine) as s:
        rows = s.exec(select(AgentTaskRun).where(AgentTaskRun.agent_run_id.in_(run_ids))).all()  # type: ignore
        starts = [s.get(BackgroundJob, j).started_at for j in job_ids]
    elapsed = (max(r.finished_at for r in rows) - min(starts)).total_seconds()
    return elapsed, sum(r.model_seconds for r in rows), len(rows), sum(r.tool_calls for r in rows)


def _world(settings: Any) -> tuple[Any, Any, Any]:
    """A fresh database with the hurricane release: (engine, curator, evaluator)."""
    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.models import Role
    from curation.services import releases as rel
    from curation.services.blade_import import import_blade
    from tests import factories as f

    engine = initialise(settings).engine
    curator = f.user(engine, "cleo", Role.CURATOR)
    evaluator = f.user(engine, "evie", Role.EVALUATOR)
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=BLADE / "hurricane", store=settings.datasets_store,
                     max_bytes=200 * 2**20)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=settings.artifact_store(),
                        store=settings.datasets_store)
    return engine, curator, evaluator


def _pg_workers(n: int, answer: dict[str, Any]) -> None:
    """Tasks per minute with 1 and 2 `forkpaths worker` processes on PostgreSQL."""
    from sqlalchemy import create_engine, text

    from curation.db import session_scope
    from curation.services import agent_runs as ar
    from curation.services.jobs import enqueue_job
    from curation.settings import Settings
    from tests.llm_server import ScriptedLLM

    try:
        admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 3})
        with admin.connect() as conn:
            conn.execute(text("select 1"))
    except Exception as exc:  # noqa: BLE001 - a benchmark says why it skipped
        print(f"PostgreSQL workers: skipped, {PG_URL.split('@')[-1]} does not answer ({type(exc).__name__})")
        return
    slow = {**answer, "delay": MODEL_DELAY_S}
    for workers in (1, 2):
        schema = f"fp_bench_agent_{uuid.uuid4().hex[:10]}"
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        data = Path(tempfile.mkdtemp(prefix="fp-bench-agent-pg-"))
        url = f"{PG_URL}?options=-csearch_path%3D{schema}"
        settings = Settings(data_dir=data, database_url=url)
        procs: list[subprocess.Popen[bytes]] = []
        try:
            engine, _curator, evaluator = _world(settings)
            env = dict(os.environ, FORKPATHS_DATA_DIR=str(data), FORKPATHS_DATABASE_URL=url,
                       FORKPATHS_LOAD_STARTER_DATASETS="false", FORKPATHS_ADMIN_PASSWORD="bench password")
            logs = [data / f"worker{i}.log" for i in range(workers)]
            for log in logs:
                procs.append(subprocess.Popen([sys.executable, "-c", WORKER], cwd=ROOT, env=env,
                                              stdout=log.open("wb"), stderr=subprocess.STDOUT))
            deadline = time.monotonic() + 120
            while not all("takes scoring runs" in log.read_text(errors="replace") for log in logs):
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    raise RuntimeError("a worker did not start: " + logs[0].read_text(errors="replace")[-2000:])
                time.sleep(0.2)
            time.sleep(1.0)  # listening on the queue
            with ScriptedLLM(responder=lambda _r: slow) as llm:
                started = []
                for i in range(4):
                    with session_scope(engine) as s:
                        run = ar.start_agent_run(session=s, actor=evaluator, release_version="1.0.0", model="scripted",
                                                 base_url=llm.url, strategy="oneshot", runs_per_task=n,
                                                 seed=5000 * workers + 100 * i, artifacts=settings.artifact_store())
                        started.append((int(run.id or 0), int(run.job_id or 0)))
                for _, job in started:
                    enqueue_job(engine, job)
                deadline = time.monotonic() + 900
                while True:
                    with session_scope(engine) as s:
                        states = [ar.get_agent_run(session=s, actor=evaluator, run_id=r).status for r, _ in started]
                    if all(st not in ar.ACTIVE for st in states):
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the runs did not finish: {states}")
                    time.sleep(0.3)
            elapsed, _model_s, tasks, _ = _measured(engine, [r for r, _ in started], [j for _, j in started])
            print(f"{workers} `forkpaths worker` process{'es' if workers > 1 else ''} (PostgreSQL queue): {tasks} "
                  f"one-shot task runs (model answers after {MODEL_DELAY_S:g} s) in {elapsed:.1f} s = "
                  f"{tasks / elapsed * 60:.0f} tasks per minute ({states.count('succeeded')} of 4 runs succeeded)")
            engine.dispose()
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
            with admin.connect() as conn:
                conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-agent-"))
    os.environ.update({"FORKPATHS_DATA_DIR": str(tmp / "data"), "FORKPATHS_ADMIN_PASSWORD": "bench password",
                       "FORKPATHS_LOAD_STARTER_DATASETS": "false"})

    from curation.db import session_scope
    from curation.services import agent_runs as ar
    from curation.services.background_jobs import InProcessJobs, JobOutcome, execute_job
    from curation.settings import Settings
    from evaluation.sandbox import prewarm
    from tests.llm_server import ScriptedLLM

    settings = Settings()
    engine, _curator, evaluator = _world(settings)
    prewarm(wait=True)
    # scoring is timed elsewhere: here the job stops once every task run is stored
    ar._submit_and_score = lambda *a, **k: JobOutcome("succeeded", "not scored (benchmark)")  # type: ignore

    def start(url: str, strategy: str, runs: int, seed: int) -> tuple[int, int]:
        with session_scope(engine) as s:
            run = ar.start_agent_run(session=s, actor=evaluator, release_version="1.0.0", model="scripted",
                                     base_url=url, strategy=strategy, runs_per_task=runs, seed=seed,
                                     artifacts=settings.artifact_store())
            return int(run.id or 0), int(run.job_id or 0)

    def measured(run_ids: list[int], job_ids: list[int]) -> tuple[float, float, int, int]:
        return _measured(engine, run_ids, job_ids)

    answer = {"content": json.dumps(ANALYSIS), "usage": {"prompt_tokens": 800, "completion_tokens": 200}}
    with ScriptedLLM(responder=lambda _r: answer) as llm:
        run_id, job_id = start(llm.url, "oneshot", n, 0)
        execute_job(engine, job_id, settings)
        elapsed, model_s, tasks, _ = measured([run_id], [job_id])
        print(f"one-shot: {tasks} task runs in {elapsed:.2f} s, the model's own time {model_s:.2f} s: overhead "
              f"{(elapsed - model_s) / tasks:.3f} s per task (goal <= 0.3 s)")
        t0 = time.perf_counter()
        run_id, job_id = start(llm.url, "oneshot", n, 0)
        sent = len(llm.requests)
        execute_job(engine, job_id, settings)
        print(f"one-shot again (same seed): {n} task runs from the cache in {time.perf_counter() - t0:.2f} s, "
              f"{len(llm.requests) - sent} requests sent")

    def react(req: dict) -> dict:
        tools = sum(1 for m in req["messages"] if m.get("role") == "tool")
        if tools < 2:
            return {"tool_calls": [{"name": "run_python", "arguments": {"code": "df['alldeaths'].describe()"}}]}
        return answer

    with ScriptedLLM(responder=react) as llm:
        run_id, job_id = start(llm.url, "react", n, 100)
        execute_job(engine, job_id, settings)
        elapsed, model_s, tasks, calls = measured([run_id], [job_id])
        print(f"ReAct: {tasks} task runs, {calls} tool calls in {elapsed:.2f} s, the model's own time {model_s:.2f} "
              f"s: overhead {(elapsed - model_s) / calls:.3f} s per tool call, task overhead included "
              "(goal <= 0.3 s)")

    slow = {**answer, "delay": MODEL_DELAY_S}
    for workers in (1, 2):
        with ScriptedLLM(responder=lambda _r: slow) as llm:
            started = [start(llm.url, "oneshot", n, 1000 * workers + 100 * i) for i in range(4)]
            pool = InProcessJobs(engine, lambda: settings, max_workers=workers)
            futures = [pool.submit(j) for _, j in started]
            for fut in futures:
                fut.result()
            pool.shutdown()
            elapsed, model_s, tasks, _ = measured([r for r, _ in started], [j for _, j in started])
            print(f"{workers} in-process job thread{'s' if workers > 1 else ''} (SQLite): {tasks} one-shot task "
                  f"runs (model answers after {MODEL_DELAY_S:g} s) in {elapsed:.1f} s = "
                  f"{tasks / elapsed * 60:.0f} tasks per minute")
    _pg_workers(n, answer)


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
