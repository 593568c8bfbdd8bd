"""The two first task kinds (BLADE analyses, MCQs) give exactly the results they gave before the registry:
fixed inputs scored end to end through the services, compared with golden files (issue 16).

What is compared: the run's result file as written, the scores stored on the run, the leaderboard's rows and the
CLI's summary line. Only timestamps, run ids and library versions are normalised. To regenerate after an
intended change: ``FORKPATHS_REGENERATE_GOLDEN=1 pytest tests/curation/test_task_kinds_golden.py`` and say why
in the commit.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from curation.cli_scoring import _summary_line
from curation.db import session_scope
from curation.models import RunStatus
from curation.services import leaderboard as lb
from curation.services import scoring as sc
from exports.mcq_part import MCQPart
from tests.curation.scoring_world import make_world

GOLDEN = Path(__file__).parent / "golden"
_VOLATILE = {"created_at", "started_at", "finished_at", "library_versions"}


def _normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("<normalised>" if k in _VOLATILE else _normal(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _check(name: str, produced: Any) -> None:
    path = GOLDEN / name
    text = json.dumps(_normal(produced), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("FORKPATHS_REGENERATE_GOLDEN") or not path.exists():
        path.write_text(text, encoding="utf-8")
        if not os.environ.get("FORKPATHS_REGENERATE_GOLDEN"):
            pytest.fail(f"{name} did not exist and was written; check it and commit it")
    assert json.loads(text) == json.loads(path.read_text(encoding="utf-8")), name


@pytest.fixture
def world(sqlite_engine, tmp_path, shared_blade):
    return make_world(sqlite_engine, tmp_path, shared_blade)


def _rows(world, dataset=None):
    with session_scope(world.engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0",
                              artifacts=world.artifacts, dataset=dataset)
    return [{**r, "run": "<run>"} for r in rows]


def test_blade_analyses_and_mcq_runs_give_the_golden_results(world):
    analyses = world.score(agent="golden-agent", model_name="gpt-golden")
    blade = world.score(agent="golden-blade", model_name="gpt-golden", mode="blade", k=5)
    for run in (analyses, blade):
        assert run.status == RunStatus.SUCCEEDED.value, run.message
    _check("analyses_default_result.json", world.result_json(analyses))
    _check("analyses_blade_result.json", world.result_json(blade))
    # no agent was asked MCQs yet: the leaderboard shows no column of blanks for them
    assert {c.key for c in lb.leaderboard_columns(_rows(world))} >= {"weighted", "f1.cvar"}
    assert "mcq_accuracy" not in {c.key for c in lb.leaderboard_columns(_rows(world))}

    with session_scope(world.engine) as s:
        release = sc.mcq_release(session=s, actor=world.evaluator, release_version="1.0.0",
                                 artifacts=world.artifacts)
    ids = [q.id for d in release.datasets for q in MCQPart.of(d).items]
    assert len(ids) > 4
    answers = {qid: "ABCD"[i % 4] for i, qid in enumerate(sorted(ids))}  # some right, some wrong, fixed
    answers[sorted(ids)[0]] = "the answer is probably B or C"  # unparseable, never guessed
    mcq = world.score([("answers.json", json.dumps(answers).encode())], agent="golden-agent",
                      model_name="gpt-golden", kind="mcq")
    assert mcq.status == RunStatus.SUCCEEDED.value, mcq.message
    _check("mcq_report.json", world.result_json(mcq))

    _check("run_records.json", [{"kind": r.kind, "judge": r.judge, "mode": r.mode, "k": r.k,
                                 "scores": r.scores, "scores_effective": r.scores_effective,
                                 "transform_matcher": r.transform_matcher, "message": r.message,
                                 "progress": [r.progress_done, r.progress_total],
                                 "result_file": r.result_path,
                                 "submission_files": r.submission_files,
                                 "summary_line": _summary_line(r).split(":", 1)[1]}
                                for r in (analyses, blade, mcq)])
    _check("leaderboard.json", {"all": _rows(world), "hurricane": _rows(world, "hurricane")})
    # the MCQ accuracy now has a value on the agent's row; nobody was checked for reproducibility
    keys = [c.key for c in lb.leaderboard_columns(_rows(world))]
    assert keys[-1] == "mcq_accuracy" and not any(k.startswith("repro_") for k in keys)
