"""Scoring runs through the services on SQLite and PostgreSQL: registration, execution, cancel, crash, bad input,
overrides, stale scores and re-scoring, the leaderboard and the paired comparison."""

from __future__ import annotations

import hashlib
import json
import re
import time
from datetime import timedelta

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import (
    ArtifactCorrupted,
    NotFoundError,
    OverrideConflict,
    PermissionDenied,
    ScoringError,
)
from curation.models import RunStatus, ScoreOverride, ScoringRun, utcnow
from curation.services import leaderboard as lb
from curation.services import scoring as sc
from evaluation.results import EVALUATOR_VERSION, read_result
from evaluation.submissions import SubmissionError
from tests.curation.scoring_world import make_world


@pytest.fixture
def world(engine, tmp_path, shared_blade):
    return make_world(engine, tmp_path, shared_blade)


def _runs(w):
    with session_scope(w.engine) as s:
        return list(s.exec(select(ScoringRun)).all())


def test_a_run_is_registered_scored_and_recorded_with_its_provenance(world):
    run = world.score()
    assert run.status == RunStatus.SUCCEEDED.value, run.message
    assert run.progress_done == run.progress_total == 10
    assert run.submission_sha256 == hashlib.sha256(hashlib.sha256(world.multirun).digest()).hexdigest()
    assert run.evaluator_version == EVALUATOR_VERSION and run.judge["name"] == "offline" and run.mode == "default"
    assert set(run.dataset_hashes) == {"hurricane"} and len(run.ground_truth_hash) == 64
    assert run.started_at and run.finished_at and run.finished_at >= run.started_at
    # transform credit from the release's ground truth, described per dataset (its build) and for the run
    assert run.transform_matcher == {"name": "value+graph", "blade_compat": False, "datasets": ["hurricane"],
                                     "limits": sc.ScoringLimits().describe()}
    stored = world.artifacts.object_path(run.submission_files[0]["sha256"])
    assert stored.read_bytes() == world.multirun and stored.is_relative_to(world.artifacts.root / "objects")
    assert run.release_sha256 == world.release_object("MANIFEST")
    result = read_result(world.artifacts.object_path(run.result_sha256))
    assert result.provenance.release_version == "1.0.0"
    assert result.provenance.ground_truth_hash == run.ground_truth_hash
    assert result.datasets[0].transform_matcher["ground_truth"]["units"] > 0
    transforms = [a.record.transform for a in result.datasets[0].analyses]
    assert all(t.status == "ok" and t.num_agent_units > 0 for t in transforms)  # each converted without an LLM
    assert all(t.agent_units for t in transforms)  # what the converter read, for the drill-down
    # column lineage reaches the judges: derived columns lead back to hurricane's own columns
    data_columns = set(transforms[0].column_lineage) & {"masfem", "alldeaths", "min", "category", "ndam"}
    assert data_columns and all(transforms[0].column_lineage[c] == [c] for c in data_columns)
    derived = [(c, src) for t in transforms for c, src in t.column_lineage.items() if src != [c]]
    assert derived and all(src and set(src) <= set(transforms[0].column_lineage) for _, src in derived)
    # credit is named by ground-truth units; several examples share an expert unit by value
    gt_names = {u.name for u in result.datasets[0].counts.units}
    assert all({u.name for u in t.matched_value_units + t.matched_graph_units} <= gt_names for t in transforms)
    assert sum(bool(t.matched_value_units) for t in transforms) >= 3
    assert run.scores["overall"]["f1"]["value"] > 0
    overall = run.scores["overall"]
    assert overall["precision"]["model"] == pytest.approx(result.scores.precision["model"])
    assert run.scores["datasets"]["hurricane"]["coverage"]["cvar"] == overall["coverage"]["cvar"]  # one dataset
    rows = None
    with session_scope(world.engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0",
                              artifacts=world.artifacts)
    assert [r["run"] for r in rows] == [run.id]
    assert rows[0]["f1.cvar"] == pytest.approx(overall["f1"]["cvar"]) and rows[0]["stale"] == ""
    assert rows[0]["f1.cvar.low"] is not None and rows[0]["f1.cvar.low"] <= rows[0]["f1.cvar.high"]


def test_bad_input_is_refused_with_a_sentence_and_nothing_is_stored(world, shared_blade):
    other = json.loads(world.multirun)
    other["dataset_name"] = "nowhere"
    with pytest.raises(ScoringError, match="'nowhere', which release 1.0.0 does not have .*hurricane"):
        world.register([("other.json", json.dumps(other).encode())])
    with pytest.raises(SubmissionError, match="not valid JSON"):
        world.register([("broken.json", b"{nope")])
    with pytest.raises(ScoringError, match=r"the limit is .*FORKPATHS_MAX_SUBMISSION_MB"):
        world.register(max_bytes=1000)
    with pytest.raises(ScoringError, match="both for dataset 'hurricane'"):
        world.register([("a.json", world.multirun), ("b.json", world.multirun)])
    with pytest.raises(ScoringError, match="Name the agent"):
        world.register(agent="  ")
    with pytest.raises(PermissionDenied):
        world.register(actor=world.analyst)
    with pytest.raises(NotFoundError, match="no release 9.9.9"):
        world.register(version="9.9.9")
    with pytest.raises(ScoringError, match="FORKPATHS_LLM_BASE_URL"):
        world.register(judge="llm")
    original = world.artifacts.get_bytes(world.release_object("release.json"), what="release.json")
    world.tamper(world.release_object("release.json"), original.replace(b"hurricane", b"hurricanes", 1))
    with pytest.raises(ArtifactCorrupted, match=r"The file release.json of release 1.0.0 \(sha256 [0-9a-f]{12}…\) "
                       r"in the artifact store at .* is damaged"):
        world.register()
    assert _runs(world) == []
    assert not world.artifacts.has(hashlib.sha256(world.multirun).hexdigest())  # no submission stored


def test_cancel_and_crash_end_one_run_with_a_sentence_and_leave_the_others(world):
    queued = world.register()
    with session_scope(world.engine) as s:
        sc.cancel_run(session=s, actor=world.evaluator, run_id=queued.id)
    assert sc.execute_run(world.engine, queued.id, artifacts=world.artifacts).status == RunStatus.CANCELLED.value

    running = world.register()

    def cancel_at_third(done, total, stage):
        if done == 3:
            with session_scope(world.engine) as s:
                sc.cancel_run(session=s, actor=world.evaluator2, run_id=running.id)

    ended = sc.execute_run(world.engine, running.id, artifacts=world.artifacts,
                           on_progress=cancel_at_third)
    # the cancel is read with the next progress write (at most a second later, or at the end)
    seen = re.search(r"after (\d+) of 10 analyses", ended.message)
    assert ended.status == RunStatus.CANCELLED.value and seen and int(seen.group(1)) >= 3, ended.message
    assert ended.result_path is None and ended.scores is None

    crashing = world.register()
    world.tamper(crashing.submission_files[0]["sha256"], b"tampered")
    crashed = sc.execute_run(world.engine, crashing.id, artifacts=world.artifacts)
    assert crashed.status == RunStatus.FAILED.value
    assert "Scoring failed" in crashed.message and "is damaged" in crashed.message
    fine = world.score()
    assert fine.status == RunStatus.SUCCEEDED.value
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="already succeeded"):
        sc.cancel_run(session=s, actor=world.evaluator, run_id=fine.id)


def test_progress_is_written_at_most_once_a_second_and_at_the_end(world):
    from sqlalchemy import event

    writes: list[float] = []

    def count(conn, cursor, statement, parameters, context, executemany):  # noqa: ANN001 - SQLAlchemy's hook
        if statement.lstrip().upper().startswith("UPDATE SCORING_RUN") and "progress_done" in statement:
            writes.append(time.monotonic())

    run = world.register()
    event.listen(world.engine, "before_cursor_execute", count)
    try:
        started = time.monotonic()
        ended = sc.execute_run(world.engine, run.id, artifacts=world.artifacts)
        elapsed = time.monotonic() - started
    finally:
        event.remove(world.engine, "before_cursor_execute", count)
    assert ended.status == RunStatus.SUCCEEDED.value and ended.progress_done == 10
    progress = writes[:-1]  # the last is the run's end, which records its final counts
    # one write a second at most, and one when the last analysis is done (before: one per analysis)
    assert len(progress) <= int(elapsed / sc.PROGRESS_WRITE_S) + 2, (len(progress), elapsed)


def test_a_run_without_a_heartbeat_past_its_lease_is_interrupted_on_restart(world):
    run = world.register()  # a run left by a version that did not record its scorer, or a scorer on another host
    with session_scope(world.engine) as s:
        r = s.get(ScoringRun, run.id)
        r.status, r.heartbeat_at = RunStatus.RUNNING.value, utcnow() - timedelta(hours=1)
        s.add(r)
    with session_scope(world.engine) as s:
        assert sc.interrupt_dead_runs(session=s) == [run.id]
    with session_scope(world.engine) as s:
        r = s.get(ScoringRun, run.id)
        assert r.status == RunStatus.INTERRUPTED.value and "Interrupted" in r.message


def _matched_pair(result):
    for a in result.datasets[0].analyses:
        for v in a.variables:
            if v.similarity >= 8:
                return a.key, f"{v.gt_id}|{v.agent_index}"
    raise AssertionError("no matched variable pair in the example run")


def test_overrides_recompute_the_scores_keep_provenance_and_refuse_a_second_evaluator(world):
    run = world.score()
    result = read_result(world.artifacts.object_path(run.result_sha256))
    key, item = _matched_pair(result)
    before = run.scores_effective["overall"]["precision"]["cvar"]
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="Give a reason"):
        lb.add_override(session=s, actor=world.evaluator, run_id=run.id, dataset="hurricane", analysis_key=key,
                        kind="variable", item=item, value=False, reason=" ", artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        lb.add_override(session=s, actor=world.evaluator, run_id=run.id, dataset="hurricane", analysis_key=key,
                        kind="variable", item=item, value=False, reason="different concept", artifacts=world.artifacts)
    with session_scope(world.engine) as s, pytest.raises(OverrideConflict, match="eva-s already overrode .*different"):
        lb.add_override(session=s, actor=world.evaluator2, run_id=run.id, dataset="hurricane", analysis_key=key,
                        kind="variable", item=item, value=True, reason="it is the same", artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        updated = s.get(ScoringRun, run.id)
        overrides = s.exec(select(ScoreOverride)).all()
        rows = lb.leaderboard(session=s, actor=world.curator, release_version="1.0.0",
                              artifacts=world.artifacts)
    assert len(overrides) == 1 and overrides[0].original is True and overrides[0].value is False
    assert overrides[0].author_id == world.evaluator.id and overrides[0].reason == "different concept"
    assert updated.scores_effective["overall"]["precision"]["cvar"] < before
    assert updated.scores["overall"]["precision"]["cvar"] == before  # the engine's numbers are kept
    assert read_result(world.artifacts.object_path(run.result_sha256)) == result  # the result file is never rewritten
    assert rows[0]["overrides"] == 1
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="did not compare"):
        lb.add_override(session=s, actor=world.evaluator, run_id=run.id, dataset="hurricane", analysis_key=key,
                        kind="variable", item="nope|0", value=True, reason="x", artifacts=world.artifacts)


def test_a_missed_transform_unit_can_be_credited_and_a_credited_one_withdrawn(world):
    run = world.score()
    result = read_result(world.artifacts.object_path(run.result_sha256))
    ds = result.datasets[0]
    a = next(x for x in ds.analyses if x.record.transform.matched_value_units)
    credited = a.record.transform.matched_value_units[0]
    # a unit no analysis matched by value: crediting it must raise the run's value coverage
    missed = next(u for u in ds.counts.units if all(u not in x.record.transform.matched_value_units
                                                     for x in ds.analyses))
    before = run.scores_effective["overall"]["coverage"]["value"]
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="already counts"):
        lb.add_override(session=s, actor=world.evaluator, run_id=run.id, dataset="hurricane", analysis_key=a.key,
                        kind="transform", item=f"value|{credited.id}", value=True, reason="x", artifacts=world.artifacts)
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="no ground-truth transform unit"):
        lb.add_override(session=s, actor=world.evaluator, run_id=run.id, dataset="hurricane", analysis_key=a.key,
                        kind="transform", item="value|nope", value=True, reason="x", artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        lb.add_override(session=s, actor=world.evaluator, run_id=run.id, dataset="hurricane", analysis_key=a.key,
                        kind="transform", item=f"value|{missed.id}", value=True,
                        reason="log1p of deaths is the expert's log(deaths + 1)", artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        effective = lb.effective_result(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts)
        up = s.get(ScoringRun, run.id).scores_effective["overall"]["coverage"]["value"]
        (o,) = s.exec(select(ScoreOverride)).all()
    now = next(x for x in effective.datasets[0].analyses if x.key == a.key).record.transform
    assert missed in now.matched_value_units and credited in now.matched_value_units
    assert up > before and (o.original, o.value, o.kind) == (False, True, "transform")
    assert o.label == f"value match of ground-truth unit {missed.name}"
    with session_scope(world.engine) as s:  # and the other way: a credit a person finds wrong is withdrawn
        lb.add_override(session=s, actor=world.evaluator2, run_id=run.id, dataset="hurricane", analysis_key=a.key,
                        kind="transform", item=f"graph|{a.record.transform.matched_graph_units[0].id}"
                        if a.record.transform.matched_graph_units else f"value|{credited.id}",
                        value=False, reason="the agent's column is not this unit's", artifacts=world.artifacts)
        effective = lb.effective_result(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts)
    now = next(x for x in effective.datasets[0].analyses if x.key == a.key).record.transform
    withdrawn = (a.record.transform.matched_graph_units[:1] or [credited])[0]
    assert withdrawn not in (now.matched_graph_units if a.record.transform.matched_graph_units
                             else now.matched_value_units)
    assert read_result(world.artifacts.object_path(run.result_sha256)) == result  # the engine's file is never rewritten


def test_stale_scores_are_flagged_and_rescoring_is_one_action(world):
    old = world.score()
    world.cut("1.0.1")  # nothing changed: not stale
    with session_scope(world.engine) as s:
        assert lb.stale_scores(session=s, runs=[old], artifacts=world.artifacts) == {}
    world.change_ground_truth()
    world.cut("1.1.0")
    with session_scope(world.engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0",
                              artifacts=world.artifacts)
        assert "hurricane changed in release 1.1.0" in rows[0]["stale"]
        new = sc.rescore_run(session=s, actor=world.evaluator, run_id=old.id, release_version="1.1.0",
                             artifacts=world.artifacts, max_bytes=5_000_000)
    with session_scope(world.engine) as s:
        latest = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.1.0",
                                artifacts=world.artifacts, include_older=True)
        only_new = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.1.0",
                                  artifacts=world.artifacts)
    assert [(r["run"], r["release"]) for r in latest] == [(old.id, "1.0.0")] and latest[0]["stale"]
    assert only_new == []
    done = sc.execute_run(world.engine, new.id, artifacts=world.artifacts)
    assert done.status == RunStatus.SUCCEEDED.value and done.rescore_of_id == old.id
    assert done.ground_truth_hash != old.ground_truth_hash and done.submission_sha256 == old.submission_sha256
    with session_scope(world.engine) as s:
        assert s.get(ScoringRun, old.id).scores == old.scores  # old numbers kept, labelled with their release
        assert lb.stale_scores(session=s, runs=[done], artifacts=world.artifacts) == {}
        board = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.1.0",
                               artifacts=world.artifacts, include_older=True)
    assert {(r["run"], r["release"], bool(r["stale"])) for r in board} == {(old.id, "1.0.0", True),
                                                                          (done.id, "1.1.0", False)}


def test_official_flag_is_for_curators_and_comparison_is_paired(world):
    a = world.score(agent="agent-a")
    b = world.score(agent="agent-b", mode="blade")
    with session_scope(world.engine) as s, pytest.raises(PermissionDenied):
        sc.set_official(session=s, actor=world.evaluator, run_id=a.id, official=True)
    with session_scope(world.engine) as s:
        sc.set_official(session=s, actor=world.curator, run_id=a.id, official=True)
    with session_scope(world.engine) as s:
        rows = lb.leaderboard(session=s, actor=world.evaluator, release_version="1.0.0",
                              artifacts=world.artifacts, official_only=True)
        comparison = lb.compare_run_results(session=s, actor=world.evaluator, run_a=a.id, run_b=a.id,
                                            artifacts=world.artifacts, n_bootstrap=50)
    assert [r["agent"] for r in rows] == ["agent-a"]
    same = [d for d in comparison.differences if d.dataset == "hurricane" and d.decision_type == "cvar"][0]
    assert same.diff == 0 and same.ci_low == 0 and same.ci_high == 0 and same.paired  # a run against itself
    assert all(not i.only_a and not i.only_b for i in comparison.items)
    assert b.status == RunStatus.SUCCEEDED.value


def test_judge_validation_queue_labels_and_agreement(world):
    from curation.services import judge_validation as jv

    run = world.score()
    with session_scope(world.engine) as s:
        added = jv.sample_judge_decisions(session=s, actor=world.evaluator, run_id=run.id, n=6, artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        again = jv.sample_judge_decisions(session=s, actor=world.evaluator, run_id=run.id, n=6, artifacts=world.artifacts)
    assert added == 6 and again == 6  # new decisions each time, never the same twice
    labelled = []
    for i in range(4):
        with session_scope(world.engine) as s:
            item = jv.next_to_label(session=s, actor=world.evaluator)
            # the expert agrees with the judge on the first three, not on the fourth
            jv.label_decision(session=s, actor=world.evaluator, label_id=item.id,
                              value=item.judge_value if i < 3 else not item.judge_value)
            labelled.append(item.id)
    with session_scope(world.engine) as s, pytest.raises(ScoringError, match="eva-s labelled this decision"):
        jv.label_decision(session=s, actor=world.evaluator2, label_id=labelled[0], value=True)
    with session_scope(world.engine) as s:
        cards = jv.agreement_card(session=s, actor=world.curator)
        counts = jv.queue_counts(session=s, actor=world.curator)
    assert counts == (4, 8)
    assert sum(c.n for c in cards) == 4
    assert sum(c.percent_agreement * c.n for c in cards) == pytest.approx(3)
    assert {c.blade_reported for c in cards} <= {0.93, 0.92}


def test_concurrent_overrides_on_one_run_all_count_and_one_item_goes_to_one_evaluator(world):
    from concurrent.futures import ThreadPoolExecutor

    from evaluation.overrides import OverrideSpec, apply_overrides
    from evaluation.results import reaggregate

    run = world.score()
    result = read_result(world.artifacts.object_path(run.result_sha256))
    pairs = [(a.key, f"{v.gt_id}|{v.agent_index}") for a in result.datasets[0].analyses for v in a.variables
             if v.similarity >= 8]
    distinct = list(dict.fromkeys(pairs))[:4]

    def flip(args):
        actor, (key, item) = args
        try:
            with session_scope(world.engine) as s:
                lb.add_override(session=s, actor=actor, run_id=run.id, dataset="hurricane", analysis_key=key,
                                kind="variable", item=item, value=False, reason="concurrent", artifacts=world.artifacts)
            return "saved"
        except OverrideConflict:
            return "conflict"

    jobs = [(world.evaluator if i % 2 else world.evaluator2, p) for i, p in enumerate(distinct)]
    jobs += [(world.curator, distinct[0])]  # a third person on the same item at the same time
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        outcomes = list(pool.map(flip, jobs))
    assert outcomes.count("saved") == len(distinct) and outcomes.count("conflict") == 1
    with session_scope(world.engine) as s:
        saved = s.exec(select(ScoreOverride)).all()
        stored = s.get(ScoringRun, run.id).scores_effective["overall"]
    assert len(saved) == len(distinct)
    # no lost update: the stored scores are those of the result with every saved override applied
    expected = reaggregate(apply_overrides(result, [OverrideSpec(dataset=o.dataset, analysis_key=o.analysis_key,
                                                                 kind="variable", item=o.item, value=False)
                                                    for o in saved]))
    assert stored["precision"]["cvar"] == pytest.approx(expected.precision["cvar"])


def test_the_app_worker_scores_in_the_background_and_picks_up_queued_runs(world):
    from curation.services.run_worker import RunWorker

    waiting = world.register()  # queued before the app (re)started
    worker = RunWorker(world.engine, artifacts=world.artifacts,
                       judges=sc.JudgeSettings())
    try:
        fresh = world.register(agent="second")
        assert worker.submit(fresh.id).result(timeout=120).status == RunStatus.SUCCEEDED.value
        assert worker.submit(waiting.id).result(timeout=120).status == RunStatus.SUCCEEDED.value
    finally:
        worker.shutdown()
    with session_scope(world.engine) as s:
        assert {r.status for r in s.exec(select(ScoringRun)).all()} == {RunStatus.SUCCEEDED.value}


def test_a_curator_annotating_a_dataset_sees_no_ground_truth_of_it_in_run_details(world):
    """Ground-truth variables, models and units are peers' stage-1 work: blind curators and admins see none."""
    from curation.errors import BlindingViolation
    from curation.models import Dataset, Role
    from curation.services.datasets import assign_analysts
    from tests import factories as f

    run = world.score()
    admin = f.user(world.engine, "adm-blind", Role.ADMIN)
    with session_scope(world.engine) as s:
        ds = s.exec(select(Dataset).where(Dataset.name == "hurricane")).one()
        assign_analysts(session=s, actor=admin, dataset_id=ds.id, user_ids=[world.curator.id])
    with session_scope(world.engine) as s:
        result, withheld = lb.viewable_result(session=s, actor=world.curator, run_id=run.id, artifacts=world.artifacts)
    assert result.datasets == [] and "assigned to annotate 'hurricane'" in withheld["hurricane"]
    with session_scope(world.engine) as s, pytest.raises(BlindingViolation, match="assigned to annotate"):
        lb.add_override(session=s, actor=world.curator, run_id=run.id, dataset="hurricane", analysis_key="0",
                        kind="variable", item="x|0", value=True, reason="r", artifacts=world.artifacts)
    with session_scope(world.engine) as s:  # the evaluator, who annotates nothing, sees it all
        result, withheld = lb.viewable_result(session=s, actor=world.evaluator, run_id=run.id, artifacts=world.artifacts)
    assert [d.dataset for d in result.datasets] == ["hurricane"] and withheld == {}
    # the same in the paired comparison and the judge-validation queue
    other = world.score(agent="agent-y")
    with session_scope(world.engine) as s:
        cmp = lb.compare_run_results(session=s, actor=world.curator, run_a=run.id, run_b=other.id,
                                     artifacts=world.artifacts, n_bootstrap=20)
    assert cmp.items == [] and any(n.startswith("hurricane is left out: You are assigned") for n in cmp.notes)
    from curation.services.judge_validation import label_decision, next_to_label, sample_judge_decisions
    with session_scope(world.engine) as s:
        assert sample_judge_decisions(session=s, actor=world.evaluator, run_id=run.id, n=4, artifacts=world.artifacts)
    with session_scope(world.engine) as s:
        assert next_to_label(session=s, actor=world.curator) is None  # every queued decision is hurricane's
        queued = next_to_label(session=s, actor=world.evaluator)
    with session_scope(world.engine) as s, pytest.raises(BlindingViolation, match="assigned to annotate"):
        label_decision(session=s, actor=world.curator, label_id=queued.id, value=True)
