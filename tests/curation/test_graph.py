from __future__ import annotations

from curation.db import session_scope
from curation.graph import analysis_graph
from curation.services.annotation import get_own_decisions
from curation.specs import ROOT_SPEC_ID
from tests import factories as f


def test_analysis_graph_links_data_transforms_columns_and_models(sqlite_engine, store):
    ana = f.user(sqlite_engine, "ana")
    ds = f.dataset(sqlite_engine, store, assign=[ana])
    ids = f.full_analysis(sqlite_engine, ana, ds.id)
    with session_scope(sqlite_engine) as s:
        mine = get_own_decisions(session=s, actor=ana, dataset_id=ds.id)
        g = analysis_graph(mine.transforms, mine.models)
    col = f"col:{ids['transform']}:log_deaths"
    assert g.nodes[col]["kind"] == "column"
    assert list(g.successors(ROOT_SPEC_ID)) == [ids["transform"]]
    assert set(g.predecessors(ids["model"])) == {col, ids["transform"]}
    assert g.nodes[ids["model"]]["kind"] == "model"
