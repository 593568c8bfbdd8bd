"""Transform matching (blade-reference 4.4): value and graph matches between ground truth and a submission.

* **value**: for every value hash both sides have, every column node with that hash credits its unit and all
  its ancestors in the column graph (data edges only), on each side.
* **graph**: for every WL hash both sides have, isomorphism classes (``val``/``type`` equality) of the two
  sides are paired; an isomorphic pair credits, for every column node of each class, its unit and all its
  ancestors in the column graph *with input edges*.

BLADE keeps only the last isomorphism class of each WL bucket and stops at the first isomorphic pair;
``blade_compat=True`` reproduces that (so a number can be compared with a published one); the default keeps
every class and credits every isomorphic pair. ROOT (an ancestor of everything) is never reported as a
matched unit. Results name ground-truth units (``matched_value_units`` / ``matched_graph_units``: BLADE's
``matched_vspecs`` / ``matched_gspecs``) and keep their ids, since unit names can collide.

Matchers are small pure functions registered by name (:func:`register_transform_matcher`), and a result
records the matcher's name and parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from evaluation.groundtruth.graphhash import isomorphism
from evaluation.groundtruth.state import DerivationState

__all__ = [
    "TransformMatch",
    "get_transform_matcher",
    "match_graphs",
    "match_transforms",
    "match_values",
    "register_transform_matcher",
    "transform_matchers",
]


class TransformMatch(BaseModel):
    matcher: str
    params: dict[str, Any] = Field(default_factory=dict)
    matched_value_units: list[str] = Field(default_factory=list, description="names of matched GT units")
    matched_graph_units: list[str] = Field(default_factory=list, description="names of matched GT units")
    matched_value_unit_ids: list[str] = Field(default_factory=list)
    matched_graph_unit_ids: list[str] = Field(default_factory=list)
    submission_value_unit_ids: list[str] = Field(default_factory=list)
    submission_graph_unit_ids: list[str] = Field(default_factory=list)
    value_hashes_matched: int = 0
    graph_hashes_matched: int = 0
    isomorphism_timeouts: int = 0


Matcher = Callable[..., TransformMatch]
_MATCHERS: dict[str, Matcher] = {}


def register_transform_matcher(name: str) -> Callable[[Matcher], Matcher]:
    def deco(fn: Matcher) -> Matcher:
        if name in _MATCHERS:
            raise ValueError(f"a transform matcher named {name!r} is already registered")
        _MATCHERS[name] = fn
        return fn

    return deco


def get_transform_matcher(name: str) -> Matcher:
    try:
        return _MATCHERS[name]
    except KeyError:
        raise ValueError(f"no transform matcher named {name!r}; known: {', '.join(sorted(_MATCHERS))}") from None


def transform_matchers() -> list[str]:
    return sorted(_MATCHERS)


def _credit(state: DerivationState, columns: list[int], *, input_edges: bool) -> set[str]:
    out: set[str] = set()
    for c in columns:
        out |= state.credited_units(c, input_edges=input_edges)
    out.discard(state.root)
    return out


def _names(state: DerivationState, ids: set[str]) -> list[str]:
    return sorted({state.units[i].name for i in ids if i in state.units})


def _value_sets(gt: DerivationState, sub: DerivationState) -> tuple[set[str], set[str], int]:
    common = set(gt.value_hashes) & set(sub.value_hashes)
    g_ids: set[str] = set()
    s_ids: set[str] = set()
    for h in common:
        g_ids |= _credit(gt, gt.value_hashes[h], input_edges=False)
        s_ids |= _credit(sub, sub.value_hashes[h], input_edges=False)
    return g_ids, s_ids, len(common)


def _graph_sets(gt: DerivationState, sub: DerivationState, *, blade_compat: bool,
                iso_timeout_s: float) -> tuple[set[str], set[str], int, int]:
    common = set(gt.graph_hashes) & set(sub.graph_hashes)
    g_ids: set[str] = set()
    s_ids: set[str] = set()
    timeouts = 0
    graphs: dict[tuple[int, int], Any] = {}

    def graph(side: int, idx: int) -> Any:
        if (side, idx) not in graphs:
            graphs[(side, idx)] = (gt if side == 0 else sub).class_graph(idx)
        return graphs[(side, idx)]

    for h in common:
        g_classes = gt.graph_hashes[h][-1:] if blade_compat else gt.graph_hashes[h]
        s_classes = sub.graph_hashes[h][-1:] if blade_compat else sub.graph_hashes[h]
        for gi in g_classes:
            for si in s_classes:
                ok = isomorphism(graph(0, gi), graph(1, si), timeout_s=iso_timeout_s)
                if ok is None:
                    timeouts += 1
                if ok:
                    g_ids |= _credit(gt, gt.classes[gi].members, input_edges=True)
                    s_ids |= _credit(sub, sub.classes[si].members, input_edges=True)
                    if blade_compat:
                        break
            else:
                continue
            if blade_compat:
                break
    return g_ids, s_ids, len(common), timeouts


@register_transform_matcher("value")
def match_values(gt: DerivationState, sub: DerivationState) -> TransformMatch:
    g_ids, s_ids, n = _value_sets(gt, sub)
    return TransformMatch(matcher="value", matched_value_units=_names(gt, g_ids),
                          matched_value_unit_ids=sorted(g_ids), submission_value_unit_ids=sorted(s_ids),
                          value_hashes_matched=n)


@register_transform_matcher("graph")
def match_graphs(gt: DerivationState, sub: DerivationState, *, blade_compat: bool = False,
                 iso_timeout_s: float = 10.0) -> TransformMatch:
    g_ids, s_ids, n, timeouts = _graph_sets(gt, sub, blade_compat=blade_compat, iso_timeout_s=iso_timeout_s)
    return TransformMatch(matcher="graph", params={"blade_compat": blade_compat, "iso_timeout_s": iso_timeout_s},
                          matched_graph_units=_names(gt, g_ids), matched_graph_unit_ids=sorted(g_ids),
                          submission_graph_unit_ids=sorted(s_ids), graph_hashes_matched=n,
                          isomorphism_timeouts=timeouts)


@register_transform_matcher("value+graph")
def match_transforms(gt: DerivationState, sub: DerivationState, *, blade_compat: bool = False,
                     iso_timeout_s: float = 10.0) -> TransformMatch:
    """Both matchers at once (what the scorer records)."""
    v = match_values(gt, sub)
    g = match_graphs(gt, sub, blade_compat=blade_compat, iso_timeout_s=iso_timeout_s)
    return TransformMatch(
        matcher="value+graph", params=g.params, matched_value_units=v.matched_value_units,
        matched_graph_units=g.matched_graph_units, matched_value_unit_ids=v.matched_value_unit_ids,
        matched_graph_unit_ids=g.matched_graph_unit_ids, submission_value_unit_ids=v.submission_value_unit_ids,
        submission_graph_unit_ids=g.submission_graph_unit_ids, value_hashes_matched=v.value_hashes_matched,
        graph_hashes_matched=g.graph_hashes_matched, isomorphism_timeouts=g.isomorphism_timeouts)
