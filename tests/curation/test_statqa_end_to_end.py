"""StatQA end to end, on SQLite and PostgreSQL, with the shared subset: ``import-statqa`` registers one dataset per
table with its questions and gold (again: skipped), a release carries them, an uploaded answers file is scored
(leaderboard row, stale-free), and an agent run answered by the scripted model is scored the same way."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.models import Dataset, Role, RunStatus, ScoringRun
from curation.services import agent_runs as ar
from curation.services.background_jobs import execute_job
from curation.services.kind_import import import_kind
from curation.services.leaderboard import leaderboard
from curation.services.releases import cut_release
from curation.services.scoring import execute_run, register_run
from curation.settings import Settings
from evaluation.tasks import task_kind
from evaluation.tasks.parts import part_of
from exports.native.read import read_release
from tests import factories as f
from tests.cli_runner import forkpaths
from tests.evaluation.statqa_world import shared_statqa
from tests.llm_server import ScriptedLLM

KIND = task_kind("statqa")


@pytest.fixture
def world(engine, store, tmp_path):
    folder = shared_statqa()
    curator = f.user(engine, "cora", Role.CURATOR)
    evaluator = f.user(engine, "evie", Role.EVALUATOR)
    with session_scope(engine) as s:
        report = import_kind(session=s, actor=curator, kind="statqa", path=folder, store=store,
                             max_bytes=10_000_000)
    artifacts = f.artifacts_for(tmp_path / "releases")
    with session_scope(engine) as s:
        cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts, store=store,
                    dataset_names=report.datasets)
    return type("World", (), {"engine": engine, "store": store, "folder": folder, "curator": curator,
                              "evaluator": evaluator, "artifacts": artifacts, "report": report})


def test_import_registers_each_table_and_a_release_carries_questions_and_gold(world):
    assert len(world.report.datasets) == 8 and world.report.items == 40 and world.report.refused == []
    assert "Registered 8 datasets with 40 StatQA questions" in world.report.lines()[1]
    with session_scope(world.engine) as s:
        crop = s.exec(select(Dataset).where(Dataset.name == "statqa_crop_production_dataset")).one()
        assert crop.source == "kind:statqa" and crop.extra["statqa"]["licence"] == "GPL-3.0"
        assert (crop.num_rows, crop.num_columns) == (4, 14)
        again = import_kind(session=s, actor=world.curator, kind="statqa", path=world.folder, store=world.store,
                            max_bytes=10_000_000)
    assert again.datasets == [] and len(again.unchanged) == 8
    release = read_release(world.artifacts.releases_root / "1.0.0")
    parts = {d.name: part_of(d, KIND) for d in release.datasets}
    assert sum(len(p.questions) for p in parts.values()) == 40
    q7 = next(q for p in parts.values() for q in p.questions if q.id == "7")
    assert q7.gold is not None and q7.gold.columns == ["Vietnam"]
    crop_rel = next(d for d in release.datasets if d.name == "statqa_crop_production_dataset")
    assert {f.name for f in crop_rel.files} >= {"Crop_Production_Dataset.csv", "LICENSE"}


def test_an_uploaded_answers_file_is_scored_and_ranked(world):
    release = read_release(world.artifacts.releases_root / "1.0.0")
    golds = {q.id: q.gold.text for d in release.datasets for q in part_of(d, KIND).questions if q.gold}
    answers = {i: f"Answer: {g}" for i, g in list(golds.items())[:10]} | {"9": "no idea"}
    data = json.dumps({"answers": answers}).encode()
    with session_scope(world.engine) as s:
        run = register_run(session=s, actor=world.evaluator, release_version="1.0.0", files=[("a.json", data)],
                           agent="statqa-bot", model_name="m", kind="statqa", artifacts=world.artifacts,
                           max_bytes=1_000_000)
        run_id = run.id
        assert run.progress_total == 40  # queued: every question of the release counts, answered or not
    done = execute_run(world.engine, run_id, artifacts=world.artifacts)
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    assert (done.progress_done, done.progress_total) == (40, 40)
    right = sum(1 for i in answers if i != "9" and i != "280")
    o = done.scores["overall"]
    assert o["accuracy"]["point"] == pytest.approx(right / 40) and o["invalid"] == (1 if "9" in answers else 0)
    with session_scope(world.engine) as s:
        rows = leaderboard(session=s, actor=world.evaluator, release_version="1.0.0", artifacts=world.artifacts,
                           kind="statqa")
    assert [r["run"] for r in rows] == [run_id] and rows[0]["accuracy"] == pytest.approx(right / 40)
    assert rows[0]["questions"] == 40 and not rows[0]["stale"]


def test_an_agent_run_answers_every_question_and_is_scored(world, tmp_path):
    release = read_release(world.artifacts.releases_root / "1.0.0")
    golds = {q.question: q.gold for d in release.datasets for q in part_of(d, KIND).questions if q.gold}

    def respond(request):  # the model replies with the gold of the question it is asked
        prompt = request["messages"][-1]["content"]
        gold = next(g for q, g in golds.items() if json.dumps(q, ensure_ascii=False) in prompt)
        return f"My selection: {json.dumps({'columns': gold.columns, 'methods': gold.methods})}"

    settings = Settings(data_dir=tmp_path, llm_max_retries=0, llm_timeout_s=5)
    with ScriptedLLM(responder=respond) as llm:
        with session_scope(world.engine) as s:
            run = ar.start_agent_run(session=s, actor=world.evaluator, release_version="1.0.0", model="scripted",
                                     base_url=llm.url, strategy="oneshot", kind="statqa",
                                     artifacts=world.artifacts)
            job_id, run_id = run.job_id, run.id
        execute_job(world.engine, job_id, settings)
        assert len(llm.requests) == 40
    with session_scope(world.engine) as s:
        done = ar.get_agent_run(session=s, actor=world.evaluator, run_id=run_id)
        assert done.status == RunStatus.SUCCEEDED.value, done.message
        scored = s.get(ScoringRun, done.scoring_run_ids[0])
        assert scored.status == RunStatus.SUCCEEDED.value, scored.message
        assert scored.kind == "statqa" and scored.scores["overall"]["accuracy"]["point"] == pytest.approx(39 / 40)


def test_the_cli_imports_a_statqa_folder(tmp_path):
    done = forkpaths(tmp_path, "import-statqa", str(shared_statqa()))
    assert done.returncode == 0, done.stderr
    assert "Registered 8 datasets with 40 StatQA questions" in done.stdout
    missing = forkpaths(tmp_path, "import-statqa", str(tmp_path / "nowhere"))
    assert missing.returncode != 0 and "is not a folder" in missing.stderr
