"""The conformance suite every registered kind passes (issue 27 point 8), and a kind defined in the test too.

Parametrised over the registry: a new kind is tested by registering it, and fails here until it has a sample in
``tests/conformance/samples.py``. For each kind:

* its declaration is sound, and its published submission schema accepts a submission the kind scores;
* a submission scores at least one item, counted the same queued and finished; a bad one is refused with a
  sentence and stores nothing;
* its release part survives the round trip through a cut, written and read, and a blind reader gets no gold;
* the ground-truth hash changes when the gold changes, and a run is flagged stale after such a re-release;
* Run details draws its component for every scoring role, and refuses an analyst;
* an agent run answers it (through the kind's hook) and is scored, or the kind says agents cannot;
* the shared registries find what it brings by name, with no edit to them: its agent hook, its judges, its kinds
  of background job and its tables in a Hugging Face export (and the toy kind's job runs through the shared jobs).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import JobError, ScoringError
from curation.models import RunStatus, ScoringRun
from curation.services import agent_runs as ar
from curation.services.background_jobs import execute_job, job_kinds, start_job
from curation.services.leaderboard import stale_scores
from curation.services.releases import stored_release
from curation.services.scoring import dataset_gt_hash, execute_run, register_run
from evaluation.agents import UnknownAgentKind, agent_kind
from evaluation.errors import EvaluationError
from evaluation.judges.base import JUDGES, judge_names, judge_needs_llm
from evaluation.tasks import kind_names, registered, task_kind
from evaluation.tasks.base import kind_problems
from evaluation.tasks.parts import part_of
from exports.hf.tables import config_rows, hf_configs
from exports.schema import Release
from tests.conformance import toy_kind
from tests.conformance.samples import SAMPLES, Sample, World, make_world
from tests.conftest import unavailable
from tests.llm_server import ScriptedLLM

KINDS = [*kind_names(), toy_kind.NAME]
SHARED = Path(__file__).resolve().parents[3] / "shared"


@pytest.fixture(scope="module", params=KINDS)
def kind_world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[Any, World, Sample]]:
    name = request.param
    if name not in SAMPLES:
        pytest.fail(f"The kind '{name}' is registered but has no conformance sample: add one to "
                    "tests/conformance/samples.py (a world with its release, a good and a bad submission, a regold).")
    if not SHARED.is_dir():
        unavailable("shared", f"{SHARED} is absent: the conformance samples read BLADE's hurricane from it")
    with registered(toy_kind.KIND) if name == toy_kind.NAME else _nothing():
        world, mp = make_world(tmp_path_factory.mktemp(f"kind-{name}"), starters=name == "programmatic")
        sample = SAMPLES[name](world, SHARED)
        try:
            yield task_kind(name), world, sample
        finally:
            if sample.llm is not None:
                sample.llm.__exit__(None, None, None)
            world.engine.dispose()
            mp.undo()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_: Any) -> None:
        return None


def _register(world: World, sample: Sample, kind: Any, files: list[tuple[str, bytes]], version: str | None = None,
              agent: str = "conformance") -> ScoringRun:
    with session_scope(world.engine) as s:
        return register_run(session=s, actor=world.evaluator, release_version=version or sample.version, files=files,
                            agent=agent, model_name="m", judge=sample.judge, kind=kind.name,
                            artifacts=world.artifacts, max_bytes=50_000_000, judges=sample.judges)


def _score(world: World, sample: Sample, kind: Any, **kw: Any) -> tuple[ScoringRun, ScoringRun]:
    queued = _register(world, sample, kind, sample.good, **kw)
    done = execute_run(world.engine, queued.id or 0, artifacts=world.artifacts, judges=sample.judges)
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    return queued, done


def _release(world: World, version: str) -> Release:
    from curation.models import ReleaseRecord

    with session_scope(world.engine) as s:
        record = s.exec(select(ReleaseRecord).where(ReleaseRecord.version == version)).one()
        return stored_release(record, world.artifacts)[0]


def test_its_declaration_is_sound_and_its_schema_accepts_what_it_scores(kind_world):
    kind, world, sample = kind_world
    assert kind_problems(kind) == []
    release = _release(world, sample.version)
    checked = kind.check_files(sample.good, release, max_items=None)
    assert checked, "the good submission is accepted"
    if kind.submission_schema is not None:
        jsonschema = pytest.importorskip("jsonschema")
        schema = json.loads(Path(kind.submission_schema).read_text(encoding="utf-8"))
        for _name, data in sample.good:
            try:
                value = json.loads(data)
            except ValueError:
                continue  # a layout the schema does not describe (JSON lines, CSV)
            jsonschema.validate(value, schema)


def test_it_scores_an_item_counted_the_same_queued_and_finished(kind_world):
    kind, world, sample = kind_world
    queued, done = _score(world, sample, kind)
    assert done.progress_done >= 1
    assert queued.progress_total == done.progress_total == done.progress_done, (
        f"queued as {queued.progress_total} {kind.item_noun}, finished with {done.progress_done}")
    assert isinstance(kind.summary_line(done.scores or {}), str) and kind.summary_line(done.scores or {})
    values = kind.leaderboard_values(done, None) or {}
    assert {c.key for c in kind.leaderboard.columns} <= set(values) | {k.rsplit(".", 1)[0] for k in values}


def test_a_bad_submission_is_refused_with_a_sentence_and_stores_nothing(kind_world):
    kind, world, sample = kind_world
    with session_scope(world.engine) as s:
        before = len(s.exec(select(ScoringRun)).all())
    with pytest.raises((ScoringError, EvaluationError)) as info:
        _register(world, sample, kind, sample.bad)
    assert str(info.value).strip().endswith((".", ")")) and len(str(info.value)) > 20
    with session_scope(world.engine) as s:
        assert len(s.exec(select(ScoringRun)).all()) == before


def test_its_release_part_round_trips_and_a_blind_reader_gets_no_gold(kind_world):
    kind, world, sample = kind_world
    spec = kind.release_part
    if spec is None:
        pytest.skip(f"the kind {kind.name} keeps no release part (its items live in shared fields)")
    release = _release(world, sample.version)
    holding = [d for d in release.datasets if part_of(d, kind) is not None]
    assert holding, f"release {sample.version} holds no {spec.noun}"
    again = Release.model_validate_json(release.model_dump_json())
    for ds, back in zip(release.datasets, again.datasets, strict=True):
        assert part_of(back, kind) == part_of(ds, kind)
    for ds in holding:
        part = part_of(ds, kind)
        assert next(iter(spec.counts(part).values())) >= 1
        blind = spec.blind(part)
        shown = "" if blind is None else blind.model_dump_json()
        leaked = [g for g in sample.gold if g and json.dumps(g)[1:-1] in shown]
        assert leaked == [], f"a blind reader of {ds.name} gets the gold {leaked}"


def test_the_hash_changes_with_the_gold_and_a_run_is_flagged_stale(kind_world):
    kind, world, sample = kind_world
    _, done = _score(world, sample, kind, agent="stale-check")
    newer = sample.regold()
    old, new = _release(world, sample.version), _release(world, newer)
    scored = set(done.dataset_hashes)
    changed = {d.name for d in new.datasets if d.name in scored} - {
        d.name for d in old.datasets for e in new.datasets if d.name == e.name and dataset_gt_hash(d) == dataset_gt_hash(e)}
    assert changed, f"the ground-truth hash of {sorted(scored)} did not change when the {kind.name} gold did"
    with session_scope(world.engine) as s:
        run = s.get(ScoringRun, done.id)
        stale = stale_scores(session=s, runs=[run], artifacts=world.artifacts)
    assert (done.id or 0) in stale, f"a {kind.name} run scored on {sample.version} is not flagged stale on {newer}"


def test_run_details_draws_its_component_for_every_scoring_role(kind_world):
    from streamlit.testing.v1 import AppTest

    from curation.models import Role
    from tests import factories as f
    from tests.ui.conftest import APP, signed_in_token, texts

    kind, world, sample = kind_world
    assert kind.view, f"the kind {kind.name} names no page component to draw its runs"
    _, done = _score(world, sample, kind, agent="page-check")
    admin = f.user(world.engine, "adm-c", Role.ADMIN)
    analyst = f.user(world.engine, "ana-c", Role.ANALYST)
    for user in (world.evaluator, world.curator, admin):
        at = AppTest.from_file(str(APP), default_timeout=90)
        at.session_state["fp.session_token"] = signed_in_token(world.engine, world.settings, user)
        at.session_state["fp.runs.run_id"] = done.id
        at.run()
        at.switch_page("app_pages/run_details.py").run()
        assert not at.exception, (user.role, at.exception)
        picker = next(sb for sb in at.selectbox if sb.label == "Run")
        if picker.value != done.id:
            picker.set_value(done.id).run()
        assert not at.exception, (user.role, at.exception)
        assert not at.error, (user.role, [e.value for e in at.error])
        drawn = len(at.dataframe) + len(at.metric) + len(at.get("plotly_chart"))
        assert drawn >= 1, (user.role, f"the {kind.view} component drew no table, metric or chart", texts(at))
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.session_state["fp.session_token"] = signed_in_token(world.engine, world.settings, analyst)
    at.run()
    with pytest.raises(ValueError):
        at.switch_page("app_pages/run_details.py")


def test_an_agent_run_answers_it(kind_world):
    from curation.settings import Settings

    kind, world, sample = kind_world
    try:
        agent_kind(kind.name)
    except UnknownAgentKind as exc:
        assert kind.agent is None and f"'{kind.name}'" in str(exc)
        pytest.skip(f"agents do not answer {kind.name} tasks (it declares no agent hook)")
    assert sample.agent_reply is not None, f"the {kind.name} sample gives no scripted reply for its agent run"
    settings = Settings(data_dir=world.settings.resolved_data_dir, llm_max_retries=0, llm_timeout_s=10,
                        llm_base_url=sample.llm.url if sample.llm else "", llm_model="judge-model")
    with ScriptedLLM(responder=sample.agent_reply) as llm:
        with session_scope(world.engine) as s:
            run = ar.start_agent_run(session=s, actor=world.evaluator, release_version=sample.version,
                                     model="scripted", base_url=llm.url, strategy="oneshot", runs_per_task=1,
                                     kind=kind.name, artifacts=world.artifacts)
        execute_job(world.engine, run.job_id or 0, settings)
    with session_scope(world.engine) as s:
        done = ar.get_agent_run(session=s, actor=world.evaluator, run_id=run.id)
        assert done.status == RunStatus.SUCCEEDED.value, done.message
        scored = [s.get(ScoringRun, i) for i in done.scoring_run_ids]
    assert scored and all(r is not None and r.kind == kind.name for r in scored)


def test_the_shared_registries_find_what_it_brings(kind_world):
    """The agents, the judges, the background jobs and the Hugging Face export read the registry of kinds: what a
    kind declares is found by its name there, and its tables hold the items of its release."""
    import pyarrow as pa

    kind, world, sample = kind_world
    assert kind.agent is None or agent_kind(kind.name) is kind.agent
    for judge in kind.own_judges:
        assert judge.name in kind.judges and judge.name in judge_names()
        assert JUDGES[judge.name] is judge.build and judge_needs_llm(judge.name) == judge.needs_llm
    for job in kind.jobs:
        assert job_kinds()[job.name] == job.runner
        module, _, function = job.runner.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), f"{job.runner} is not a function"
    part = kind.release_part
    tables = part.hf_tables() if part is not None and part.hf_tables is not None else ()
    if not tables:
        pytest.skip(f"the {kind.name} kind brings no table to a Hugging Face export")
    assert {c.name for c in tables} <= {c.name for c in hf_configs()}
    rows = config_rows(_release(world, sample.version))
    assert any(c.name in rows for c in tables), f"the {kind.name} sample's release fills none of its tables"
    for config in tables:
        for split, items in rows.get(config.name, {}).items():
            assert pa.Table.from_pylist(items, schema=config.schema).num_rows == len(items) > 0, split


def test_a_new_kinds_background_job_runs_through_the_shared_jobs(tmp_path):
    """The toy kind's job is started and run by the shared jobs by its name alone; without the kind it is unknown."""
    with registered(toy_kind.KIND):
        world, mp = make_world(tmp_path, starters=False)
        try:
            with session_scope(world.engine) as s:
                job_id = start_job(session=s, kind=toy_kind.JOB, params={"words": ["sky", "blue", "down"]},
                                   scope="toy-tally", requester=world.evaluator)
            done = execute_job(world.engine, job_id, world.settings)
            assert (done.status, done.message, done.result) == (RunStatus.SUCCEEDED.value, "3 word(s) tallied",
                                                                {"words": 3})
        finally:
            world.engine.dispose()
            mp.undo()
    assert toy_kind.JOB not in job_kinds()
    with pytest.raises(JobError, match=f"There is no kind of job called '{toy_kind.JOB}'"):
        start_job(session=None, kind=toy_kind.JOB, params={}, scope="toy-tally", requester=None)  # type: ignore[arg-type]
