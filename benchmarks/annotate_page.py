"""Annotate page speed on a synthetic 150,000 × 30 dataset (issue 2's goals; prints figures, asserts nothing).

- first render: the annotate page's first script run in a fresh session (cold data cache);
- re-render: later runs of the same page (what every click costs);
- sanity check round trip of a one-line derive, against the code's own run time.

Goals: re-render ≤ 300 ms, first render ≤ 1.5 s, sandbox overhead ≤ 0.5 s beyond the code's own run time.
Run: .venv/bin/python benchmarks/annotate_page.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ROWS, NUMERIC, STRINGS = 150_000, 26, 4


def synthetic(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"c{i}": rng.normal(size=ROWS).round(4) for i in range(NUMERIC)})
    for j in range(STRINGS):
        frame[f"s{j}"] = rng.choice([f"level_{k}" for k in range(12)], size=ROWS)
    folder.mkdir(parents=True)
    frame.to_csv(folder / "data.csv", index=False)
    import json

    (folder / "info.json").write_text(json.dumps({
        "research_questions": ["Is c0 associated with c1?"],
        "data_desc": {"dataset_description": "synthetic", "fields": [
            {"column": c, "properties": {"description": f"column {c}"}} for c in frame.columns],
            "num_rows": ROWS, "field_names": list(frame.columns)},
    }))
    return folder


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="fp-bench-"))
    os.environ.update({"FORKPATHS_DATA_DIR": str(tmp / "data"), "FORKPATHS_ADMIN_PASSWORD": "bench password",
                       "FORKPATHS_LOAD_STARTER_DATASETS": "false"})
    from streamlit.testing.v1 import AppTest

    from curation.bootstrap import initialise
    from curation.dataset_files import read_blade_folder
    from curation.db import session_scope
    from curation.models import Role
    from curation.services.accounts import create_user
    from curation.services.annotation import TransformInput, save_transform
    from curation.services.checks import check_transform_code
    from curation.services.datasets import assign_analysts, register_dataset
    from curation.services.sessions import start_auth_session
    from curation.settings import Settings
    from evaluation.sandbox import SandboxLimits
    from evaluation.specs import ColumnMapping

    settings = Settings()
    report = initialise(settings)
    t0 = time.perf_counter()
    bundle = read_blade_folder(synthetic(tmp / "src" / "wide"), max_bytes=settings.max_upload_bytes)
    with session_scope(report.engine) as s:
        ds = register_dataset(session=s, actor=None, bundle=bundle, store=settings.datasets_store)
        analyst = create_user(session=s, actor=None, username="bench", password="bench password", role=Role.ANALYST)
        admin = create_user(session=s, actor=None, username="boss", password="bench password", role=Role.ADMIN)
        assign_analysts(session=s, actor=admin, dataset_id=ds.id, user_ids=[analyst.id])
    print(f"register 150,000 × 30 (parse + profile + store): {time.perf_counter() - t0:.2f} s")
    with session_scope(report.engine) as s:
        for i in range(5):
            save_transform(session=s, actor=analyst, dataset_id=ds.id, data=TransformInput(
                spec_name=f"t{i}", verb="derive", code=f"df['d{i}'] = df['c{i}'] * 2",
                mapping=[ColumnMapping(inputs=[f"c{i}"], output=f"d{i}")]))

    app = ROOT / "annotate_app" / "app.py"
    at = AppTest.from_file(str(app), default_timeout=120)
    with session_scope(report.engine) as s:
        at.session_state["fp.session_token"] = start_auth_session(
            session=s, user=analyst, policy=settings.session_policy)
    at.run()  # router + progress page
    at.switch_page("app_pages/annotate.py")
    t0 = time.perf_counter()
    at.run()
    first = time.perf_counter() - t0
    assert not at.exception, at.exception
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
    print(f"annotate page first render (cold cache): {first * 1000:.0f} ms   goal ≤ 1500 ms")
    print(f"annotate page re-render: median {statistics.median(times) * 1000:.0f} ms, "
          f"max {max(times) * 1000:.0f} ms over {len(times)}   goal ≤ 300 ms")

    limits = SandboxLimits(timeout_s=60, memory_mb=4096)
    rounds = []
    for i in range(6):
        t0 = time.perf_counter()
        with session_scope(report.engine) as s:
            result = check_transform_code(session=s, actor=analyst, dataset_id=ds.id, code="df['z'] = df['c0'] * 2",
                                          dependencies=["ROOT_SPEC_ID"], store=settings.datasets_store,
                                          limits=limits)
        wall = time.perf_counter() - t0
        assert result.ok, result.error
        rounds.append((wall, result.code_seconds))
        label = "cold" if i == 0 else "warm"
        print(f"sanity check #{i + 1} ({label}): round trip {wall * 1000:.0f} ms, code {result.code_seconds * 1000:.1f} ms, "
              f"overhead {(wall - result.code_seconds) * 1000:.0f} ms")
    warm = [w - c for w, c in rounds[1:]]
    print(f"sanity check overhead (warm, median of {len(warm)}): {statistics.median(warm) * 1000:.0f} ms   goal ≤ 500 ms")
    print(f"suggested: {result.suggested_verb} {[m.model_dump() for m in result.suggested_mapping]}")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
