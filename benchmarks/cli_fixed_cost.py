"""A CLI command's fixed cost: what `forkpaths` pays before the command's own work starts.

Measures, each as a fresh process (the way a person or a script runs it):

* ``import curation.cli`` alone;
* ``forkpaths --help`` (no database; it loads the task registry to list the ``import-<kind>`` commands) and
  ``forkpaths runs --help`` (argument parsing only);
* ``forkpaths init`` on an initialised SQLite data directory: exactly the start-up every database command runs
  first (engine, migration check, first admin, release folder), with no work of its own: the fixed cost;
* ``forkpaths release list`` and ``forkpaths runs list`` with nothing to list: the fixed cost plus reading
  records (they import no data library).

The data directory is the default one: the bundled starter datasets are registered by the first ``init``, and
every later start finds them there.

Prints the best wall time and the CPU time (user + system) of each, over ``--repeat`` runs. CPU seconds do not
stretch with the machine's load; wall seconds do (the load average is printed). Goals: a command's fixed cost
<= 1 s (issue 16); ``--help``, ``release list`` and ``runs list`` <= 0.4 s CPU (issue 30).
Prints figures only; nothing is asserted.

Run: ``.venv/bin/python benchmarks/cli_fixed_cost.py [--repeat N]``
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

from proc_cpu import command_cost  # noqa: E402 - benchmarks/ is this script's folder


def _forkpaths(module: bool) -> list[str]:
    exe = Path(sys.executable).with_name("forkpaths")
    return [str(exe)] if exe.exists() and not module else [sys.executable, "-m", "curation.cli"]


def _measure(cmd: list[str], env: dict[str, str], repeat: int) -> tuple[float, float]:
    """Best wall and CPU seconds of ``repeat`` runs; CPU counted in a cgroup (every process the command started)
    where this machine allows it (:func:`proc_cpu.command_cost`)."""
    walls, cpus = [], []
    for _ in range(repeat):
        cost = command_cost(cmd, env=env, cwd=ROOT_DIR)
        walls.append(cost.wall)
        cpus.append(cost.cpu)
        if cost.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({cost.returncode}):\n{cost.stderr[-2000:]}")
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--module", action="store_true",
                        help="run `python -m curation.cli` from this folder instead of the installed `forkpaths` "
                             "(to measure another checkout, e.g. main's, with the same interpreter)")
    args = parser.parse_args()
    fp = _forkpaths(args.module)
    with tempfile.TemporaryDirectory(prefix="cli-bench-") as tmp:
        env = {**os.environ, "FORKPATHS_DATA_DIR": tmp, "FORKPATHS_SANDBOX": "process", "FORKPATHS_ADMIN_PASSWORD": "bench-password-123"}
        env.pop("FORKPATHS_DATABASE_URL", None)
        subprocess.run([*fp, "init"], env=env, cwd=ROOT_DIR, capture_output=True, check=True)
        cases = [
            ("python -c pass (the floor)", [sys.executable, "-c", "pass"]),
            ("import curation.cli", [sys.executable, "-c", "import curation.cli"]),
            ("forkpaths --help", [*fp, "--help"]),  # lists the import-<kind> commands: the task registry
            ("forkpaths runs --help", [*fp, "runs", "--help"]),  # a built-in command's help: the parser alone
            ("forkpaths init (start-up only)", [*fp, "init"]),
            ("forkpaths release list", [*fp, "release", "list"]),
            ("forkpaths runs list", [*fp, "runs", "list"]),
        ]
        print(f"{'command':<32}{'best wall s':>12}{'cpu s':>8}")
        print("-" * 52)
        for label, cmd in cases:
            wall, cpu = _measure(cmd, env, args.repeat)
            print(f"{label:<32}{wall:>12.2f}{cpu:>8.2f}")
    print(f"\nbest of {args.repeat} runs each; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
          "(wall times stretch with it; CPU seconds do not). Goals: a command's fixed cost <= 1 s; --help, release "
          "list and runs list <= 0.4 s CPU.")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
