"""Reproducibility runs through the services (SQLite and PostgreSQL): a scored BLADE run with workflows checked by
a scripted inspector on 127.0.0.1, the leaderboard's companion columns, outcome overrides with provenance and
their rates worked by hand, expert labels of the inspector's verdicts, and AIRepr's published files imported,
viewed and re-judged (``forkpaths import-airepr`` too)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from curation.db import session_scope
from curation.errors import OverrideConflict, PermissionDenied, ScoringError
from curation.models import RunStatus, ScoringRun
from curation.services import judge_validation as jv
from curation.services import leaderboard as lb
from curation.services import reproducibility as rp
from curation.services import scoring as sc
from curation.services.scoring import JudgeSettings, execute_run
from curation.settings import PROJECT_ROOT
from evaluation.llm import LLMConfig
from evaluation.reproducibility.models import Outcome
from tests.curation.scoring_world import make_world
from tests.evaluation.repro_world import inspector_responder
from tests.factories import artifacts_for
from tests.llm_server import ScriptedLLM

MODEL = ("def model(df):\n    import statsmodels.formula.api as smf\n"
         "    return smf.ols('alldeaths ~ masfem', data=df).fit()\n")


def _analysis(workflow: str | None) -> dict:
    a = {"cvars": {"ivs": [{"description": "femininity of the name", "columns": ["masfem"]}],
                   "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
         "transform_code": "def transform(df):\n    return df\n", "m_code": MODEL}
    if workflow is not None:
        a["workflow"] = workflow
    return a


def _submission() -> bytes:
    return json.dumps({"dataset_name": "hurricane", "analyses": [
        _analysis("Regress alldeaths on masfem by OLS; report the slope. [scenario: good]"),
        _analysis("Report the mean of the deaths. [scenario: differ]"),
        _analysis("Regress deaths on femininity. [scenario: garbage]"),
        _analysis(None)]}).encode()


@pytest.fixture
def llm():
    with ScriptedLLM(inspector_responder) as server:
        yield server


@pytest.fixture
def world(engine, tmp_path, shared_blade):
    return make_world(engine, tmp_path, shared_blade)


def _judges(server: ScriptedLLM, tmp_path: Path) -> JudgeSettings:
    return JudgeSettings(llm=LLMConfig(base_url=server.url, model="inspector-test", cache_dir=tmp_path / "llm",
                                       max_retries=0))


def test_reproduce_a_run_then_override_and_validate_the_inspector(world, llm, tmp_path, os_sandbox):
    analyses = world.score([("hurricane.json", _submission())], agent="agent-w")
    assert analyses.status == RunStatus.SUCCEEDED.value, analyses.message
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="asks an LLM"):
        rp.reproduce_run(session=s, actor=world.evaluator, run_id=analyses.id, artifacts=world.artifacts, max_bytes=5_000_000)
    judges = _judges(llm, tmp_path)
    with session_scope(world.engine) as s:
        reg = rp.reproduce_run(session=s, actor=world.evaluator, run_id=analyses.id, artifacts=world.artifacts, max_bytes=5_000_000, judges=judges)
        assert (reg.kind, reg.agent, reg.progress_total) == ("reproducibility", "agent-w", 3)
        assert reg.judge == {"name": "inspector", "model": "inspector-test", "base_url": llm.url.rstrip("/")}
    run = execute_run(world.engine, reg.id, artifacts=world.artifacts, judges=judges)
    assert run.status == RunStatus.SUCCEEDED.value, run.message
    assert run.judge["model"] == "inspector-test" and run.judge["templates"]["compare"]
    r = run.scores["reproducibility"]
    assert r["counts"] == {"reproducible": 1, "not_reproducible": 1, "original_failed": 0, "inspector_failed": 1}
    assert r["rate"]["point"] == 0.5 and r["judged"] == 2

    with session_scope(world.engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0", artifacts=world.artifacts)
    row = next(x for x in rows if x["run"] == analyses.id)
    assert (row["repro_rate"], row["repro_not"], row["repro_inspector_failed"]) == (0.5, 1, 1)
    assert row["repro_rate.low"] <= 0.5 <= row["repro_rate.high"]

    # overrides: role, reason, a real change, one per item; the rate is recomputed, the result file kept
    before = world.artifacts.get_bytes(run.result_sha256, what="the result")
    with session_scope(world.engine) as s, pytest.raises(PermissionDenied):
        rp.override_outcome(session=s, actor=world.analyst, run_id=run.id, item="hurricane/2",
                            outcome="not_reproducible", reason="x", artifacts=world.artifacts)
    for outcome, reason, message in [("not_reproducible", " ", "Give a reason"),
                                     ("inspector_failed", "same", "already gave item"),
                                     ("maybe", "why", "Unknown outcome 'maybe'")]:
        with session_scope(world.engine) as s, pytest.raises(ScoringError, match=message):
            rp.override_outcome(session=s, actor=world.evaluator, run_id=run.id, item="hurricane/2",
                                outcome=outcome, reason=reason, artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        o = rp.override_outcome(session=s, actor=world.evaluator, run_id=run.id, item="hurricane/2",
                                outcome="not_reproducible", reason="The garbage answer came from our proxy; "
                                "the workflow itself is too vague to redo.", artifacts=world.artifacts)
        assert (o.original, o.value, o.author_id) == ("inspector_failed", "not_reproducible", world.evaluator.id)
    with session_scope(world.engine) as s, pytest.raises(OverrideConflict, match="eva-s already overrode"):
        rp.override_outcome(session=s, actor=world.evaluator2, run_id=run.id, item="hurricane/2",
                            outcome="reproducible", reason="I disagree", artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        got = rp.run_items(session=s, actor=world.evaluator2, run_id=run.id, artifacts=world.artifacts)
        stored = s.get(ScoringRun, run.id)
        assert stored is not None
        eff = stored.scores_effective["reproducibility"]
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0", artifacts=world.artifacts)
    assert {i.key: i.outcome.value for i in got.items}["hurricane/2"] == "not_reproducible"
    assert got.engine["hurricane/2"].value == "inspector_failed" and len(got.overrides) == 1
    # by hand: 1 reproducible of 3 judged; the engine's own scores are kept apart
    assert eff["rate"]["point"] == pytest.approx(1 / 3) and eff["overrides"] == 1
    assert run.scores["reproducibility"]["rate"]["point"] == 0.5
    assert next(x for x in rows if x["run"] == analyses.id)["repro_rate"] == pytest.approx(1 / 3)
    assert world.artifacts.get_bytes(run.result_sha256, what="the result") == before

    # the inspector's verdicts, labelled blind by an expert, against the inspector: the judge-validation card
    with session_scope(world.engine) as s:
        assert rp.sample_inspector_verdicts(session=s, actor=world.evaluator, run_id=run.id, n=10,
                                            artifacts=world.artifacts) == 2  # the items the inspector compared
        assert jv.next_to_label(session=s, actor=world.evaluator) is None  # not in the matches' queue
    for _ in range(2):
        with session_scope(world.engine) as s:
            item = rp.next_verdict_to_label(session=s, actor=world.evaluator)
            assert item is not None and item.kind == "reproducibility"
            jv.label_decision(session=s, actor=world.evaluator, label_id=item.id, value=True)
    with session_scope(world.engine) as s:
        reports, waiting = rp.inspector_agreement(session=s, actor=world.evaluator)
        card = jv.agreement_card(session=s, actor=world.evaluator)
    assert waiting == 0 and len(reports) == 1
    # experts: both reproducible; inspector: one reproducible, one not → 50 % agreement
    assert (reports[0].judge, reports[0].n, reports[0].percent_agreement) == ("inspector-test", 2, 0.5)
    assert [(c.kind, c.judge) for c in card] == [("reproducibility", "inspector-test")]


def _airepr_folder(root: Path, *, scores=(1, 0, -1), name="gpt-4o_DiscoveryBench_COT", gold0: str = "gold 0") -> Path:
    results = root / "airepr" / "results"
    results.mkdir(parents=True, exist_ok=True)

    def sample(i: int) -> dict:
        return {"steps": [{"workflow": f"1. Load the data. 2. Regress y on x ({i}).", "action": "python_repl_ast",
                           "action_input": f"```python\nimport pandas as pd\nprint({i})\n```",
                           "observation": f"{i}\n", "content": "…", "usage_metadata": {},
                           "final_answer": f"answer {i}"}],
                "final_answer": f"answer {i}", "max_steps_reached": False, "answer": gold0 if i == 0 else f"gold {i}"}

    (results / f"{name}.json").write_text(json.dumps(
        {"0": sample(0), "1": sample(1), "2": {"final_answer": "Sample not included"}, "3": sample(3)}))
    (results / f"{name}_results_20250301_101500.json").write_text(json.dumps(
        {"accuracy_scores": [1, 0, 1], "mean_accuracy_score": 0.67, "reproducibility_scores": list(scores),
         "mean_reproducibility_score": 0.0, "reproducibility_reasons": ["same", "different", "code not run"]}))
    (results / f"{name}_converted_codes.json").write_text(json.dumps(
        {"0": {"converted_code": "print(0)", "reason": "same"}, "1": {"converted_code": "print(2)"}}))
    return root / "airepr"


def test_import_airepr_view_and_rejudge(world, llm, tmp_path, os_sandbox):
    folder = _airepr_folder(tmp_path)
    with session_scope(world.engine) as s:
        runs = rp.import_airepr(session=s, actor=world.evaluator, path=folder, artifacts=world.artifacts)
    assert len(runs) == 1
    with session_scope(world.engine) as s:
        run = s.get(ScoringRun, runs[0].id)
        got = rp.run_items(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts)
    assert (run.agent, run.model_name, run.source, run.judge["model"]) == ("AIRepr COT", "gpt-4o", "import",
                                                                          "gpt-4o-2024-11-20")
    r = run.scores["reproducibility"]
    # AIRepr's mean over 1, 0, -1 would be 0.0; here: 1 of 2 judged, the -1 counted apart
    assert r["counts"] == {"reproducible": 1, "not_reproducible": 1, "original_failed": 1, "inspector_failed": 0}
    assert r["rate"]["point"] == 0.5 and r["accuracy"]["point"] == pytest.approx(2 / 3)
    items = {i.key: i for i in got.items}
    assert list(items) == ["DiscoveryBench/0", "DiscoveryBench/1", "DiscoveryBench/3"]
    assert items["DiscoveryBench/0"].inspector_code == "print(0)" and items["DiscoveryBench/0"].reasoning == "same"
    assert items["DiscoveryBench/0"].original_code == "import pandas as pd\nprint(0)\n"  # upstream's block, as run
    assert "re-judge it to tell them apart" in items["DiscoveryBench/3"].sentence
    assert items["DiscoveryBench/3"].original_run is not None and not items["DiscoveryBench/3"].original_run.ran

    # re-judged with forkpaths' inspector: this release holds none of the samples' data, and says so per item
    judges = _judges(llm, tmp_path)
    with session_scope(world.engine) as s:
        reg = rp.reproduce_run(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts, max_bytes=5_000_000, judges=judges)
    again = execute_run(world.engine, reg.id, artifacts=world.artifacts, judges=judges)
    assert again.status == RunStatus.SUCCEEDED.value, again.message
    assert again.scores["reproducibility"]["counts"]["original_failed"] == 3
    with session_scope(world.engine) as s:
        re_items = rp.run_items(session=s, actor=world.evaluator, run_id=again.id, artifacts=world.artifacts).items
    assert "no hypothesis task of release 1.0.0 has its gold answer" in re_items[0].sentence


@pytest.mark.parametrize(("change", "message"), [
    ("short", "reproducibility_scores has 2 values but the analyst file has 3 evaluated samples"),
    ("two", r"reproducibility_scores\[1\] is 2; AIRepr scores are 1, 0 or -1"),
    ("no_analyst", "the analyst file gpt-4o_DiscoveryBench_COT.json is missing"),
    ("steps", "sample '0': steps is not a list"),
])
def test_bad_airepr_files_are_named_and_nothing_is_stored(world, tmp_path, change, message):
    folder = _airepr_folder(tmp_path, scores=(1, 0) if change == "short" else (1, 2, 0) if change == "two"
                            else (1, 0, -1))
    analyst = folder / "results" / "gpt-4o_DiscoveryBench_COT.json"
    if change == "no_analyst":
        analyst.unlink()
    if change == "steps":
        data = json.loads(analyst.read_text())
        data["0"]["steps"] = "oops"
        analyst.write_text(json.dumps(data))
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match=message):
        rp.import_airepr(session=s, actor=world.evaluator, path=folder, artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        assert not [r for r in sc.list_runs(session=s, actor=world.evaluator) if r.kind == "reproducibility"]


def test_import_airepr_cli(tmp_path, shared_blade):
    from tests.cli_runner import forkpaths

    def cli(*args: str, process: bool = False) -> subprocess.CompletedProcess[str]:
        return forkpaths(tmp_path, *args, cwd=PROJECT_ROOT, process=process)

    assert cli("import-blade", str(shared_blade / "datasets" / "hurricane")).returncode == 0
    assert cli("release", "create", "--version", "1.0.0").returncode == 0
    done = cli("import-airepr", str(_airepr_folder(tmp_path)), process=True)  # the real command, once
    assert done.returncode == 0, done.stderr
    assert "AIRepr COT · gpt-4o on release 1.0.0: reproducibility 0.500" in done.stdout
    assert "original code does not run 1" in done.stdout
    bad = cli("import-airepr", str(tmp_path / "nowhere"))
    assert bad.returncode != 0 and "nowhere does not exist" in bad.stderr


def test_hypotheses_and_airepr_on_a_released_discoverybench_tree(engine, store, tmp_path, llm, os_sandbox):
    """A release cut from imported DiscoveryBench folders: a hypotheses submission with code is judged on the
    task's own data files with its gold answer, and an AIRepr sample whose ground truth is a task's gold is
    re-judged on that task's data."""
    from curation.services import releases as rel
    from curation.services.discoverybench_import import import_discoverybench
    from tests import factories as fx
    from tests.evaluation.repro_world import hypotheses_file
    from tests.exports.test_release_hypotheses import make_tree

    curator = fx.user(engine, "cura-db", fx.Role.CURATOR)
    evaluator = fx.user(engine, "eva-db", fx.Role.EVALUATOR)
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=make_tree(tmp_path / "db"), store=store,
                              max_bytes=200 * 2**20)
    releases = tmp_path / "releases"
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts_for(releases), store=store)
    code = "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint('slope', round(df['BMI'].cov(df['AGE']), 2))\n"
    sub = hypotheses_file([
        {"task": "real/test/bmi/metadata_0/q0", "hypothesis": "BMI rises with age, then falls (positive at first).",
         "workflow": "Read data.csv; report the covariance of BMI and AGE. [scenario: differ]", "code": code},
        {"task": "real/test/bmi/metadata_0/q1", "hypothesis": "Age explains BMI.", "workflow": "w",
         "code": "import pandas as pd\npd.read_csv('bmi_survey.csv')\n"},
        {"task": "real/test/bmi/metadata_0/q2", "hypothesis": "For adults.", "workflow": "w"}])  # no code
    judges = _judges(llm, tmp_path)
    with session_scope(engine) as s:
        reg = sc.register_run(session=s, actor=evaluator, release_version="1.0.0", files=[("hyp.json", sub)],
                              agent="coder", model_name="m", kind="reproducibility", artifacts=artifacts_for(releases), max_bytes=5_000_000, judges=judges)
    run = execute_run(engine, reg.id, artifacts=artifacts_for(releases), judges=judges)
    assert run.status == RunStatus.SUCCEEDED.value, run.message
    with session_scope(engine) as s:
        got = rp.run_items(session=s, actor=evaluator, run_id=run.id, artifacts=artifacts_for(releases))
    items = {i.key: i for i in got.items}
    q0, q1 = items["real/test/bmi/metadata_0/q0"], items["real/test/bmi/metadata_0/q1"]
    assert q0.original_run is not None and q0.original_run.ok and q0.original_run.stdout.startswith("slope")
    assert q0.outcome == Outcome.NOT_REPRODUCIBLE and q0.gold == "BMI rises with age, then falls."
    assert q0.accuracy is not None and q0.accuracy.correct is True  # "positive" is in the answer
    assert q1.outcome == Outcome.ORIGINAL_FAILED and "'bmi_survey.csv', which is not there" in q1.sentence
    assert got.result.skipped == ["real/test/bmi/metadata_0/q2: no code"]
    assert run.scores["reproducibility"]["accuracy"]["graded"] == 1

    # AIRepr's sample 0 has this release's gold answer of bmi q0: re-judged on that task's data and question
    with session_scope(engine) as s:
        imported = rp.import_airepr(session=s, actor=evaluator, artifacts=artifacts_for(releases),
                                    path=_airepr_folder(tmp_path, gold0="BMI rises with age,  then falls."))[0]
        again = rp.reproduce_run(session=s, actor=evaluator, run_id=imported.id, artifacts=artifacts_for(releases), max_bytes=5_000_000, judges=judges)
    done = execute_run(engine, again.id, artifacts=artifacts_for(releases), judges=judges)
    with session_scope(engine) as s:
        re_items = {i.key: i for i in rp.run_items(session=s, actor=evaluator, run_id=done.id, artifacts=artifacts_for(releases)).items}
    matched = re_items["DiscoveryBench/0"]
    assert matched.dataset == "db_real_test_bmi" and matched.question.startswith("How does BMI relate to age?")
    assert matched.original_run is not None and matched.original_run.ok and matched.original_run.stdout == "0\n"
    assert matched.outcome != Outcome.ORIGINAL_FAILED and matched.accuracy is not None
    assert re_items["DiscoveryBench/1"].outcome == Outcome.ORIGINAL_FAILED  # its gold is no task's: no data


def test_an_airepr_react_sample_shows_and_reruns_its_last_step_with_code(engine, store, tmp_path, llm, os_sandbox):
    """AIRepr judged a REACT sample's last step with code (eval/run_reproducibility.py lines 74-82): the import
    shows that step's code, workflow and output first, keeps every step for the drill-down, and ``reproduce``
    re-runs that step's code on the task's data."""
    from curation.services import releases as rel
    from curation.services.discoverybench_import import import_discoverybench
    from tests import factories as fx
    from tests.exports.test_release_hypotheses import make_tree

    evaluator = fx.user(engine, "eva-react", fx.Role.EVALUATOR)
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=make_tree(tmp_path / "db"), store=store,
                              max_bytes=200 * 2**20)
    releases = tmp_path / "releases"
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=fx.user(engine, "cura-react", fx.Role.CURATOR), version="1.0.0", notes="",
                        artifacts=artifacts_for(releases), store=store)
    first = "import pandas as pd\nprint('first look', len(pd.read_csv('data.csv')))\n"
    last = "import pandas as pd\ndf = pd.read_csv('data.csv')\nprint('slope', round(df['BMI'].cov(df['AGE']), 2))\n"
    steps = [{"workflow": "1. Look at data.csv.", "action": "python_repl_ast", "action_input": f"```python\n{first}```",
              "observation": "first look 2\n", "content": "…", "usage_metadata": {}},
             {"workflow": "1. Read data.csv. 2. Report the covariance of BMI and AGE. [scenario: good]",
              "action": "python_repl_ast", "action_input": f"```python\n{last}```", "observation": "slope 42.0\n",
              "content": "…", "usage_metadata": {}},
             {"workflow": "", "action": "", "action_input": "", "observation": "", "content": "Task done!",
              "usage_metadata": {}, "final_answer": "BMI rises with age."}]
    results = tmp_path / "airepr" / "results"
    results.mkdir(parents=True)
    name = "gpt-4o_DiscoveryBench_REACT"
    (results / f"{name}.json").write_text(json.dumps({"0": {
        "steps": steps, "final_answer": "BMI rises with age.", "max_steps_reached": False,
        "answer": "BMI rises with age, then falls."}}))
    (results / f"{name}_results_20250301_101500.json").write_text(json.dumps(
        {"accuracy_scores": [0], "reproducibility_scores": [1], "reproducibility_reasons": ["same"]}))
    judges = _judges(llm, tmp_path)
    with session_scope(engine) as s:
        imported = rp.import_airepr(session=s, actor=evaluator, artifacts=artifacts_for(releases),
                                    path=tmp_path / "airepr")[0]
        shown = rp.run_items(session=s, actor=evaluator, run_id=imported.id, artifacts=artifacts_for(releases))
    item = shown.items[0]
    assert item.original_code == last and item.workflow == steps[1]["workflow"]
    assert item.original_run is not None and item.original_run.stdout == "slope 42.0\n"
    assert [s["code"] for s in item.published["steps"]] == [first, last, ""]  # every step, for the drill-down
    assert item.published["selection"]["code_step"] == 1
    with session_scope(engine) as s:
        again = rp.reproduce_run(session=s, actor=evaluator, run_id=imported.id, artifacts=artifacts_for(releases),
                                 max_bytes=5_000_000, judges=judges)
    done = execute_run(engine, again.id, artifacts=artifacts_for(releases), judges=judges)
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    with session_scope(engine) as s:
        rerun = rp.run_items(session=s, actor=evaluator, run_id=done.id, artifacts=artifacts_for(releases)).items[0]
    assert rerun.original_run is not None and rerun.original_run.ran and rerun.original_run.ok
    assert rerun.original_run.stdout.startswith("slope ") and "first look" not in rerun.original_run.stdout
    assert rerun.original_code.endswith(last) and rerun.workflow == steps[1]["workflow"]
    assert len(rerun.published["steps"]) == 3
