"""The committed starter programmatic tasks are exactly what their definitions produce: every reference solution
re-run in the sandbox gives the committed artifacts, and every check passes the release gate again with the
committed evidence (so the evidence shown at first start is real)."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest

from curation.programmatic_starters import STARTER_TASKS, build_starter_tasks
from exports.programmatic_part import PROGRAMMATIC_TASK_TYPES

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.usefixtures("os_sandbox")
def test_the_committed_tree_is_what_the_definitions_build(tmp_path: Path) -> None:
    for name in {t.dataset for t in STARTER_TASKS}:
        (tmp_path / name).mkdir()
        (tmp_path / name / "data.csv").write_bytes((REPO / "datasets" / name / "data.csv").read_bytes())
    tasks = build_starter_tasks(tmp_path)
    assert {c.task_type for t in tasks for c in t.checks} == set(PROGRAMMATIC_TASK_TYPES)
    built, committed = tmp_path / "programmatic", REPO / "datasets" / "programmatic"
    files = sorted(p.relative_to(built) for p in built.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(committed) for p in committed.rglob("*") if p.is_file())
    different = [str(f) for f in files if not filecmp.cmp(built / f, committed / f, shallow=False)]
    assert different == [], f"regenerate with python -m curation.programmatic_starters datasets: {different}"
