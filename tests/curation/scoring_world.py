"""A release with BLADE's hurricane dataset and the people who score against it (shared by scoring tests)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from curation.artifacts import ArtifactStore
from curation.db import session_scope
from curation.models import ConceptualVariable, ReleaseRecord, Role, ScoringRun, User
from curation.services import releases as rel
from curation.services.blade_import import import_blade
from curation.services.scoring import execute_run, register_run
from tests import factories as f


@dataclass
class World:
    engine: Engine
    store: Path
    releases: Path
    runs: Path
    artifacts: ArtifactStore
    curator: User
    evaluator: User
    evaluator2: User
    analyst: User
    multirun: bytes

    def cut(self, version: str) -> None:
        with session_scope(self.engine) as s:
            rel.cut_release(session=s, actor=self.curator, version=version, notes="", artifacts=self.artifacts,
                            store=self.store)

    def register(self, files=None, *, actor=None, version="1.0.0", agent="agent-x", **kw) -> ScoringRun:
        with session_scope(self.engine) as s:
            return register_run(session=s, actor=actor or self.evaluator, release_version=version,
                                files=files or [("multirun_analyses.json", self.multirun)], agent=agent,
                                model_name=kw.pop("model_name", "gpt-test"), artifacts=self.artifacts, max_bytes=kw.pop("max_bytes", 5_000_000), **kw)

    def score(self, files=None, **kw) -> ScoringRun:
        run = self.register(files, **kw)
        return execute_run(self.engine, run.id, artifacts=self.artifacts)

    def result_json(self, run: ScoringRun) -> Any:
        """A run's result file, read from the artifact store by the hash its row records."""
        assert run.result_sha256, run.message
        return json.loads(self.artifacts.get_bytes(run.result_sha256, what=f"the result of run {run.id}"))

    def release_object(self, rel: str, version: str = "1.0.0") -> str:
        """The sha256 under which file ``rel`` of release ``version`` is in the artifact store (its MANIFEST's
        own hash for ``MANIFEST``)."""
        with session_scope(self.engine) as s:
            record = s.exec(select(ReleaseRecord).where(ReleaseRecord.version == version)).one()
        if rel == "MANIFEST":
            return record.manifest_sha256
        manifest = self.artifacts.get_bytes(record.manifest_sha256, what="the manifest").decode()
        return next(line.split("  ", 1)[0] for line in manifest.splitlines() if line.split("  ", 1)[1] == rel)

    def tamper(self, sha: str, data: bytes) -> Path:
        """Overwrite the store's object ``sha`` (as a disk fault or a hostile hand would), and forget this
        machine's materialised releases so they are made again from the store."""
        path = self.artifacts.object_path(sha)
        path.chmod(0o644)
        path.write_bytes(data)
        shutil.rmtree(self.artifacts.releases_cache, ignore_errors=True)
        return path

    def change_ground_truth(self) -> None:
        """An expert rewords one of hurricane's conceptual variables (its ground truth changes)."""
        with session_scope(self.engine) as s:
            var = s.exec(select(ConceptualVariable).order_by(ConceptualVariable.id)).first()
            assert var is not None
            var.concept = var.concept + " (reworded)"
            s.add(var)


def make_world(engine: Engine, tmp_path: Path, shared_blade: Path) -> World:
    store = tmp_path / "store"
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "hurricane", store=store,
                     max_bytes=200 * 2**20)
    w = World(engine=engine, store=store, releases=tmp_path / "releases", runs=tmp_path / "runs",
              artifacts=ArtifactStore.at(tmp_path),
              curator=f.user(engine, "cura-s", Role.CURATOR), evaluator=f.user(engine, "eva-s", Role.EVALUATOR),
              evaluator2=f.user(engine, "eva-t", Role.EVALUATOR), analyst=f.user(engine, "ana-s"),
              multirun=(shared_blade / "examples" / "multirun_analyses.json").read_bytes())
    w.cut("1.0.0")
    return w
