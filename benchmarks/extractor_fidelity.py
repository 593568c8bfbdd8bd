"""Extractor fidelity: how often the inferred verb and mapping agree with BLADE's expert annotations.

For every transform spec of the nine shared BLADE datasets: run its ancestors (first branch of every spec, in
topological order, with BLADE's group-by rewrite) and then its own code on ``data.csv``, call
:func:`evaluation.inference.infer_transform` and compare with the expert's ``trans_verb[0]`` and
``input_cols_to_output_col_mapping`` (as a set of ``(frozenset(inputs), output)`` pairs).

The expert's own code is executed in-process with ``exec``: this is a benchmark over trusted published data,
not the app's sandbox. Usage::

    python benchmarks/extractor_fidelity.py [--root ../shared/blade/datasets] [--dataset NAME ...]

Prints per-dataset and overall shares for verb, mapping and both, then every disagreement. Annotations that
contradict the expert's own code are listed in ``EXPERT_INCONSISTENCIES`` with the reason; they are reported
separately and also excluded in a second set of figures.
"""

from __future__ import annotations

import argparse
import graphlib
import json
import math
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation.inference import infer_transform
from evaluation.inference_ast import rewrite_groupby_targets
from evaluation.specs import ROOT_SPEC_ID

DATASETS: tuple[str, ...] = (
    "affairs",
    "amtl",
    "boxes",
    "caschools",
    "crofoot",
    "fish",
    "hurricane",
    "panda_nuts",
    "reading",
)
DEFAULT_ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "blade" / "datasets"

_DEVICE = "reads df.device_trans1 (the imputed copy made by the parent spec device_trans1), the expert lists 'device'"
_EDU = "reads df.edu_trans1 (made by the parent specs edu_trans1/edu_trans2), the expert lists 'education'"
EXPERT_INCONSISTENCIES: dict[tuple[str, str], str] = {
    (
        "affairs",
        "gender_education_interaction",
    ): "the code multiplies gender_male by education; the expert lists 'children' as the second input",
    ("fish", "cap_outliers"): "the code writes a new column 'fish_per_hour' (set to 50 where "
    "fish_caught_per_hour > 50, NaN elsewhere) and drops no rows; the expert calls it a filter",
    **{("reading", f"device_{k}"): _DEVICE for k in ("desktop", "laptop", "other", "smartphone", "tablet")},
    **{
        ("reading", f"edu_{k}"): _EDU
        for k in ("high_school", "college", "grad_school", "prof_school", "PhD", "pre_high_school", "other")
    },
}
"""Expert annotations that contradict the expert's own code (dataset, spec_name) → what the code does."""


@dataclass
class SpecResult:
    dataset: str
    spec_id: str
    spec_name: str
    code: str
    expert_verb: str
    expert_mapping: list[tuple[list[str], str]]
    inferred_verb: str = ""
    inferred_mapping: list[tuple[list[str], str]] = field(default_factory=list)
    error: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def verb_ok(self) -> bool:
        return not self.error and self.expert_verb == self.inferred_verb

    @property
    def mapping_ok(self) -> bool:
        return not self.error and _mapping_set(self.expert_mapping) == _mapping_set(self.inferred_mapping)

    @property
    def both_ok(self) -> bool:
        return self.verb_ok and self.mapping_ok

    @property
    def inconsistent(self) -> str | None:
        return EXPERT_INCONSISTENCIES.get((self.dataset, self.spec_name))


def _mapping_set(mapping: Iterable[tuple[list[str], str]]) -> set[tuple[frozenset[str], str]]:
    return {(frozenset(inputs), output) for inputs, output in mapping}


def load_transform_specs(folder: Path) -> dict[str, dict[str, Any]]:
    """``{spec_id: transform spec JSON}`` of one dataset's ``annotations.csv`` (ROOT included)."""
    table = pd.read_csv(folder / "annotations.csv", dtype=str)
    specs: dict[str, dict[str, Any]] = {}
    for spec_id, raw in zip(table["spec_id"], table["transform_spec_json"], strict=True):
        if isinstance(raw, str) and raw.strip():
            specs[str(spec_id)] = json.loads(raw)
    return specs


def _first_branch(spec: dict[str, Any]) -> list[str]:
    branches = spec.get("branches") or []
    if not branches:
        return []
    first = branches[0]
    deps = first.get("dependencies", []) if isinstance(first, dict) else first  # legacy list-of-lists
    return [str(d) for d in deps]


def execution_order(specs: dict[str, dict[str, Any]], spec_id: str) -> list[str]:
    """The ancestors of ``spec_id`` along first branches, in topological order, ending with ``spec_id``."""
    graph: dict[str, list[str]] = {}
    stack = [spec_id]
    while stack:
        current = stack.pop()
        if current in graph:
            continue
        deps = [d for d in _first_branch(specs.get(current, {})) if d != ROOT_SPEC_ID and d in specs]
        graph[current] = deps
        stack.extend(deps)
    return list(graphlib.TopologicalSorter(graph).static_order())


def run_spec(dataset: str, specs: dict[str, dict[str, Any]], spec_id: str, data: pd.DataFrame) -> SpecResult:
    spec = specs[spec_id]
    verbs = spec.get("trans_verb") or [""]
    result = SpecResult(
        dataset=dataset,
        spec_id=spec_id,
        spec_name=str(spec.get("spec_name", "")),
        code=str(spec.get("code", "")),
        expert_verb=str(verbs[0]),
        expert_mapping=[(list(i), str(o)) for i, o in spec.get("input_cols_to_output_col_mapping", [])],
    )
    namespace: dict[str, Any] = {"pd": pd, "np": np, "df": data.copy()}
    order = execution_order(specs, spec_id)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for ancestor in order[:-1]:
            try:
                exec(rewrite_groupby_targets(str(specs[ancestor].get("code", ""))), namespace)
            except Exception as exc:  # the expert's code on pandas 2.3
                result.error = f"ancestor {specs[ancestor].get('spec_name')}: {type(exc).__name__}: {exc}"
                return result
        before = namespace["df"].copy(deep=True)
        try:
            exec(rewrite_groupby_targets(result.code), namespace)
        except Exception as exc:
            result.error = f"{type(exc).__name__}: {exc}"
            return result
        inferred = infer_transform(result.code, before, namespace["df"], namespace=namespace)
    result.inferred_verb = inferred.verb
    result.inferred_mapping = [(list(m.inputs), m.output) for m in inferred.mapping]
    result.notes = inferred.notes
    return result


def run_dataset(folder: Path) -> list[SpecResult]:
    specs = load_transform_specs(folder)
    data = pd.read_csv(folder / "data.csv")
    return [run_spec(folder.name, specs, sid, data) for sid in specs if sid != ROOT_SPEC_ID]


def run_all(root: Path, datasets: Iterable[str] = DATASETS) -> list[SpecResult]:
    results: list[SpecResult] = []
    for name in datasets:
        results.extend(run_dataset(root / name))
    return results


@dataclass
class Shares:
    n: int
    verb: float
    mapping: float
    both: float


def shares(results: list[SpecResult]) -> Shares:
    n = len(results)
    if n == 0:
        return Shares(0, math.nan, math.nan, math.nan)
    return Shares(
        n=n,
        verb=sum(r.verb_ok for r in results) / n,
        mapping=sum(r.mapping_ok for r in results) / n,
        both=sum(r.both_ok for r in results) / n,
    )


def _fmt_mapping(mapping: list[tuple[list[str], str]]) -> str:
    return "; ".join(f"{sorted(i)} -> {o!r}" for i, o in sorted(mapping, key=lambda p: (p[1], sorted(p[0]))))


def report(results: list[SpecResult], out: Any = sys.stdout) -> None:
    def line(label: str, s: Shares) -> None:
        print(f"{label:<12} {s.n:>4}  {s.verb:>6.1%}  {s.mapping:>7.1%}  {s.both:>6.1%}", file=out)

    consistent = [r for r in results if r.inconsistent is None]
    for title, subset in (
        ("All expert specs", results),
        ("Excluding listed expert inconsistencies", consistent),
    ):
        print(f"\n{title}", file=out)
        print(f"{'dataset':<12} {'n':>4}  {'verb':>6}  {'mapping':>7}  {'both':>6}", file=out)
        for name in dict.fromkeys(r.dataset for r in results):
            line(name, shares([r for r in subset if r.dataset == name]))
        line("overall", shares(subset))

    errors = [r for r in results if r.error]
    if errors:
        print("\nCode that failed on this pandas:", file=out)
        for r in errors:
            print(f"  {r.dataset}/{r.spec_name}: {r.error}", file=out)

    misses = [r for r in results if not r.both_ok and not r.error]
    print(f"\nDisagreements ({len(misses)}):", file=out)
    for r in misses:
        tag = f"  [expert inconsistency: {r.inconsistent}]" if r.inconsistent else ""
        print(f"\n- {r.dataset}/{r.spec_name}{tag}", file=out)
        for code_line in r.code.strip().splitlines():
            print(f"      | {code_line}", file=out)
        print(f"    expert:   {r.expert_verb:<8} {_fmt_mapping(r.expert_mapping)}", file=out)
        print(f"    inferred: {r.inferred_verb:<8} {_fmt_mapping(r.inferred_mapping)}", file=out)
    stale = [
        k
        for k in EXPERT_INCONSISTENCIES
        if not any((r.dataset, r.spec_name) == k and not r.both_ok for r in results)
    ]
    if stale:
        print(f"\nListed inconsistencies that now agree (remove them from the list): {stale}", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="folder holding the BLADE datasets")
    parser.add_argument("--dataset", action="append", help="only these datasets (repeatable)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        print(f"No BLADE datasets at {args.root}", file=sys.stderr)
        return 2
    results = run_all(args.root, args.dataset or DATASETS)
    report(results)
    return 0


if __name__ == "__main__":
    from proc_cpu import count_this_run  # benchmarks/ is this script's folder

    count_this_run()  # prints this run's wall and CPU seconds, the load and the machine's speed at exit
    raise SystemExit(main())
