"""Transform credit for scoring: the ground truth of one release dataset and a matcher for agents' analyses.

This joins the two halves of the engine. :mod:`evaluation.groundtruth` builds (or loads from its cache) the
dataset's derivation state and converts an agent's transform code into BLADE's units without an LLM, in the
sandbox; :mod:`evaluation.matching.transforms` matches the two by value and by graph. :func:`transform_credit`
wraps both into what :func:`evaluation.scoring.score_submission` takes: a per-analysis matcher that fills
:class:`~evaluation.records.TransformMatch`, and the ground truth's expanded units (ROOT excluded).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluation.groundtruth.build import build_dataset
from evaluation.groundtruth.convert import Conversion, convert_batch, convert_transform
from evaluation.groundtruth.runner import GroundTruthLimits
from evaluation.groundtruth.sources import DatasetSource
from evaluation.groundtruth.state import DerivationState
from evaluation.matching.transforms import match_transforms
from evaluation.records import AgentUnit, TransformMatch, UnitRef
from evaluation.submissions import SubmittedAnalysis
from exports.schema import DatasetRelease

__all__ = ["MATCHER_NAME", "BatchMatch", "TransformCredit", "agent_transform_code", "transform_credit"]

log = logging.getLogger(__name__)

MATCHER_NAME = "value+graph"

#: Default limits of one analysis's code (its transform converted in the sandbox); scoring runs pass theirs.
ANALYSIS_LIMITS = GroundTruthLimits(timeout_s=60.0)


@dataclass
class BatchMatch:
    """One analysis's transform credit from :meth:`TransformCredit.match_batch`.

    Attributes:
        match: what :meth:`TransformCredit.match` gives (None when ``error`` is set or the code never ran).
        error: the sandbox failed on this analysis (:meth:`TransformCredit.match` would have raised it).
        by_deadline: the run's deadline stopped its code, or came before it could start (no ``match``).
        limit_s: the time limit its code had.
    """

    match: TransformMatch | None
    error: BaseException | None = None
    by_deadline: bool = False
    limit_s: float = 0.0


@dataclass
class TransformCredit:
    """What scores the transform side of one dataset (see :func:`transform_credit`)."""

    units: list[UnitRef]
    description: dict[str, Any]
    state: DerivationState | None = None
    data_path: Path | None = None
    limits: GroundTruthLimits = field(default_factory=lambda: ANALYSIS_LIMITS)
    blade_compat: bool = False
    problem: str = ""

    def match(self, analysis: SubmittedAnalysis, *, timeout_s: float | None = None) -> TransformMatch:
        """The agent's transform code converted and matched; a failure is this analysis's status, not an error.
        ``limits`` bound each analysis's code (``timeout_s``, when given, replaces their time limit); code that
        runs past it gives ``status="timeout"``."""
        description: dict[str, object] = {"name": MATCHER_NAME, "blade_compat": self.blade_compat}
        if self.state is None or self.data_path is None:
            return TransformMatch(status="not_run", message=self.problem, matcher=description)
        code = agent_transform_code(analysis)
        if code is None:
            return TransformMatch(status="empty", message="The analysis has no transform code.", matcher=description)
        limits = self.limits if timeout_s is None else self.limits.model_copy(update={"timeout_s": timeout_s})
        return self._matched(convert_transform(code, self.data_path, limits=limits))

    def match_batch(self, analyses: Sequence[SubmittedAnalysis], *, timeout_s: float | None = None,
                    run_deadline: float | None = None) -> Iterator[BatchMatch]:
        """:meth:`match` of each analysis, in order, their codes converted in as few sandbox jobs as possible
        (:func:`~evaluation.groundtruth.convert.convert_batch`: each code still in a process of its own, within
        its own limit), yielded as each is known. ``timeout_s`` replaces the limits' time limit of each code;
        ``run_deadline`` (:func:`time.monotonic`): no code runs past it (``by_deadline``). Closing the iterator
        stops the sandbox job."""
        ready = self.state is not None and self.data_path is not None
        codes = [agent_transform_code(a) if ready else None for a in analyses]
        limits = self.limits if timeout_s is None else self.limits.model_copy(update={"timeout_s": timeout_s})
        runnable = [c for c in codes if c is not None]
        batch = (convert_batch(runnable, self.data_path, limits=limits, run_deadline=run_deadline)
                 if runnable and self.data_path is not None else iter(()))
        try:
            for analysis, code in zip(analyses, codes, strict=True):
                if code is None:
                    yield BatchMatch(self.match(analysis))  # not_run or empty: nothing runs
                    continue
                item = next(batch)
                if item.error is not None or item.conversion is None:
                    yield BatchMatch(None, error=item.error, by_deadline=item.by_deadline, limit_s=item.limit_s)
                    continue
                try:
                    found = self._matched(item.conversion)
                except Exception as exc:  # noqa: BLE001 - as match() raising: this analysis fails, not the run
                    yield BatchMatch(None, error=exc, limit_s=item.limit_s)
                    continue
                yield BatchMatch(found, by_deadline=item.by_deadline, limit_s=item.limit_s)
        finally:
            close = getattr(batch, "close", None)
            if close is not None:
                close()

    def _matched(self, conversion: Conversion) -> TransformMatch:
        """The conversion of an analysis's code matched against the ground truth."""
        assert self.state is not None
        description: dict[str, object] = {"name": MATCHER_NAME, "blade_compat": self.blade_compat}
        if conversion.state is None:
            return TransformMatch(status="timeout" if conversion.error_kind == "timeout" else "failed",
                                  message=conversion.error or "The transform code gave no units.",
                                  matcher=description)
        found = match_transforms(self.state, conversion.state, blade_compat=self.blade_compat)
        units = self.state.units

        def refs(ids: list[str]) -> list[UnitRef]:
            return [UnitRef(id=i, name=units[i].name) for i in sorted(set(ids)) if i in units and i != self.state.root]  # type: ignore[union-attr]

        message = ""
        if conversion.error:
            message = f"Credit is for the units made before the code failed: {conversion.error}"
        return TransformMatch(
            status="ok", message=message, column_lineage=conversion.column_lineage(),
            agent_units=agent_units(conversion),
            matched_value_units=refs(found.matched_value_unit_ids),
            matched_graph_units=refs(found.matched_graph_unit_ids),
            matched_value_units2=sorted(set(found.submission_value_unit_ids)),
            matched_graph_units2=sorted(set(found.submission_graph_unit_ids)),
            num_agent_units=conversion.state.num_units,
            matcher={**description, **found.params, "isomorphism_timeouts": found.isomorphism_timeouts},
        )


def agent_units(conversion: Conversion) -> list[AgentUnit]:
    """The converter's units as the result file keeps them (one per output column; a whole-frame step once)."""
    out = []
    for u in conversion.units:
        for inputs, output in u.mapping or (((), ""),):
            out.append(AgentUnit(verb=u.verb, inputs=list(inputs), output=output, groupby=list(u.groupby_cols),
                                 code=u.code))
    return out


def agent_transform_code(analysis: SubmittedAnalysis) -> str | None:
    """The statements the converter runs on ``df``: the agent's helpers, its function body, and ``df`` set to
    what the function returned when it returned another frame. ``None`` when there is nothing to run."""
    fn = analysis.transform
    returns_other = bool(fn and fn.returned and fn.returned.strip() != "df")
    if fn is None or not (fn.body.strip() or returns_other):  # ``return df.dropna()`` alone is code too
        return None
    parts = [fn.preamble] if fn.preamble.strip() else []
    if fn.body.strip():
        parts.append(fn.body)
    if fn.returned and fn.returned.strip() != "df":
        parts.append(f"df = {fn.returned}")
    return "\n".join(parts)


def transform_credit(dataset: DatasetRelease, data_path: Path, *, release_version: str = "",
                     cache_dir: Path | None = None, limits: GroundTruthLimits | None = None,
                     analysis_limits: GroundTruthLimits | None = None,
                     blade_compat: bool = False) -> TransformCredit:
    """Build (or load from ``cache_dir``) the dataset's ground truth; a dataset whose ground truth cannot be
    built gives a credit that reports every analysis ``not_run`` with the reason, so the run still scores
    variables and models. ``limits`` bound the ground truth's build (the experts' code), ``analysis_limits``
    each agent analysis's code (default :data:`ANALYSIS_LIMITS`)."""
    limits = limits or GroundTruthLimits()
    if not dataset.transforms:
        problem = f"Dataset '{dataset.name}' has no transforms in this release, so there is nothing to match."
        return TransformCredit(units=[], description={"name": MATCHER_NAME, "status": "not_run",
                                                      "reason": problem}, problem=problem)
    try:
        built = build_dataset(DatasetSource(dataset, data_path, release_version), cache_dir=cache_dir,
                              limits=limits)
    except Exception as exc:  # noqa: BLE001 - any failure is reported on every analysis, never crashes the run
        log.exception("ground truth of %s could not be built", dataset.name)
        problem = f"The ground truth of dataset '{dataset.name}' could not be built: {exc}"
        return TransformCredit(units=[], description={"name": MATCHER_NAME, "status": "not_run",
                                                      "reason": problem}, problem=problem)
    state = built.state
    for error in state.errors:  # paths cut short by failing expert code: fewer units can be credited
        log.warning("ground truth incomplete: %s", error)
    units = [UnitRef(id=uid, name=u.name) for uid, u in sorted(state.units.items()) if uid != state.root]
    description = {"name": MATCHER_NAME, "blade_compat": blade_compat,
                   "ground_truth": {"key": state.meta.get("key"), "units": len(units), "paths": len(state.paths),
                                    "errors": list(state.errors), "cached": built.cached}}
    return TransformCredit(units=units, description=description, state=state, data_path=data_path,
                           limits=analysis_limits or ANALYSIS_LIMITS, blade_compat=blade_compat)
