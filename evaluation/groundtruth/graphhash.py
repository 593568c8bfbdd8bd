"""Graph hashes of column derivations (blade-reference 2.6): Weisfeiler-Lehman, then isomorphism classes.

The derivation graph of a column node is the node plus its ancestors in the column graph *with input edges*.
Its hash is networkx's ``weisfeiler_lehman_graph_hash(node_attr="val", edge_attr="type")`` (3 iterations,
16-byte digest); the WL hashes of directed graphs changed in networkx 3.5, so the project pins the networkx
version whose hashes equal BLADE's reference. Inside one WL bucket, graphs are told apart by VF2 isomorphism
with ``val`` and ``type`` equality. Unlike BLADE, every isomorphism class of a bucket is kept (BLADE keeps the
last one only), and the isomorphism timeout is a deadline checked inside the matcher's callbacks instead of
SIGALRM, so it works in any thread and on any OS; a timeout counts as "not isomorphic", as in BLADE.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Callable
from typing import Any

import networkx as nx
from networkx.algorithms.isomorphism import DiGraphMatcher

__all__ = ["IsoTimeout", "derivation_keys", "derivation_subgraph", "graph_key", "is_isomorphic", "isomorphism",
           "known_wl_hash", "wl_hash"]

_WL_BY_KEY: dict[str, str] = {}
_WL_BY_KEY_MAX = 50_000


class IsoTimeout(Exception):
    """The isomorphism test ran past its deadline."""


def derivation_subgraph(graph: nx.DiGraph, node: str) -> nx.DiGraph:
    nodes = nx.ancestors(graph, node) | {node}
    return graph.subgraph(nodes).copy()


def graph_key(g: nx.DiGraph, nodes: set[str] | None = None) -> str:
    """An exact fingerprint of a labelled graph (node ids, ``val``, edge ``type``): equal keys, equal graphs.

    With ``nodes``, the fingerprint of the subgraph of ``g`` they induce, without building it.
    """
    keep = set(g.nodes) if nodes is None else nodes
    parts = sorted(f"n\x1f{n}\x1f{g.nodes[n].get('val')}" for n in keep)
    parts += sorted(f"e\x1f{u}\x1f{v}\x1f{d.get('type')}" for u in keep for v, d in g.succ[u].items() if v in keep)
    return hashlib.blake2b("\x1e".join(parts).encode("utf-8"), digest_size=20).hexdigest()


def derivation_keys(g: nx.DiGraph) -> dict[str, str]:
    """For every node of a DAG, an exact fingerprint of its derivation subgraph (the node and its ancestors,
    with ``val`` and edge ``type``), computed bottom-up in one pass: a node's key digests its id, its ``val``
    and, per incoming edge, the parent's id, the edge's type and the parent's key. The subgraph a node's
    ancestors induce is the union of its parents' plus the edges into the node, so equal keys mean equal
    labelled subgraphs (as :func:`graph_key` of them would say), without building or sorting any subgraph."""
    keys: dict[str, str] = {}
    for n in nx.topological_sort(g):
        parents = sorted([str(u), str(d.get("type")), keys[u]] for u, d in g.pred[n].items())
        text = json.dumps([str(n), str(g.nodes[n].get("val")), parents], ensure_ascii=False)
        keys[n] = "d" + hashlib.blake2b(text.encode("utf-8"), digest_size=20).hexdigest()
    return keys


def wl_hash(g: nx.DiGraph) -> str:
    with warnings.catch_warnings():  # networkx >= 3.5 warns that directed hashes changed; we pin the version
        warnings.simplefilter("ignore", UserWarning)
        return str(nx.weisfeiler_lehman_graph_hash(g, edge_attr="type", node_attr="val"))


def known_wl_hash(key: str, graph: Callable[[], nx.DiGraph]) -> str:
    """:func:`wl_hash` of the graph whose exact fingerprint is ``key`` (its :func:`graph_key`, or a node's
    :func:`derivation_keys` entry, which start with "d"; ``graph()`` builds it), remembered for the
    process: the same derivations recur in every analysis scored against a dataset (its data columns, the usual
    first steps) and in every path of a ground truth. The key is an exact fingerprint of the labelled graph, so
    a remembered hash is the hash."""
    found = _WL_BY_KEY.get(key)
    if found is None:
        found = wl_hash(graph())
        if len(_WL_BY_KEY) >= _WL_BY_KEY_MAX:
            _WL_BY_KEY.clear()
        _WL_BY_KEY[key] = found
    return found


def is_isomorphic(g1: nx.DiGraph, g2: nx.DiGraph, *, timeout_s: float) -> bool:
    """VF2 isomorphism with ``val``/``type`` equality; False after ``timeout_s`` seconds (any thread)."""
    return bool(isomorphism(g1, g2, timeout_s=timeout_s))


def isomorphism(g1: nx.DiGraph, g2: nx.DiGraph, *, timeout_s: float) -> bool | None:
    """Like :func:`is_isomorphic`, but None when the deadline passed before an answer."""
    if g1.number_of_nodes() != g2.number_of_nodes() or g1.number_of_edges() != g2.number_of_edges():
        return False
    deadline = time.monotonic() + timeout_s

    def node_match(a: dict[str, Any], b: dict[str, Any]) -> bool:
        if time.monotonic() > deadline:
            raise IsoTimeout
        return bool(a.get("val") == b.get("val"))

    def edge_match(a: dict[str, Any], b: dict[str, Any]) -> bool:
        if time.monotonic() > deadline:
            raise IsoTimeout
        return bool(a.get("type") == b.get("type"))

    try:
        return bool(DiGraphMatcher(g1, g2, node_match=node_match, edge_match=edge_match).is_isomorphic())
    except IsoTimeout:
        return None
