"""Review page speed with 600 items to judge (issue 9; prints figures, asserts nothing).

Seeds one dataset in stage 2 whose peer analysis has 300 conceptual variables and 300 transforms (stored as
rows of a submitted analysis: building 600 through the forms would take minutes and measure the forms), then:
- the review-queue service alone (what every page run asks the database for);
- the page's first run and its re-renders in AppTest (what every click costs), 20 items per page.
Goal: re-render ≤ 300 ms.
Run: .venv/bin/python benchmarks/review_page.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_VARIABLES, N_TRANSFORMS = 300, 300


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-review-"))
    os.environ.update({"FORKPATHS_DATA_DIR": str(tmp / "data"), "FORKPATHS_ADMIN_PASSWORD": "bench password",
                       "FORKPATHS_LOAD_STARTER_DATASETS": "false"})
    from streamlit.testing.v1 import AppTest

    from curation.bootstrap import initialise
    from curation.db import session_scope
    from curation.models import Analysis, AnalysisStatus, ConceptualVariable, Role, Stage, Transform, utcnow
    from curation.services.analyses.review_queue import review_queue
    from curation.services.annotation import submit_analysis
    from curation.services.stages import set_stage
    from curation.settings import Settings
    from tests import factories as f

    settings = Settings()
    engine = initialise(settings).engine
    ana, peer = f.user(engine, "ana"), f.user(engine, "peer")
    ds = f.dataset(engine, settings.datasets_store, assign=[ana, peer])
    f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
        analysis = Analysis(dataset_id=ds.id, annotator_id=peer.id, status=AnalysisStatus.SUBMITTED.value,
                            submitted_at=utcnow())
        s.add(analysis)
        s.flush()
        for i in range(N_TRANSFORMS):
            s.add(Transform(id=f"t{i:031d}", analysis_id=analysis.id, spec_name=f"step_{i}", verbs=["derive"],
                            code=f"df['d{i}'] = np.log(df['wind'] + {i})", rationale="a reason " * 10,
                            mapping=[{"inputs": ["wind"], "output": f"d{i}"}],
                            branches=[{"dependencies": ["ROOT"], "condition": ""}], position=i))
        for i in range(N_VARIABLES):
            s.add(ConceptualVariable(analysis_id=analysis.id, variable_type="Control", concept=f"concept {i}",
                                     rationale="because " * 10, position=i,
                                     columns=[{"name": f"d{i}", "origin": "derived", "producer_id": f"t{i:031d}"}]))
    with session_scope(engine) as s:
        set_stage(session=s, actor=f.user(engine, "cur", Role.CURATOR), dataset_id=ds.id, stage=Stage.REVIEW)

    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        with session_scope(engine) as s:
            q = review_queue(session=s, actor=ana, dataset_id=ds.id)
        times.append(time.perf_counter() - t0)
    print(f"review_queue service, {len(q.items)} items: median {statistics.median(times) * 1000:.0f} ms")

    at = AppTest.from_file(str(ROOT / "annotate_app" / "app.py"), default_timeout=120)
    from curation.services.sessions import start_auth_session

    with session_scope(engine) as s:  # signed in as the sign-in page does: a server-side session
        at.session_state["fp.session_token"] = start_auth_session(session=s, user=ana,
                                                                  policy=settings.session_policy)
    at.run()
    t0 = time.perf_counter()
    at.switch_page("app_pages/review.py").run()
    print(f"review page first run: {(time.perf_counter() - t0) * 1000:.0f} ms")
    assert not at.exception, at.exception
    reruns = []
    for _ in range(10):
        t0 = time.perf_counter()
        at.run()
        reruns.append(time.perf_counter() - t0)
    print(f"review page re-render (600 items, 10 shown): median {statistics.median(reruns) * 1000:.0f} ms, "
          f"max {max(reruns) * 1000:.0f} ms")
    at.switch_page("app_pages/account.py").run()
    base = []
    for _ in range(10):
        t0 = time.perf_counter()
        at.run()
        base.append(time.perf_counter() - t0)
    print(f"for comparison, the account page's re-render: median {statistics.median(base) * 1000:.0f} ms")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
