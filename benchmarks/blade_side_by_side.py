"""Ground truth side by side with BLADE's own loader: what a user pays for one dataset, cold and cached.

For each dataset that blade-bench ships with annotations (twelve; or those named with ``--dataset``), both
loaders start from nothing, each as a fresh process measured in a cgroup of its own (every process it starts
counts: BLADE's Jupyter kernel, forkpaths' sandbox and its jobs; :func:`proc_cpu.command_cost`):

* BLADE: ``blade_bench.data.load_ground_truth(name, load_from_pkl=False)`` (its first, uncached build) in the
  virtual environment of its own that ``--install`` makes (``benchmarks/.blade-venv``: blade-bench 0.1.1 without
  its language-model dependencies, and what its loader imports, with the pandas it was published for);
* forkpaths: ``forkpaths gt build <release folder>`` on the same dataset (blade-bench's folder read through
  exports' BLADE reader and written as a one-dataset release), with an empty data directory (cold), then again
  (cached).

Printed: wall and CPU seconds of each, and how many times fewer CPU seconds forkpaths' cold build costs. BLADE's
loader takes minutes on the larger datasets (mortgage: about 25 minutes of wall time on this machine): each of
its loads stops after ``--timeout`` seconds (then shown as "> N s"). Prints figures only; nothing is asserted.

Run: ``.venv/bin/python benchmarks/blade_side_by_side.py [--install] [--dataset NAME ...] [--timeout S]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT_DIR))

from proc_cpu import CommandCost, command_cost  # noqa: E402 - benchmarks/ is this script's folder

VENV = Path(__file__).resolve().parent / ".blade-venv"
#: blade-bench is installed without its dependencies (its language-model clients pull in torch); these are what
#: its ground-truth loader imports, pandas and numpy at the versions its package asks for and its reference
#: figures were taken with.
LOADER_REQUIREMENTS = ["blade-bench==0.1.1", "pandas==1.5.3", "numpy==1.26.4", "networkx>=3.3", "pydantic>=2.7.4",
                       "loguru", "nest_asyncio", "astor", "rich", "nbformat", "nbclient", "ipykernel", "ipython",
                       "scipy", "scikit-learn", "statsmodels", "matplotlib", "seaborn", "diskcache", "backoff",
                       "python-dotenv", "absl-py", "click"]

_LIST = """
import json, os.path as osp
from blade_bench.data.dataset import list_datasets
from blade_bench.utils import get_dataset_dir
print(json.dumps({name: get_dataset_dir(name) for name in sorted(list_datasets())}))
"""

_LOAD = """
import sys
from blade_bench.data import load_ground_truth
load_ground_truth(sys.argv[1], execute_output_dir=sys.argv[2], load_from_pkl=False)
"""


def blade_python() -> Path | None:
    """The Python of the environment where BLADE's loader is installed (``FORKPATHS_BLADE_PYTHON``, else
    ``benchmarks/.blade-venv``), or None when there is none that imports it."""
    given = os.environ.get("FORKPATHS_BLADE_PYTHON")
    python = Path(given) if given else VENV / "bin" / "python"
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", "import blade_bench.data"], capture_output=True, text=True,
                          check=False)
    return python if done.returncode == 0 else None


def install() -> Path:
    """Make ``benchmarks/.blade-venv`` with BLADE's loader (from PyPI, with pip)."""
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--no-deps", LOADER_REQUIREMENTS[0]], check=True)
    subprocess.run([*pip, *LOADER_REQUIREMENTS[1:]], check=True)
    python = blade_python()
    if python is None:
        raise SystemExit(f"BLADE's loader does not import in {VENV} after the install; see pip's output above.")
    return python


def _release_of(folder: Path, out: Path) -> Path:
    """blade-bench's dataset folder as a one-dataset forkpaths release (through exports' BLADE reader)."""
    from evaluation.groundtruth import sources_from_blade_folders
    from exports.native import write_release
    from exports.schema import Release

    [source] = sources_from_blade_folders([folder])
    release = Release(version="1.0.0", created_at=datetime(2026, 1, 1, tzinfo=UTC), app_version="benchmark",
                      datasets=[source.dataset])
    return write_release(release, {source.dataset.name: source.data_path}, out)


def _cell(cost: CommandCost | None, timeout: float) -> str:
    if cost is None:
        return f"{'> ' + str(int(timeout)) + ' s':>16}"
    return f"{cost.wall:>8.1f}{cost.cpu:>8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--install", action="store_true", help=f"install BLADE's loader in {VENV} first")
    parser.add_argument("--dataset", action="append", help="only this dataset (repeatable; default: all twelve)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds each BLADE load may take")
    args = parser.parse_args()
    python = install() if args.install else blade_python()
    if python is None:
        print(f"BLADE's loader is not installed here: run with --install (makes {VENV}), or set "
              "FORKPATHS_BLADE_PYTHON to the Python of an environment that has blade-bench.")
        return
    shipped = json.loads(subprocess.run([str(python), "-c", _LIST], capture_output=True, text=True,
                                        check=True).stdout.strip().splitlines()[-1])
    names = args.dataset or list(shipped)
    unknown = [n for n in names if n not in shipped]
    if unknown:
        parser.error(f"blade-bench ships no dataset {', '.join(unknown)} (it has: {', '.join(shipped)})")
    print(f"BLADE's loader: {python}; forkpaths: {sys.executable}. Wall s / CPU s (cgroup), each a fresh process.")
    header = (f"{'dataset':<17}{'BLADE wall':>8}{'cpu':>8}{'forkpaths':>10}{'cpu':>8}{'cached':>8}{'cpu':>8}"
              f"{'CPU: BLADE/forkpaths':>22}")
    print(header)
    print("-" * len(header))
    blade_cpu = ours_cpu = 0.0
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"blade-{name}-") as tmp:
            work = Path(tmp)
            try:
                blade: CommandCost | None = command_cost([str(python), "-c", _LOAD, name, str(work / "blade-out")],
                                                         cwd=work, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                blade = None
            folder = _release_of(Path(shipped[name]), work / "releases")
            env = {**os.environ, "FORKPATHS_DATA_DIR": str(work / "data"), "FORKPATHS_LOAD_STARTER_DATASETS": "false"}
            env.pop("FORKPATHS_DATABASE_URL", None)
            fp = [sys.executable, "-m", "curation.cli", "gt", "build", str(folder), "--json"]
            cold = command_cost(fp, env=env, cwd=ROOT_DIR)
            cached = command_cost(fp, env=env, cwd=ROOT_DIR)
        failed = [f"{who} exit code {c.returncode}: {c.stderr.strip()[-300:]}"
                  for who, c in (("BLADE", blade), ("forkpaths", cold)) if c is not None and c.returncode != 0]
        ratio = f"{blade.cpu / cold.cpu:>21.1f}x" if blade is not None and not failed else f"{'-':>22}"
        print(f"{name:<17}{_cell(blade, args.timeout)}  {_cell(cold, 0)}{_cell(cached, 0)}{ratio}")
        for line in failed:
            print(f"    {line}")
        if blade is not None and not failed:
            blade_cpu += blade.cpu
            ours_cpu += cold.cpu
    if ours_cpu:
        print(f"\ncold, where both finished: BLADE {blade_cpu:.1f} s CPU, forkpaths {ours_cpu:.1f} s CPU "
              f"(BLADE/forkpaths {blade_cpu / ours_cpu:.1f}). Goals (issue 30): one small dataset (teachingratings) <= 1.5 s "
              "CPU, at least 2x fewer than BLADE; mortgage <= 2 s CPU, at least 50x fewer; cached <= 1 s CPU.")


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    main()
