"""QRData end to end on the shared subset (../shared/qrdata), on SQLite and PostgreSQL: imported with the kind's
importer (the generic service and ``forkpaths import-qrdata``), carried by a release, an answers file scored with
upstream's rules (invalid answers counted wrong, the rest scored), an agent run answering every question and scored
automatically, both on the leaderboard; ``forkpaths score-schema qrdata`` prints the published schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import select

from curation.artifacts import ArtifactStore
from curation.db import session_scope
from curation.models import Dataset, Role, RunStatus, ScoringRun
from curation.services import agent_runs as ar
from curation.services.background_jobs import execute_job
from curation.services.kind_import import import_kind
from curation.services.leaderboard import leaderboard
from curation.services.releases import cut_release, release_dataset_rows
from curation.services.scoring import execute_run, register_run
from curation.settings import Settings
from evaluation.tasks import task_kind
from evaluation.tasks.parts import part_of
from evaluation.tasks.qrdata import SCHEMA_PATH, read_result
from exports.native.read import read_release
from tests import factories as f
from tests.cli_runner import forkpaths
from tests.conftest import PROJECT_ROOT, unavailable
from tests.llm_server import ScriptedLLM

SHARED_QRDATA = PROJECT_ROOT.parent / "shared" / "qrdata"


@pytest.fixture
def shared_qrdata() -> Path:
    if not (SHARED_QRDATA / "QRData.json").is_file():
        unavailable("shared", f"QRData's reference data is not at {SHARED_QRDATA} (../shared/qrdata)")
    return SHARED_QRDATA


def _golds(folder: Path) -> dict[str, str]:
    records = json.loads((folder / "QRData.json").read_text(encoding="utf-8"))
    index = json.loads((folder / "upstream_index.json").read_text(encoding="utf-8"))
    return {str(i): r["answer"] for i, r in zip(index, records, strict=True)}


@pytest.fixture
def released(engine, tmp_path, shared_qrdata):
    """The shared subset imported and cut as release 1.0.0 (in the data folder the settings point at)."""
    store = tmp_path / "store"
    curator = f.user(engine, "cora", Role.CURATOR)
    evaluator = f.user(engine, "eva", Role.EVALUATOR)
    with session_scope(engine) as s:
        report = import_kind(session=s, actor=curator, kind="qrdata", path=shared_qrdata, store=store,
                             max_bytes=200 * 2**20)
    assert (len(report.datasets), report.items, report.refused) == (12, 29, [])
    assert report.lines()[1].startswith("Registered 12 datasets with 29 QRData questions: qrdata_online_classroom")
    artifacts = ArtifactStore.at(tmp_path)
    with session_scope(engine) as s:
        names = [d.name for d in s.exec(select(Dataset)).all()]
        cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts, store=store,
                    dataset_names=names)
    return artifacts, evaluator, curator, store


def test_an_imported_folder_is_released_with_its_questions_gold_and_files(engine, released, shared_qrdata):
    artifacts, _, curator, store = released
    release = read_release(artifacts.releases_root / "1.0.0")
    kind = task_kind("qrdata")
    questions = {q.id: (d.name, q) for d in release.datasets if (p := part_of(d, kind)) for q in p.questions}
    assert {k: q.answer for k, (_, q) in questions.items()} == _golds(shared_qrdata)
    polls = next(d for d in release.datasets if d.name == "qrdata_pres08_polls08")
    assert sorted(f.name for f in polls.files) == ["polls08.csv", "pres08.csv"]
    assert all((artifacts.releases_root / "1.0.0" / f.path).is_file() for f in polls.files)
    with session_scope(engine) as s:  # the same folder again: every dataset unchanged, skipped
        again = import_kind(session=s, actor=curator, kind="qrdata", path=shared_qrdata, store=store,
                            max_bytes=200 * 2**20)
    assert again.datasets == [] and len(again.unchanged) == 12


def test_the_releases_page_rows_of_imported_questions_count_no_votes(engine, released):
    """A dataset of imported questions has nothing experts vote on: its row counts its questions, not "votes 0"."""
    _, _, curator, _ = released
    with session_scope(engine) as s:
        rows = release_dataset_rows(session=s, actor=curator, version="1.0.0")
    assert len(rows) == 12 and sum(r["questions"] for r in rows) == 29
    for row in rows:
        assert row["holds"] == "QRData questions" and "votes" not in row and "decisions" not in row, row


def test_an_answers_file_is_scored_by_upstreams_rules(engine, released, shared_qrdata):
    artifacts, evaluator, _, _ = released
    answers = _golds(shared_qrdata)
    answers["352"] = "The ATE is about -4.9"   # first number within 3 %: correct
    answers["353"] = "5.36"                     # the gold is 5.36 %: a hundred times too big, wrong
    answers["364"] = "(B)"                      # starts with no choice: invalid_answer
    answers["365"] = "unknown"                  # no number: invalid_answer
    del answers["366"]                          # unanswered
    with session_scope(engine) as s:
        run = register_run(session=s, actor=evaluator, release_version="1.0.0", kind="qrdata", agent="gold-ish",
                           files=[("answers.json", json.dumps({"answers": answers}).encode())],
                           artifacts=artifacts, max_bytes=10_000_000)
        run_id, planned = run.id, run.progress_total
    done = execute_run(engine, run_id, artifacts=artifacts)
    assert planned == done.progress_total == done.progress_done == 29  # 28 answers; every question is scored
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    s_ = done.scores["qrdata"]
    assert (s_["questions"], s_["correct"], s_["wrong"], s_["invalid_answer"], s_["unanswered"]) == (29, 25, 1, 2, 1)
    assert s_["accuracy"]["point"] == pytest.approx(25 / 29) and s_["accuracy"]["ci_low"] < 25 / 29
    assert "2 answers could not be read" in done.message
    items = {i.id: i for i in read_result(artifacts.get_bytes(done.result_sha256, what="the result")).items}
    assert items["364"].status == "invalid_answer" and "none of the choices" in items["364"].sentence
    with session_scope(engine) as s:
        rows = leaderboard(session=s, actor=evaluator, release_version="1.0.0", artifacts=artifacts, kind="qrdata")
        row = next(r for r in rows if r["run"] == run_id)
        assert row["accuracy"] == pytest.approx(25 / 29) and row["invalid_answer"] == 2 and row["questions"] == 29
        one = leaderboard(session=s, actor=evaluator, release_version="1.0.0", artifacts=artifacts, kind="qrdata",
                          dataset="qrdata_wage")
        assert next(r for r in one if r["run"] == run_id)["accuracy"] == pytest.approx(2 / 3)


def test_an_agent_run_answers_every_question_and_is_scored(engine, released, tmp_path):
    artifacts, evaluator, _, _ = released
    settings = Settings(data_dir=tmp_path, llm_max_retries=0, llm_timeout_s=5)

    def respond(req):
        prompt = req["messages"][-1]["content"]
        answer = "B" if "one of a, b, c" in prompt else "no" if "one of yes, no" in prompt else "-4.91"
        return {"content": json.dumps({"answer": answer, "rationale": "scripted"})}

    with ScriptedLLM(responder=respond) as llm:
        with session_scope(engine) as s:
            run = ar.start_agent_run(session=s, actor=evaluator, release_version="1.0.0", model="scripted",
                                     base_url=llm.url, strategy="oneshot", kind="qrdata", artifacts=artifacts)
        execute_job(engine, run.job_id, settings)
        assert len(llm.requests) == 29
    with session_scope(engine) as s:
        done = ar.get_agent_run(session=s, actor=evaluator, run_id=run.id)
        assert done.status == RunStatus.SUCCEEDED.value, done.message
        scored = s.get(ScoringRun, done.scoring_run_ids[0])
        assert scored.status == RunStatus.SUCCEEDED.value and scored.kind == "qrdata", scored.message
        q = scored.scores["qrdata"]
        # -4.91 is the gold of 352 only; B of 364; no of 359 and 360 (361's gold is yes)
        assert (q["questions"], q["correct"], q["invalid_answer"]) == (29, 4, 0)
        rows = leaderboard(session=s, actor=evaluator, release_version="1.0.0", artifacts=artifacts, kind="qrdata")
        assert any(r["run"] == scored.id and r["accuracy"] == pytest.approx(4 / 29) for r in rows)


def test_the_cli_imports_and_prints_the_schema(tmp_path, shared_qrdata):
    done = forkpaths(tmp_path, "import-qrdata", str(shared_qrdata))
    assert done.returncode == 0, done.stderr
    assert "Registered 12 datasets with 29 QRData questions" in done.stdout
    schema = forkpaths(tmp_path, "score-schema", "qrdata")
    assert schema.returncode == 0, schema.stderr
    assert json.loads(schema.stdout) == json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    bad = forkpaths(tmp_path, "import-qrdata", str(tmp_path / "nowhere"))
    assert bad.returncode != 0 and "has no QRData.json" in bad.stderr
