"""Code → transform units without an LLM (issue 10 part 3), and the submission state they give.

:func:`convert_transform` runs the converter job (:mod:`.convert_job`) in the sandbox on the agent's transform
statements, turns its units into BLADE's submission chain (:mod:`.submission`: ``node_<i>_<verb>``, group-by
units split into ``groupby`` + ``post_groupby``, whole-frame ``ALL`` outputs of non-filter verbs expanded to
every column) and builds the one-path derivation state from the frames the job hashed, without executing
anything again. The result can be matched against the ground truth like any submission.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.groundtruth.convert_job import CONVERT_BATCH_JOB, CONVERT_JOB
from evaluation.groundtruth.expand import POST_GROUPBY, StepState
from evaluation.groundtruth.runner import (
    GroundTruthLimits,
    JobFailed,
    checked_result,
    run_groundtruth_job,
    sandbox_limits_of,
)
from evaluation.groundtruth.state import DerivationState
from evaluation.groundtruth.submission import ALL, TransformUnit, chain_state, transform_chain

__all__ = ["BatchConversion", "ConvertedUnit", "Conversion", "convert_batch", "convert_transform", "convert_transforms"]

_ALL_OUTPUT_VERBS = ("deduplicate", "orderby", "slice")


@dataclass(frozen=True)
class ConvertedUnit:
    verb: str
    mapping: tuple[tuple[tuple[str, ...], str], ...]
    groupby_cols: tuple[str, ...]
    code: str
    notes: tuple[str, ...] = ()


@dataclass
class Conversion:
    units: list[ConvertedUnit]
    state: DerivationState | None
    error: str | None = None
    data_columns: list[str] = field(default_factory=list)
    final_columns: list[str] | None = None  # the frame's columns after the last unit (None: the data's)
    error_kind: str | None = None  # the sandbox's kind when the job died (``timeout``, ``memory``, ``crashed``)

    def column_lineage(self) -> dict[str, list[str]]:
        """Each column of the final frame → the original data columns it derives from, following the units'
        inputs (and group-by keys) back to the data; a column made from constants derives from none."""
        lineage: dict[str, set[str]] = {c: {c} for c in self.data_columns}
        for unit in self.units:
            for inputs, output in unit.mapping:
                if not output:
                    continue
                sources: set[str] = set()
                for name in (*inputs, *unit.groupby_cols):
                    sources |= lineage.get(name, set())
                lineage[output] = sources
        final = self.final_columns if self.final_columns is not None else self.data_columns
        return {c: sorted(lineage.get(c, set())) for c in final}


def convert_transform(code: str, data_path: Path, *, limits: GroundTruthLimits | None = None,
                      runner: Callable[..., Any] = run_groundtruth_job, iso_timeout_s: float = 10.0) -> Conversion:
    """Convert transform statements (acting on ``df``) into units and their derivation state.

    A failure inside the code (syntax error, exception) is reported in ``error``; the units made before it are
    kept, so the part of the analysis that ran still gets credit. Code that loops past the time limit, exceeds
    the memory limit or kills its process gives no units and says so in ``error``.
    """
    try:
        result = runner({"code": code}, data_path=data_path, limits=limits or GroundTruthLimits(), job=CONVERT_JOB)
    except JobFailed as exc:  # loops, memory, crashes: a result for this analysis, not an error of the run
        return Conversion(units=[], state=None, error=f"the transform code could not be converted: {exc.reason}",
                          error_kind=exc.kind)
    return _conversion(result, iso_timeout_s)


@dataclass
class BatchConversion:
    """One code's conversion in :func:`convert_batch`.

    Attributes:
        conversion: what :func:`convert_transform` would have given for the code alone (None: see below).
        error: the sandbox itself failed on this code (:func:`convert_transform` would have raised it).
        by_deadline: the run's deadline stopped the code (its conversion says ``timeout``) or came before it
            started (no conversion).
        limit_s: the time limit the code had.
    """

    conversion: Conversion | None
    error: BaseException | None = None
    by_deadline: bool = False
    limit_s: float = 0.0


def convert_batch(codes: Sequence[str], data_path: Path, *, limits: GroundTruthLimits | None = None,
                  run_deadline: float | None = None, iso_timeout_s: float = 10.0) -> Iterator[BatchConversion]:
    """:func:`convert_transform` of each code, in order, in as few sandbox jobs as possible: each code still
    runs in a fresh process of its own within ``limits`` (:mod:`evaluation.sandbox.batch`), and gets exactly the
    conversion it would get alone. ``run_deadline`` (:func:`time.monotonic`): no code runs past it. Yields as
    each code is converted; closing the iterator stops the job."""
    from evaluation.sandbox.batch import run_batch

    sandbox_limits = sandbox_limits_of(limits or GroundTruthLimits())
    built: dict[str, Conversion] = {}  # a repeated code's checked result (the job answers repeats alike) -> its state
    for item in run_batch(CONVERT_BATCH_JOB, {}, list(codes), data_path=Path(data_path), limits=sandbox_limits,
                          run_deadline=run_deadline):
        if item.error is not None or item.result is None:
            yield BatchConversion(None, error=item.error, by_deadline=item.by_deadline, limit_s=item.limit_s)
            continue
        try:
            result = checked_result(item.result, sandbox_limits.model_copy(update={"timeout_s": item.limit_s}))
        except JobFailed as exc:
            conversion = Conversion(units=[], state=None, error_kind=exc.kind,
                                    error=f"the transform code could not be converted: {exc.reason}")
        else:
            key = json.dumps(result, sort_keys=True, default=str)
            conversion = built.get(key) or built.setdefault(key, _conversion(result, iso_timeout_s))
        yield BatchConversion(conversion, by_deadline=item.by_deadline, limit_s=item.limit_s)


def convert_transforms(codes: list[str], data_path: Path, *, limits: GroundTruthLimits | None = None,
                       runner: Callable[..., Any] = run_groundtruth_job,
                       iso_timeout_s: float = 10.0) -> list[Conversion]:
    """:func:`convert_transform` for several independent codes on the same data, in one job."""
    result = runner({"codes": codes}, data_path=data_path, limits=limits or GroundTruthLimits(), job=CONVERT_JOB)
    return [_conversion(r, iso_timeout_s) for r in result["results"]]


def _conversion(result: dict[str, Any], iso_timeout_s: float) -> Conversion:
    converted: list[ConvertedUnit] = []
    chain_units: list[TransformUnit] = []
    for u in result["units"]:
        mapping = tuple((tuple(inputs), out) for inputs, out in u["mapping"])
        converted.append(ConvertedUnit(verb=u["verb"], mapping=mapping, groupby_cols=tuple(u["groupby_cols"]),
                                       code=u["code"], notes=tuple(u["notes"])))
        verb = u["verb"]
        if verb == "rollup" and u["groupby_cols"]:
            verb = "groupby"  # BLADE's chain: node_i_groupby + node_i_post_groupby
        if verb in _ALL_OUTPUT_VERBS:
            mapping = tuple((inputs, ALL if out == "" else out) for inputs, out in mapping)
        chain_units.append(TransformUnit(verb=verb, code=u["code"], mapping=mapping,
                                         groupby_cols=tuple(u["groupby_cols"]) if verb == "groupby" else ()))
    columns = list(result["columns"])
    frames = [u["columns"] for u in result["units"] if u["kind"] == "frame"]
    final = [str(c) for c in frames[-1]] if frames else None
    if not chain_units:
        return Conversion(units=converted, state=None, error=result.get("error"), data_columns=columns,
                          final_columns=final)
    specs, order, made_by = transform_chain(chain_units)
    states: dict[str, StepState] = {}
    unit_of = {i: sid for sid, i in made_by.items()}
    for i, u in enumerate(result["units"]):
        sid = unit_of[i]
        if u["kind"] in ("frame", "groupby"):
            states[sid] = StepState(u["kind"], list(u["columns"]), dict(zip(u["columns"], u["hashes"], strict=False)))
        if specs[sid].verb == POST_GROUPBY:
            states[sid] = states.get(sid, StepState("other", []))
    state = chain_state(specs, order, states, columns, errors=[result["error"]] if result.get("error") else [],
                        iso_timeout_s=iso_timeout_s, meta={"units": len(converted)})
    return Conversion(units=converted, state=state, error=result.get("error"), data_columns=columns,
                      final_columns=final)
