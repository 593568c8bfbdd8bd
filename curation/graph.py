"""The data-flow graph of one analysis: original columns → transforms → derived columns → models, with the
conceptual variables each column operationalises."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import networkx as nx

from curation.models import ConceptualVariable, Dataset, StatModel, Transform
from curation.services.datasets import original_columns
from evaluation.specs import ROOT_SPEC_ID

__all__ = ["NODE_KINDS", "analysis_graph"]

# kind -> what the legend calls it (the figure gives each kind its own marker)
NODE_KINDS = {
    "data": "whole table",
    "original": "original column",
    "transform": "transform",
    "derived": "derived column",
    "model": "model",
    "variable": "conceptual variable",
}


def _original_id(name: str) -> str:
    return f"orig:{name}"


def _derived_id(producer: str, name: str) -> str:
    return f"col:{producer}:{name}"


def analysis_graph(
    dataset: Dataset,
    variables: Sequence[ConceptualVariable],
    transforms: Sequence[Transform],
    models: Sequence[StatModel],
) -> nx.DiGraph:
    """Nodes carry ``kind`` (a key of :data:`NODE_KINDS`), ``label`` and ``hover``; edges carry ``role``.

    Only the original columns the analysis uses are drawn. Edges: column → transform reading it (``input``),
    parent transform → transform (``after``, every alternative branch), transform → column it outputs
    (``output``), column → model using it (``input``), transform → model it runs after (``after``; drawn only
    when the model reads none of that transform's columns, which already link them), column →
    conceptual variable it operationalises (``operationalises``), model → variable it stands for (``stands for``).
    A transform that reads no column and runs straight on the data hangs off the ``data`` node.
    """
    g: nx.DiGraph = nx.DiGraph()
    originals = set(original_columns(dataset))
    by_id = {t.id: t for t in transforms}

    def original(name: str) -> str:
        nid = _original_id(name)
        if nid not in g:
            where = "a column of the data" if name in originals else "not a column of the data"
            g.add_node(nid, kind="original", label=name, hover=f"original column {name} ({where})")
        return nid

    def ancestors(tid: str) -> set[str]:
        seen: set[str] = set()
        todo = [d for b in by_id[tid].branches for d in b.get("dependencies", [])]
        while todo:
            d = todo.pop()
            if d in by_id and d not in seen:
                seen.add(d)
                todo += [x for b in by_id[d].branches for x in b.get("dependencies", [])]
        return seen

    def column(name: str, *, producer: str | None = None, before: str | None = None) -> str:
        """A derived column of ``producer``; else the nearest ancestor of ``before`` making ``name``; else original."""
        if producer and producer in by_id:
            return _derived_id(producer, name)
        if before in by_id:
            for anc in ancestors(before):
                if any(m.get("output") == name for m in by_id[anc].mapping):
                    return _derived_id(anc, name)
        return original(name)

    for t in transforms:
        verb = t.verbs[0] if t.verbs else "?"
        g.add_node(t.id, kind="transform", label=f"{verb} · {t.spec_name}",
                   hover=f"transform {t.spec_name} ({verb}): {t.specification or 'no specification'}")
        for pair in t.mapping:
            out = pair.get("output")
            if out:
                g.add_node(_derived_id(t.id, out), kind="derived", label=out,
                           hover=f"derived column {out}, made by {t.spec_name}")
    for t in transforms:
        reads_columns = False
        for pair in t.mapping:
            for name in pair.get("inputs", []):
                g.add_edge(column(name, before=t.id), t.id, role="input")
                reads_columns = True
            if pair.get("output"):
                g.add_edge(t.id, _derived_id(t.id, pair["output"]), role="output")
        for i, branch in enumerate(t.branches):
            for dep in branch.get("dependencies", []):
                if dep in by_id:
                    g.add_edge(dep, t.id, role="after", branch=i)
                elif dep == ROOT_SPEC_ID and not reads_columns:
                    g.add_node(ROOT_SPEC_ID, kind="data", label="data", hover="the whole table as loaded")
                    g.add_edge(ROOT_SPEC_ID, t.id, role="after", branch=i)
    for m in models:
        name = m.specification or m.spec_name or m.family
        g.add_node(m.id, kind="model", label=name, hover=f"model {name} ({m.family})")
        read_from = set()
        for col in m.columns:
            g.add_edge(column(str(col.get("name")), producer=col.get("producer_id")), m.id, role="input")
            read_from.add(col.get("producer_id"))
        for tid in m.transform_ids:
            if tid in by_id and tid not in read_from:  # already linked through the column it reads
                g.add_edge(tid, m.id, role="after")
    for v in variables:
        vtype = "Moderator" if v.interaction else v.variable_type
        g.add_node(v.id, kind="variable", label=f"{vtype}: {v.concept}",
                   hover=f"conceptual variable ({vtype}) {v.concept}: {v.rationale or 'no rationale'}")
        for col in v.columns:
            cid = column(str(col.get("name")), producer=col.get("producer_id"))
            g.add_edge(cid, v.id, role="operationalises")
    for m in models:
        for vid in m.variable_ids:
            if vid in g:
                g.add_edge(m.id, vid, role="stands for")
    return g


def node_labels(graph: nx.DiGraph, kind: str) -> list[Any]:
    """The labels of the nodes of one kind, in insertion order (for tests and captions)."""
    return [d.get("label") for _, d in graph.nodes(data=True) if d.get("kind") == kind]
