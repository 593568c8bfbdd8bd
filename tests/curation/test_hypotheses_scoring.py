"""Scoring runs of the hypotheses kind through the services: a release with DiscoveryBench queries, the scripted
``hms`` judge on 127.0.0.1, SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest

from curation.db import session_scope
from curation.errors import OverrideConflict, PermissionDenied, ScoringError
from curation.services import facet_judgements as fj
from curation.services import leaderboard as lb
from curation.services.scoring import execute_run, kind_of, rescore_run
from evaluation.tasks.hypotheses import read_result
from tests.curation.hms_world import answers_file, make_hms_world
from tests.factories import artifacts_for
from tests.llm_server import ScriptedLLM

CROPS = "real/test/crops/metadata_0/q0"


@pytest.fixture
def world(engine, tmp_path):
    with ScriptedLLM() as server:
        yield make_hms_world(engine, tmp_path, server)


def result_of(world, run):
    return read_result(world.artifacts.get_bytes(run.result_sha256, what="the result"))


def test_a_run_is_scored_recorded_and_ranked(world):
    registered = world.register()
    run = world.score()
    assert run.status == "succeeded", run.message
    # issue 27: a run's count keeps its meaning: queued, it says how many queries it will score; finished, as many
    assert registered.progress_total == run.progress_total == run.progress_done == len(result_of(world, run).items)
    o = run.scores["overall"]
    # survey q0 0.5 (B), survey q1 unanswered 0, crops 0.5 (B), synth 1/3 (F1 2/3 × 0.5); no gold: not scored
    assert o["hms"]["point"] == pytest.approx((0.5 + 0 + 0.5 + 1 / 3) / 4)
    assert (o["queries"], o["scored"], o["unanswered"], o["judge_errors"]) == (4, 3, 1, 0)
    assert o["hms"]["ci_low"] <= o["hms"]["point"] <= o["hms"]["ci_high"]  # 3 folders: clustered bootstrap
    assert run.scores["question_types"]["variables"]["hms"]["point"] == pytest.approx(0.5)
    assert set(run.scores["domains"]) == {"sociology", "agriculture", "synthetic"}
    assert run.judge["name"] == "hms" and run.judge["model"] == "judge-model"
    result = result_of(world, run)
    assert result.judge["templates"]["default"] == "hms@1" and result.mode == "default"
    crops = next(i for i in result.items if i.task == CROPS)
    assert crops.calls == 5 and crops.contexts[0].how == "judge" and crops.matched[0].relationship.level == "B"
    assert "1 query of the datasets answered has no gold" in run.message
    with session_scope(world.engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="2.0.0",
                              artifacts=world.artifacts, kind="hypotheses")
        by_ds = lb.leaderboard(session=s, actor=world.evaluator, release_version="2.0.0",
                               artifacts=world.artifacts, kind="hypotheses", dataset="crops")
    assert rows[0]["hms"] == pytest.approx(o["hms"]["point"]) and rows[0]["unanswered"] == 1
    assert rows[0]["type.variables"] == pytest.approx(0.5)
    assert by_ds[0]["hms"] == pytest.approx(0.5)
    assert "HMS 0.333" in kind_of("hypotheses").summary_line(run.scores)


def test_rescoring_from_the_cache_makes_no_call(world):
    first = world.score()
    sent = len(world.server.requests)
    assert sent == 13  # 4 + 5 + 4 calls
    with session_scope(world.engine) as s:
        again = rescore_run(session=s, actor=world.evaluator, run_id=first.id, artifacts=world.artifacts, max_bytes=5_000_000, judges=world.judges)
    again = execute_run(world.engine, again.id, artifacts=world.artifacts,
                        judges=world.judges)
    assert len(world.server.requests) == sent and again.scores["calls"] == 0
    assert again.scores["overall"] == first.scores["overall"]


def test_discoverybench_mode_runs_and_is_recorded(world):
    world.script.contexts = {("all fields", "farms"): True}
    world.script.variables_full = '{"sizeA": 2, "sizeB": 2, "intersection": 1, "explanation": "one shared"}'
    world.script.relationship_full = '{"answer": "A"}'
    run = world.score(mode="discoverybench")
    assert run.status == "succeeded" and run.mode == "discoverybench"
    # each answered query: one matched pair, F1 0.5 × 1
    assert run.scores["overall"]["hms"]["point"] == pytest.approx((0.5 + 0 + 0.5 + 0.5) / 4)


def test_bad_submissions_name_the_file_and_the_answer(world):
    good = json.loads(answers_file())
    cases = [
        ({**good, "answers": [*good["answers"], {"task": "real/test/crops/metadata_0/q9", "hypothesis": "h",
                                                 "workflow": ""}]},
         "answers.json: answer 4 is for task 'real/test/crops/metadata_0/q9', which release 2.0.0 does not have "
         "(did you mean 'real/test/crops/metadata_0/q0'?)"),
        ({**good, "answers": [good["answers"][0], good["answers"][0]]},
         "answers.json: answers 1 and 2 are both for task 'real/test/survey/metadata_0/q0'"),
        ({**good, "answers": [{"task": CROPS, "workflow": "w"}]},
         "answers.json: answer 1 (task 'real/test/crops/metadata_0/q0') has no 'hypothesis'."),
        ({**good, "answers": [{"task": CROPS, "hypothesis": "h", "workflow": "w", "confidence": 1}]},
         "has a field 'confidence' the format does not know"),
        ({**good, "format_version": "9"}, "format_version '9' is not supported"),
    ]
    for doc, message in cases:
        with pytest.raises(ScoringError) as info:
            world.register(json.dumps(doc).encode())
        assert message in str(info.value)
    with pytest.raises(ScoringError, match="not JSON"):
        world.register(b"{oops")
    with pytest.raises(ScoringError, match="The offline judge cannot score hypotheses runs; choose hms"):
        world.register(judge="offline")
    with pytest.raises(ScoringError, match="Unknown mode 'blade' for hypotheses runs"):
        world.register(mode="blade")
    with session_scope(world.engine) as s:
        from sqlmodel import select

        from curation.models import ScoringRun

        assert s.exec(select(ScoringRun)).all() == []  # nothing half-stored


def test_a_key_given_twice_is_refused_naming_the_key_and_the_answer(world):
    """Issue 26 point 11: JSON keeps the last of two equal keys, so a key given twice was silently dropped, and
    "format" given twice said "holds no answers"."""
    good = answers_file().decode()
    body = good[good.index('"answers"'):]
    twice_in_answer = ('{"format": "forkpaths-hypotheses", "format_version": "1.0", "answers": [{"task": "'
                       + CROPS + '", "hypothesis": "Rain helps.", "workflow": "w", "hypothesis": "Rain hurts."}]}')
    with pytest.raises(ScoringError) as info:
        world.register(twice_in_answer.encode())
    assert (f"answers.json: answer 1 (task '{CROPS}') gives the key 'hypothesis' twice; a JSON reader keeps only "
            "the last, so say it once. Nothing was stored.") in str(info.value)
    format_twice = '{"format": "forkpaths-hypotheses", "format": "forkpaths-hypotheses", ' + body
    with pytest.raises(ScoringError) as info:
        world.register(format_twice.encode())
    assert "answers.json gives the key 'format' twice" in str(info.value)
    assert "holds no answers" not in str(info.value)
    records = '{"query": "What drives yield?", "HypoB": "a", "HypoB": "b"}\n{"query": "q", "HypoB": "h"}'
    with pytest.raises(ScoringError, match="answers.json: record 1 gives the key 'HypoB' twice"):
        world.register(records.encode())


def test_discoverybench_layouts_are_accepted(world):
    records = "\n".join(json.dumps({"query": q, "HypoA": "x", "HypoB": h, "WorkflowB": "w"}, indent=2)
                        for q, h in [("How does income relate to age?", "Older adults earn more."),
                                     ("What drives yield?", "Rain helps crops.")])
    run = world.register(records.encode(), name="eval_output.json")
    queries = run.progress_total  # every gold query of the datasets answered is scored, answered or not
    assert queries == 3  # survey's two and crops' one
    csv_rows = ("dataset,metadataid,query_id,gen_hypo,gen_workflow\n"
                "survey,0,0,Older adults earn more.,regress\ncrops,0,0,Rain helps crops.,plot\n")
    run = world.register(csv_rows.encode(), name="answers.csv")
    assert run.progress_total == queries
    with pytest.raises(ScoringError, match="row 1 is for survey, metadata 0, query 7"):
        world.register(b"dataset,metadataid,query_id,gen_hypo\nsurvey,0,7,h\n", name="a.csv")
    with pytest.raises(ScoringError, match="record 1 asks 'Unknown question'"):
        world.register(json.dumps([{"query": "Unknown question", "HypoB": "h"}]).encode())


def test_judge_faults_leave_the_rest_scored(world):
    world.script.raw = {"contexts": "<html><body>502 Bad Gateway</body></html>"}
    run = world.score()
    assert run.status == "succeeded"
    items = {i.task: i for i in result_of(world, run).items}
    assert items[CROPS].status == "judge_error" and "could not be read" in items[CROPS].message
    assert items["real/test/survey/metadata_0/q0"].status == "scored"
    assert run.scores["overall"]["judge_errors"] == 1
    assert "1 of 4 queries is a judge error" in run.message
    # the endpoint down altogether: every answered query is a judge error, the run still ends with a sentence
    world.server.responder = lambda _r: 503
    world.cache = world.cache.parent / "other-cache"
    run = world.score()
    assert run.status == "succeeded" and run.scores["overall"]["judge_errors"] == 3
    assert run.scores["overall"]["hms"]["point"] == 0.0  # only the unanswered query counts, as 0


def test_experts_judge_facets_and_scores_recompute(world):
    run = world.score()
    with session_scope(world.engine) as s:
        out = fj.judge_facet(session=s, actor=world.evaluator, run_id=run.id, task_key=CROPS, pair="P0|G0",
                             facet="relationship", value={"level": "A"}, reason="rain helps = doubles, same sign",
                             artifacts=world.artifacts)
        assert out.override is not None and out.override.detail == {"value": {"level": "A"},
                                                                    "original": {"level": "B"}}
    with session_scope(world.engine) as s:  # a confirmation: a label, no override
        same = fj.judge_facet(session=s, actor=world.evaluator, run_id=run.id, task_key=CROPS, pair="P0|G0",
                              facet="variables", value={"size_gold": 2, "size_pred": 2, "intersection": 2},
                              reason="both variables named", artifacts=world.artifacts)
        assert same.override is None
        fj.judge_facet(session=s, actor=world.evaluator, run_id=run.id, task_key=CROPS, pair="P0|G0",
                       facet="context", value={"match": True}, reason="farms are fields", artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        from curation.models import ScoringRun

        stored = s.get(ScoringRun, run.id)
        assert stored.scores["overall"]["hms"]["point"] == pytest.approx(4 / 3 / 4)  # the engine's, kept
        assert stored.scores_effective["overall"]["hms"]["point"] == pytest.approx((0.5 + 0 + 1 + 1 / 3) / 4)
        result, hidden = fj.viewable_facets(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts)
        crops = next(i for i in result.items if i.task == CROPS)
        assert crops.hms == 1.0 and crops.matched[0].relationship.source == "expert" and hidden == {}
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="2.0.0",
                              artifacts=world.artifacts, kind="hypotheses")
        assert rows[0]["overrides"] == 1 and rows[0]["hms"] == pytest.approx((0.5 + 0 + 1 + 1 / 3) / 4)
        cards = {r.kind: r for r in fj.facet_agreement(session=s, actor=world.evaluator, kind="hypotheses")}
    assert cards["relationship"].n == 1 and cards["relationship"].percent_agreement == 0.0
    assert cards["variables"].percent_agreement == 1.0 and cards["context"].n == 1
    with session_scope(world.engine) as s, pytest.raises(OverrideConflict, match="already judged the relationship"):
        fj.judge_facet(session=s, actor=world.evaluator2, run_id=run.id, task_key=CROPS, pair="P0|G0",
                       facet="relationship", value={"level": "C"}, reason="no", artifacts=world.artifacts)
    with session_scope(world.engine) as s, pytest.raises(PermissionDenied):
        fj.judge_facet(session=s, actor=world.analyst, run_id=run.id, task_key=CROPS, pair="P0|G0",
                       facet="context", value={"match": False}, reason="no", artifacts=world.artifacts)
    for value, facet, message in [({"level": "Z"}, "relationship", "A \\(very similar"),
                                  ({"match": True}, "context", "no pair P3"),
                                  ({"size_gold": 1}, "variables", "gold count")]:
        with session_scope(world.engine) as s, pytest.raises(ScoringError, match=message):
            fj.judge_facet(session=s, actor=world.evaluator2, run_id=run.id, task_key=CROPS,
                           pair="P3|G0" if facet == "context" else "P0|G0", facet=facet, value=value, reason="r",
                           artifacts=world.artifacts)
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="Give a reason"):
        fj.judge_facet(session=s, actor=world.evaluator2, run_id=run.id, task_key=CROPS, pair="P0|G0",
                       facet="context", value={"match": True}, reason="  ", artifacts=world.artifacts)


def test_the_expression_facet_runs_the_code_in_the_sandbox(world, os_sandbox):
    run = world.score(answers_file(code="hypothesis_values = df['a'] * 2 + df['b']"))
    synth = next(i for i in result_of(world, run).items if i.task.startswith("synth/"))
    assert synth.expression.status == "passed" and synth.expression.agreement == 1.0
    assert run.scores["overall"]["expression"] == 1.0
    # rows 1 and 4 agree (b is 0 in row 4), rows 2 and 3 do not
    run = world.score(answers_file(code="hypothesis_values = df['a'] * 2 + df['b'].where(df['a'] < 2, 0)"))
    synth = next(i for i in result_of(world, run).items if i.task.startswith("synth/"))
    assert synth.expression.status == "failed" and synth.expression.agreement == pytest.approx(0.5)
    # code that tries to fake its own measurement or escape gets no credit
    for code, words in [("import os\nos._exit(0)", "interfered"),
                        ("import socket\nsocket.create_connection(('1.1.1.1', 80))\nhypothesis_values = [1]",
                         "failed"),
                        ("x = 1", "did not set hypothesis_values")]:
        run = world.score(answers_file(code=code))
        synth = next(i for i in result_of(world, run).items if i.task.startswith("synth/"))
        assert synth.expression.status == "error" and words in synth.expression.message, synth.expression


def test_a_run_whose_time_budget_runs_out_says_so(world):
    from curation.services.scoring import ScoringLimits

    run = world.register()
    run = execute_run(world.engine, run.id, artifacts=world.artifacts, judges=world.judges,
                      limits=ScoringLimits(run_budget_s=0.000001))
    assert run.status == "succeeded"
    o = run.scores["overall"]
    assert o["not_scored"] == 3 and o["unanswered"] == 1 and world.server.requests == []
    assert "ran out with 3 queries of 4 not scored" in run.message


def test_a_release_cut_from_imported_discoverybench_folders_is_scored(sqlite_engine, tmp_path, os_sandbox):
    """The whole path: DiscoveryBench folders imported, a release cut by the service (its hypothesis tasks with
    gold from the answer key, the metadata and the synthetic expression), then an agent's answers scored."""
    from curation.models import Role
    from curation.services import releases as rel
    from curation.services.discoverybench_import import import_discoverybench
    from tests import factories as f
    from tests.curation.hms_world import HMSWorld
    from tests.evaluation.hms_script import HMSScript, sub
    from tests.exports.test_release_hypotheses import make_tree

    store = tmp_path / "store"
    with session_scope(sqlite_engine) as s:
        import_discoverybench(session=s, actor=None, path=make_tree(tmp_path / "db"), store=store,
                              max_bytes=200 * 2**20)
    curator = f.user(sqlite_engine, "cura-db", Role.CURATOR)
    with session_scope(sqlite_engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts_for(tmp_path / "releases"),
                        store=store)
    script = HMSScript(decompositions={
        "BMI rises with age, then falls.": [sub("g", "adults", ["BMI", "age"], "rises then falls")],
        "BMI goes up with age.": [sub("p", "adults", ["BMI", "age"], "positive")],
        "Tempo drives sell-outs.": [sub("g", "concerts", ["tempo", "sell-outs"], "drives")],
        "Fast songs sell out.": [sub("p", "concerts", ["tempo", "sell-outs"], "positive")]},
        variables={"P0|G0": [[1, 1], [2, 2]]}, relationships={"P0|G0": "B"})
    answers = {"format": "forkpaths-hypotheses", "format_version": "1.0", "answers": [
        {"task": "real/test/bmi/metadata_0/q0", "hypothesis": "BMI goes up with age.", "workflow": "regress"},
        {"task": "synth/dev/jazz_0_0/metadata_0/q7", "hypothesis": "Fast songs sell out.", "workflow": "t-test",
         "code": "hypothesis_values = (df['sold_out'] > 0.5).astype(float)"}]}
    with ScriptedLLM(script) as server:
        world = HMSWorld(engine=sqlite_engine, releases=tmp_path / "releases", runs=tmp_path / "runs",
                         server=server, cache=tmp_path / "llm", curator=curator,
                         evaluator=f.user(sqlite_engine, "eva-db", Role.EVALUATOR), evaluator2=curator,
                         analyst=curator, script=script)
        run = world.score(json.dumps(answers).encode(), version="1.0.0")
    assert run.status == "succeeded", run.message
    items = {i.task: i for i in result_of(world, run).items}
    # bmi: q0 scored (0.5), q1 and q2 have no gold (still to curate): not items; jazz q7: scored, expression passed
    assert set(items) == {"real/test/bmi/metadata_0/q0", "synth/dev/jazz_0_0/metadata_0/q7"}
    assert items["real/test/bmi/metadata_0/q0"].hms == 0.5
    assert items["synth/dev/jazz_0_0/metadata_0/q7"].expression.status == "passed"
    assert "2 queries of the datasets answered have no gold hypothesis yet" in run.message


def test_discoverybench_mode_shows_each_data_file_its_own_description(sqlite_engine, tmp_path):
    """An imported folder whose metadata files describe two data files differently: in discoverybench mode the
    judge sees each data file of the query's own metadata with its own description (upstream new_eval.py:190-215),
    not the folder's descriptions joined; upstream's request count holds through the service."""
    from curation.models import Role
    from curation.services import releases as rel
    from curation.services.discoverybench_import import import_discoverybench
    from tests import factories as f
    from tests.curation.hms_world import HMSWorld
    from tests.evaluation.hms_script import HMSScript, sub
    from tests.exports.discoverybench_helpers import make_folder, real_metadata

    def meta(description: str, other: str, qid: int, question: str) -> dict:
        return real_metadata(datasets=[
            {"name": "people.csv", "description": description,
             "columns": {"raw": [{"name": "AGE", "description": "Age in years"}]}},
            {"name": "places.csv", "description": other,
             "columns": {"raw": [{"name": "TOWN", "description": "Town name"}]}}],
            queries=[[{"qid": qid, "question_type": "relationship", "question": question}]])

    root = tmp_path / "db"
    make_folder(root / "real" / "test", "towns", {
        0: meta("People of the towns.", "The towns themselves.", 0, "How does age vary by town?"),
        1: meta("People, second wave.", "Towns, second wave.", 1, "Does age differ?")},
        files={"people.csv": b"AGE,TOWN\n30,a\n40,b\n", "places.csv": b"TOWN,SIZE\na,1\nb,2\n"})
    (root / "answer_key_real.csv").write_bytes(b"dataset,metadataid,query_id,gold_hypo\r\n"
                                               b"towns,0,0,Age rises by town.\r\n")
    store = tmp_path / "store"
    with session_scope(sqlite_engine) as s:
        import_discoverybench(session=s, actor=None, path=root, store=store, max_bytes=200 * 2**20)
    curator = f.user(sqlite_engine, "cura-dbd", Role.CURATOR)
    with session_scope(sqlite_engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="",
                        artifacts=artifacts_for(tmp_path / "releases"), store=store)
    script = HMSScript(decompositions={"Age rises by town.": [sub("g", "all towns", ["age", "town"], "up")],
                                       "Older in bigger towns.": [sub("p", "all towns", ["age", "town"], "up")]})
    answers = {"format": "forkpaths-hypotheses", "format_version": "1.0", "answers": [
        {"task": "real/test/towns/metadata_0/q0", "hypothesis": "Older in bigger towns.", "workflow": "group"}]}
    with ScriptedLLM(script) as server:
        world = HMSWorld(engine=sqlite_engine, releases=tmp_path / "releases", runs=tmp_path / "runs",
                         server=server, cache=tmp_path / "llm", curator=curator,
                         evaluator=f.user(sqlite_engine, "eva-dbd", Role.EVALUATOR), evaluator2=curator,
                         analyst=curator, script=script)
        run = world.score(json.dumps(answers).encode(), version="1.0.0", mode="discoverybench")
    assert run.status == "succeeded", run.message
    assert script.seen == ["decompose", "decompose", "variables_full", "relationship_full"]
    decompose = server.requests[0]["messages"][-1]["content"]
    shown = json.loads(next(line for line in decompose.splitlines() if line.startswith("datasets: "))[10:])
    assert shown == [{"dataset_description": "People of the towns.",
                      "columns": [{"name": "AGE", "description": "Age in years"}]},
                     {"dataset_description": "The towns themselves.",
                      "columns": [{"name": "TOWN", "description": "Town name"}]}]
    assert "second wave" not in decompose
    assert result_of(world, run).items[0].hms == 1.0
