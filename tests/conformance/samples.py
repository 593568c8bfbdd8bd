"""One conformance sample per registered kind: a world with a release holding the kind's items, a submission that
scores, one the kind refuses, and a way to cut a newer release whose gold differs.

A kind registered without a sample here fails the conformance suite with a sentence saying so: adding a kind
means adding its sample (this file is the test suite's, not shared code).
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlmodel import select

from curation.db import session_scope
from curation.models import ConceptualVariable, Dataset, ReleaseRecord, Role, User
from curation.services import releases as rel
from curation.services.blade_import import import_blade
from curation.services.kind_import import import_kind
from curation.services.mcq_store import dataset_mcqs, save_mcq
from curation.services.scoring import JudgeSettings
from curation.settings import Settings
from evaluation.llm import LLMConfig
from exports.hypotheses_part import HypothesesPart
from exports.native import MANIFEST_NAME, write_release
from exports.schema import Release
from tests import factories as f
from tests.conformance import toy_kind
from tests.llm_server import ScriptedLLM

REPO = Path(__file__).resolve().parents[2]


@dataclass
class World:
    """The database and settings a sample lives in (one per kind and test module)."""

    settings: Settings
    engine: Any
    curator: User
    evaluator: User
    tmp: Path

    @property
    def artifacts(self) -> Any:
        return self.settings.artifact_store()

    def cut(self, version: str, names: list[str] | None = None) -> str:
        with session_scope(self.engine) as s:
            rel.cut_release(session=s, actor=self.curator, version=version, notes="", artifacts=self.artifacts,
                            store=self.settings.datasets_store, dataset_names=names)
        return version


@dataclass
class Sample:
    version: str  # the release holding the kind's items
    good: list[tuple[str, bytes]]  # a submission that scores at least one item
    bad: list[tuple[str, bytes]]  # a submission the kind refuses with a sentence
    regold: Callable[[], str]  # cuts a newer release in which the gold of these items differs: its version
    gold: list[str]  # texts of the gold that a reader blind to the datasets must not get
    judge: str = "offline"
    judges: JudgeSettings | None = None
    agent_reply: Callable[[dict[str, Any]], str] | None = None  # the scripted model's reply to a request
    llm: ScriptedLLM | None = None
    notes: dict[str, Any] = field(default_factory=dict)


def _zip(folders: dict[str, dict[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for folder, files in folders.items():
            for name, data in files.items():
                z.writestr(f"{folder}/{name}", data)
    return buf.getvalue()


# ------------------------------------------------------------------------------------ BLADE (analyses, MCQs)


def _blade(world: World, shared: Path) -> None:
    with session_scope(world.engine) as s:
        import_blade(session=s, actor=None, path=shared / "blade" / "datasets" / "hurricane",
                     store=world.settings.datasets_store, max_bytes=200 * 2**20)
    world.cut("1.0.0")


def _regold_blade(world: World) -> Callable[[], str]:
    def regold() -> str:
        with session_scope(world.engine) as s:
            v = s.exec(select(ConceptualVariable)).first()
            assert v is not None
            v.concept = v.concept + " (revised)"
            s.add(v)
            q = next(iter(dataset_mcqs(session=s, dataset_id=None)), None)
            if q is not None:  # an answer key changes too: an MCQ run must be flagged stale as well
                q.correct_index = (q.correct_index + 1) % len(q.options)
                save_mcq(session=s, mcq=q)
        return world.cut("1.1.0")
    return regold


def analyses_sample(world: World, shared: Path) -> Sample:
    _blade(world, shared)
    good = (shared / "blade" / "examples" / "multirun_analyses.json").read_bytes()
    return Sample(version="1.0.0", good=[("multi.json", good)], bad=[("multi.json", b'{"not": "blade"}')],
                  regold=_regold_blade(world), gold=[],
                  agent_reply=lambda r: json.dumps({
                      "cvars": {"ivs": [{"description": "femininity", "columns": ["masfem"]}],
                                "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
                      "transform_code": "def transform(df):\n    return df",
                      "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                                "    return smf.ols('alldeaths ~ masfem', data=df).fit()"}))


def mcq_sample(world: World, shared: Path) -> Sample:
    _blade(world, shared)
    with session_scope(world.engine) as s:
        qs = dataset_mcqs(session=s, dataset_id=None)
        gold = [q.options[q.correct_index] for q in qs]
        answers = {str(q.id): "ABCDEFGH"[q.correct_index] for q in qs}
    return Sample(version="1.0.0", good=[("answers.json", json.dumps({"answers": answers}).encode())],
                  bad=[("answers.json", b"[1, 2]")], regold=_regold_blade(world), gold=gold,
                  agent_reply=lambda r: '{"answer": "A", "rationale": "the first"}')


def reproducibility_sample(world: World, shared: Path) -> Sample:
    """A BLADE submission whose analyses carry workflows; the inspector is the scripted model of repro_world."""
    from tests.evaluation.repro_world import inspector_responder

    _blade(world, shared)
    model = ("def model(df):\n    import statsmodels.formula.api as smf\n"
             "    return smf.ols('alldeaths ~ masfem', data=df).fit()\n")

    def analysis(workflow: str) -> dict[str, Any]:
        return {"cvars": {"ivs": [{"description": "femininity of the name", "columns": ["masfem"]}],
                          "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
                "transform_code": "def transform(df):\n    return df\n", "m_code": model, "workflow": workflow}

    good = json.dumps({"dataset_name": "hurricane", "analyses": [
        analysis("Regress alldeaths on masfem by OLS; report the slope. [scenario: good]"),
        analysis("Report the mean of the deaths. [scenario: differ]")]}).encode()
    no_workflow = json.dumps({"dataset_name": "hurricane", "analyses": [
        {k: v for k, v in analysis("").items() if k != "workflow"}]}).encode()
    server = ScriptedLLM(inspector_responder).__enter__()  # stopped with the world (Sample.llm)
    judges = JudgeSettings(llm=LLMConfig(base_url=server.url, model="inspector-test", cache_dir=world.tmp / "llm",
                                         max_retries=0))
    return Sample(version="1.0.0", good=[("hurricane.json", good)], bad=[("hurricane.json", no_workflow)],
                  regold=_regold_blade(world), gold=[], judge="offline", judges=judges, llm=server)


# ------------------------------------------------------------------------------------ hypotheses


def hypotheses_sample(world: World, shared: Path) -> Sample:
    from tests.curation import hms_world

    server = ScriptedLLM().__enter__()  # stopped with the world (Sample.llm)
    releases = world.settings.artifact_store().releases_root

    def write(version: str, gold_suffix: str = "") -> str:
        datasets, files = hms_world.release_datasets(world.tmp / f"hms-{version}")
        if gold_suffix:
            datasets = [d.with_parts(hypotheses=HypothesesPart(tasks=[
                t.model_copy(update={"gold": t.gold.model_copy(update={"hypothesis": t.gold.hypothesis + gold_suffix})
                                     if t.gold else None}) for t in HypothesesPart.of(d).tasks])) for d in datasets]
        release = Release(version=version, created_at=datetime(2026, 11, 25, tzinfo=UTC), app_version="test",
                          datasets=datasets)
        path = write_release(release, files, releases)
        manifest = hashlib.sha256((path / MANIFEST_NAME).read_bytes()).hexdigest()
        with session_scope(world.engine) as s:
            s.add(ReleaseRecord(version=version, format_version=release.format_version, path=path.name,
                                manifest_sha256=manifest, summary={d.name: {} for d in datasets}))
        return version

    write("1.0.0")
    script = hms_world.standard_script()
    server.responder = script
    judges = JudgeSettings(llm=LLMConfig(base_url=server.url, model="judge-model", cache_dir=world.tmp / "llm",
                                         max_retries=0, backoff_s=0))
    datasets, _ = hms_world.release_datasets(world.tmp / "hms-gold")
    gold = [t.gold.hypothesis for d in datasets for t in HypothesesPart.of(d).tasks if t.gold]
    return Sample(version="1.0.0", good=[("answers.json", hms_world.answers_file())],
                  bad=[("answers.json", b'[{"query": "Unknown question", "HypoB": "h"}]')],
                  regold=lambda: write("1.1.0", " (revised)"), gold=gold, judge="hms", judges=judges, llm=server,
                  agent_reply=lambda r: script(r) if "HMS" in json.dumps(r) else json.dumps(
                      {"hypothesis": "Older adults earn more.", "workflow": "regress income on age"}))


# ------------------------------------------------------------------------------------ programmatic


def programmatic_sample(world: World, shared: Path) -> Sample:
    from curation.models import CuratedCandidate, CuratedItem

    tree = REPO / "datasets" / "programmatic" / "data"
    with session_scope(world.engine) as s:
        keys = sorted(s.exec(select(Dataset.name)).all())
    world.cut("1.0.0")
    with session_scope(world.engine) as s:
        tasks = sorted(t.key for t in s.exec(select(CuratedItem)).all())
    folders = {k: {p.name: p.read_bytes() for p in (tree / k / "gt").iterdir() if not p.name.endswith(".txt")}
               for k in tasks}

    def regold() -> str:
        with session_scope(world.engine) as s:
            item = s.exec(select(CuratedCandidate).where(CuratedCandidate.role == "check")).first()
            assert item is not None
            item.payload = {**item.payload, "code": item.payload.get("code", "") + "\n# revised"}
            s.add(item)
        return world.cut("1.1.0")

    return Sample(version="1.0.0", good=[("outputs.zip", _zip(folders))],
                  bad=[("outputs.zip", _zip({"no_such_task": {"x.csv": b"a\n1\n"}}))], regold=regold, gold=[],
                  notes={"datasets": keys},
                  # an agent that writes one small table for every task (its checks judge it; the run is scored)
                  agent_reply=lambda r: json.dumps({"files": {"cleaned.csv": "a,b\n1,2\n"}}))


# ------------------------------------------------------------------------------------ the toy kind


def toyquiz_sample(world: World, shared: Path) -> Sample:
    folder = toy_kind.write_folder(world.tmp / "toy-src")
    with session_scope(world.engine) as s:
        import_kind(session=s, actor=world.curator, kind="toyquiz", path=folder,
                    store=world.settings.datasets_store, max_bytes=10_000_000)
    world.cut("1.0.0", ["toy_one"])

    def regold() -> str:
        with session_scope(world.engine) as s:
            ds = s.exec(select(Dataset).where(Dataset.name == "toy_one")).one()
            part = dict(ds.parts["toyquiz"])
            part["questions"] = [{**q, "gold": "grey"} if q["id"] == "t1" else q for q in part["questions"]]
            ds.parts = {"toyquiz": part}
            s.add(ds)
        return world.cut("1.1.0", ["toy_one"])

    return Sample(version="1.0.0", good=[("answers.json", b'{"answers": {"t1": "blue", "t2": "left"}}')],
                  bad=[("answers.json", b'{"answers": {"t9": "x"}}')], regold=regold, gold=["blue", "down"],
                  agent_reply=lambda r: '{"answer": "blue"}')


def qrdata_sample(world: World, shared: Path) -> Sample:
    from tests.conformance.qrdata_sample import sample  # the kind's own file (it imports World and Sample)

    return sample(world, shared)


# ------------------------------------------------------------------------------------ StatQA


def statqa_sample(world: World, shared: Path) -> Sample:
    """The shared StatQA subset imported and released; the scripted model replies with the gold of the question it
    is asked (the reply's JSON, as StatQA reads it)."""
    from exports.statqa import read_statqa_folder

    folder = shared / "statqa"
    with session_scope(world.engine) as s:
        report = import_kind(session=s, actor=world.curator, kind="statqa", path=folder,
                             store=world.settings.datasets_store, max_bytes=10_000_000)
    world.cut("1.0.0", report.datasets)
    questions = [q for d in read_statqa_folder(folder).datasets for q in d.part.questions if q.gold]

    def regold() -> str:
        with session_scope(world.engine) as s:
            ds = s.exec(select(Dataset).where(Dataset.name == "statqa_crop_production_dataset")).one()
            part = dict(ds.parts["statqa"])
            part["questions"] = [{**q, "gold": {**q["gold"], "text": q["gold"]["text"].replace("]", ', "Mode"]', 1)}}
                                 if q["id"] == "7" else q for q in part["questions"]]
            ds.parts = {"statqa": part}
            s.add(ds)
        return world.cut("1.1.0", report.datasets)

    def reply(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        q = next(q for q in questions if json.dumps(q.question, ensure_ascii=False) in prompt)
        assert q.gold is not None
        return "My selection: " + json.dumps({"columns": q.gold.columns, "methods": q.gold.methods})

    good = {"answers": {q.id: f"Answer: {q.gold.text}" for q in questions[:5] if q.gold}}
    methods = sorted({m for q in questions if q.gold for m in q.gold.methods})
    return Sample(version="1.0.0", good=[("answers.json", json.dumps(good).encode())],
                  bad=[("answers.json", b'{"answers": {"99999": "{}"}}')], regold=regold,
                  gold=[q.gold.text for q in questions if q.gold] + methods, agent_reply=reply)


SAMPLES: dict[str, Callable[[World, Path], Sample]] = {
    "analyses": analyses_sample,
    "mcq": mcq_sample,
    "hypotheses": hypotheses_sample,
    "programmatic": programmatic_sample,
    "reproducibility": reproducibility_sample,
    "toyquiz": toyquiz_sample,
    "qrdata": qrdata_sample,
    "statqa": statqa_sample,
}


def make_world(tmp: Path, *, starters: bool) -> tuple[World, Any]:
    """A migrated SQLite world with a curator and an evaluator (the starter datasets and tasks if ``starters``);
    returns it and the MonkeyPatch holding its environment (undo it when done)."""
    import pytest

    from curation.bootstrap import initialise
    from tests.conftest import migrated_sqlite

    mp = pytest.MonkeyPatch()
    mp.setenv("FORKPATHS_DATA_DIR", str(tmp / "data"))
    mp.setenv("FORKPATHS_ADMIN_PASSWORD", "admin password 1")
    mp.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "true" if starters else "false")
    if starters:
        mp.setenv("FORKPATHS_STARTER_DATASETS_DIR", str(REPO / "datasets"))
    mp.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
    migrated_sqlite(settings.resolved_data_dir / "forkpaths.db").dispose()
    engine = initialise(settings).engine
    world = World(settings=settings, engine=engine, curator=f.user(engine, "cura-c", Role.CURATOR),
                  evaluator=f.user(engine, "eva-c", Role.EVALUATOR), tmp=tmp)
    return world, mp
