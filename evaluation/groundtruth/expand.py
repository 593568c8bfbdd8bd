"""Single-output units and the column graph of one path (blade-reference 2.5), as BLADE builds them.

:func:`expand_path` splits every transform of a path graph into units with exactly one (inputs → output)
mapping: filter and group-by stay whole-frame units hanging below every current leaf; a transform after a
group-by becomes ``post_groupby`` units; any other verb becomes one unit per mapping pair, below the units that
last produced its inputs (or below its filter parent). :func:`column_graph` turns the expanded graph into the
column graph (one node per (column, unit), ``val`` = the verb, or the node id for original columns) with
``data`` edges and, optionally, ``input`` edges from a whole-frame unit's input columns to every column it
emits (every edge also says whether it is a data edge, so the graph without input edges is a filter of the
one with them). Which nodes carry an executed value state follows BLADE too (group-by frames carry none).

Insertion orders and tie-breaks mirror BLADE's loader because they decide which parent a column is taken
from; ``verbs`` is the dataset-wide verb table that BLADE mutates in place (a transform once seen after a
group-by stays ``post_groupby`` for the later paths), so callers pass the same dict for every path, in order.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import networkx as nx

from evaluation.groundtruth.specs import ROOT_SPEC_ID, Spec

__all__ = ["POST_GROUPBY", "ColumnGraph", "ExpandedPath", "StepState", "Unit", "column_graph", "expand_path",
           "mark_post_groupby"]

POST_GROUPBY = "post_groupby"
WHOLE_FRAME = ("groupby", "filter")
WHOLE_FRAME_STOP = ("groupby", "filter", "other_impact_rows")


@dataclass(frozen=True)
class Unit:
    """One expanded (single-output) transform unit."""

    id: str
    name: str
    verb: str
    spec_id: str
    inputs: tuple[str, ...] = ()
    output: str = ""


@dataclass
class StepState:
    """What executing a transform left: columns of the frame and their value hashes (none for a group-by)."""

    kind: str
    columns: list[str]
    hashes: dict[str, str] = field(default_factory=dict)

    @property
    def has_values(self) -> bool:
        return self.kind == "frame"


@dataclass
class ExpandedPath:
    graph: nx.DiGraph
    units: dict[str, Unit]
    states: dict[str, StepState]  # unit id → state restricted to its columns


@dataclass
class ColumnGraph:
    graph: nx.DiGraph
    values: dict[str, str]  # column node id → value hash, for nodes with an executed state


def mark_post_groupby(path: nx.DiGraph, verbs: dict[str, str]) -> None:
    """BLADE's in-place relabelling of children of a group-by (persisting across paths)."""
    for node in path.nodes:
        if any(verbs.get(p) == "groupby" for p in path.predecessors(node)):
            verbs[node] = POST_GROUPBY


def _restrict(state: StepState | None, cols: set[str]) -> StepState | None:
    if state is None:
        return None
    keep = [c for c in state.columns if c in cols]
    return StepState(state.kind, keep, {c: state.hashes[c] for c in keep if c in state.hashes})


def expand_path(path: nx.DiGraph, specs: dict[str, Spec], verbs: dict[str, str], data_columns: list[str],
                states: dict[str, StepState]) -> ExpandedPath:
    order = list(nx.topological_sort(path))
    root = order[0]
    g = nx.DiGraph()
    g.add_node(root, data_output_cols=set(data_columns))
    producer = {c: root for c in data_columns}
    units = {root: Unit(id=root, name=specs[root].name, verb="", spec_id=root)}
    unit_states: dict[str, StepState] = {}
    for n in order[1:]:
        spec = specs[n]
        verb = verbs.get(n, spec.verb)
        state = states.get(n)
        if verb in WHOLE_FRAME:
            leaves = [u for u in g.nodes if g.out_degree(u) == 0]
            out_cols = set(data_columns)
            for leaf in leaves:
                g.add_edge(leaf, n)
                out_cols.update(g.nodes[leaf]["data_output_cols"])
            if verb == "groupby":
                for c in spec.input_cols:
                    out_cols.discard(c)
            else:
                for c in out_cols:
                    producer[c] = n
            if state is not None:
                out_cols = {c for c in out_cols if c in state.columns}
                unit_states[n] = _restrict(state, out_cols)  # type: ignore[assignment]
            g.nodes[n]["data_output_cols"] = out_cols
            inputs = tuple(spec.input_cols)
            units[n] = Unit(id=n, name=spec.name, verb=verb, spec_id=n, inputs=inputs)
        elif verb == POST_GROUPBY:
            for parent in path.predecessors(n):
                for inputs, out in spec.mapping:
                    uid = f"{n}__{POST_GROUPBY}_{out}"
                    g.add_edge(parent, uid)
                    producer[out] = uid
                    units[uid] = Unit(id=uid, name=f"{POST_GROUPBY}_{out}", verb=POST_GROUPBY, spec_id=n,
                                      inputs=tuple(inputs), output=out)
                    g.nodes[uid]["data_output_cols"] = {out}
                    if state is not None:
                        unit_states[uid] = _restrict(state, {out})  # type: ignore[assignment]
        else:
            parents = list(path.predecessors(n))
            below_filter = (len(parents) == 1 and parents[0] != ROOT_SPEC_ID
                            and verbs.get(parents[0], specs[parents[0]].verb) == "filter")
            for inputs, out in spec.mapping:
                uid = f"{n}__{verb}_{out}"
                name = f"{verb}_{out}"
                if below_filter:
                    parent = parents[0]
                    g.add_edge(parent, uid)
                    producer[out] = uid
                    out_cols = set(g.nodes[parent].get("data_output_cols", set()))
                    if state is not None:
                        out_cols = {c for c in out_cols if c in state.columns}
                        unit_states[uid] = _restrict(state, {out})  # type: ignore[assignment]
                    g.nodes[uid]["data_output_cols"] = {out} | out_cols
                    units[uid] = Unit(id=uid, name=name, verb=verb, spec_id=n, inputs=tuple(inputs), output=out)
                    continue
                target = out or (inputs[0] if inputs else "")
                if not inputs:  # a constant column (BLADE's loader fails here): it hangs below the raw data
                    g.add_edge(root, uid)
                out_cols = set()
                for c in inputs:
                    parent = producer.get(c, root)
                    g.add_edge(parent, uid)
                    out_cols.update(g.nodes[parent].get("data_output_cols", set()))
                out_cols.add(target)
                producer[target] = uid
                if state is not None:
                    out_cols = {c for c in out_cols if c in state.columns}
                    unit_states[uid] = _restrict(state, {target})  # type: ignore[assignment]
                g.nodes[uid]["data_output_cols"] = out_cols
                units[uid] = Unit(id=uid, name=name, verb=verb, spec_id=n, inputs=tuple(inputs), output=target)
    return ExpandedPath(graph=g, units=units, states=unit_states)


def column_graph(ex: ExpandedPath, *, input_edges: bool = False) -> ColumnGraph:
    g = ex.graph
    order = list(nx.topological_sort(g))
    rank = {n: i for i, n in enumerate(order)}
    root = order[0]
    cg = nx.DiGraph()
    values: dict[str, str] = {}
    col_nodes: dict[str, dict[str, str]] = defaultdict(dict)
    for c in g.nodes[root]["data_output_cols"]:
        nid = f"{c}__{root}"
        cg.add_node(nid, col=c, unit=root, val=nid)
        col_nodes[root][c] = nid

    def state_value(uid: str, col: str) -> str | None:
        st = ex.states.get(uid)
        if st is None or not st.has_values:
            return None
        return st.hashes.get(col)

    for n in order[1:]:
        unit = ex.units.get(n)
        if unit is None:  # a node BLADE adds without a unit (a parent that is not in the expanded graph)
            continue
        if unit.verb in WHOLE_FRAME:
            ancestors = list(reversed(list(nx.topological_sort(g.subgraph(nx.ancestors(g, n))))))
            for c in g.nodes[n]["data_output_cols"]:
                added = False
                for parent in ancestors:
                    pverb = ex.units[parent].verb if parent in ex.units else ""
                    if pverb == "groupby":
                        break
                    if c in col_nodes[parent]:
                        nid = f"{c}__{n}"
                        if nid not in cg.nodes and not added:
                            added = True
                            cg.add_node(nid, col=c, unit=n, val=unit.verb)
                            cg.add_edge(col_nodes[parent][c], nid, type="data", data=True)
                            col_nodes[n][c] = nid
                            v = state_value(n, c)
                            if v is not None:
                                values[nid] = v
                    if pverb in WHOLE_FRAME_STOP:
                        break
            if input_edges:
                preds = list(g.predecessors(n))
                all_cols = {c for p in preds for c in col_nodes[p]}
                for p in preds:
                    for c, nid in list(col_nodes[p].items()):
                        if c in unit.inputs:
                            for out in all_cols:
                                target = f"{out}__{n}"
                                if cg.has_edge(nid, target):
                                    cg.edges[nid, target]["type"] = "input + data"
                                else:
                                    cg.add_edge(nid, target, type="input", data=False)
        else:
            out = unit.output
            nid = f"{out}__{n}"
            cg.add_node(nid, col=out, unit=n, val=unit.verb)
            parents = sorted(g.predecessors(n), key=lambda x: -rank[x])
            for c in unit.inputs:
                for parent in parents:
                    if c in col_nodes[parent]:
                        cg.add_edge(col_nodes[parent][c], nid, type="data", data=True)
                        break
            col_nodes[n][out] = nid
            v = state_value(n, out)
            if v is not None:
                values[nid] = v
    return ColumnGraph(graph=cg, values=values)
