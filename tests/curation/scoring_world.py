"""A release with BLADE's hurricane dataset and the people who score against it (shared by scoring tests)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import select

from curation.db import session_scope
from curation.models import ConceptualVariable, Role, ScoringRun, User
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
    curator: User
    evaluator: User
    evaluator2: User
    analyst: User
    multirun: bytes

    def cut(self, version: str) -> None:
        with session_scope(self.engine) as s:
            rel.cut_release(session=s, actor=self.curator, version=version, notes="", releases_root=self.releases,
                            store=self.store)

    def register(self, files=None, *, actor=None, version="1.0.0", agent="agent-x", **kw) -> ScoringRun:
        with session_scope(self.engine) as s:
            return register_run(session=s, actor=actor or self.evaluator, release_version=version,
                                files=files or [("multirun_analyses.json", self.multirun)], agent=agent,
                                model_name=kw.pop("model_name", "gpt-test"), runs_root=self.runs,
                                releases_root=self.releases, max_bytes=kw.pop("max_bytes", 5_000_000), **kw)

    def score(self, files=None, **kw) -> ScoringRun:
        run = self.register(files, **kw)
        return execute_run(self.engine, run.id, runs_root=self.runs, releases_root=self.releases)

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
              curator=f.user(engine, "cura-s", Role.CURATOR), evaluator=f.user(engine, "eva-s", Role.EVALUATOR),
              evaluator2=f.user(engine, "eva-t", Role.EVALUATOR), analyst=f.user(engine, "ana-s"),
              multirun=(shared_blade / "examples" / "multirun_analyses.json").read_bytes())
    w.cut("1.0.0")
    return w
