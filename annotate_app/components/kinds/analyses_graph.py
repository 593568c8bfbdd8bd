"""The analyses kind's decision graph, drawn (curation.graph.analysis_graph → plotly Figure): BLADE's data
columns, transforms, models and conceptual variables, a pure function so tests can assert on ``fig.data``."""

from __future__ import annotations

import networkx as nx
import plotly.graph_objects as go

__all__ = ["EDGE_STYLE", "NODE_STYLE", "decision_graph_figure"]

# kind -> (colour, marker, legend name); the legend names come from curation.graph.NODE_KINDS
NODE_STYLE = {
    "data": ("#7f7f7f", "square-open", "whole table"),
    "original": ("#9D9D9D", "circle-open", "original column"),
    "transform": ("#F58518", "diamond", "transform"),
    "derived": ("#4C78A8", "circle", "derived column"),
    "model": ("#54A24B", "star", "model"),
    "variable": ("#B279A2", "square", "conceptual variable"),
}
EDGE_STYLE = {  # role -> (colour, dash, legend name)
    "input": ("#BBBBBB", "solid", "reads / writes"),
    "output": ("#BBBBBB", "solid", "reads / writes"),
    "after": ("#F58518", "dot", "runs after"),
    "operationalises": ("#B279A2", "dash", "operationalises / stands for"),
    "stands for": ("#B279A2", "dash", "operationalises / stands for"),
}


GRAPH_LABEL_CHARS = 26


def _short(label: str) -> str:
    """A label that fits its column of the graph; the full text is in the node's hover."""
    return label if len(label) <= GRAPH_LABEL_CHARS else label[: GRAPH_LABEL_CHARS - 1] + "…"


def _graph_layers(graph: nx.DiGraph) -> dict[str, int]:
    """Left to right by dependency depth; conceptual variables in a last column of their own."""
    layers = {n: i for i, gen in enumerate(nx.topological_generations(graph)) for n in gen}
    variables = [n for n, d in graph.nodes(data=True) if d.get("kind") == "variable"]
    others = [layers[n] for n in graph if n not in set(variables)]
    last = (max(others) + 1) if others else 0
    for n in variables:
        layers[n] = last
    return layers


def decision_graph_figure(graph: nx.DiGraph) -> go.Figure:
    """Draw the analysis graph (curation.graph.analysis_graph): one trace per node kind, named for the legend,
    with each node's label written next to it; one line trace per edge role."""
    fig = go.Figure()
    if graph.number_of_nodes() == 0:
        return fig
    layers = _graph_layers(graph)
    nx.set_node_attributes(graph, layers, "layer")
    pos = nx.multipartite_layout(graph, subset_key="layer", align="vertical")
    for name in dict.fromkeys(e[2] for e in EDGE_STYLE.values()):
        ex: list[float | None] = []
        ey: list[float | None] = []
        colour = dash = ""
        for a, b, d in graph.edges(data=True):
            style = EDGE_STYLE.get(d.get("role", "input"), EDGE_STYLE["input"])
            if style[2] != name:
                continue
            colour, dash = style[0], style[1]
            ex += [pos[a][0], pos[b][0], None]
            ey += [pos[a][1], pos[b][1], None]
        if ex:
            fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color=colour, width=1.2, dash=dash),
                                     hoverinfo="skip", name=name, legendgroup="edges"))
    for kind, (colour, symbol, label) in NODE_STYLE.items():
        nodes = [n for n, d in graph.nodes(data=True) if d.get("kind") == kind]
        if not nodes:
            continue
        fig.add_trace(go.Scatter(
            x=[pos[n][0] for n in nodes], y=[pos[n][1] for n in nodes], mode="markers+text",
            marker=dict(size=15, color=colour, symbol=symbol, line=dict(width=1.5, color=colour)),
            text=[_short(str(graph.nodes[n].get("label", n))) for n in nodes],
            # neighbouring columns write their labels above / below their markers, so they do not collide
            textposition=["top center" if layers[n] % 2 == 0 else "bottom center" for n in nodes],
            textfont=dict(color="#333", size=12), customdata=nodes,
            hovertext=[graph.nodes[n].get("hover", "") for n in nodes], hoverinfo="text", name=label,
        ))
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    pad_x = 0.22 * (max(xs) - min(xs) or 1)  # room for the labels of the first and last layer
    pad_y = 0.15 * (max(ys) - min(ys) or 1)
    tallest = max(sum(1 for v in layers.values() if v == i) for i in set(layers.values()))
    fig.update_layout(height=max(420, 55 * tallest + 200), margin=dict(l=10, r=10, t=10, b=90),
                      legend=dict(orientation="h", yanchor="top", y=-0.04, xanchor="left", x=0),
                      plot_bgcolor="white",
                      xaxis=dict(visible=False, range=[min(xs) - pad_x, max(xs) + pad_x]),
                      yaxis=dict(visible=False, range=[min(ys) - pad_y, max(ys) + pad_y]))
    return fig
