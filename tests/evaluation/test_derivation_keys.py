"""derivation_keys (one bottom-up pass) tells derivation subgraphs apart exactly as graph_key of each node's
ancestor subgraph does: equal keys if and only if equal labelled subgraphs."""

from __future__ import annotations

import itertools
import random

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.groundtruth.graphhash import derivation_keys, graph_key


def _random_dag(seed: int, nodes: int) -> nx.DiGraph:
    rng = random.Random(seed)
    g = nx.DiGraph()
    names = [f"c{rng.randrange(4)}__u{i // 2}" for i in range(nodes)]
    names = list(dict.fromkeys(names))
    for n in names:
        g.add_node(n, val=rng.choice(["derive", "filter", n]))
    for j, v in enumerate(names):
        for u in rng.sample(names[:j], k=min(j, rng.randrange(3))):
            g.add_edge(u, v, type=rng.choice(["data", "input", "input + data"]))
    return g


def _partitions_agree(graphs: list[nx.DiGraph]) -> None:
    fast: list[str] = []
    exact: list[str] = []
    for g in graphs:
        keys = derivation_keys(g)
        for n in g.nodes:
            fast.append(keys[n])
            exact.append(graph_key(g, nx.ancestors(g, n) | {n}))
    for i, j in itertools.combinations(range(len(fast)), 2):
        assert (fast[i] == fast[j]) == (exact[i] == exact[j]), (i, j)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 9)), min_size=2, max_size=5))
def test_equal_keys_exactly_when_equal_subgraphs(specs: list[tuple[int, int]]) -> None:
    graphs = [_random_dag(seed, n) for seed, n in specs]
    graphs.append(graphs[0].copy())  # equal graphs built apart
    _partitions_agree(graphs)


def test_shapes_that_a_tree_unfolding_would_confuse() -> None:
    """A diamond and the same nodes without the shared ancestor's second edge; an edge type changed; a
    label changed; the same derivation inside a larger graph."""
    diamond = nx.DiGraph()
    diamond.add_node("a", val="a")
    for n in ("b", "c", "d"):
        diamond.add_node(n, val="derive")
    diamond.add_edges_from([("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")], type="data")
    no_ac = diamond.copy()
    no_ac.remove_edge("a", "c")
    no_ac.add_node("a2", val="a")
    retyped = diamond.copy()
    retyped.edges["a", "c"]["type"] = "input"
    relabelled = diamond.copy()
    relabelled.nodes["c"]["val"] = "filter"
    larger = diamond.copy()
    larger.add_node("e", val="derive")
    larger.add_edge("d", "e", type="data")
    graphs = [diamond, no_ac, retyped, relabelled, larger]
    _partitions_agree(graphs)
    keys = [derivation_keys(g)["d"] for g in graphs]
    assert keys[0] == keys[4] and len(set(keys[:4])) == 4
