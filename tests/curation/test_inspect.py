"""inspect_ai and forkpaths: `inspect eval forkpaths/<kind>` on a release, with a scripted model (inspect's mockllm),
scores each sample with the kind's own engine (the same numbers forkpaths gives the same answers), and its log,
imported, becomes the same scoring run(s) with the transcripts kept; bad logs and bad samples get a sentence."""

from __future__ import annotations

import json
import re

import pytest
from sqlmodel import select

from curation.artifacts import ArtifactStore
from curation.db import session_scope
from curation.errors import ScoringError
from curation.models import AgentRun, Role, RunStatus, ScoringRun
from curation.services import agent_runs as ar
from curation.services.inspect_import import import_inspect_log
from curation.services.scoring import execute_run, register_run
from tests.curation.scoring_world import make_world
from tests.inspect_support import inspect_entry_point, scripted_model  # noqa: F401 - fixture
from tests.llm_server import ScriptedLLM

pytestmark = pytest.mark.usefixtures("inspect_entry_point")

ANALYSIS = {"cvars": {"ivs": [{"description": "femininity of the hurricane's name", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]},
                      "controls": [{"description": "minimum pressure", "columns": ["min"], "is_moderator": False}]},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('alldeaths ~ masfem + min', data=df).fit()"}


@pytest.fixture(autouse=True)
def data_dir(tmp_path, monkeypatch):
    """The data folder the inspect task's edge reads from the settings (its ground-truth cache), per test."""
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))


@pytest.fixture
def world(tmp_path, shared_blade):
    from tests.conftest import migrated_sqlite

    return make_world(migrated_sqlite(tmp_path / "db.sqlite"), tmp_path, shared_blade)


def _eval(world, tmp_path, kind: str, reply, *, epochs: int = 1, **args):
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval(f"forkpaths/{kind}", task_args={"release": str(world.releases / "1.0.0"), **args},
                        model=scripted_model(reply), epochs=epochs, log_dir=str(tmp_path / "logs"),
                        display="none", log_format=args.pop("log_format", "eval"))
    assert len(logs) == 1 and logs[0].status == "success", logs[0].error
    return logs[0]


def _import(world, path, **kw):
    with session_scope(world.engine) as s:
        got = import_inspect_log(session=s, actor=world.evaluator, name=path.name, data=path.read_bytes(),
                                 artifacts=world.artifacts, max_bytes=5_000_000, **kw)
    runs = [execute_run(world.engine, i, artifacts=world.artifacts) for i in got.scoring_run_ids]
    return got, runs


def _letter(messages) -> str:
    """The scripted model's answer to an MCQ: a letter that depends on the question's wording."""
    text = messages[-1].text
    n = len(re.findall(r"^[A-H][.)] ", text, flags=re.M)) or 2
    return "ABCDEFGH"[sum(map(ord, text)) % n]


def test_mcqs_in_inspect_score_as_forkpaths_scores_them_and_import_as_one_run_per_epoch(world, tmp_path):
    def reply(messages, tools):
        if sum(map(ord, messages[-1].text)) % 3 == 0:
            return "I would rather not say."  # no letter: unparseable, as forkpaths scores it
        return json.dumps({"answer": _letter(messages), "rationale": "scripted"})

    log = _eval(world, tmp_path, "mcq", reply, epochs=2)
    assert log.eval.task == "forkpaths/mcq" and len(log.samples) >= 4
    for sample in log.samples:  # ground truth never reaches the model nor the sample's metadata
        assert set(sample.metadata) == {"forkpaths_kind", "task", "dataset", "title"}
        assert not sample.target
    # the same answers, as an answers file scored by forkpaths itself, epoch by epoch
    by_epoch: dict[int, dict[str, str]] = {}
    for sample in log.samples:
        by_epoch.setdefault(sample.epoch, {})[str(sample.id)] = sample.output.completion
    expected = {}
    for epoch, answers in by_epoch.items():
        direct = world.score([(f"answers-{epoch}.json", json.dumps(answers).encode())], kind="mcq", agent="direct")
        assert direct.status == RunStatus.SUCCEEDED.value, direct.message
        expected[epoch] = direct.scores["mcq"]["accuracy"]
        one = [s.scores["forkpaths_mcq"].value["mcq_accuracy"] for s in log.samples if s.epoch == epoch]
        assert sum(one) / len(one) == pytest.approx(expected[epoch])
        items = {i["id"]: i["status"] for i in world.result_json(direct)["items"]}
        for s in log.samples:  # each sample's score is forkpaths's verdict on that answer
            if s.epoch == epoch:
                assert s.scores["forkpaths_mcq"].value["mcq_accuracy"] == (1.0 if items[s.id] == "correct" else 0.0)
    assert 0 < min(expected.values()) < 1  # some right, some wrong: the comparison can tell them apart
    got, runs = _import(world, tmp_path / "logs" / next(p.name for p in (tmp_path / "logs").iterdir()))
    assert len(runs) == 2 and all(r.status == RunStatus.SUCCEEDED.value for r in runs), [r.message for r in runs]
    assert sorted(r.scores["mcq"]["accuracy"] for r in runs) == sorted(expected.values())
    # an answer without a letter is kept (scored as unparseable) and named, log and sample
    unparseable = [s for s in log.samples if s.output.completion.startswith("I would rather")]
    assert len(got.problems) == len(unparseable)
    assert all(p.startswith(f"The inspect log {got.log}, sample ") for p in got.problems)
    with session_scope(world.engine) as s:
        agent_run = s.get(AgentRun, got.agent_run_id)
        info = agent_run.settings["inspect"]
        assert (info["task"], info["eval_id"], agent_run.model) == ("forkpaths/mcq", log.eval.eval_id, "mockllm/model")
        assert len(info["log_sha256"]) == 64 and agent_run.strategy == "inspect"
        assert {s.get(ScoringRun, i).agent_run_id for i in got.scoring_run_ids} == {got.agent_run_id}
        rows = ar.task_runs(session=s, actor=world.evaluator, run_id=got.agent_run_id)
        assert len(rows) == len(log.samples)
        messages = ar.transcript(session=s, actor=world.evaluator, task_run_id=rows[0].id, artifacts=world.artifacts)
        assert [m["role"] for m in messages] == ["system", "user", "assistant"]


def _multirun(*analyses) -> bytes:
    return json.dumps({"dataset_name": "hurricane", "n": len(analyses),
                       "analyses": {str(i): a for i, a in enumerate(analyses)}}).encode()


def test_blade_analyses_by_inspects_react_agent_with_the_sandboxed_tool_score_and_import_as_forkpaths(world,
                                                                                                        tmp_path):
    from inspect_ai.model import ModelOutput

    from evaluation.inspect_bridge.answers import sample_values
    from evaluation.tasks import task_kind

    def reply(messages, tools):
        if not any(m.role == "tool" for m in messages):  # first: look at the data through the tool
            assert {t.name for t in tools} == {"run_python", "submit"}
            return ModelOutput.for_tool_call("mockllm/model", "run_python",
                                             {"code": "print('rows', len(df)); print(sorted(df.columns)[:3])"})
        return ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": json.dumps(ANALYSIS)})

    log = _eval(world, tmp_path, "analyses", reply, epochs=2, solver="react")
    observations = [m.text for s in log.samples for m in s.messages if m.role == "tool" and m.function == "run_python"]
    assert len(observations) == 2 and all(o.startswith("rows ") for o in observations), observations
    assert all(s.files is None or set(s.files) == {"data.csv"} for s in log.samples)
    direct_one = world.score([("hurricane.json", _multirun(ANALYSIS))], agent="direct")
    assert direct_one.status == RunStatus.SUCCEEDED.value, direct_one.message
    for s in log.samples:  # each epoch's answer scores as forkpaths scores that one analysis
        assert s.scores["forkpaths_analyses"].value == sample_values(task_kind("analyses"), direct_one.scores)
    # imported: one run holding both epochs (coverage@k), scored as the same multi-run file uploaded
    got, runs = _import(world, next((tmp_path / "logs").iterdir()))
    direct = world.score([("hurricane.json", _multirun(ANALYSIS, ANALYSIS))], agent="direct")
    assert len(runs) == 1 and runs[0].status == RunStatus.SUCCEEDED.value, runs[0].message
    assert runs[0].scores == direct.scores and got.problems == []
    with session_scope(world.engine) as s:
        rows = ar.task_runs(session=s, actor=world.evaluator, run_id=got.agent_run_id)
        assert [(r.task_key, r.replicate, r.tool_calls) for r in rows] == [("hurricane", 0, 1), ("hurricane", 1, 1)]
        messages = ar.transcript(session=s, actor=world.evaluator, task_run_id=rows[0].id, artifacts=world.artifacts)
        assert any(m["role"] == "tool" and m["content"].startswith("rows ") for m in messages)
        assert any(c["name"] == "run_python" for m in messages for c in m.get("tool_calls", []))


def test_a_sample_that_does_not_fit_is_named_and_the_other_samples_are_kept(world, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    replies = iter(["I cannot analyse this.", json.dumps(ANALYSIS)])
    log = _eval(world, tmp_path, "analyses", lambda messages, tools: next(replies), epochs=2, log_format="json")
    bad = next(s for s in log.samples if s.output.completion.startswith("I cannot"))
    assert bad.scores["forkpaths_analyses"].metadata["status"] == "invalid_answer"
    path = next((tmp_path / "logs").iterdir())
    edited = read_eval_log(str(path))
    stray = edited.samples[0].model_copy(update={"id": "atlantis"})
    edited.samples.append(stray)
    write_eval_log(edited, str(path))
    got, runs = _import(world, path)
    assert sorted(got.problems) == [
        f"The inspect log {path.name}, sample atlantis (epoch {stray.epoch}) names no analyses task of release "
        "1.0.0; it was left out.",
        f"The inspect log {path.name}, sample hurricane (epoch {bad.epoch}): The model's answer could not be used: "
        + next(p for p in got.problems if "hurricane" in p).split("could not be used: ", 1)[1]]
    assert any("it is not JSON" in p for p in got.problems)
    assert len(runs) == 1 and runs[0].status == RunStatus.SUCCEEDED.value, runs[0].message
    runs_in_file = json.loads(world.artifacts.get_bytes(runs[0].submission_files[0]["sha256"], what="submission"))
    assert runs_in_file["n"] == 2 and runs_in_file["analyses"][str(bad.epoch - 1)][0] == 2  # a failed run, kept


def test_a_log_whose_samples_all_fail_imports_nothing(world, tmp_path):
    _eval(world, tmp_path, "analyses", lambda messages, tools: "no idea")
    path = next((tmp_path / "logs").iterdir())
    with pytest.raises(ScoringError, match=f"No sample of the inspect log {re.escape(path.name)} has an answer"):
        _import(world, path)
    with session_scope(world.engine) as s:
        assert s.exec(select(AgentRun)).all() == [] and s.exec(select(ScoringRun)).all() == []


def test_a_discoverybench_hypothesis_in_inspect_scores_with_the_hms_judge_as_forkpaths(tmp_path, shared_discoverybench,
                                                                                      monkeypatch):
    """The hypotheses kind's own judge (hms, an LLM: the scripted server) scores the sample in inspect's log and
    the imported run alike: HMS worked by hand."""
    from curation.services import releases as rel
    from curation.services.discoverybench_import import import_discoverybench
    from curation.services.scoring import JudgeSettings
    from evaluation.llm import LLMConfig
    from tests import factories as f
    from tests.conftest import migrated_sqlite
    from tests.curation.test_agent_runs import _worldbank_tree
    from tests.evaluation.hms_script import HMSScript, sub

    engine = migrated_sqlite(tmp_path / "db.sqlite")
    store = tmp_path / "data" / "datasets"
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=_worldbank_tree(shared_discoverybench, tmp_path / "db"),
                              store=store, max_bytes=200 * 2**20)
    curator, evaluator = f.user(engine, "cura-i", Role.CURATOR), f.user(engine, "eva-i", Role.EVALUATOR)
    artifacts = ArtifactStore.at(tmp_path / "data")
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts, store=store)
    key = "real/test/worldbank_education_gdp/metadata_0/q0"
    reply = {"hypothesis": "Education spending goes with GDP growth in most regions.",
             "workflow": "Group by region, correlate spending with growth."}
    gold = "Increase in education expenditure generates a positive impact on per capita GDP in developing countries"
    judge = HMSScript(decompositions={
        gold: [sub("g", "developing countries", ["education expenditure", "per capita GDP"], "positive")],
        reply["hypothesis"]: [sub("p", "most regions", ["education spending", "GDP growth"], "goes with")]},
        pair_contexts={"P0|G0": True}, variables={"P0|G0": [[1, 1], [2, 2]]}, relationships={"P0|G0": "B"})
    from inspect_ai import eval as inspect_eval

    with ScriptedLLM(responder=judge) as llm:
        monkeypatch.setenv("FORKPATHS_LLM_BASE_URL", llm.url)
        monkeypatch.setenv("FORKPATHS_LLM_MODEL", "judge-model")
        monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
        [log] = inspect_eval("forkpaths/hypotheses", task_args={"release": "1.0.0", "only": key},
                             model=scripted_model(lambda messages, tools: json.dumps(reply)),
                             log_dir=str(tmp_path / "logs"), display="none")
        assert log.status == "success", log.error
        [sample] = log.samples
        assert sample.id == key and set(sample.files or {}) == {"worldbank_education_gdp.csv"}
        assert gold not in json.dumps(sample.model_dump(mode="json", exclude={"scores"}))  # no ground truth
        # context matched, variables 2 of 2 (F1 1), relationship B (0.5): HMS = recall 1 x (1 x 0.5) = 0.5
        assert sample.scores["forkpaths_hypotheses"].value["hms"] == 0.5
        judges = JudgeSettings(llm=LLMConfig(base_url=llm.url, model="judge-model"))
        path = next((tmp_path / "logs").iterdir())
        with session_scope(engine) as s:
            got = import_inspect_log(session=s, actor=evaluator, name=path.name, data=path.read_bytes(),
                                     artifacts=artifacts, max_bytes=5_000_000, judges=judges)
        [run] = [execute_run(engine, i, artifacts=artifacts, judges=judges) for i in got.scoring_run_ids]
        # the same answer uploaded as a hypotheses submission
        answers = {"format": "forkpaths-hypotheses", "format_version": "1.0", "answers": [{"task": key, **reply}]}
        with session_scope(engine) as s:
            direct = register_run(session=s, actor=evaluator, release_version="1.0.0", agent="direct",
                                  files=[("h.json", json.dumps(answers).encode())], kind="hypotheses", judge="hms",
                                  artifacts=artifacts, max_bytes=5_000_000, judges=judges)
        direct = execute_run(engine, direct.id, artifacts=artifacts, judges=judges)
    assert run.status == direct.status == RunStatus.SUCCEEDED.value, run.message
    assert run.judge["name"] == "hms" and run.scores == direct.scores
    # the run counts the dataset's five other gold queries as unanswered: 0.5 over six
    assert run.scores["overall"]["hms"]["point"] == pytest.approx(0.5 / 6)


def test_a_programmatic_task_in_inspect_is_answered_with_its_output_files_and_scored_by_its_checks(tmp_path,
                                                                                                   monkeypatch):
    """The starter task affairs_clean: the model's answer is its output files; epoch by epoch one right (the
    reference output) and one wrong; each sample scores as the kind's checks score that folder, and the import is
    one run of both agent runs' zips, scored as the same zips uploaded."""
    from inspect_ai import eval as inspect_eval

    from curation.bootstrap import initialise
    from curation.models import User
    from curation.services import releases as rel
    from curation.settings import PROJECT_ROOT, Settings
    from tests.curation.test_programmatic import _zip

    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_STARTER_DATASETS_DIR", str(PROJECT_ROOT / "datasets"))
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
    engine = initialise(settings).engine
    with session_scope(engine) as s:
        admin = s.exec(select(User).where(User.role == Role.ADMIN.value)).first()
        rel.cut_release(session=s, actor=admin, version="1.0.0", notes="", artifacts=settings.artifact_store(),
                        store=settings.datasets_store)
    right = (PROJECT_ROOT / "datasets" / "programmatic" / "data" / "affairs_clean" / "gt" / "cleaned.csv").read_text()
    wrong = "rate_marriage,affairs,any_affair\n3,0.5,0\n"
    replies = iter([right, wrong])
    [log] = inspect_eval("forkpaths/programmatic", task_args={"release": "1.0.0", "only": "affairs_clean"},
                         model=scripted_model(lambda m, t: json.dumps({"files": {"cleaned.csv": next(replies)}})),
                         epochs=2, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    assert {s.id for s in log.samples} == {"affairs_clean"} and all(s.files for s in log.samples)
    values = {json.loads(s.output.completion)["files"]["cleaned.csv"] == right:
              s.scores["forkpaths_programmatic"].value["success_rate"] for s in log.samples}
    assert values == {True: 1.0, False: 0.0}
    path = next((tmp_path / "logs").iterdir())
    artifacts = settings.artifact_store()
    with session_scope(engine) as s:
        got = import_inspect_log(session=s, actor=admin, name=path.name, data=path.read_bytes(),
                                 artifacts=artifacts, max_bytes=50_000_000)
    [run] = [execute_run(engine, i, artifacts=artifacts) for i in got.scoring_run_ids]
    by_epoch = {s.epoch: json.loads(s.output.completion)["files"]["cleaned.csv"] for s in log.samples}
    zips = [(f"outputs-run{e - 1}.zip", _zip({"affairs_clean": {"cleaned.csv": by_epoch[e].encode()}}))
            for e in sorted(by_epoch)]
    with session_scope(engine) as s:
        direct = register_run(session=s, actor=admin, release_version="1.0.0", agent="direct", files=zips,
                              kind="programmatic", artifacts=artifacts, max_bytes=50_000_000)
    direct = execute_run(engine, direct.id, artifacts=artifacts)
    assert run.status == direct.status == RunStatus.SUCCEEDED.value, run.message
    assert run.scores == direct.scores and run.scores["programmatic"]["runs"] == 2


def test_every_kind_an_agent_can_answer_is_an_inspect_task_through_the_entry_point():
    """A kind that gets an agent hook (QRData, StatQA next) is `forkpaths/<kind>` without a line of inspect code:
    the entry point pyproject declares loads the module that registers one task per such kind."""
    from importlib.metadata import entry_points

    from inspect_ai.util import registry_create, registry_info

    from evaluation.agents import agent_kind_names
    from evaluation.inspect_bridge.answers import inspect_kinds
    from evaluation.tasks import kind_names

    assert set(inspect_kinds()) == set(agent_kind_names()) & set(kind_names()) >= {"analyses", "mcq", "hypotheses",
                                                                                   "programmatic"}
    [ep] = [ep for ep in entry_points(group="inspect_ai") if ep.name == "forkpaths"][:1]
    module = ep.load()
    for kind in inspect_kinds():
        assert registry_info(getattr(module, kind)).name == f"forkpaths/{kind}"
    with pytest.raises(Exception, match="forkpaths/mcq needs a release"):
        registry_create("task", "forkpaths/mcq")
