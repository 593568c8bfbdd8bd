"""A CLI command's fixed cost: what `forkpaths` pays before the command's own work starts.

Measures, each as a fresh process (the way a person or a script runs it):

* ``import curation.cli`` alone;
* ``forkpaths --help`` (no database; it lists the ``import-<kind>`` commands, which the task registry declares:
  read from the registry at the first start after a source changed, and kept for the next ones, see
  curation/cli_kind_index.py; the warm-up run below pays that once) and ``forkpaths runs --help`` (argument
  parsing only);
* ``forkpaths init`` on an initialised SQLite data directory: exactly the start-up every database command runs
  first (engine, migration check, first admin, release folder), with no work of its own: the fixed cost;
* ``forkpaths release list`` and ``forkpaths runs list`` with nothing to list: the fixed cost plus reading
  records (they import no task kind and no data library);
* ``forkpaths score --enqueue`` on the PostgreSQL at FORKPATHS_TEST_PG_URL (default the tests' one): BLADE's
  hurricane release cut in a schema of its own, the multi-run example (10 analyses) registered and queued, no
  worker running (``--no-postgres`` skips it; ``--blade`` is the shared folder's blade/).

With ``--before PATH`` (another checkout of forkpaths, e.g. ``/work/main`` or a ``git worktree`` of an older
commit), every command also runs from that checkout with the same interpreter, side by side: before / after.

Prints the best wall time and the CPU time (user + system of the command and every process it starts, counted in
a cgroup where this machine allows it) of each, over ``--repeat`` runs, after one warm-up run that is not
counted. CPU seconds stretch less with the machine's load than wall seconds, but on a shared virtual machine
they do stretch (caches, hyper-threads): the load average and the machine-speed line are printed beside them.
Goals: a command's fixed cost <= 1 s (issue 16); ``--help``, ``release list`` and ``runs list`` <= 0.4 s CPU,
``score --enqueue`` <= 0.5 s CPU (issue 30). Prints figures only; nothing is asserted.

Run: ``.venv/bin/python benchmarks/cli_fixed_cost.py [--repeat N] [--before PATH] [--no-postgres]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from proc_cpu import command_cost, load, machine_speed  # noqa: E402 - benchmarks/ is this script's folder

PG_URL = os.environ.get("FORKPATHS_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
GOALS = {"forkpaths --help": 0.4, "forkpaths release list": 0.4, "forkpaths runs list": 0.4,
         "forkpaths score --enqueue": 0.5}


def _forkpaths() -> list[str]:
    """``forkpaths`` as run from a checkout (:func:`_measure` sets PYTHONPATH and the working folder to it; the
    installed script would run the checkout it was installed from)."""
    return [sys.executable, "-m", "curation.cli"]


def _measure(cmd: list[str], env: dict[str, str], root: Path, repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds of ``repeat`` runs after one warm-up; CPU counted in a cgroup (every process the
    command started) where this machine allows it (:func:`proc_cpu.command_cost`)."""
    env = {**env, "PYTHONPATH": str(root)}
    walls, cpus = [], []
    for i in range(repeat + 1):
        cost = command_cost(cmd, env=env, cwd=root)
        if cost.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} (from {root}) failed ({cost.returncode}):\n{cost.stderr[-2000:]}")
        if i:  # the first run warms the file cache and what a checkout keeps between starts
            walls.append(cost.wall)
            cpus.append(cost.cpu)
    return min(walls), min(cpus)


def _sqlite_cases() -> list[tuple[str, list[str]]]:
    fp = _forkpaths()
    return [
        ("python -c pass (the floor)", [sys.executable, "-c", "pass"]),
        ("import curation.cli", [sys.executable, "-c", "import curation.cli"]),
        ("import sqlmodel (the ORM floor)", [sys.executable, "-c", "import sqlmodel, sqlalchemy.dialects.sqlite"]),
        ("forkpaths --help", [*fp, "--help"]),  # lists the import-<kind> commands: the task registry's
        ("forkpaths runs --help", [*fp, "runs", "--help"]),  # a built-in command's help: the parser alone
        ("forkpaths init (start-up only)", [*fp, "init"]),
        ("forkpaths release list", [*fp, "release", "list"]),
        ("forkpaths runs list", [*fp, "runs", "list"]),
    ]


class _PostgresWorld:
    """BLADE's hurricane release in a PostgreSQL schema of its own, and who scores against it."""

    def __init__(self, blade: Path, data: Path) -> None:
        import uuid

        from sqlalchemy import create_engine, text

        sys.path.insert(0, str(ROOT_DIR))  # the tests' world: the release and its people
        from curation.db import make_engine, migrate
        from tests.curation.scoring_world import make_world

        self.name = f"fp_bench_{uuid.uuid4().hex[:10]}"
        self.admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{self.name}"'))
        self.engine = make_engine(PG_URL, connect_args={"options": f"-csearch_path={self.name}"})
        migrate(self.engine)
        self.world = make_world(self.engine, data, blade)
        self.env = {**os.environ, "FORKPATHS_DATA_DIR": str(self.world.store.parent),
                    "FORKPATHS_DATABASE_URL": f"{PG_URL}?options=-csearch_path%3D{self.name}",
                    "FORKPATHS_LOAD_STARTER_DATASETS": "false", "FORKPATHS_ADMIN_PASSWORD": "admin password 1"}
        self.cmd = [*_forkpaths(), "score", "--release", "1.0.0", "--submission",
                    str(blade / "examples" / "multirun_analyses.json"), "--agent", "bench", "--enqueue",
                    "--as", self.world.evaluator.username]

    def drop(self) -> None:
        from sqlalchemy import text

        self.engine.dispose()
        with self.admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{self.name}" CASCADE'))
        self.admin.dispose()


def _row(label: str, figures: list[tuple[float, float]]) -> str:
    cells = "".join(f"{wall:>13.2f}{cpu:>8.2f}" for wall, cpu in figures)
    goal = GOALS.get(label)
    verdict = "" if goal is None else f"   goal <= {goal} s CPU: {'met' if figures[-1][1] <= goal else 'not met'}"
    return f"{label:<34}{cells}{verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", type=Path, help="another forkpaths checkout to measure side by side (before)")
    parser.add_argument("--no-postgres", action="store_true", help="skip score --enqueue (needs PostgreSQL)")
    parser.add_argument("--blade", type=Path, default=ROOT_DIR.parent / "shared" / "blade")
    args = parser.parse_args()
    roots = ([("before", args.before.resolve())] if args.before else []) + [("after", ROOT_DIR)]
    print(f"at start: {load()}; {machine_speed()}")
    print(f"{'command':<34}" + "".join(f"{name + ' wall s':>13}{'cpu s':>8}" for name, _ in roots))
    print("-" * (34 + 21 * len(roots)))
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        envs = {}
        for name, root in roots:  # a data directory per checkout: each migrates its own database to its own head
            env = {**os.environ, "FORKPATHS_DATA_DIR": str(Path(tmp) / f"sqlite-{name}"),
                   "FORKPATHS_SANDBOX": "process", "FORKPATHS_ADMIN_PASSWORD": "bench-password-123"}
            env.pop("FORKPATHS_DATABASE_URL", None)
            subprocess.run([*_forkpaths(), "init"], env={**env, "PYTHONPATH": str(root)}, cwd=root,
                           capture_output=True, check=True)
            envs[root] = env
        for label, cmd in _sqlite_cases():
            print(_row(label, [_measure(cmd, envs[root], root, args.repeat) for _, root in roots]), flush=True)
        if not args.no_postgres:
            if not args.blade.is_dir():
                parser.error(f"the BLADE data is not at {args.blade}: pass --blade PATH or --no-postgres")
            pg = _PostgresWorld(args.blade, Path(tmp) / "pg")  # built by this checkout, at its migration head
            try:
                mine = [r for _, r in roots if r == ROOT_DIR]
                figures = [_measure(pg.cmd, pg.env, root, args.repeat) for root in mine]
                if len(roots) > 1:
                    print("(score --enqueue runs from this checkout only: its database is at this checkout's "
                          "migration head, which another checkout may not know)")
                print(_row("forkpaths score --enqueue", [(float("nan"), float("nan"))] * (len(roots) - 1)
                           + figures), flush=True)
            finally:
                pg.drop()
    print(f"\nbest of {args.repeat} runs each (after one warm-up); at end: {load()} (wall times stretch with it, "
          f"CPU seconds less); {machine_speed()}. Goals: a command's fixed cost <= 1 s; --help, release list and "
          "runs list <= 0.4 s CPU; score --enqueue <= 0.5 s CPU.")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
