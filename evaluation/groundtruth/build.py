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
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
from evaluation.groundtruth.graphhash import derivation_keys, is_isomorphic, known_wl_hash
from evaluation.groundtruth.paths import enumerate_paths
from evaluation.groundtruth.runner import GroundTruthLimits, run_groundtruth_job
from evaluation.groundtruth.sources import DatasetSource
from evaluation.groundtruth.specs import ROOT_SPEC_ID, Spec, rewrite_groupby, specs_from_release
from evaluation.groundtruth.state import ColumnState, DerivationState, GraphClass, PathGraph
from exports.manifest import sha256_file
from exports.schema import Release

__all__ = ["executed_step_states", "EVALUATOR_VERSION", "BuildResult", "build_dataset", "build_release", "build_sources", "cache_key", "derive_state", "library_versions"]

EVALUATOR_VERSION = "groundtruth-3"  # 2: failed transforms and date-inferred columns in meta; 3: date-derived columns
"""Bump when anything that changes the persisted state changes (hashing, expansion, graph hashing)."""

ISO_TIMEOUT_S = 60.0
Runner = Callable[..., dict[str, Any]]


_VERSIONS: tuple[tuple[Any, ...], dict[str, str]] | None = None


def _installed_at() -> tuple[Any, ...]:
    """The import path's folders with their modification times: installing or removing a package changes
    its folder's (a distribution's metadata folder is added or removed there); and the function that reads a
    version (whoever replaces it, as a test standing in for an install does, is asked again)."""
    out: list[Any] = [id(metadata.version)]
    for entry in sys.path:
        try:
            out.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            out.append((entry, -1))
    return tuple(out)


def library_versions() -> dict[str, str]:
    """Versions of what can change the persisted state: the hashing libraries, and the libraries experts' code
    imports (a state built while one was missing has paths cut short; installing it must rebuild).

    Reading them costs tens of milliseconds (every run's cache key needs them): they are remembered until a
    folder of the import path changes (a package installed or removed)."""
    global _VERSIONS
    where = _installed_at()
    if _VERSIONS is None or _VERSIONS[0] != where:
        _VERSIONS = (where, _read_library_versions())
    return dict(_VERSIONS[1])


def _read_library_versions() -> dict[str, str]:
    out = {}
    for name in ("pandas", "numpy", "networkx", "scipy", "scikit-learn", "statsmodels"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def cache_key(source: DatasetSource, libraries: dict[str, str] | None = None) -> str:
    """The key of the dataset's cached state; ``libraries``: :func:`library_versions`, when already read."""
    ds = source.dataset
    content = {
        "dataset": ds.name,
        "transforms": [t.model_dump(mode="json", exclude={"extra", "annotator", "tags", "rationale"})
                       for t in ds.transforms],
        "data_sha256": ds.data_sha256 or sha256_file(source.data_path),
        "evaluator": EVALUATOR_VERSION,
        "libraries": library_versions() if libraries is None else libraries,
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
                "date_inferred_columns": s.meta.get("date_inferred_columns", {}),
                # columns the expert code computes from dates it parses itself (pd.to_datetime of text), whose
                # values differ under pandas 1.5's per-value reading: column -> its value hashes that differ
                "date_derived_columns": s.meta.get("date_derived_columns", {}), "seconds": round(self.seconds, 3),
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
    class_graphs: list[tuple[str, Callable[[], nx.DiGraph]]] = []  # a class's graph, built only if compared
    bucket: dict[str, list[int]] = {}
    wl_memo: dict[str, str] = {}
    iso_memo: dict[tuple[str, str], bool] = {}
    for p_idx, path in enumerate(paths):
        mark_post_groupby(path, verbs)
        ex = expand_path(path, specs, verbs, data_columns, step_states[p_idx])
        units.update(ex.units)
        cgi = column_graph(ex, input_edges=True)
        records.append(_path_record(list(nx.topological_sort(path)), cgi))
        keys = derivation_keys(cgi.graph)  # identical derivations recur across paths: hash them once
        for nid in cgi.graph.nodes:
            if nid not in cgi.values:
                continue
            key = keys[nid]
            built: list[nx.DiGraph] = []

            def sub(g: nx.DiGraph = cgi.graph, node: str = nid, cache: list[nx.DiGraph] = built) -> nx.DiGraph:
                if not cache:
                    cache.append(g.subgraph(nx.ancestors(g, node) | {node}).copy())
                return cache[0]

            if key not in wl_memo:
                wl_memo[key] = known_wl_hash(key, sub)
            wl = wl_memo[key]
            found = None
            for k_idx in bucket.get(wl, []):
                k_key, k_graph = class_graphs[k_idx]
                pair = (k_key, key)
                if pair not in iso_memo:
                    iso_memo[pair] = k_key == key or is_isomorphic(k_graph(), sub(), timeout_s=iso_timeout_s)
                if iso_memo[pair]:
                    found = k_idx
                    break
            if found is None:
                found = len(classes)
                classes.append(GraphClass(graph_hash=wl, path=p_idx, node=nid))
                class_graphs.append((key, sub))
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


def executed_step_states(result: dict[str, Any], orders: list[list[str]], specs: dict[str, Spec],
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


@dataclass
class _Plan:
    """A dataset to build: its cache key and file, its specs, paths and the job's payload."""

    source: DatasetSource
    started: float
    key: str
    cache_file: Path | None
    libraries: dict[str, str]
    specs: dict[str, Spec]
    paths: list[nx.DiGraph]
    payload: dict[str, Any]
    orders: list[list[str]]

    @property
    def work(self) -> int:
        """A rough measure of the build's time, only to order builds: the data's size times the number of
        distinct prefixes the job executes (each on a copy of the data)."""
        try:
            size = self.source.data_path.stat().st_size
        except OSError:
            size = 0
        prefixes = {tuple(order[:k]) for order in self.orders for k in range(1, len(order) + 1)}
        return (size + 100_000) * (1 + len(prefixes))


def _plan(source: DatasetSource, cache_dir: Path | None, libraries: dict[str, str] | None) -> _Plan | BuildResult:
    """The cached state (a :class:`BuildResult`) when there is one, else what building it takes."""
    started = time.perf_counter()
    ds = source.dataset
    libraries = library_versions() if libraries is None else libraries
    key = cache_key(source, libraries)
    cache_file = (cache_dir / f"{ds.name}-{key[:32]}.json.gz") if cache_dir else None
    if cache_file is not None and cache_file.is_file():
        try:
            state = DerivationState.load(cache_file)
            return BuildResult(ds.name, state, time.perf_counter() - started, True, cache_file)
        except (OSError, ValueError, KeyError, EOFError):
            cache_file.unlink(missing_ok=True)  # a damaged cache entry is rebuilt
    specs = specs_from_release(ds)
    paths = enumerate_paths(specs, where=f"dataset {ds.name!r}")
    payload, orders = _payload(specs, paths)
    return _Plan(source, started, key, cache_file, libraries, specs, paths, payload, orders)


FAST_COPY_MIN_BYTES = 4 * 1024 * 1024
"""A data file from this size on is parsed here, into a fast-loading copy the job unpickles (a 40 MB CSV: about
0.5 s of CPU to parse, 0.05 s to load the copy): the parsing happens in this process while the sandbox's
template process starts on the other core, instead of on the job's, which is the build's critical path."""


@contextmanager
def _fast_copy(data_path: Path) -> Iterator[Path | None]:
    """A fast-loading copy of a large data file for the job (:func:`evaluation.sandbox.prepare_fast_copy`:
    ``pd.read_csv`` with the defaults the job would use; the job takes it only while the CSV's size and
    modification time match it), in a private folder so the release folder is never written to; None for a
    small file, or when the copy cannot be made (the job reads the CSV then)."""
    try:
        large = data_path.stat().st_size >= FAST_COPY_MIN_BYTES
    except OSError:
        large = False
    if not large:
        yield None
        return
    from evaluation.errors import SandboxError
    from evaluation.sandbox import prepare_fast_copy

    with tempfile.TemporaryDirectory(prefix="forkpaths-gt-data-") as folder:
        link = Path(folder) / data_path.name
        try:
            link.symlink_to(data_path.resolve())  # prepare_fast_copy writes its copy next to the path it reads
            copy: Path | None = prepare_fast_copy(link)
        except (OSError, SandboxError):
            copy = None
        yield copy


def _build(plan: _Plan, limits: GroundTruthLimits | None, runner: Runner, iso_timeout_s: float) -> BuildResult:
    ds = plan.source.dataset
    where = f"dataset {ds.name!r}"
    with _fast_copy(plan.source.data_path) as fast_copy:
        result = runner(plan.payload, data_path=plan.source.data_path, limits=limits or GroundTruthLimits(),
                        fast_copy=fast_copy)
    states, errors, failed = executed_step_states(result, plan.orders, plan.specs, where)
    state = derive_state(plan.specs, plan.paths, states, list(result["stats"]["columns"]),
                         iso_timeout_s=iso_timeout_s, errors=errors)
    state.meta = {"dataset": ds.name, "key": plan.key, "evaluator_version": EVALUATOR_VERSION,
                  "libraries": dict(plan.libraries), "release_version": plan.source.release_version,
                  "failed_transforms": failed,
                  "date_inferred_columns": dict(result["stats"].get("date_inferred") or {}),
                  "date_derived_columns": dict(result["stats"].get("date_dependent") or {}),
                  "executions": result["stats"]["executions"], "job_seconds": result["stats"].get("seconds"),
                  "job_cpu_seconds": result["stats"].get("cpu_seconds")}
    if plan.cache_file is not None:
        state.save(plan.cache_file)
    return BuildResult(ds.name, state, time.perf_counter() - plan.started, False, plan.cache_file)


def build_dataset(source: DatasetSource, *, cache_dir: Path | None = None,
                  limits: GroundTruthLimits | None = None, runner: Runner = run_groundtruth_job,
                  iso_timeout_s: float = ISO_TIMEOUT_S, libraries: dict[str, str] | None = None) -> BuildResult:
    """The dataset's ground-truth state: from the cache when its key matches, else built and cached.

    ``libraries``: :func:`library_versions`, when the caller has read them (once for many datasets: reading
    every installed package's metadata takes tens of milliseconds)."""
    plan = _plan(source, cache_dir, libraries)
    return plan if isinstance(plan, BuildResult) else _build(plan, limits, runner, iso_timeout_s)


def build_sources(sources: list[DatasetSource], *, cache_dir: Path | None = None,
                  limits: GroundTruthLimits | None = None, workers: int = 2,
                  on_dataset: Callable[[BuildResult], None] | None = None) -> list[BuildResult]:
    """:func:`build_dataset` for several datasets, ``workers`` job processes at a time; results (and
    ``on_dataset`` calls) in the order of ``sources``.

    The cache is read first; of the datasets left to build, the largest start first (longest processing time
    first), so that the last one to finish is not a large one that waited behind small ones while the other
    worker idled."""
    from concurrent.futures import Future, ThreadPoolExecutor

    libraries = library_versions()
    plans: list[_Plan | BuildResult | Exception] = []
    for source in sources:
        try:
            plans.append(_plan(source, cache_dir, libraries))
        except Exception as exc:  # noqa: BLE001 - raised at this dataset's turn, after the ones before it
            plans.append(exc)
    results: list[BuildResult] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures: dict[int, Future[BuildResult]] = {}
        pending = [(i, plan) for i, plan in enumerate(plans) if isinstance(plan, _Plan)]
        if pending:  # the sandbox's template process starts only when a dataset must be built, not for a cached one
            from evaluation.sandbox import prewarm

            prewarm(wait=False)
        for i, plan in sorted(pending, key=lambda item: -item[1].work):
            futures[i] = pool.submit(_build, plan, limits, run_groundtruth_job, ISO_TIMEOUT_S)
        for i, planned in enumerate(plans):
            if isinstance(planned, Exception):
                for future in futures.values():
                    future.cancel()
                raise planned
            result = planned if isinstance(planned, BuildResult) else futures[i].result()
            results.append(result)
            if on_dataset is not None:
                on_dataset(result)
    return results


def build_release(path: Path, *, datasets: list[str] | None = None, cache_dir: Path | None = None,
                  limits: GroundTruthLimits | None = None, workers: int = 2,
                  on_dataset: Callable[[BuildResult], None] | None = None,
                  release: Release | None = None) -> list[BuildResult]:
    """Build the ground truth of every dataset of the release at ``path`` that has transforms (or of
    ``datasets``), reading the release through :mod:`exports` (verified against its manifest), unless the caller
    hands it over as ``release``, read and verified already."""
    from evaluation.groundtruth.sources import sources_from_release

    _, sources = sources_from_release(path, datasets=datasets, release=release)
    return build_sources(sources, cache_dir=cache_dir, limits=limits, workers=workers, on_dataset=on_dataset)
