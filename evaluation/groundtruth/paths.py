"""Analysis paths over alternative branches (blade-reference 2.3), with BLADE's exact order and wiring.

Every transform lists alternative parent sets (branches); an analysis path picks one branch per transform on
the way from a leaf up to ROOT. The walk is bottom-up with a stack: at a transform with k branches the current
graph forks into k copies; the alternatives (branch 2..k) are completed first, recursively, and the graph that
took branch 1 is finished last. A node with several parents is then *serialised*: its parents, taken in id
order, are chained one below the other (each earlier parent is re-attached above the branch of the lowest
common ancestor that leads to the next parent), so the code of a path runs in one linear order.

The order of graphs, of nodes inside them and the rewiring all follow BLADE's loader, because they decide the
code order (hence the values) and which transform a later one sees as its parent (hence the column graph).
Paths ending in a group-by are dropped: a group-by cannot end an analysis.
"""

from __future__ import annotations

import networkx as nx

from evaluation.groundtruth.specs import ROOT_SPEC_ID, GroundTruthError, Spec

__all__ = ["enumerate_paths", "leaf_ids"]

_NO_LEAF_VERBS = ("groupby", "join")


def leaf_ids(specs: dict[str, Spec]) -> list[str]:
    """Transforms nothing depends on (that depend on something), in release order."""
    g = nx.DiGraph()
    for spec in specs.values():
        g.add_node(spec.id)
        for deps in spec.branches:
            for dep in deps:
                g.add_edge(dep, spec.id)
    return [n for n in g.nodes if g.out_degree(n) == 0 and g.in_degree(n) != 0]


def _grow(graph: nx.DiGraph, stack: list[str], specs: dict[str, Spec], out: list[nx.DiGraph]) -> None:
    def attach(deps: tuple[str, ...], g: nx.DiGraph, st: list[str], child: str) -> None:
        for dep in deps:
            if dep not in g.nodes:
                st.append(dep)
            g.add_edge(dep, child)

    while stack:
        node = stack.pop()
        spec = specs[node]
        graph.add_node(node)
        forks = len(spec.branches) > 1
        base_graph, base_stack = (graph.copy(), list(stack)) if forks else (graph, stack)
        for i, deps in enumerate(spec.branches):
            if i == 0:
                attach(deps, graph, stack, node)
                if forks:
                    graph.nodes[node]["branch_ind"] = 0
                continue
            alt_graph, alt_stack = base_graph.copy(), list(base_stack)
            alt_graph.nodes[node]["branch_ind"] = i
            attach(deps, alt_graph, alt_stack, node)
            _grow(alt_graph, alt_stack, specs, out)
    out.append(graph)


def _serialise(g: nx.DiGraph, where: str) -> str | None:
    """Chain the parents of every multi-parent node (in place); return the leaf as BLADE picks it."""
    leaf = None
    for node in list(nx.topological_sort(g)):
        if g.in_degree(node) > 1:
            in_edges = sorted(g.in_edges(node))
            for i, (parent, _) in enumerate(in_edges[:-1]):
                next_parent = in_edges[i + 1][0]
                g.remove_edge(parent, node)
                shared = nx.lowest_common_ancestor(g, parent, next_parent)
                below = [s for s in g.successors(shared) if nx.has_path(g, s, next_parent)]
                if len(below) != 1:
                    raise GroundTruthError(
                        f"{where}: cannot put the parents of transform {node} in one order (the shared ancestor "
                        f"{shared} leads to {next_parent} along {len(below)} branches)")
                g.remove_edge(shared, below[0])
                g.add_edge(parent, below[0])
        if g.out_degree(node) == 0:
            leaf = node
    return leaf


def enumerate_paths(specs: dict[str, Spec], *, where: str = "dataset") -> list[nx.DiGraph]:
    """All analysis paths as serialised path graphs (node = transform id), in BLADE's order."""
    for spec in specs.values():
        for deps in spec.branches:
            for dep in deps:
                if dep not in specs:
                    raise GroundTruthError(f"{where}: transform {spec.name!r} depends on unknown id {dep}")
    paths: list[nx.DiGraph] = []
    for leaf in leaf_ids(specs):
        graphs: list[nx.DiGraph] = []
        _grow(nx.DiGraph(), [leaf], specs, graphs)
        for g in graphs:
            if not nx.is_directed_acyclic_graph(g):
                raise GroundTruthError(f"{where}: the branches of transform {specs[leaf].name!r} form a cycle")
            end = _serialise(g, where)
            if end is None or specs[end].verb in _NO_LEAF_VERBS:
                continue
            if ROOT_SPEC_ID not in g.nodes:
                raise GroundTruthError(f"{where}: a path to {specs[leaf].name!r} does not start at the raw data")
            paths.append(g.copy())
    return paths
