"""A submission's transform units as a one-path derivation state, comparable with the ground truth.

BLADE turns an agent's transform code into units (``TransformDataReturn``: verb, ``{inputs: output}``
mapping with ``ALL`` for whole-frame outputs, group-by columns) and chains them below ROOT as
``node_<i>_<verb>`` specs (a group-by unit becomes ``node_<i>_groupby`` plus ``node_<i>_post_groupby``;
blade-reference 4.2 step 3). :func:`submission_state` does the same: the units' code runs once, cumulatively,
in the sandboxed job (so each unit's frame is hashed where it was made), ``ALL`` outputs of non-filter verbs
become one mapping per frame column, and the chain is expanded and hashed exactly like a ground-truth path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import networkx as nx

from evaluation.groundtruth.build import derive_state, executed_step_states
from evaluation.groundtruth.expand import POST_GROUPBY, StepState
from evaluation.groundtruth.runner import GroundTruthLimits, run_groundtruth_job
from evaluation.groundtruth.specs import ROOT_NAME, ROOT_SPEC_ID, Spec
from evaluation.groundtruth.state import DerivationState

__all__ = ["transform_chain", "ALL", "TransformUnit", "chain_state", "submission_state"]

ALL = "ALL"


@dataclass(frozen=True)
class TransformUnit:
    """One unit of a submission: BLADE's ``TransformDataReturn`` without the frame (the code makes it)."""

    verb: str
    code: str
    mapping: tuple[tuple[tuple[str, ...], str], ...] = ()  # ((inputs...), output or "ALL")
    groupby_cols: tuple[str, ...] = field(default=())


def transform_chain(units: list[TransformUnit]) -> tuple[dict[str, Spec], list[str], dict[str, int]]:
    """Specs of the chain (mappings still with ``ALL``), the order, and which unit made each spec's frame."""
    specs = {ROOT_SPEC_ID: Spec(id=ROOT_SPEC_ID, name=ROOT_NAME)}
    order = [ROOT_SPEC_ID]
    made_by: dict[str, int] = {}
    for i, u in enumerate(units):
        if u.verb == "groupby" or u.groupby_cols:
            gid = f"node_{i}_groupby"
            specs[gid] = Spec(id=gid, name=gid, verb="groupby", mapping=((tuple(u.groupby_cols), ""),),
                              branches=((order[-1],),))
            order.append(gid)
            pid = f"node_{i}_{POST_GROUPBY}"
            mapping = tuple((tuple(i_), "" if o == ALL else o) for i_, o in u.mapping)
            specs[pid] = Spec(id=pid, name=pid, verb=POST_GROUPBY, code=u.code, mapping=mapping,
                              branches=((gid,),))
            order.append(pid)
            made_by[pid] = i
        else:
            sid = f"node_{i}_{u.verb}"
            specs[sid] = Spec(id=sid, name=sid, verb=u.verb, code=u.code, mapping=tuple(u.mapping),
                              branches=((order[-1],),))
            order.append(sid)
            made_by[sid] = i
    return specs, order, made_by


def _expand_all(spec: Spec, columns: list[str]) -> Spec:
    if spec.verb == "filter":
        mapping = tuple((inputs, "" if out == ALL else out) for inputs, out in spec.mapping if inputs != (ALL,))
    elif spec.verb == POST_GROUPBY:
        return spec
    else:
        seen: dict[tuple[frozenset[str], str], tuple[tuple[str, ...], str]] = {}
        for inputs, out in spec.mapping:
            if inputs == (ALL,):
                continue
            for o in (columns if out == ALL else [out]):
                seen.setdefault((frozenset(inputs), o), (tuple(inputs), o))
        mapping = tuple(seen.values())
    return Spec(id=spec.id, name=spec.name, verb=spec.verb, code=spec.code, mapping=mapping, branches=spec.branches)


def submission_state(units: list[TransformUnit], data_path: Path, *, limits: GroundTruthLimits | None = None,
                     runner: Callable[..., dict[str, Any]] = run_groundtruth_job,
                     iso_timeout_s: float = 10.0) -> DerivationState:
    """Execute the units in order (in the sandboxed job) and build their one-path derivation state."""
    specs, order, made_by = transform_chain(units)
    with_code = [sid for sid in order if specs[sid].code]
    payload = {"codes": {sid: {"raw": specs[sid].code, "processed": specs[sid].code} for sid in with_code},
               "paths": [with_code]}
    result = runner(payload, data_path=data_path, limits=limits or GroundTruthLimits())
    states, errors, _ = executed_step_states(result, [with_code], specs, "submission")
    return chain_state(specs, order, states[0], list(result["stats"]["columns"]), errors=errors,
                       iso_timeout_s=iso_timeout_s, meta={"units": len(units), "made_by": made_by})


def chain_state(specs: dict[str, Spec], order: list[str], states: dict[str, StepState], data_columns: list[str],
                *, errors: list[str] | None = None, iso_timeout_s: float = 10.0,
                meta: dict[str, Any] | None = None) -> DerivationState:
    """The derivation state of a linear chain of specs whose frames were already hashed (``states``)."""
    for sid in order:
        if sid in states:
            specs[sid] = _expand_all(specs[sid], states[sid].columns)
    path = nx.DiGraph()
    path.add_node(order[0])
    for a, b in zip(order, order[1:], strict=False):
        path.add_edge(a, b)
    state = derive_state(specs, [path], [states], data_columns, iso_timeout_s=iso_timeout_s, errors=errors)
    state.meta = dict(meta or {})
    return state
