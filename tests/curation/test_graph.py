"""The analysis graph: original columns → transforms → derived columns → models, and the variables."""

from __future__ import annotations

from curation.db import session_scope
from curation.graph import analysis_graph, node_labels
from curation.services.annotation import get_own_decisions
from tests import factories as f


def test_analysis_graph_links_columns_transforms_models_and_variables(sqlite_engine, store):
    ana = f.user(sqlite_engine, "ana")
    ds = f.dataset(sqlite_engine, store, assign=[ana])
    ids = f.full_analysis(sqlite_engine, ana, ds.id, checked=False)
    with session_scope(sqlite_engine) as s:
        mine = get_own_decisions(session=s, actor=ana, dataset_id=ds.id)
        g = analysis_graph(mine.dataset, mine.variables, mine.transforms, mine.models)
    t, m, col = ids["transform"], ids["model"], f"col:{ids['transform']}:log_deaths"
    # the transform and the column it makes no longer share a label; the model shows its name, not its family
    assert node_labels(g, "transform") == ["derive · log_deaths"]
    assert node_labels(g, "derived") == ["log_deaths"]
    assert node_labels(g, "model") == ["OLS"] and g.nodes[m]["label"] != "Linear regression (OLS)"
    assert sorted(node_labels(g, "original")) == ["deaths", "masfem"]  # only the columns the analysis uses
    assert node_labels(g, "variable") == ["IV: femininity of name", "DV: deaths"]
    assert "data" not in {d["kind"] for _, d in g.nodes(data=True)}  # the transform reads a column instead
    assert list(g.predecessors(t)) == ["orig:deaths"] and g.edges["orig:deaths", t]["role"] == "input"
    assert set(g.predecessors(m)) == {col, "orig:masfem"}  # runs after t: shown by t's column it reads
    assert set(g.predecessors(ids["dv"])) == {col, m}
    assert g.edges[col, ids["dv"]]["role"] == "operationalises"
    assert set(g.predecessors(ids["iv"])) == {"orig:masfem", m}
