"""Each kind's part of a release, through the services (issue 27, items 1 and 2).

* An MCQ run is flagged stale when a re-release changes an answer key or adds a question (its ground-truth hash
  covers the MCQs now), while a BLADE analyses run on the same dataset is not (nothing it scores changed).
* A fresh install's first release describes what it holds: the starters' programmatic tasks, in the cut's
  summary, the Releases page rows and the dataset card (it said "BLADE analyses, 0 decisions, 0 MCQs").
"""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from curation.bootstrap import initialise
from curation.db import session_scope
from curation.models import Dataset, ReleaseRecord, Role, RunStatus, User
from curation.services import leaderboard as lb
from curation.services import releases as rel
from curation.services import scoring as sc
from curation.services.mcq_store import add_mcq, dataset_mcqs, save_mcq
from curation.settings import Settings
from exports.mcq_part import MCQPart
from exports.programmatic_part import ProgrammaticPart
from tests.cli_runner import cli_env, forkpaths
from tests.curation.scoring_world import make_world

STARTERS = ("affairs_redbook", "anes96", "rand_hie")


@pytest.fixture
def world(sqlite_engine, tmp_path, shared_blade):
    return make_world(sqlite_engine, tmp_path, shared_blade)


def _mcq_run(world):
    with session_scope(world.engine) as s:
        release = sc.mcq_release(session=s, actor=world.evaluator, release_version="1.0.0",
                                 artifacts=world.artifacts)
    ids = sorted(q.id for d in release.datasets for q in MCQPart.of(d).items)
    answers = {qid: "A" for qid in ids}
    run = world.score([("answers.json", json.dumps(answers).encode())], agent="mcq-agent", kind="mcq")
    assert run.status == RunStatus.SUCCEEDED.value, run.message
    return run


def _stale(world, *runs):
    with session_scope(world.engine) as s:
        return lb.stale_scores(session=s, runs=list(runs), artifacts=world.artifacts)


def test_an_mcq_run_is_stale_after_a_re_release_changes_an_answer_key(world):
    mcq = _mcq_run(world)
    analyses = world.score(agent="analyses-agent")
    assert analyses.status == RunStatus.SUCCEEDED.value, analyses.message
    world.cut("1.0.1")  # nothing changed: nothing is stale
    assert _stale(world, mcq, analyses) == {}
    with session_scope(world.engine) as s:  # a curator corrects an answer key
        q = dataset_mcqs(session=s, dataset_id=None)[0]
        q.correct_index = (q.correct_index + 1) % len(q.options)
        save_mcq(session=s, mcq=q)
    world.cut("1.1.0")
    stale = _stale(world, mcq, analyses)
    assert set(stale) == {mcq.id}, stale  # the analyses run scored nothing that changed
    assert "hurricane changed in release 1.1.0" in stale[mcq.id].sentence


def test_an_mcq_run_is_stale_after_a_re_release_adds_a_question(world):
    mcq = _mcq_run(world)
    with session_scope(world.engine) as s:
        q = dataset_mcqs(session=s, dataset_id=None)[0]
        add_mcq(session=s, dataset_id=q.dataset_id, mcq_id="hurricane:cvar:new", position=10_000,
                question={"kind": q.kind, "mc_type": q.mc_type, "concept": q.concept, "options": q.options,
                          "correct_index": q.correct_index, "extra": dict(q.extra)})
    world.cut("1.1.0")
    assert set(_stale(world, mcq)) == {mcq.id}


def test_a_fresh_installs_release_describes_its_programmatic_tasks(tmp_path, monkeypatch):
    assert forkpaths(tmp_path, "init", starters=True).returncode == 0
    cut = forkpaths(tmp_path, "release", "create", "--version", "1.0.0", starters=True)
    assert cut.returncode == 0, cut.stderr
    assert "BLADE" not in cut.stdout and "MCQ" not in cut.stdout, cut.stdout
    folder = tmp_path / "data" / "releases" / "1.0.0"
    document = json.loads((folder / "release.json").read_text(encoding="utf-8"))
    held = {d["name"]: len(d["parts"]["programmatic"]["tasks"]) for d in document["datasets"]}
    assert set(held) == set(STARTERS) and all(held.values())  # counted here, from the file itself
    checks = {d["name"]: sum(len(t["checks"]) for t in d["parts"]["programmatic"]["tasks"])
              for d in document["datasets"]}

    for key, value in cli_env(tmp_path / "data", starters=True).items():
        monkeypatch.setenv(key, value)
    engine = initialise(Settings()).engine
    with session_scope(engine) as s:
        record = s.exec(select(ReleaseRecord).where(ReleaseRecord.version == "1.0.0")).one()
        admin = s.exec(select(User).where(User.role == Role.ADMIN.value)).first()
        assert admin is not None
        # the cut's summary
        assert {n: c["parts"]["programmatic"]["programmatic tasks"] for n, c in record.summary.items()} == held
        rows = rel.release_dataset_rows(session=s, actor=admin, version="1.0.0")
        totals = rel.summary_totals(record.summary)
    # the Releases page's rows: what the datasets hold, not "BLADE analyses, 0 decisions, 0 MCQs"
    assert [r["dataset"] for r in rows] == sorted(STARTERS)
    for r in rows:
        assert r["holds"] == "programmatic tasks" and "decisions" not in r and "MCQs" not in r, r
        assert (r["programmatic tasks"], r["checks"]) == (held[r["dataset"]], checks[r["dataset"]])
    assert totals == {"programmatic tasks": sum(held.values())}  # the list of releases: no "0 decisions, 0 MCQs"
    # the dataset card
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "| Programmatic tasks |" in card and "| MCQs |" not in card
    for name, n in held.items():
        assert f"- Programmatic tasks: {n} ({checks[name]} checks)" in card
        assert f"  {name}: {n} programmatic tasks ({checks[name]} checks)" in cut.stdout  # the cut's summary
    assert "every decision, alternative, vote, consensus record and programmatic task" in card


def test_the_releases_page_rows_of_a_1x_record_are_read_through_the_upgrade(world):
    """A record cut before format 2.0 kept its kinds' counts as fields of their own: its rows read the same."""
    with session_scope(world.engine) as s:
        record = s.exec(select(ReleaseRecord).where(ReleaseRecord.version == "1.0.0")).one()
        mcqs = record.summary["hurricane"]["parts"]["mcq"]["MCQs"]
        old = {k: v for k, v in record.summary["hurricane"].items() if k != "parts"} | {"mcqs": mcqs}
        record.summary = {"hurricane": old}
        s.add(record)
    with session_scope(world.engine) as s:
        (row,) = rel.release_dataset_rows(session=s, actor=world.curator, version="1.0.0")
        dataset = s.exec(select(Dataset).where(Dataset.name == "hurricane")).one()
        decided = len(dataset_mcqs(session=s, dataset_id=dataset.id))
    assert row["holds"] == "analysis decisions, MCQs" and row["MCQs"] == mcqs == decided > 0


def test_blind_readers_keep_what_each_kind_lets_them_and_programmatic_parts_are_declared():
    """The kinds' declarations the shared code loops over (a smoke check that the registry holds them)."""
    from evaluation.tasks import kinds_with

    parts = {k.name: k.release_part for k in kinds_with("release_part")}
    assert {"mcq", "hypotheses", "programmatic"} <= set(parts)
    assert parts["mcq"].blind(MCQPart(items=[])) is None  # an MCQ's answer is the gold: never shown blind
    assert parts["programmatic"].model is ProgrammaticPart
