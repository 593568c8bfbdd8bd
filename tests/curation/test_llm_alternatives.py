"""LLM alternatives end to end against the scripted chat-completions server: generation, sandbox checks,
provenance, failures kept, duplicates flagged, the cache (a second run sends nothing), and the CLI."""

from __future__ import annotations

import json
import os

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import PermissionDenied, StageError
from curation.models import Alternative, Role, Stage
from curation.services.analyses.llm_alternatives import generate_alternatives
from curation.services.analyses.review_queue import review_queue
from curation.services.annotation import submit_analysis
from curation.services.stages import set_stage
from evaluation.llm import LLMConfig, LLMNotConfigured
from evaluation.sandbox import SandboxLimits
from tests import factories as f
from tests.llm_server import ScriptedLLM

LIMITS = SandboxLimits(timeout_s=60, memory_mb=2048)
VARIABLES = {"variables": [
    {"variable_type": "Control", "concept": "storm strength", "columns": ["wind"], "rationale": "wind kills"},
    {"variable_type": "Control", "concept": "year of the storm", "columns": ["year"], "rationale": "warnings improved"},
    {"variable_type": "IV", "concept": "made-up", "columns": ["nope"], "rationale": "not a column"},
    {"variable_type": "Mediator", "concept": "bad type", "columns": ["wind"]},
]}
TRANSFORMS = {"transforms": [
    {"code": "df['deaths_sqrt'] = np.sqrt(df['deaths'])", "output_col": "deaths_sqrt", "rationale": "less skew"},
    {"code": "df['deaths_root'] = df['deaths'] ** 0.5", "output_col": "deaths_root", "rationale": "the same"},
    {"code": "df['deaths_bad'] = np.log(df['no_such_column'])", "output_col": "deaths_bad", "rationale": "oops"},
]}


def responder(request):
    prompt = request["messages"][-1]["content"]
    return json.dumps(VARIABLES if "conceptual variables (independent" in prompt else TRANSFORMS)


@pytest.fixture
def stage2(engine, store):
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    cur = f.user(engine, "cur", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[ana, bob])
    ids = f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
    return {"engine": engine, "store": store, "ds": ds, "ana": ana, "bob": bob, "cur": cur, "ids": ids}


def _generate(env, config, actor=None, progress=None):
    return generate_alternatives(session_scope=lambda: session_scope(env["engine"]), actor=actor or env["cur"],
                                 dataset_id=env["ds"].id, config=config, store=env["store"], limits=LIMITS,
                                 progress=progress)


def _alts(env):
    with session_scope(env["engine"]) as s:
        return list(s.exec(select(Alternative).order_by(Alternative.position)).all())


def test_generation_checks_keeps_failures_flags_duplicates_and_caches(stage2, tmp_path):
    env = stage2
    with ScriptedLLM(responder) as server:
        config = LLMConfig(base_url=server.url, model="scripted-1", cache_dir=tmp_path / "cache", backoff_s=0.01)
        with pytest.raises(StageError, match="stage 2"):
            _generate(env, config)
        with session_scope(env["engine"]) as s:
            set_stage(session=s, actor=env["cur"], dataset_id=env["ds"].id, stage=Stage.REVIEW)
        with pytest.raises(PermissionDenied):
            _generate(env, config, actor=env["ana"])
        seen = []
        report = _generate(env, config, progress=lambda done, total, label: seen.append((done, total)))
        # 1 variable prompt (ana's analysis) + 1 transform prompt per variable (IV and DV)
        assert len(server.requests) == 3 and seen[-1] == (3, 3) and seen[0] == (0, 3)
        assert report.created == 2 + 2 * 3 and report.errors == []
        assert len(report.rejected) == 2 and any("'nope'" in r for r in report.rejected)
        assert report.failed_checks == 2  # the broken transform, once per variable
        alts = _alts(env)
        variables = [a for a in alts if a.kind == "variable"]
        transforms = [a for a in alts if a.kind == "transform"]
        assert {a.payload["concept"] for a in variables} == {"storm strength", "year of the storm"}
        bad = [a for a in transforms if a.payload["output_col"] == "deaths_bad"]
        assert len(bad) == 2 and all(not a.extra["check"]["ok"] and "no_such_column" in a.extra["check"]["error"]
                                     for a in bad)
        dv_alts = [a for a in transforms if a.seed_id == env["ids"]["dv"]]
        sqrt, root = (next(a for a in dv_alts if a.payload["output_col"] == c) for c in ("deaths_sqrt", "deaths_root"))
        assert sqrt.extra["check"]["ok"] and sqrt.extra["value_hash"] == root.extra["value_hash"]
        by_id = {a.id: a for a in alts}
        # same values, other code: the same decision (flagged against the first stored with that value hash)
        assert by_id[root.extra["duplicate_of"]].extra["value_hash"] == root.extra["value_hash"]
        same_hash = [a for a in transforms if a.extra.get("value_hash") == sqrt.extra["value_hash"]]
        assert len(same_hash) == 4 and sum("duplicate_of" not in a.extra for a in same_hash) == 1
        assert sqrt.payload["concept"] == "deaths" and sqrt.payload["parents"] == ["raw data"]
        # provenance: model, base URL, template version, parameters, seed decision, raw response, time
        assert sqrt.llm["model"] == "scripted-1" and sqrt.llm["base_url"] == server.url
        assert sqrt.llm["prompt_template"] == "blade-fig10-transforms@2" and sqrt.llm["created_at"]
        assert sqrt.extra["llm_call"]["parameters"]["temperature"] == 0.0
        assert sqrt.extra["llm_call"]["raw_response"]["choices"][0]["message"]["content"] == json.dumps(TRANSFORMS)
        assert sqrt.seed_id == env["ids"]["dv"] and sqrt.source == "llm" and sqrt.proposed_by_id is None

        again = _generate(env, config)
        assert len(server.requests) == 3  # the cache answered: nothing sent
        assert again.cached == 3 and again.created == 0 and again.already_stored == 8
        assert len(_alts(env)) == 8

    with session_scope(env["engine"]) as s:  # reviewers see them, source-blind
        items = review_queue(session=s, actor=env["ana"], dataset_id=env["ds"].id).items
    assert sum(i.target_kind == "alternative" for i in items) == 8 and all(i.source is None for i in items)


def test_endpoint_failures_are_reported_per_seed_and_store_nothing(stage2, tmp_path):
    env = stage2
    with session_scope(env["engine"]) as s:
        set_stage(session=s, actor=env["cur"], dataset_id=env["ds"].id, stage=Stage.REVIEW)
    with pytest.raises(LLMNotConfigured):
        _generate(env, LLMConfig())
    down = LLMConfig(base_url=ScriptedLLM.down_url(), model="m", cache_dir=tmp_path / "c", max_retries=1,
                     backoff_s=0.01)
    report = _generate(env, down)
    assert len(report.errors) == 3 and all("cannot connect" in e for e in report.errors)
    with ScriptedLLM(responder) as server:
        server.script = [{"content": '{"variables": [{"variable_type": "Control", "concept": "trunc'},
                         {"content": "Sorry, I cannot do that."}]
        config = LLMConfig(base_url=server.url, model="m", cache_dir=tmp_path / "c2", backoff_s=0.01)
        report = _generate(env, config)
    assert report.errors == [
        "transforms for 'femininity of name': the LLM's answer is not usable: the answer holds no JSON object"]
    assert any("item 1 rejected" in r for r in report.rejected)  # the truncated variable: repaired, still unfit
    assert {a.kind for a in _alts(env)} == {"transform"} and report.created == 3


def test_cli_alternatives_generate(tmp_path):
    from curation.bootstrap import initialise
    from curation.settings import Settings
    from tests.cli_runner import run_cli, run_cli_process

    with ScriptedLLM(responder) as server:
        env = {**os.environ, "FORKPATHS_DATA_DIR": str(tmp_path / "data"), "FORKPATHS_LOAD_STARTER_DATASETS": "false",
               "FORKPATHS_ADMIN_PASSWORD": "admin password 1", "FORKPATHS_LLM_BASE_URL": server.url,
               "FORKPATHS_LLM_MODEL": "scripted"}
        env.pop("FORKPATHS_DATABASE_URL", None)
        settings = Settings(data_dir=tmp_path / "data", database_url=None, load_starter_datasets=False,
                            admin_password="admin password 1")
        engine = initialise(settings).engine
        ana, cura = f.user(engine, "ana"), f.user(engine, "cura", Role.CURATOR)
        ds = f.dataset(engine, settings.datasets_store, assign=[ana])
        f.full_analysis(engine, ana, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=ana, dataset_id=ds.id)
            set_stage(session=s, actor=cura, dataset_id=ds.id, stage=Stage.REVIEW)
        engine.dispose()

        def cli(*args, extra=None, process=False):
            run = run_cli_process if process else run_cli
            return run(["alternatives", "generate", *args], env={**env, **(extra or {})}, cwd=tmp_path)

        r = cli("storms", process=True)  # the real command, once
        assert r.returncode == 0, r.stderr
        # (the progress bar is drawn on a terminal only)
        assert "8 alternatives stored" in r.stdout and "3 LLM answers, 0 from" in r.stdout
        r = cli("storms")
        assert "0 alternatives stored" in r.stdout and "8 already stored" in r.stdout and "3 from the cache" in r.stdout
        assert len(server.requests) == 3
        r = cli("storms", extra={"FORKPATHS_LLM_BASE_URL": ""})
        assert r.returncode == 2 and "FORKPATHS_LLM_BASE_URL" in r.stderr
        r = cli("nope")
        assert r.returncode == 2 and "no dataset called 'nope'" in r.stderr
        r = cli("storms", "--enqueue")
        assert r.returncode == 2 and "PostgreSQL" in r.stderr
    from curation.models import BackgroundJob

    engine = initialise(settings).engine
    with session_scope(engine) as s:  # the CLI's generations are jobs like the page's (seen there, one at a time)
        jobs = s.exec(select(BackgroundJob).order_by(BackgroundJob.id)).all()
    engine.dispose()
    assert [(j.kind, j.status, j.result["created"]) for j in jobs] == [
        ("llm_alternatives", "succeeded", 8), ("llm_alternatives", "succeeded", 0)]
