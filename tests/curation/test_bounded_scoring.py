"""Bounded scoring (issue 15, point 7) and hostile submissions through the service the Runs page uses (point 9):
the per-analysis time limit, the cap on analyses per submission and the run's time budget are honoured, and
bad analyses get a status and a sentence while the others are scored."""

from __future__ import annotations

import json

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import ScoringError
from curation.models import RunStatus, ScoringRun
from curation.services import releases as rel
from curation.services import scoring as sc
from curation.settings import Settings
from evaluation.records import FailureCategory
from evaluation.results import read_result
from evaluation.submissions import SubmissionError
from tests.curation.scoring_world import make_world

GOOD = {
    "cvars": {"ivs": [{"description": "Masculinity-femininity of the hurricane's name", "columns": ["masfem"]}],
              "dv": {"description": "Total deaths caused by the hurricane", "columns": ["alldeaths"]},
              "controls": []},
    "transform_code": "def transform(df):\n    df = df[df['alldeaths'] > 0]\n    return df\n",
    "m_code": "def model(df):\n    return smf.ols('alldeaths ~ masfem', data=df).fit()\n",
}
LOOP = dict(GOOD, transform_code="def transform(df):\n    while True:\n        pass\n    return df\n")


def _file(*analyses: dict, name: str = "hurricane") -> bytes:
    return json.dumps({"dataset_name": name, "analyses": list(analyses)}).encode()


@pytest.fixture
def world(engine, tmp_path, shared_blade):
    return make_world(engine, tmp_path, shared_blade)


@pytest.fixture
def warm(sqlite_engine, tmp_path, shared_blade):
    """A world whose ground truth is already in the run's cache (its build would count against a small budget)."""
    w = make_world(sqlite_engine, tmp_path, shared_blade)
    with session_scope(w.engine) as s:
        release, folder = rel.stored_release(rel.release_record(session=s, version="1.0.0"), w.artifacts)
    sc._transform_matching_for(release.datasets[0], folder, cache_dir=tmp_path / "cache" / "groundtruth",
                               mode="default")
    return w


def _execute(w, files, limits: sc.ScoringLimits) -> ScoringRun:
    run = w.register(files, limits=limits)
    return sc.execute_run(w.engine, run.id, artifacts=w.artifacts, limits=limits)


def _analyses(w, run: ScoringRun):
    return read_result(w.artifacts.object_path(run.result_sha256)).datasets[0].analyses


def test_the_limits_come_from_the_settings(monkeypatch):
    assert sc.ScoringLimits.from_settings(Settings(_env_file=None)) == sc.ScoringLimits(
        analysis_timeout_s=60.0, run_budget_s=7200.0, max_analyses=2000, memory_mb=4096)
    for name, value in (("SCORE_ANALYSIS_TIMEOUT_S", "5"), ("SCORE_RUN_BUDGET_S", "90"),
                        ("MAX_ANALYSES_PER_SUBMISSION", "7"), ("SANDBOX_MEMORY_MB", "1500")):
        monkeypatch.setenv(f"FORKPATHS_{name}", value)
    assert sc.ScoringLimits.from_settings(Settings(_env_file=None)) == sc.ScoringLimits(
        analysis_timeout_s=5.0, run_budget_s=90.0, max_analyses=7, memory_mb=1500)


def test_a_submission_over_the_cap_is_refused_and_nothing_is_stored(world):
    with pytest.raises(ScoringError) as info:
        world.register(limits=sc.ScoringLimits(max_analyses=4))
    assert str(info.value) == (
        "multirun_analyses.json holds 10 analyses; a submission may hold at most 4. Split it into several runs, or "
        "ask an administrator to raise FORKPATHS_MAX_ANALYSES_PER_SUBMISSION. Nothing was stored.")
    assert world.register(limits=sc.ScoringLimits(max_analyses=10)).progress_total == 10  # the cap itself is fine
    with session_scope(world.engine) as s:
        assert len(s.exec(select(ScoringRun)).all()) == 1


def test_an_endless_loop_times_out_and_the_other_analyses_are_scored(warm):
    limits = sc.ScoringLimits(analysis_timeout_s=2)
    run = _execute(warm, [("loops.json", _file(GOOD, LOOP, GOOD))], limits)
    assert run.status == RunStatus.SUCCEEDED.value, run.message
    first, looped, last = _analyses(warm, run)
    assert [first.status, looped.status, last.status] == ["ok", "timeout", "ok"]
    assert looped.message == ("analysis 1: its transform code ran longer than the 2 s limit per analysis and was "
                              "stopped; its variables and model are still scored, its transforms score nothing.")
    assert looped.record.failure == FailureCategory.TIMEOUT and looped.record.transform.status == "timeout"
    assert looped.record.matched_cvars == first.record.matched_cvars != []  # the variables still count
    assert first.record.transform.status == last.record.transform.status == "ok"
    assert run.message.startswith("1 analysis ran longer than the 2 s limit per analysis")
    assert run.transform_matcher["limits"]["analysis_timeout_s"] == 2


def test_a_file_of_loops_cannot_hold_the_worker_past_the_run_budget(warm):
    from curation.services.run_worker import RunWorker

    limits = sc.ScoringLimits(analysis_timeout_s=2, run_budget_s=6)
    run = warm.register([("loops.json", _file(LOOP, LOOP, LOOP, LOOP, LOOP, GOOD))], limits=limits)
    worker = RunWorker(warm.engine, artifacts=warm.artifacts, judges=sc.JudgeSettings(),
                       limits=limits)
    try:
        done = worker.submit(run.id).result(timeout=300)
    finally:
        worker.shutdown()
    assert done.status == RunStatus.SUCCEEDED.value and done.progress_done == done.progress_total == 6
    statuses = [a.status for a in _analyses(warm, done)]
    assert statuses[0] == "timeout" and set(statuses) == {"timeout", "budget_exhausted"}
    assert statuses[-1] == "budget_exhausted"  # the good analysis was never reached
    reached = statuses.count("timeout")
    last = _analyses(warm, done)[-1]
    assert last.message.startswith("analysis 5: the run's time budget of 6 s ran out after ")
    assert last.record.failure == FailureCategory.BUDGET_EXHAUSTED and not last.record.scored
    assert f"with {6 - reached} of 6 analyses not scored (status 'budget_exhausted'" in done.message


def test_hostile_analyses_get_statuses_and_sentences_and_the_rest_are_scored(warm):
    huge = dict(GOOD, transform_code="def transform(df):\n    df['x'] = " + "+".join(["1"] * 200_000) + "\n"
                                     "    return df\n")
    files = [("hostile.json", _file(
        huge, GOOD,
        dict(GOOD, transform_code="def transform(df):\n    df['x\ud800'] = 1\n    return df\n"),
        dict(GOOD, transform_code="def transform(df):\n    df['x'] = 1\n    return None\n"),
        dict(GOOD, transform_code="def transform(df):\n    df['x'] = 1\n    raise SystemExit(0)\n    return df\n"),
        dict(GOOD, transform_code="def transform(df):\n    class Stop(BaseException):\n        pass\n"
                                  "    raise Stop('halt')\n    return df\n"),
        dict(GOOD, transform_code="def transform(df):\n    return df.sample(30_000_000, replace=True)\n"),
    ))]
    run = _execute(warm, files, sc.ScoringLimits(memory_mb=1024, analysis_timeout_s=120))
    assert run.status == RunStatus.SUCCEEDED.value, run.message
    a = _analyses(warm, run)
    assert [x.status for x in a] == ["code_problem", "ok", "code_problem", "code_problem", "ok", "ok", "ok"]
    assert "transform_code is 400,0" in a[0].message
    assert "holds a lone surrogate (\\ud800) at line 2, column 10" in a[2].message
    assert "returns None, not a data frame" in a[3].message
    assert "raised at line 2: SystemExit: 0" in a[4].record.transform.message  # the code's failure
    assert "Stop: halt" in a[5].record.transform.message
    assert "sandbox failed" not in a[4].record.transform.message + a[5].record.transform.message
    big = a[6].record.transform.message  # where the memory runs out decides which sentence: both say it
    assert "no message" not in big and ("MemoryError: Unable to allocate" in big or "1024 MB memory limit" in big)
    assert all(x.record.matched_cvars for x in a)  # every analysis's variables were still judged


def test_unreadable_and_oddly_named_submissions_are_refused_with_a_sentence(world):
    with pytest.raises(SubmissionError, match="nests objects and lists more than 100 levels deep"):
        world.register([("deep.json", b'{"dataset_name": "hurricane", "analyses": ' + b"[" * 100_000
                        + b"]" * 100_000 + b"}")])
    with pytest.raises(SubmissionError, match="holds a number of 5,000 digits at line 1"):
        world.register([("n.json", b'{"dataset_name": "hurricane", "n": ' + b"9" * 5000 + b', "analyses": []}')])
    with pytest.raises(SubmissionError, match="the key 'transform_code' appears twice in one object"):
        world.register([("dup.json", _file(GOOD).replace(b'"m_code"', b'"transform_code": "x", "m_code"'))])
    with pytest.raises(ScoringError) as info:
        world.register([("evil\x1b[2J.json", _file(GOOD, name="hurri\x1b]0;pwned\x07cane"))])
    assert str(info.value).startswith("evil\\x1b[2J.json is a submission for dataset 'hurri\\x1b]0;pwned\\x07cane'")
    with pytest.raises(ScoringError, match=r"agent name 'a\\x1b\[31mgent' holds a control or invisible character "
                                           r"\(\\x1b at position 2\)"):
        world.register([("ok.json", _file(GOOD))], agent="a\x1b[31mgent")
    with session_scope(world.engine) as s:
        assert s.exec(select(ScoringRun)).all() == []


# ------------------------------------------------------------------------------------------ forkpaths score


def test_forkpaths_score_honours_the_limits_and_answers_bad_files_with_a_sentence(tmp_path, shared_blade):
    import subprocess

    from curation.settings import PROJECT_ROOT
    from tests.cli_runner import forkpaths

    def cli(*args: str, process: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
        return forkpaths(tmp_path, *args, cwd=PROJECT_ROOT, process=process,
                         **{f"FORKPATHS_{k}": v for k, v in env.items()})

    def score(name: str, content: bytes, process: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
        path = tmp_path / name
        path.write_bytes(content)
        return cli("score", "--release", "1.0.0", "--submission", str(path), "--out", str(tmp_path / "out.json"),
                   process=process, **env)

    assert cli("import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert cli("release", "create", "--version", "1.0.0").returncode == 0
    refusals = {
        "over the cap": (score("many.json", _file(GOOD, GOOD, GOOD), MAX_ANALYSES_PER_SUBMISSION="2"),
                         "many.json holds 3 analyses; a submission may hold at most 2."),
        "deep": (score("deep.json", b'{"dataset_name": "hurricane", "analyses": ' + b"[" * 100_000 + b"]" * 100_000
                       + b"}"), "nests objects and lists more than 100 levels deep"),
        "digits": (score("n.json", b'{"dataset_name": "hurricane", "n": ' + b"9" * 5000 + b', "analyses": []}'),
                   "holds a number of 5,000 digits at line 1, column 36"),
        "duplicate": (score("dup.json", _file(GOOD).replace(b'"m_code"', b'"m_code": "x", "m_code"')),
                      "the key 'm_code' appears twice in one object"),
        "control": (score("ctl.json", _file(GOOD, name="hurri\x1b[2Jcane")),
                    "is a submission for dataset 'hurri\\x1b[2Jcane', which release 1.0.0 does not have"),
    }
    for what, (done, sentence) in refusals.items():
        assert done.returncode == 2 and sentence in done.stderr, (what, done.stderr)
        assert "Traceback" not in done.stderr and "\x1b" not in done.stderr, what
    scored = score("loop.json", _file(GOOD, LOOP, dict(GOOD, transform_code="raise KeyboardInterrupt")),
                   SCORE_ANALYSIS_TIMEOUT_S="2", process=True)  # the real command, once
    assert scored.returncode == 0, scored.stderr
    assert "note: 1 analysis ran longer than the 2 s limit per analysis" in scored.stderr
    analyses = json.loads((tmp_path / "out.json").read_text())["datasets"][0]["analyses"]
    assert [a["status"] for a in analyses] == ["ok", "timeout", "ok"]
    assert "raised at line 1: KeyboardInterrupt" in analyses[2]["record"]["transform"]["message"]
    assert "Traceback" not in scored.stderr
