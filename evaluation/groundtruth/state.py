"""The derivation state of a set of analysis paths: units, column graphs, value and graph hashes.

One shape serves the ground truth (many paths) and a submission (one path), so the matchers compare like with
like. It is persisted as compact JSON (gzip): column hashes and graphs, never frames (BLADE pickles every
executed frame: 2.1 GB for its twelve datasets).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx

from evaluation.groundtruth.expand import Unit

__all__ = ["ColumnState", "DerivationState", "GraphClass", "PathGraph", "STATE_FORMAT"]

STATE_FORMAT = 1


@dataclass(frozen=True)
class ColumnState:
    """An executed column node of one path: its unit, value hash, WL hash and isomorphism class."""

    path: int
    node: str
    unit: str
    value_hash: str
    graph_hash: str
    graph_class: int


@dataclass
class GraphClass:
    """One isomorphism class inside a WL bucket, represented by the derivation graph of its first member."""

    graph_hash: str
    path: int
    node: str
    members: list[int] = field(default_factory=list)  # indexes into DerivationState.columns


@dataclass
class PathGraph:
    """A path: its transform order, and its column graph with input edges (``data`` flags the data edges)."""

    order: list[str]
    nodes: list[tuple[str, Any, str]]  # (node id, val, unit id)
    edges: list[tuple[str, str, str, bool]]  # (source, target, type, is a data edge)

    @cached_property
    def with_input(self) -> nx.DiGraph:
        g = nx.DiGraph()
        for nid, val, unit in self.nodes:
            if val is None:
                g.add_node(nid)
            else:
                g.add_node(nid, val=val, unit=unit)
        for u, v, kind, _ in self.edges:
            g.add_edge(u, v, type=kind)
        return g

    @cached_property
    def data_only(self) -> nx.DiGraph:
        g = nx.DiGraph()
        for nid, val, unit in self.nodes:
            if val is not None:
                g.add_node(nid, val=val, unit=unit)
        for u, v, kind, is_data in self.edges:
            if is_data:
                g.add_edge(u, v, type=kind)
        return g


@dataclass
class DerivationState:
    units: dict[str, Unit]
    root: str
    paths: list[PathGraph]
    columns: list[ColumnState]
    classes: list[GraphClass]
    data_columns: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    # ---- views ------------------------------------------------------------------------------------------
    @property
    def unit_names(self) -> list[str]:
        return sorted({u.name for uid, u in self.units.items() if uid != self.root})

    @property
    def num_units(self) -> int:
        return len(self.units) - (1 if self.root in self.units else 0)

    @cached_property
    def value_hashes(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, c in enumerate(self.columns):
            out.setdefault(c.value_hash, []).append(i)
        return out

    @cached_property
    def graph_hashes(self) -> dict[str, list[int]]:
        """WL hash → indexes of its isomorphism classes."""
        out: dict[str, list[int]] = {}
        for i, k in enumerate(self.classes):
            out.setdefault(k.graph_hash, []).append(i)
        return out

    def class_graph(self, index: int) -> nx.DiGraph:
        from evaluation.groundtruth.graphhash import derivation_subgraph

        k = self.classes[index]
        return derivation_subgraph(self.paths[k.path].with_input, k.node)

    def credited_units(self, column: int, *, input_edges: bool) -> set[str]:
        """The unit of a column node and of all its ancestors (data edges, or also input edges)."""
        c = self.columns[column]
        p = self.paths[c.path]
        g = p.with_input if input_edges else p.data_only
        nodes = nx.ancestors(g, c.node) | {c.node} if c.node in g else {c.node}
        units = {g.nodes[n].get("unit") for n in nodes}
        return {u for u in units if u}

    # ---- persistence ------------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT, "root": self.root, "data_columns": self.data_columns, "errors": self.errors,
            "meta": self.meta,
            "units": [[u.id, u.name, u.verb, u.spec_id, list(u.inputs), u.output] for u in self.units.values()],
            "paths": [{"order": p.order, "nodes": [list(n) for n in p.nodes], "edges": [list(e) for e in p.edges]}
                      for p in self.paths],
            "columns": [[c.path, c.node, c.unit, c.value_hash, c.graph_hash, c.graph_class] for c in self.columns],
            "classes": [[k.graph_hash, k.path, k.node, k.members] for k in self.classes],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DerivationState:
        if data.get("format") != STATE_FORMAT:
            raise ValueError(f"derivation state format {data.get('format')!r} is not {STATE_FORMAT}")
        units = {u[0]: Unit(id=u[0], name=u[1], verb=u[2], spec_id=u[3], inputs=tuple(u[4]), output=u[5])
                 for u in data["units"]}
        paths = [PathGraph(order=p["order"], nodes=[(n[0], n[1], n[2]) for n in p["nodes"]],
                           edges=[(e[0], e[1], e[2], bool(e[3])) for e in p["edges"]]) for p in data["paths"]]
        columns = [ColumnState(*c) for c in data["columns"]]
        classes = [GraphClass(graph_hash=k[0], path=k[1], node=k[2], members=list(k[3])) for k in data["classes"]]
        return cls(units=units, root=data["root"], paths=paths, columns=columns, classes=classes,
                   data_columns=list(data["data_columns"]), errors=list(data["errors"]), meta=dict(data["meta"]))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".partial")
        text = json.dumps(self.to_json(), separators=(",", ":"))  # one write: json.dump writes piece by piece
        with gzip.open(tmp, "wb", compresslevel=6) as fh:
            fh.write(text.encode("utf-8"))
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> DerivationState:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return cls.from_json(json.load(fh))
