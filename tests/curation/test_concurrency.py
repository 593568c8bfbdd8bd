"""Many analysts saving at the same moment (Streamlit serves each from its own thread): nothing is lost."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func
from sqlmodel import select

from curation.db import session_scope
from curation.models import Analysis, ConceptualVariable, Transform
from curation.services import annotation as ann
from evaluation.specs import ColumnMapping, ColumnRef, VariableType
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


def test_two_tabs_of_one_analyst_saving_their_first_decisions_together_both_land(engine, store):
    """Two browser tabs are two Streamlit threads: the analysis row is created once, positions stay unique and
    each tab's saves keep their order (issue 7: this raised IntegrityError and left duplicate positions)."""
    rounds, tabs, saves = 4, 3, 4
    analysts = [f.user(engine, f"tabs{r}") for r in range(rounds)]
    ds = f.dataset(engine, store, assign=analysts)

    def tab(actor, t: int, start: threading.Barrier) -> list[str]:
        start.wait()
        saved = []
        for j in range(saves):
            with session_scope(engine) as s:
                var = ann.save_variable(session=s, actor=actor, dataset_id=ds.id, data=ann.VariableInput(
                    variable_type=VariableType.CONTROL, concept=f"tab{t} v{j}", rationale="r",
                    columns=[ColumnRef(name="year", rationale="r")]))
                saved.append(var.id)
        return saved

    for actor in analysts:
        start = threading.Barrier(tabs)
        with ThreadPoolExecutor(max_workers=tabs) as pool:
            results = list(pool.map(lambda t, a=actor, b=start: tab(a, t, b), range(tabs)))
        with session_scope(engine) as s:
            [analysis] = s.exec(select(Analysis).where(Analysis.annotator_id == actor.id)).all()
            rows = s.exec(select(ConceptualVariable).where(ConceptualVariable.analysis_id == analysis.id)).all()
        by_id = {row.id: row.position for row in rows}
        assert sorted(by_id.values()) == list(range(1, tabs * saves + 1))  # unique, no gaps
        for saved in results:  # every save landed, in the order the tab made it
            assert len(saved) == saves and [by_id[i] for i in saved] == sorted(by_id[i] for i in saved)
