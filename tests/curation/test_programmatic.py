"""Programmatic tasks in the services (issue 20): import from DataSciBench's layout, candidates voted on in stage 2
like any decision, the release gate, releases carrying released checks only, scoring runs of the kind through
the scoring service (registration, execution, leaderboard, drill-down), the starter tasks at first start, and
``forkpaths checks``; on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from sqlmodel import col, select

from curation.bootstrap import initialise
from curation.cli import main
from curation.db import session_scope
from curation.errors import BlindingViolation, PermissionDenied, ScoringError, StageError, VoteError
from curation.models import CuratedCandidate, CuratedItem, Role, RunStatus, ScoringRun, Stage, User, Vote
from curation.services import releases as rel
from curation.services.annotation import submit_analysis
from curation.services.leaderboard import leaderboard
from curation.services.programmatic import (
    ProgrammaticError,
    import_programmatic_tasks,
    list_programmatic_tasks,
    programmatic_run_details,
    propose_artifact,
    propose_check,
    run_release_gate,
)
from curation.services.scoring import cancel_run, execute_run, register_run
from curation.services.stages import set_stage
from curation.services.votes import cast_vote
from curation.settings import Settings
from evaluation.programmatic.runner import CheckLimits
from exports.datascibench import read_tree
from exports.programmatic_part import ProgrammaticTaskRelease
from tests import factories as f
from tests.factories import artifacts_for

REPO = Path(__file__).resolve().parents[2]
CLEAN = "data cleaning & preprocessing"
FAST = CheckLimits(check_timeout_s=10.0)
GOOD = {"task_type": CLEAN, "function": "Data Completeness", "metric": "no missing deaths",
        "code": "import pandas as pd\n\ndef complete(ground_truth):\n"
                "    return bool(pd.read_csv('clean.csv')['deaths'].notna().all())\n"}
ALWAYS = {**GOOD, "metric": "anything goes", "code": "def yes(ground_truth):\n    return True\n"}
pytestmark = pytest.mark.usefixtures("os_sandbox")


@pytest.fixture
def team(engine, store, tmp_path):
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    cur, eva = f.user(engine, "cur", Role.CURATOR), f.user(engine, "eva", Role.EVALUATOR)
    ds = f.dataset(engine, store, assign=[ana, bob])
    for u in (ana, bob):
        f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    task = ProgrammaticTaskRelease(key="storms_clean", prompt="Drop storms with no deaths count; write clean.csv.",
                                   input_files=["data.csv"])
    with pytest.raises(PermissionDenied), session_scope(engine) as s:
        import_programmatic_tasks(session=s, actor=ana, dataset_id=ds.id, tasks=[task])
    with session_scope(engine) as s:
        (stored,) = import_programmatic_tasks(session=s, actor=cur, dataset_id=ds.id, tasks=[task], accept=False)
        task_id = stored.id
    return {"engine": engine, "store": store, "ana": ana, "bob": bob, "cur": cur, "eva": eva, "ds": ds,
            "task_id": task_id, "tmp": tmp_path}


def _vote(t, actor, item_id, kind, answer, why=""):
    with session_scope(t["engine"]) as s:
        cast_vote(session=s, actor=actor, target_kind=f"prog_{kind}", target_id=item_id, question="justifiable",
                  answer=answer, explanation=why)


def _zip(folders: dict[str, dict[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for task, files in folders.items():
            for name, data in files.items():
                z.writestr(f"{task}/{name}", data)
    return buffer.getvalue()


def test_candidates_are_voted_gated_released_and_scored(team) -> None:
    t, engine = team, team["engine"]
    with pytest.raises(StageError), session_scope(engine) as s:  # stage 1: nobody reviews yet
        propose_check(session=s, actor=t["ana"], task_id=t["task_id"], fields=GOOD)
    with session_scope(engine) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.REVIEW)
    with session_scope(engine) as s:
        good = propose_check(session=s, actor=t["ana"], task_id=t["task_id"], fields=GOOD).id
        always = propose_check(session=s, actor=t["ana"], task_id=t["task_id"], fields=ALWAYS).id
        art = propose_artifact(session=s, actor=t["bob"], task_id=t["task_id"], path="clean.csv",
                               data=b"deaths,masfem\n10,2.5\n0,8.1\n").id
    with pytest.raises(ProgrammaticError, match="does not parse"), session_scope(engine) as s:
        propose_check(session=s, actor=t["ana"], task_id=t["task_id"], fields={**GOOD, "code": "def f(:"})
    with pytest.raises(ProgrammaticError, match="none of DataSciBench's six"), session_scope(engine) as s:
        propose_check(session=s, actor=t["ana"], task_id=t["task_id"], fields={**GOOD, "task_type": "cooking"})
    with pytest.raises(VoteError, match="own proposal"):
        _vote(t, t["ana"], good, "check", "yes")
    with pytest.raises(VoteError, match="Say why"):
        _vote(t, t["bob"], good, "check", "no")
    _vote(t, t["bob"], good, "check", "yes")
    _vote(t, t["bob"], always, "check", "yes")
    # the gate needs an accepted artifact first
    with pytest.raises(ProgrammaticError, match="no accepted artifact"), session_scope(engine) as s:
        run_release_gate(session=s, actor=t["cur"], item_id=good, limits=FAST)
    _vote(t, t["ana"], art, "artifact", "yes")
    with pytest.raises(PermissionDenied), session_scope(engine) as s:
        run_release_gate(session=s, actor=t["ana"], item_id=good, limits=FAST)
    with session_scope(engine) as s:
        assert run_release_gate(session=s, actor=t["cur"], item_id=good, limits=FAST).gate["released"]
        refused = run_release_gate(session=s, actor=t["cur"], item_id=always, limits=FAST).gate
        assert not refused["released"] and "passes on every output" in refused["sentence"]
    with session_scope(engine) as s:
        (view,) = list_programmatic_tasks(session=s, actor=t["cur"], dataset_id=t["ds"].id)
        assert {c.item.id: (c.status, c.released) for c in view.checks} == {
            good: ("justifiable", True), always: ("justifiable", False)}
        assert [a.status for a in view.artifacts] == ["justifiable"]
        votes = s.exec(select(Vote).where(Vote.target_kind == "prog_check")).all()
        assert len(votes) == 2
    # an edit is a new candidate: it needs its own votes and gate
    with session_scope(engine) as s:
        edit = propose_check(session=s, actor=t["bob"], task_id=t["task_id"], fields={**GOOD, "metric": "v2"},
                             seed_id=good).id
        (view,) = list_programmatic_tasks(session=s, actor=t["cur"], dataset_id=t["ds"].id)
        assert next(c for c in view.checks if c.item.id == edit).released is False
    # the release carries the released check and the accepted artifact only
    releases = t["tmp"] / "releases"
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=t["cur"], version="1.0.0", notes="", artifacts=artifacts_for(releases), store=t["store"])
    shipped = json.loads((releases / "1.0.0" / "release.json").read_text())["datasets"][0]["parts"]["programmatic"][
        "tasks"]
    assert [(c["id"], c["gate"]["released"]) for c in shipped[0]["checks"]] == [(good, True)]
    assert [a["path"] for a in shipped[0]["artifacts"]] == ["clean.csv"]
    # score two agent runs: run 1 passes, run 2 has a missing value; a third zip is refused before anything is stored
    ok = _zip({"storms_clean": {"clean.csv": b"deaths,masfem\n10,2.5\n"}})
    bad = _zip({"storms_clean": {"clean.csv": b"deaths,masfem\n,2.5\n"}})
    with pytest.raises(ScoringError, match="path traversal"), session_scope(engine) as s:
        register_run(session=s, actor=t["eva"], release_version="1.0.0", files=[("evil.zip", _zip(
            {"storms_clean": {"../../x": b""}}))], agent="a", kind="programmatic", artifacts=artifacts_for(releases), max_bytes=10_000_000)
    with session_scope(engine) as s:
        run = register_run(session=s, actor=t["eva"], release_version="1.0.0",
                           files=[("run1.zip", ok), ("run2.zip", bad)], agent="agent-p", kind="programmatic",
                           artifacts=artifacts_for(releases), max_bytes=10_000_000)
    done = execute_run(engine, run.id, artifacts=artifacts_for(releases))
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    # issue 27: the count a queued run shows is the count it finishes with (every task on every run's zip)
    assert run.progress_total == done.progress_done == done.progress_total == 2
    p = done.scores["programmatic"]
    assert p["success_rate"]["point"] == 0.5 and p["completion_rate"]["point"] == 0.75 and p["runs"] == 2
    assert p["task_types"][CLEAN]["point"] == 0.75
    with session_scope(engine) as s:
        (row,) = leaderboard(session=s, actor=t["eva"], release_version="1.0.0", artifacts=artifacts_for(releases),
                             kind="programmatic")
        assert (row["success_rate"], row["completion_rate"], row["agent_runs"]) == (0.5, 0.75, 2)
        details = programmatic_run_details(session=s, actor=t["eva"], run_id=run.id, artifacts=artifacts_for(releases))
    assert details.code == {good: GOOD["code"]}
    assert [(o.run, o.passed) for o in details.result.outcomes] == [("run 1 (run1.zip)", True),
                                                                      ("run 2 (run2.zip)", False)]
    assert details.outputs[("run 2 (run2.zip)", "storms_clean")] == {"clean.csv": b"deaths,masfem\n,2.5\n"}
    assert "returned False" in details.result.outcomes[1].checks[0].sentence
    # a programmatic run speaks of task folders, not of analyses (issue 26, "Why" 8)
    with session_scope(engine) as s:
        stopped = register_run(session=s, actor=t["eva"], release_version="1.0.0",
                               files=[("run1.zip", ok), ("run2.zip", bad)], agent="agent-q", kind="programmatic",
                               artifacts=artifacts_for(releases), max_bytes=10_000_000)

    def cancel_after_one(done, total, stage):
        if done == 1:
            with session_scope(engine) as s:
                cancel_run(session=s, actor=t["eva"], run_id=stopped.id)

    ended = execute_run(engine, stopped.id, artifacts=artifacts_for(releases), on_progress=cancel_after_one)
    assert ended.status == RunStatus.CANCELLED.value
    assert "of 2 task folders" in ended.message and "analyses" not in ended.message, ended.message


def test_analysts_see_candidates_only_when_they_may_review(team) -> None:
    t = team
    outsider = f.user(t["engine"], "zed")
    with pytest.raises(StageError), session_scope(t["engine"]) as s:
        list_programmatic_tasks(session=s, actor=t["ana"], dataset_id=t["ds"].id)
    with session_scope(t["engine"]) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.REVIEW)
    with pytest.raises((BlindingViolation, PermissionDenied)), session_scope(t["engine"]) as s:
        list_programmatic_tasks(session=s, actor=outsider, dataset_id=t["ds"].id)
    with pytest.raises(PermissionDenied), session_scope(t["engine"]) as s:
        list_programmatic_tasks(session=s, actor=t["ana"])


def test_imports_are_all_or_nothing_and_name_what_is_wrong(team) -> None:
    t = team
    tree = read_tree(REPO / "datasets" / "programmatic")
    with pytest.raises(ProgrammaticError, match="reads data.csv|exists already"), session_scope(t["engine"]) as s:
        import_programmatic_tasks(session=s, actor=t["cur"], dataset_id=t["ds"].id,
                                  tasks=[tree[0].task, tree[0].task], run_gate=False)
    with session_scope(t["engine"]) as s:
        assert s.exec(select(CuratedItem).where(CuratedItem.key == tree[0].task.key)).first() is None
    odd = tree[0].task.model_copy(update={"key": "odd", "input_files": ["sales.xlsx"]})
    with pytest.raises(ProgrammaticError, match="reads sales.xlsx, which dataset"), session_scope(t["engine"]) as s:
        import_programmatic_tasks(session=s, actor=t["cur"], dataset_id=t["ds"].id, tasks=[odd], run_gate=False)


def test_starter_tasks_are_registered_at_first_start_and_score_their_reference_outputs(tmp_path, capsys,
                                                                                        monkeypatch) -> None:
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_STARTER_DATASETS_DIR", str(REPO / "datasets"))
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
    engine = initialise(settings).engine
    with session_scope(engine) as s:
        tasks = s.exec(select(CuratedItem).order_by(CuratedItem.key)).all()
        assert len(tasks) == 6
        items = s.exec(select(CuratedCandidate)).all()
        admin = s.exec(select(User).where(User.role == Role.ADMIN.value)).first()
        views = list_programmatic_tasks(session=s, actor=admin)
    assert all(c.released for v in views for c in v.checks) and sum(len(v.checks) for v in views) == 13
    assert {t.key for t in tasks} == {"affairs_clean", "affairs_predict", "anes_age_histogram",
                                      "anes_ideology_clusters", "randhie_report", "randhie_visits_by_coinsurance"}
    assert {i.payload["task_type"] for i in items if i.role == "check"} == {
        "data cleaning & preprocessing", "data exploration & statistics understanding", "data visualization",
        "predictive modeling", "data mining & pattern recognition", "interpretability & report generation"}
    # headless: the reference outputs pass every check of their task; a wrong folder does not
    gt = REPO / "datasets" / "programmatic" / "data" / "affairs_clean" / "gt"
    out = tmp_path / "out"
    out.mkdir()
    (out / "cleaned.csv").write_bytes((gt / "cleaned.csv").read_bytes())
    assert main(["checks", "run", "affairs_clean", "--outputs", str(out)]) == 2  # the checks come from a release
    assert "No release has been cut yet" in capsys.readouterr().err
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=admin, version="1.0.0", notes="", artifacts=settings.artifact_store(),
                        store=settings.datasets_store)
    assert main(["checks", "run", "affairs_clean", "--outputs", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "checks of release 1.0.0 (the newest release holding the task)" in printed
    assert "completion rate 1.000  (passed: every check returned True)" in printed
    (out / "cleaned.csv").write_text("rate_marriage,affairs,any_affair\n3,0.5,0\n3,0.5,0\n")
    assert main(["checks", "run", "affairs_clean", "--outputs", str(out), "--json"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert [c["status"] for c in outcome["checks"]] == ["false", "false", "false"] and outcome["release"] == "1.0.0"
    assert main(["checks", "run", "nope", "--outputs", str(out)]) == 2
    assert "No release holds a programmatic task 'nope'" in capsys.readouterr().err
    # forkpaths score --kind programmatic: the reference outputs of every starter task, as one agent run
    tree = REPO / "datasets" / "programmatic" / "data"
    folders = {k: {p.name: p.read_bytes() for p in (tree / k / "gt").iterdir() if not p.name.endswith(".txt")}
               for k in (t.key for t in tasks)}
    zipped = tmp_path / "reference.zip"
    zipped.write_bytes(_zip(folders))
    result = tmp_path / "result.json"
    assert main(["score", "--kind", "programmatic", "--release", "1.0.0", "--submission", str(zipped),
                 "--out", str(result)]) == 0
    scores = json.loads(result.read_text())["scores"]["programmatic"]
    assert scores["success_rate"]["point"] == 1.0 and scores["tasks"] == 6 and scores["errors"] == 0
    # issue 27: a zip with three of the six folders is six items queued and six scored (the missing ones fail),
    # not "3 item(s)" queued and 6 finished
    half = tmp_path / "half.zip"
    half.write_bytes(_zip({k: v for k, v in sorted(folders.items())[:3]}))
    assert main(["score", "--kind", "programmatic", "--release", "1.0.0", "--submission", str(half),
                 "--out", str(tmp_path / "half.json")]) == 0
    assert "(6 task folders)" in capsys.readouterr().err
    with session_scope(engine) as s:
        last = s.exec(select(ScoringRun).order_by(col(ScoringRun.id).desc())).first()
        assert last.progress_total == last.progress_done == 6
    assert set(scores["task_types"]) == {i.payload["task_type"] for i in items if i.role == "check"}


def test_the_llm_proposes_candidates_by_self_consistency_and_garbage_stores_nothing(team) -> None:
    from evaluation.llm import LLMAnswerError, LLMClient, LLMConfig
    from tests.llm_server import ScriptedLLM

    t = team
    keep = "import pandas as pd\npd.read_csv('data.csv').query('deaths > 0').to_csv('clean.csv', index=False)\n"
    other = "import pandas as pd\npd.read_csv('data.csv').to_csv('clean.csv', index=False)\n"
    checks = {"checks": [{"task_type": CLEAN, "function": "Data Completeness", "metric": "deaths above zero",
                          "code": "import pandas as pd\ndef f(gt):\n    return bool((pd.read_csv('clean.csv')"
                                  "['deaths'] > 0).all())", "ground_truth": "clean.csv"}]}
    with ScriptedLLM() as server:
        server.script += [{"content": json.dumps({"code": c})} for c in (keep, keep, other)]
        server.script += [{"content": json.dumps(checks)}]
        llm = LLMClient(LLMConfig(base_url=server.url, model="m", max_retries=0))
        with session_scope(t["engine"]) as s, pytest.raises(PermissionDenied):
            from curation.services.programmatic_generation import generate_candidates

            generate_candidates(session=s, actor=t["ana"], task_id=t["task_id"], client=llm, samples=3,
                                store=t["store"])
        with session_scope(t["engine"]) as s:
            summary = generate_candidates(session=s, actor=t["cur"], task_id=t["task_id"], client=llm, samples=3,
                                          store=t["store"])
        assert summary["ran"] == 3 and summary["agreed"] == {"clean.csv": 2} and summary["checks"] == 1
        with session_scope(t["engine"]) as s:
            items = s.exec(select(CuratedCandidate).where(CuratedCandidate.item_id == t["task_id"])).all()
            art = next(i for i in items if i.role == "artifact")
            assert art.source == "agreement" and art.extra["support"] == 2 and art.extra["ok_samples"] == 3
            assert next(i for i in items if i.role == "check").source == "llm"
            before = len(items)
        server.script += [{"content": json.dumps({"code": keep})}] * 2 + [{"content": "no idea, sorry"}]
        with pytest.raises(LLMAnswerError), session_scope(t["engine"]) as s:
            generate_candidates(session=s, actor=t["cur"], task_id=t["task_id"], client=llm, samples=2,
                                store=t["store"])
        with session_scope(t["engine"]) as s:
            assert len(s.exec(select(CuratedCandidate).where(CuratedCandidate.item_id == t["task_id"])).all()) == before


def test_checks_run_against_a_given_release_reads_its_checks_from_its_files(team) -> None:
    """`checks run --release V`: the checks release V carries (not the database's current ones); default the
    newest release holding the task; nothing written."""
    from curation.errors import NotFoundError
    from curation.models import ReleaseRecord, ScoringRun, VoteChange
    from curation.services.programmatic import released_task
    from evaluation.programmatic.runner import run_checks

    t, engine = team, team["engine"]
    releases = t["tmp"] / "releases"
    rows = {**GOOD, "metric": "at least two storms",
            "code": "import pandas as pd\n\ndef rows(ground_truth):\n    return len(pd.read_csv('clean.csv')) >= 2\n"}
    with pytest.raises(NotFoundError, match="No release has been cut yet"), session_scope(engine) as s:
        released_task(session=s, actor=t["eva"], key="storms_clean", releases_root=releases)
    with session_scope(engine) as s:
        set_stage(session=s, actor=t["cur"], dataset_id=t["ds"].id, stage=Stage.REVIEW)
        art = propose_artifact(session=s, actor=t["bob"], task_id=t["task_id"], path="clean.csv",
                               data=b"deaths,masfem\n10,2.5\n3,8.1\n").id
        good = propose_check(session=s, actor=t["ana"], task_id=t["task_id"], fields=GOOD).id
    _vote(t, t["ana"], art, "artifact", "yes")
    _vote(t, t["bob"], good, "check", "yes")
    with session_scope(engine) as s:
        assert run_release_gate(session=s, actor=t["cur"], item_id=good, limits=FAST).gate["released"]
        rel.cut_release(session=s, actor=t["cur"], version="1.0.0", notes="", artifacts=artifacts_for(releases), store=t["store"])
    with session_scope(engine) as s:
        more = propose_check(session=s, actor=t["ana"], task_id=t["task_id"], fields=rows).id
    _vote(t, t["bob"], more, "check", "yes")
    with session_scope(engine) as s:
        assert run_release_gate(session=s, actor=t["cur"], item_id=more, limits=FAST).gate["released"]
        rel.cut_release(session=s, actor=t["cur"], version="1.1.0", notes="", artifacts=artifacts_for(releases), store=t["store"])
    one_storm = {"clean.csv": b"deaths,masfem\n10,2.5\n"}
    with session_scope(engine) as s:
        counts = [len(s.exec(select(m)).all()) for m in (ScoringRun, VoteChange, ReleaseRecord)]
        old, v_old = released_task(session=s, actor=t["eva"], key="storms_clean", releases_root=releases,
                                   version="1.0.0")
        new, v_new = released_task(session=s, actor=t["eva"], key="storms_clean", releases_root=releases)
        with pytest.raises(NotFoundError, match="There is no release 9.9.9"):
            released_task(session=s, actor=t["eva"], key="storms_clean", releases_root=releases, version="9.9.9")
        with pytest.raises(NotFoundError, match="Release 1.0.0 holds no programmatic task 'nope'.*storms_clean"):
            released_task(session=s, actor=t["eva"], key="nope", releases_root=releases, version="1.0.0")
        with pytest.raises(PermissionDenied):
            released_task(session=s, actor=t["ana"], key="storms_clean", releases_root=releases)
    assert (v_old, v_new) == ("1.0.0", "1.1.0")
    assert [c.id for c in old.checks] == [good] and [c.id for c in new.checks] == [good, more]
    assert run_checks(old, one_storm, limits=FAST).passed  # the 1.0.0 checks: no missing deaths
    assert [c.status for c in run_checks(new, one_storm, limits=FAST).checks] == ["true", "false"]
    with session_scope(engine) as s:
        assert [len(s.exec(select(m)).all()) for m in (ScoringRun, VoteChange, ReleaseRecord)] == counts


def test_contested_checks_and_artifacts_go_on_the_meetings_agenda_and_its_outcome_decides_them(engine, store,
                                                                                             tmp_path) -> None:
    """Stage 3: a split check and a split artifact are on the meeting's agenda (an imported accepted one is not);
    analysts revise votes on them in the meeting; the outcomes decide their status and so the release."""
    from curation.services.meetings import (
        close_meeting,
        meeting_agenda,
        meeting_summary,
        record_outcome,
        revise_vote,
        start_meeting,
    )

    ana, bob, cat = f.user(engine, "ana"), f.user(engine, "bob"), f.user(engine, "cat")
    cur = f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[ana, bob, cat])
    for u in (ana, bob, cat):
        f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    imported = read_tree(REPO / "datasets" / "programmatic")[0].task.model_copy(update={"input_files": ["data.csv"]})
    with session_scope(engine) as s:
        (task,) = import_programmatic_tasks(session=s, actor=cur, dataset_id=ds.id, accept=False, tasks=[
            ProgrammaticTaskRelease(key="storms_clean", prompt="Write clean.csv.", input_files=["data.csv"])])
        import_programmatic_tasks(session=s, actor=cur, dataset_id=ds.id, tasks=[imported], run_gate=False)
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.REVIEW)
    with session_scope(engine) as s:
        art = propose_artifact(session=s, actor=ana, task_id=task.id, path="clean.csv",
                               data=b"deaths,masfem\n10,2.5\n3,8.1\n").id
        odd = propose_artifact(session=s, actor=ana, task_id=task.id, path="summary.txt", data=b"mean 6.5\n").id
        check = propose_check(session=s, actor=ana, task_id=task.id, fields=GOOD).id
    t = {"engine": engine}
    for voter in (bob, cat):
        _vote(t, voter, art, "artifact", "yes")
    _vote(t, bob, odd, "artifact", "yes")
    _vote(t, cat, odd, "artifact", "no", "the task asks for no summary")
    _vote(t, bob, check, "check", "yes")
    _vote(t, cat, check, "check", "no", "deaths may be zero")
    with session_scope(engine) as s:
        assert run_release_gate(session=s, actor=cur, item_id=check, limits=FAST).gate["released"]
        (view,) = [v for v in list_programmatic_tasks(session=s, actor=cur, dataset_id=ds.id)
                   if v.task.key == "storms_clean"]
        assert not next(c for c in view.checks if c.item.id == check).released  # the gate passed, the votes split
        set_stage(session=s, actor=cur, dataset_id=ds.id, stage=Stage.CLOSED)
    with session_scope(engine) as s:
        meeting = start_meeting(session=s, actor=cur, dataset_id=ds.id, attendee_ids=[bob.id, cat.id])
        on_agenda = {(a["target_kind"], a["target_id"]) for a in meeting.agenda}
        meeting_id = meeting.id
    assert on_agenda == {("prog_check", check), ("prog_artifact", odd)}  # not the agreed one, not the imported ones
    with session_scope(engine) as s:
        _, agenda = meeting_agenda(session=s, actor=cat, meeting_id=meeting_id)
        shown = {a.item.target_id: a for a in agenda}
        assert shown[check].item.kind == "check" and shown[check].item.label == "Data Completeness / no missing deaths"
        assert shown[check].item.detail["gate"]["released"] and "storms_clean" in shown[check].item.concept
        assert shown[odd].item.detail["path"] == "summary.txt" and shown[odd].before == {
            "justifiable": 1, "unjustifiable": 1, "unsure": 0}
    with pytest.raises(VoteError, match="own proposal"), session_scope(engine) as s:
        revise_vote(session=s, actor=ana, meeting_id=meeting_id, target_kind="prog_check", target_id=check,
                    question="justifiable", answer="yes")
    with session_scope(engine) as s:  # cat is convinced in the meeting
        revise_vote(session=s, actor=cat, meeting_id=meeting_id, target_kind="prog_check", target_id=check,
                    question="justifiable", answer="yes")
    with pytest.raises(PermissionDenied), session_scope(engine) as s:
        record_outcome(session=s, actor=bob, meeting_id=meeting_id, target_kind="prog_check", target_id=check,
                       outcome="justifiable", reason="x")
    with session_scope(engine) as s:
        record_outcome(session=s, actor=cur, meeting_id=meeting_id, target_kind="prog_check", target_id=check,
                       outcome="justifiable", reason="zero deaths are recorded as 0, never missing")
        record_outcome(session=s, actor=cur, meeting_id=meeting_id, target_kind="prog_artifact", target_id=odd,
                       outcome="unjustifiable", reason="the task asks for clean.csv only")
        close_meeting(session=s, actor=cur, meeting_id=meeting_id)
    with session_scope(engine) as s:
        (view,) = [v for v in list_programmatic_tasks(session=s, actor=cur, dataset_id=ds.id)
                   if v.task.key == "storms_clean"]
        assert {c.item.id: (c.status, c.released) for c in view.checks} == {check: ("justifiable", True)}
        assert {a.item.id: a.status for a in view.artifacts} == {art: "justifiable", odd: "unjustifiable"}
        assert "meeting" in next(c for c in view.checks).why
        summary = meeting_summary(session=s, meeting_id=meeting_id)
        assert {(r["kind"], r["outcome"]) for r in summary["items"]} == {("check", "justifiable"),
                                                                          ("artifact", "unjustifiable")}
        rel.cut_release(session=s, actor=cur, version="1.0.0", notes="", artifacts=artifacts_for(tmp_path / "rel"), store=store)
    shipped = json.loads((tmp_path / "rel" / "1.0.0" / "release.json").read_text())["datasets"][0]
    (task_out,) = [x for x in shipped["parts"]["programmatic"]["tasks"] if x["key"] == "storms_clean"]
    assert [c["id"] for c in task_out["checks"]] == [check] and [a["path"] for a in task_out["artifacts"]] == [
        "clean.csv"]
