"""Many analysts saving at the same moment (Streamlit serves each from its own thread): nothing is lost."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func
from sqlmodel import select

from curation.db import session_scope
from curation.models import Analysis, ConceptualVariable, Transform
from curation.services import annotation as ann
from curation.specs import ColumnMapping, ColumnRef, VariableType
from tests import factories as f

ANALYSTS, SAVES = 8, 12


def test_concurrent_saves_by_many_analysts_all_land(engine, store):
    analysts = [f.user(engine, f"analyst{i}") for i in range(ANALYSTS)]
    ds = f.dataset(engine, store, assign=analysts)

    def work(actor):
        for j in range(SAVES):
            with session_scope(engine) as s:
                ann.save_transform(session=s, actor=actor, dataset_id=ds.id, data=ann.TransformInput(
                    spec_name=f"t{j}", verb="derive", code=f"df['c{j}'] = df['wind'] * {j}",
                    mapping=[ColumnMapping(inputs=["wind"], output=f"c{j}")]))
            with session_scope(engine) as s:
                ann.save_variable(session=s, actor=actor, dataset_id=ds.id, data=ann.VariableInput(
                    variable_type=VariableType.CONTROL, concept=f"v{j}", rationale="r",
                    columns=[ColumnRef(name="year", rationale="r")]))
        return actor.username

    with ThreadPoolExecutor(max_workers=ANALYSTS) as pool:
        done = list(pool.map(work, analysts))
    assert sorted(done) == sorted(a.username for a in analysts)
    with session_scope(engine) as s:
        assert s.exec(select(func.count()).select_from(Analysis)).one() == ANALYSTS  # one analysis each
        assert s.exec(select(func.count()).select_from(Transform)).one() == ANALYSTS * SAVES
        assert s.exec(select(func.count()).select_from(ConceptualVariable)).one() == ANALYSTS * SAVES
        positions = s.exec(select(Transform.analysis_id, Transform.position)).all()
        assert len(set(positions)) == len(positions)  # entry order is kept per analyst
