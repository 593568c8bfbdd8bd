"""Build (or load from cache) the ground-truth derivation state of release datasets.

Steps per dataset: transforms → analysis paths (:mod:`.paths`) → one sandboxed job executes every distinct
prefix once and hashes the frames (:mod:`.jobs` through :mod:`.runner`) → per path, expansion into units and
column graphs (:mod:`.expand`) → WL hashes and isomorphism classes (:mod:`.graphhash`) → a
:class:`~evaluation.groundtruth.state.DerivationState`, cached as gzip JSON under a key made of the dataset's
content (transforms + data digest), the evaluator version and the versions of pandas, numpy and networkx.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import networkx as nx

from evaluation.groundtruth.expand import (
    ColumnGraph,
    StepState,
    Unit,
    column_graph,
    expand_path,
    mark_post_groupby,
)
from evaluation.groundtruth.graphhash import graph_key, is_isomorphic, known_wl_hash
from evaluation.groundtruth.paths import enumerate_paths
from evaluation.groundtruth.runner import GroundTruthLimits, run_groundtruth_job
from evaluation.groundtruth.sources import DatasetSource
from evaluation.groundtruth.specs import ROOT_SPEC_ID, Spec, rewrite_groupby, specs_from_release
from evaluation.groundtruth.state import ColumnState, DerivationState, GraphClass, PathGraph
from exports.manifest import sha256_file

__all__ = ["EVALUATOR_VERSION", "BuildResult", "build_dataset", "build_release", "build_sources", "cache_key", "derive_state", "library_versions"]

EVALUATOR_VERSION = "groundtruth-2"  # 2: failed transforms and date-inferred columns in meta
"""Bump when anything that changes the persisted state changes (hashing, expansion, graph hashing)."""

ISO_TIMEOUT_S = 60.0
Runner = Callable[..., dict[str, Any]]


def library_versions() -> dict[str, str]:
    """Versions of what can change the persisted state: the hashing libraries, and the libraries experts' code
    imports (a state built while one was missing has paths cut short; installing it must rebuild)."""
    out = {}
    for name in ("pandas", "numpy", "networkx", "scipy", "scikit-learn", "statsmodels"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def cache_key(source: DatasetSource) -> str:
    ds = source.dataset
    content = {
        "dataset": ds.name,
        "transforms": [t.model_dump(mode="json", exclude={"extra", "annotator", "tags", "rationale"})
                       for t in ds.transforms],
        "data_sha256": ds.data_sha256 or sha256_file(source.data_path),
        "evaluator": EVALUATOR_VERSION,
        "libraries": library_versions(),
    }
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass
class BuildResult:
    dataset: str
    state: DerivationState
    seconds: float
    cached: bool
    cache_file: Path | None = None

    def summary(self) -> dict[str, Any]:
        s = self.state
        return {"dataset": self.dataset, "paths": len(s.paths), "units": s.num_units, "unit_names": s.unit_names,
                "value_hashes": sorted(s.value_hashes), "graph_hashes": sorted(s.graph_hashes),
                "graph_classes": len(s.classes), "errors": s.errors,
                "failed_transforms": s.meta.get("failed_transforms", []),
                # columns whose value hashes can differ from BLADE's published ones (pandas 2 vs 1.5 date
                # parsing, see README): column -> its value hashes that depend on the date inference
                "date_inferred_columns": s.meta.get("date_inferred_columns", {}), "seconds": round(self.seconds, 3),
                "cached": self.cached}


def _path_record(order: list[str], cgi: ColumnGraph) -> PathGraph:
    g = cgi.graph
    nodes = [(n, d.get("val"), d.get("unit", "")) for n, d in g.nodes(data=True)]
    edges = [(u, v, d.get("type", ""), bool(d.get("data"))) for u, v, d in g.edges(data=True)]
    return PathGraph(order=order, nodes=nodes, edges=edges)


def derive_state(specs: dict[str, Spec], paths: list[nx.DiGraph], step_states: list[dict[str, StepState]],
                 data_columns: list[str], *, iso_timeout_s: float = ISO_TIMEOUT_S,
                 errors: list[str] | None = None) -> DerivationState:
    """Expand every path, build its column graphs and hash them (pure; no execution)."""
    verbs = {sid: s.verb for sid, s in specs.items()}
    units: dict[str, Unit] = {}
    records: list[PathGraph] = []
    columns: list[ColumnState] = []
    classes: list[GraphClass] = []
    class_graphs: list[tuple[str, nx.DiGraph]] = []
    bucket: dict[str, list[int]] = {}
    wl_memo: dict[str, str] = {}
    iso_memo: dict[tuple[str, str], bool] = {}
    for p_idx, path in enumerate(paths):
        mark_post_groupby(path, verbs)
        ex = expand_path(path, specs, verbs, data_columns, step_states[p_idx])
        units.update(ex.units)
        cgi = column_graph(ex, input_edges=True)
        records.append(_path_record(list(nx.topological_sort(path)), cgi))
        for nid in cgi.graph.nodes:
            if nid not in cgi.values:
                continue
            members = nx.ancestors(cgi.graph, nid) | {nid}
            key = graph_key(cgi.graph, members)  # identical derivations recur across paths: hash them once
            built: list[nx.DiGraph] = []

            def sub(g: nx.DiGraph = cgi.graph, keep: set[str] = members, cache: list[nx.DiGraph] = built) -> nx.DiGraph:
                if not cache:
                    cache.append(g.subgraph(keep).copy())
                return cache[0]

            if key not in wl_memo:
                wl_memo[key] = known_wl_hash(key, sub)
            wl = wl_memo[key]
            found = None
            for k_idx in bucket.get(wl, []):
                k_key, k_graph = class_graphs[k_idx]
                pair = (k_key, key)
                if pair not in iso_memo:
                    iso_memo[pair] = k_key == key or is_isomorphic(k_graph, sub(), timeout_s=iso_timeout_s)
                if iso_memo[pair]:
                    found = k_idx
                    break
            if found is None:
                found = len(classes)
                classes.append(GraphClass(graph_hash=wl, path=p_idx, node=nid))
                class_graphs.append((key, sub()))
                bucket.setdefault(wl, []).append(found)
            classes[found].members.append(len(columns))
            columns.append(ColumnState(path=p_idx, node=nid, unit=cgi.graph.nodes[nid]["unit"],
                                       value_hash=cgi.values[nid], graph_hash=wl, graph_class=found))
    root = next(iter(nx.topological_sort(paths[0]))) if paths else ROOT_SPEC_ID
    return DerivationState(units=units, root=root, paths=records, columns=columns, classes=classes,
                           data_columns=list(data_columns), errors=list(errors or []))


def _payload(specs: dict[str, Spec], paths: list[nx.DiGraph]) -> tuple[dict[str, Any], list[list[str]]]:
    orders = [[n for n in nx.topological_sort(p) if specs[n].code] for p in paths]
    used = {n for o in orders for n in o}
    codes = {n: {"raw": specs[n].code, "processed": rewrite_groupby(specs[n].code)} for n in used}
    return {"codes": codes, "paths": orders}, orders


def _step_states(result: dict[str, Any], orders: list[list[str]], specs: dict[str, Spec],
                 where: str) -> tuple[list[dict[str, StepState]], list[str], list[dict[str, Any]]]:
    """Per path, the executed state of each step; plus one sentence and one record per transform whose code
    failed (or left no frame), naming the analysis paths that stop there."""
    from evaluation.sandbox.libraries import MISSING_LIBRARY_MARK

    nodes = result["nodes"]
    failed: dict[str, dict[str, Any]] = {}
    out: list[dict[str, StepState]] = []
    for p_idx, (order, idxs) in enumerate(zip(orders, result["paths"], strict=True)):
        states: dict[str, StepState] = {}
        for spec_id, i in zip(order, idxs, strict=True):
            node = nodes[i]
            if node["kind"] in ("frame", "groupby"):
                states[spec_id] = StepState(node["kind"], list(node["columns"]),
                                            dict(zip(node["columns"], node["hashes"], strict=False)))
            elif node["kind"] in ("error", "other"):
                why = (f"raised {node['error']}" if node["kind"] == "error" else
                       f"left df as a {node.get('type', 'non-frame')}, not a DataFrame; no values recorded")
                entry = failed.setdefault(spec_id, {"transform": specs[spec_id].name, "id": spec_id,
                                                    "problem": why, "paths": []})
                entry["paths"].append(p_idx)
                library = MISSING_LIBRARY_MARK.search(why) if node["kind"] == "error" else None
                if library:
                    entry["missing_library"] = library.group(1)
        out.append(states)
    total = len(orders)
    errors = []
    for entry in failed.values():
        n = len(entry["paths"])
        errors.append(f"{where}: transform {entry['transform']!r} {entry['problem']}; {n} of {total} analysis "
                      f"path{'s' if total != 1 else ''} stop{'s' if n == 1 else ''} there, so the units from it "
                      "on have no value or graph hashes on "
                      f"{'that path' if n == 1 else 'those paths'}")
    return out, errors, list(failed.values())


def build_dataset(source: DatasetSource, *, cache_dir: Path | None = None,
                  limits: GroundTruthLimits | None = None, runner: Runner = run_groundtruth_job,
                  iso_timeout_s: float = ISO_TIMEOUT_S) -> BuildResult:
    """The dataset's ground-truth state: from the cache when its key matches, else built and cached."""
    started = time.perf_counter()
    ds = source.dataset
    where = f"dataset {ds.name!r}"
    key = cache_key(source)
    cache_file = (cache_dir / f"{ds.name}-{key[:32]}.json.gz") if cache_dir else None
    if cache_file is not None and cache_file.is_file():
        try:
            state = DerivationState.load(cache_file)
            return BuildResult(ds.name, state, time.perf_counter() - started, True, cache_file)
        except (OSError, ValueError, KeyError, EOFError):
            cache_file.unlink(missing_ok=True)  # a damaged cache entry is rebuilt
    specs = specs_from_release(ds)
    paths = enumerate_paths(specs, where=where)
    payload, orders = _payload(specs, paths)
    result = runner(payload, data_path=source.data_path, limits=limits or GroundTruthLimits())
    states, errors, failed = _step_states(result, orders, specs, where)
    state = derive_state(specs, paths, states, list(result["stats"]["columns"]), iso_timeout_s=iso_timeout_s,
                         errors=errors)
    state.meta = {"dataset": ds.name, "key": key, "evaluator_version": EVALUATOR_VERSION,
                  "libraries": library_versions(), "release_version": source.release_version,
                  "failed_transforms": failed,
                  "date_inferred_columns": dict(result["stats"].get("date_inferred") or {}),
                  "executions": result["stats"]["executions"], "job_seconds": result["stats"].get("seconds")}
    if cache_file is not None:
        state.save(cache_file)
    return BuildResult(ds.name, state, time.perf_counter() - started, False, cache_file)


def build_sources(sources: list[DatasetSource], *, cache_dir: Path | None = None,
                  limits: GroundTruthLimits | None = None, workers: int = 2,
                  on_dataset: Callable[[BuildResult], None] | None = None) -> list[BuildResult]:
    """:func:`build_dataset` for several datasets, ``workers`` job processes at a time; results (and
    ``on_dataset`` calls) in the order of ``sources``."""
    from concurrent.futures import ThreadPoolExecutor

    results: list[BuildResult] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(build_dataset, s, cache_dir=cache_dir, limits=limits) for s in sources]
        for future in futures:
            result = future.result()
            results.append(result)
            if on_dataset is not None:
                on_dataset(result)
    return results


def build_release(path: Path, *, datasets: list[str] | None = None, cache_dir: Path | None = None,
                  limits: GroundTruthLimits | None = None, workers: int = 2,
                  on_dataset: Callable[[BuildResult], None] | None = None) -> list[BuildResult]:
    """Build the ground truth of every dataset of the release at ``path`` that has transforms (or of
    ``datasets``), reading the release through :mod:`exports` (verified against its manifest)."""
    from evaluation.groundtruth.sources import sources_from_release

    _, sources = sources_from_release(path, datasets=datasets)
    return build_sources(sources, cache_dir=cache_dir, limits=limits, workers=workers, on_dataset=on_dataset)
