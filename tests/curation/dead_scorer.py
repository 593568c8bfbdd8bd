"""A real process that claims a scoring run and is killed with SIGKILL before it ends it (as a `forkpaths score`
or an app killed mid-run leaves it): shared by the lifecycle tests and the Runs page tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy.engine import Engine

PROJECT_ROOT = Path(__file__).resolve().parents[2]

_CLAIM_AND_DIE = """
import os, signal, sys
from curation.db import make_engine
from curation.services.run_lifecycle import claim_run
url, schema, run_id = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = make_engine(url, **({"connect_args": {"options": f"-csearch_path={schema}"}} if schema else {}))
run = claim_run(engine, run_id)
assert run.status == "running", run.status
engine.dispose()
os.kill(os.getpid(), signal.SIGKILL)
"""


def claim_in_a_process_that_dies(engine: Engine, run_id: int) -> None:
    """Claim ``run_id`` in a child process that is then killed with SIGKILL (it never ends the run)."""
    url = engine.url.render_as_string(hide_password=False)
    schema = ""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            schema = conn.exec_driver_sql("select current_schema()").scalar() or ""
    proc = subprocess.run([sys.executable, "-c", _CLAIM_AND_DIE, url, schema, str(run_id)], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert proc.returncode == -9, proc.stderr


_CLAIM_ALL = """
import sys
from curation.db import make_engine
from curation.services.run_lifecycle import claim_run, this_executor
url, schema, ids = sys.argv[1], sys.argv[2], [int(i) for i in sys.argv[3].split(",")]
engine = make_engine(url, **({"connect_args": {"options": f"-csearch_path={schema}"}} if schema else {}))
sys.stdin.readline()  # start together
print(",".join(str(i) for i in ids if claim_run(engine, i).executor == this_executor()))
"""


def claim_from_processes(engine: Engine, run_ids: list[int], n: int = 2) -> list[set[int]]:
    """``n`` processes each try to claim every run at once; the runs each one got."""
    url = engine.url.render_as_string(hide_password=False)
    schema = ""
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            schema = conn.exec_driver_sql("select current_schema()").scalar() or ""
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIM_ALL, url, schema, ",".join(map(str, run_ids))],
                              cwd=PROJECT_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    for p in procs:  # each has imported and connected by the time it reads its line: released together
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    out = [p.communicate(timeout=120)[0].strip() for p in procs]
    return [{int(i) for i in o.split(",") if i} for o in out]
