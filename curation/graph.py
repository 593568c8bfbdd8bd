"""The data-flow graph of one analysis: data → transforms → derived columns → models."""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx

from curation.models import StatModel, Transform
from curation.specs import ROOT_SPEC_ID

__all__ = ["analysis_graph"]


def analysis_graph(transforms: Sequence[Transform], models: Sequence[StatModel]) -> nx.DiGraph:
    """Nodes carry ``kind`` (root, transform, column, model), ``label`` and ``hover``.

    Edges: parent transform → transform (every alternative branch), transform → each column it outputs,
    column → model using it, transform → model the model sits on.
    """
    g: nx.DiGraph = nx.DiGraph()
    g.add_node(ROOT_SPEC_ID, kind="root", label="data", hover="the dataset as loaded")
    for t in transforms:
        verb = t.verbs[0] if t.verbs else "?"
        g.add_node(t.id, kind="transform", label=t.spec_name, hover=f"{verb}: {t.specification or t.spec_name}")
    for t in transforms:
        for i, branch in enumerate(t.branches):
            for dep in branch.get("dependencies", []):
                if dep in g:
                    g.add_edge(dep, t.id, branch=i)
        for pair in t.mapping:
            out = pair.get("output")
            if out:
                cid = f"col:{t.id}:{out}"
                g.add_node(cid, kind="column", label=out, hover=f"{out} ← {', '.join(pair.get('inputs', []))}")
                g.add_edge(t.id, cid)
    for m in models:
        g.add_node(m.id, kind="model", label=m.family or m.specification, hover=m.specification)
        for col in m.columns:
            producer = col.get("producer_id")
            cid = f"col:{producer}:{col.get('name')}"
            if producer and cid in g:
                g.add_edge(cid, m.id)
        for tid in m.transform_ids:
            if tid in g:
                g.add_edge(tid, m.id)
        if g.in_degree(m.id) == 0:
            g.add_edge(ROOT_SPEC_ID, m.id)
    return g
