"""A release with DiscoveryBench hypothesis tasks (built directly as exports.schema objects and written with
exports.native, as the release cut will once hypothesis tasks are curated), the people who score against it,
and a scripted ``hms`` judge on 127.0.0.1 (shared by the hypotheses scoring tests)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from curation.artifacts import ArtifactStore
from curation.db import session_scope
from curation.models import ReleaseRecord, Role, ScoringRun, User
from curation.services.scoring import JudgeSettings, execute_run, register_run
from evaluation.llm import LLMConfig
from exports.hypotheses_part import HypothesesPart, HypothesisGold, HypothesisTaskRelease
from exports.native import MANIFEST_NAME, write_release
from exports.schema import DatasetRelease, Release
from tests import factories as f
from tests.evaluation.hms_script import HMSScript, sub
from tests.factories import artifacts_for
from tests.llm_server import ScriptedLLM

__all__ = ["HMSWorld", "answers_file", "make_hms_world", "standard_script"]

DATA = {
    "survey": "age,income,sex\n30,100,f\n40,150,m\n50,170,f\n",
    "crops": "rain,yield\n1,2\n2,4\n3,6\n",
    "synth-one": "a,b,t\n1,2,4\n2,3,7\n3,1,7\n4,0,8\n",
}


def _task(key: str, question: str, gold: str | None, *, qtype: str, domain: str, **kw: Any) -> HypothesisTaskRelease:
    source, split, _folder, meta, q = key.split("/")
    return HypothesisTaskRelease(
        key=key, source=source, split=split, metadata_k=int(meta.split("_")[1]), qid=int(q[1:]), question=question,
        question_type=qtype, domain=domain, data_files=["data.csv"],
        gold=HypothesisGold(hypothesis=gold, workflow="gold workflow", source="answer_key") if gold else None, **kw)


def release_datasets(tmp: Path) -> tuple[list[DatasetRelease], dict[str, Path]]:
    files: dict[str, Path] = {}
    out = []
    tasks = {
        "survey": [_task("real/test/survey/metadata_0/q0", "How does income relate to age?",
                         "Income rises with age among adults.", qtype="relationship", domain="sociology"),
                   _task("real/test/survey/metadata_0/q1", "Who earns more?", "Men earn more than women.",
                         qtype="context", domain="sociology"),
                   _task("real/test/survey/metadata_1/q0", "Still to curate", None, qtype="variables",
                         domain="sociology")],
        "crops": [_task("real/test/crops/metadata_0/q0", "What drives yield?", "Yield doubles with rain.",
                        qtype="variables", domain="agriculture")],
        "synth-one": [_task("synth/dev/synth-one/metadata_0/q0", "What gives t?", "t is twice a plus b.",
                            qtype="general", domain="synthetic", true_hypothesis_expr="df['a'] * 2 + df['b']",
                            target_col="t", relevant_cols=["a", "b", "t"])],
    }
    for name, text in DATA.items():
        path = tmp / "src" / name / "data.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        files[name] = path
        header = text.splitlines()[0].split(",")
        out.append(DatasetRelease(
            name=name, research_question=f"questions about {name}", description=f"the {name} data",
            dictionary=[{"name": c, "description": f"column {c}"} for c in header],
            data_file=f"data/{name}/data.csv", data_sha256=hashlib.sha256(text.encode()).hexdigest(),
            num_rows=len(text.splitlines()) - 1, num_columns=len(header),
        ).with_parts(hypotheses=HypothesesPart(tasks=tasks[name])))
    return out, files


def cut_hypotheses_release(engine: Engine, releases: Path, tmp: Path, version: str = "2.0.0") -> Release:
    datasets, files = release_datasets(tmp)
    release = Release(version=version, created_at=datetime(2026, 11, 25, tzinfo=UTC), app_version="test",
                      licence="ODC-By-1.0", attribution="DiscoveryBench (Majumder et al. 2024)", datasets=datasets)
    path = write_release(release, files, releases)
    manifest = hashlib.sha256((path / MANIFEST_NAME).read_bytes()).hexdigest()
    with session_scope(engine) as s:
        s.add(ReleaseRecord(version=version, format_version=release.format_version, path=path.name,
                            manifest_sha256=manifest, summary={d.name: {} for d in datasets}))
    return release


def standard_script() -> HMSScript:
    """Gold and predicted hypotheses of the answers file below, decomposed and judged."""
    return HMSScript(
        decompositions={
            "Income rises with age among adults.": [sub("g", "adults", ["income", "age"], "positive")],
            "Men earn more than women.": [sub("g", "all people", ["income", "sex"], "higher for men")],
            "Yield doubles with rain.": [sub("g", "all fields", ["yield", "rain"], "positive and linear")],
            "t is twice a plus b.": [sub("g", "whole dataset", ["t", "a", "b"], "linear")],
            "Older adults earn more.": [sub("p", "adults", ["income", "age"], "positive")],
            "Rain helps crops.": [sub("p", "farms", ["rain", "yield"], "positive")],
            "t grows with a and b.": [sub("p", "whole dataset", ["t", "a", "b"], "positive")],
        },
        pair_contexts={"P0|G0": True}, variables={"P0|G0": [[1, 1], [2, 2]]},
        relationships={"P0|G0": "B"})


def answers_file(*, code: str | None = None, drop: tuple[str, ...] = ()) -> bytes:
    answers = [
        {"task": "real/test/survey/metadata_0/q0", "hypothesis": "Older adults earn more.", "workflow": "regress"},
        {"task": "real/test/crops/metadata_0/q0", "hypothesis": "Rain helps crops.", "workflow": "plot"},
        {"task": "synth/dev/synth-one/metadata_0/q0", "hypothesis": "t grows with a and b.", "workflow": "fit",
         **({"code": code} if code else {})},
    ]
    answers = [a for a in answers if a["task"] not in drop]
    return json.dumps({"format": "forkpaths-hypotheses", "format_version": "1.0", "answers": answers}).encode()


@dataclass
class HMSWorld:
    engine: Engine
    releases: Path
    runs: Path
    server: ScriptedLLM
    cache: Path
    curator: User
    evaluator: User
    evaluator2: User
    analyst: User
    script: HMSScript = field(default_factory=standard_script)

    @property
    def artifacts(self) -> ArtifactStore:
        """The store of this world's data folder (the release, cut straight into ``releases``, is put there the
        first time scoring reads it)."""
        return artifacts_for(self.releases)

    @property
    def judges(self) -> JudgeSettings:
        return JudgeSettings(llm=LLMConfig(base_url=self.server.url, model="judge-model", cache_dir=self.cache,
                                           max_retries=0, backoff_s=0))

    def register(self, data: bytes | None = None, *, actor: User | None = None, mode: str = "default",
                 version: str = "2.0.0", name: str = "answers.json", **kw: Any) -> ScoringRun:
        with session_scope(self.engine) as s:
            return register_run(session=s, actor=actor or self.evaluator, release_version=version,
                                files=[(name, data if data is not None else answers_file())],
                                agent=kw.pop("agent", "agent-h"), model_name="gpt-test", judge=kw.pop("judge", "hms"),
                                mode=mode, kind="hypotheses", artifacts=self.artifacts,
                                max_bytes=5_000_000, judges=self.judges, **kw)

    def score(self, data: bytes | None = None, **kw: Any) -> ScoringRun:
        run = self.register(data, **kw)
        return execute_run(self.engine, run.id or 0, artifacts=self.artifacts,
                           judges=self.judges)


def make_hms_world(engine: Engine, tmp_path: Path, server: ScriptedLLM) -> HMSWorld:
    releases = tmp_path / "releases"
    cut_hypotheses_release(engine, releases, tmp_path)
    w = HMSWorld(engine=engine, releases=releases, runs=tmp_path / "runs", server=server, cache=tmp_path / "llm",
                 curator=f.user(engine, "cura-h", Role.CURATOR), evaluator=f.user(engine, "eva-h", Role.EVALUATOR),
                 evaluator2=f.user(engine, "eva-i", Role.EVALUATOR), analyst=f.user(engine, "ana-h"))
    server.responder = w.script
    return w
