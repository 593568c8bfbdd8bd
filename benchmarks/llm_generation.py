"""Generation of LLM alternatives for every conceptual variable of one shared BLADE dataset, against the
scripted chat-completions server (issue 9; prints figures, asserts nothing).

The server answers at once, so the wall time is forkpaths' own overhead: building prompts, HTTP, parsing,
running every generated transform in the sandbox after its parents, duplicate checks and storing. A second run
is answered by the cache (nothing sent) and stores nothing new.
Run: .venv/bin/python benchmarks/llm_generation.py [dataset]   (default: hurricane)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BLADE = ROOT.parent / "shared" / "blade" / "datasets"


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "hurricane"
    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-llm-"))
    os.environ.update({"FORKPATHS_DATA_DIR": str(tmp / "data"), "FORKPATHS_ADMIN_PASSWORD": "bench password",
                       "FORKPATHS_LOAD_STARTER_DATASETS": "false"})
    from sqlmodel import select

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.models import Alternative, Dataset, Role, Stage
    from curation.services.analyses.llm_alternatives import generate_alternatives
    from curation.services.blade_import import import_blade
    from curation.services.stages import set_stage
    from curation.settings import Settings
    from evaluation.llm import LLMConfig
    from evaluation.sandbox import SandboxLimits, prewarm
    from tests import factories as f
    from tests.llm_server import ScriptedLLM

    settings = Settings()
    engine = initialise(settings).engine
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=BLADE / name, store=settings.datasets_store,
                     max_bytes=settings.max_upload_bytes)
    cur = f.user(engine, "cur", Role.CURATOR)
    with session_scope(engine) as s:
        ds = s.exec(select(Dataset).where(Dataset.name == name)).one()
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
        columns = [d["column"] for d in ds.dictionary][:3]
    answer = {"variables": [{"variable_type": "Control", "concept": f"alternative {c}", "columns": [c],
                             "rationale": "scripted"} for c in columns],
              "transforms": [{"code": f"df['alt_{i}'] = df[{c!r}].rank()", "output_col": f"alt_{i}",
                              "rationale": "scripted"} for i, c in enumerate(columns)]}
    prewarm(wait=True)
    with ScriptedLLM(lambda req: json.dumps(answer)) as server:
        config = LLMConfig(base_url=server.url, model="scripted", cache_dir=tmp / "cache")

        def run():
            t0 = time.perf_counter()
            report = generate_alternatives(session_scope=lambda: session_scope(engine), actor=cur, dataset_id=ds.id,
                                           config=config, store=settings.datasets_store,
                                           limits=SandboxLimits(timeout_s=60, memory_mb=2048))
            return report, time.perf_counter() - t0

        first, t_first = run()
        sent = len(server.requests)
        second, t_second = run()
    with session_scope(engine) as s:
        stored = len(s.exec(select(Alternative).where(Alternative.dataset_id == ds.id,
                                                      Alternative.source == "llm")).all())
    print(f"{name}: {sent} LLM calls, {first.created} alternatives stored ({first.failed_checks} failing checks, "
          f"{first.duplicates} duplicates); {stored} LLM alternatives in the database (BLADE's imported ones included)")
    print(f"first run: {t_first:.1f} s total, {t_first / max(sent, 1) * 1000:.0f} ms per call "
          f"(the scripted server answers in ~0 ms, so this is forkpaths' overhead incl. one sandbox run per "
          f"generated transform)")
    print(f"second run: {t_second:.2f} s, {len(server.requests) - sent} requests sent, {second.cached} answers from "
          f"the cache, {second.created} stored, {second.already_stored} already stored")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
