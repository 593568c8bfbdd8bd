"""What runs inside the sandbox: execute the ground-truth paths of one dataset and hash the frames.

:func:`execute_paths` is a pure job: a JSON payload in (the code of every transform and the paths as lists of
transform ids in execution order), a JSON result out (per executed step: what the code returned, its columns
and BLADE's value hash of every column). Frames never leave the job.

Execution is memoised by prefix: BLADE re-runs the whole prefix of a path for every step of every path
(mortgage: 1,382 kernel cells); here the distinct prefixes form a tree and each node of the tree runs once, on
a copy of its parent's namespace (the last child takes the parent's namespace over without copying). A step
runs as BLADE's cell would: its own code as written, after the group-by-rewritten code of the steps before it
(blade-reference 2.4), starting from a deep copy of the table read with ``pd.read_csv``. A step that raises
is recorded with its error and the steps below it are not run.
"""

from __future__ import annotations

import copy
import sys
import time
import traceback
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from evaluation.sandbox.libraries import missing_library, missing_library_sentence
from evaluation.sandbox.registry import sandbox_job

if TYPE_CHECKING:
    from evaluation.sandbox.runtime import JobContext

__all__ = ["JOB_NAME", "execute_paths", "execute_paths_job"]

JOB_NAME = "groundtruth.execute_paths"
MAX_ERROR_CHARS = 2000


def _namespace(frame: Any) -> dict[str, Any]:
    import typing

    import numpy as np
    import pandas as pd
    from pandas.core.groupby import DataFrameGroupBy

    ns: dict[str, Any] = {"__name__": "__forkpaths_gt__", "__builtins__": __builtins__, "pd": pd, "np": np,
                          "DataFrameGroupBy": DataFrameGroupBy, "List": typing.List,  # noqa: UP006 - BLADE's kernel imports it "Optional": typing.Optional,
                          "Callable": typing.Callable, "Union": typing.Union}
    try:
        import scipy

        ns["scipy"] = scipy
    except ImportError:  # pragma: no cover - scipy comes with statsmodels
        pass
    ns["df"] = frame.copy(deep=True)
    return ns


def pandas15_compat() -> None:
    """Make the pandas 2 change that alters BLADE's expert code behave as in pandas 1.5 (which it was
    written and hashed with): ``pd.get_dummies`` returns ``uint8`` indicators, not ``bool``. Only ever called
    inside the job's own process."""
    import functools

    import numpy as np
    import pandas as pd

    original = pd.get_dummies
    if getattr(original, "__forkpaths_compat__", False):
        return

    @functools.wraps(original)
    def get_dummies(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("dtype", np.uint8)
        return original(*args, **kwargs)

    get_dummies.__forkpaths_compat__ = True  # type: ignore[attr-defined]
    pd.get_dummies = get_dummies


_ATOMIC = frozenset({str, int, float, bool, complex, bytes, type(None)})
"""Types whose ``copy.deepcopy`` is the object itself (``copy._deepcopy_atomic``); immutable."""


def _deepcopy_array(array: Any, memo: dict[int, Any]) -> Any:
    """``copy.deepcopy`` of an exact ``numpy.ndarray``, as ``ndarray.__deepcopy__`` computes it, faster.

    numpy copies the buffer, then (object arrays) deep-copies every element through ``copy.deepcopy``: for an
    element of an atomic type that returns the element itself and records nothing in ``memo``, so when every
    element is of such a type the result is exactly the buffer's copy, made here without millions of Python
    calls (a group-by over a 146k-row text column). Any other array takes numpy's own path."""
    if array.dtype == object and array.size and set(map(type, array.ravel(order="K").tolist())) <= _ATOMIC:
        return array.copy(order="K")
    return array.__deepcopy__(memo)


@contextmanager
def _fast_array_deepcopy() -> Iterator[None]:
    """Within the block, ``copy.deepcopy`` copies plain numpy arrays with :func:`_deepcopy_array` (dispatch on
    the exact type, so subclasses keep their own ``__deepcopy__``). Only ever used inside the job's process."""
    import numpy as np

    dispatch = getattr(copy, "_deepcopy_dispatch", None)
    if not isinstance(dispatch, dict):  # pragma: no cover - a Python whose deepcopy has no dispatch table
        yield
        return
    previous = dispatch.get(np.ndarray)
    dispatch[np.ndarray] = _deepcopy_array
    try:
        yield
    finally:
        if previous is None:
            dispatch.pop(np.ndarray, None)
        else:
            dispatch[np.ndarray] = previous


def _fork(ns: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with _fast_array_deepcopy():
        for key, value in ns.items():
            if key == "__builtins__" or isinstance(value, types.ModuleType | types.FunctionType | type):
                out[key] = value
                continue
            try:
                out[key] = copy.deepcopy(value)
            except Exception:  # noqa: BLE001 - objects that refuse copying are shared, as references
                out[key] = value
    return out


def _describe(result: Any, hasher: Any) -> dict[str, Any]:
    import pandas as pd
    from pandas.core.groupby import DataFrameGroupBy

    if isinstance(result, pd.DataFrame):
        hashes = hasher.hash_frame(result)
        return {"kind": "frame", "columns": list(hashes), "hashes": list(hashes.values()), "rows": len(result)}
    if isinstance(result, DataFrameGroupBy):
        try:
            columns = [str(c) for c in result.any().columns]
        except Exception:  # noqa: BLE001 - pandas 2 refuses any() on some dtypes; the columns are what counts
            keys = set(result.keys if isinstance(result.keys, list) else [result.keys])
            columns = [str(c) for c in result.obj.columns if c not in keys]
        return {"kind": "groupby", "columns": columns, "hashes": []}
    return {"kind": "other", "columns": [], "hashes": [], "type": type(result).__name__}


def _error(exc: BaseException, spec_id: str) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    tb = traceback.extract_tb(exc.__traceback__)
    where = next((f" (line {f.lineno} of its code)" for f in reversed(tb) if f.filename == f"<{spec_id}>"), "")
    library = missing_library(exc)
    why = f": {missing_library_sentence(library)}" if library else ""
    return ("".join(lines).strip() + where + why)[:MAX_ERROR_CHARS]


def _run(code: str, spec_id: str, ns: dict[str, Any]) -> None:
    exec(compile(code, f"<{spec_id}>", "exec"), ns)  # noqa: S102 - this is the sandboxed job


def _tree(payload: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[int, list[int]], list[list[int]]]:
    """The prefix tree of the payload's paths: (nodes, children by node, each path's nodes). Node = (parent, spec)."""
    index: dict[tuple[int, str], int] = {}
    nodes: list[dict[str, Any]] = []
    children: dict[int, list[int]] = {-1: []}
    path_nodes: list[list[int]] = []
    for path in payload["paths"]:
        parent, seq = -1, []
        for spec_id in path:
            key = (parent, spec_id)
            if key not in index:
                index[key] = len(nodes)
                nodes.append({"parent": parent, "spec": spec_id})
                children.setdefault(parent, []).append(index[key])
                children[index[key]] = []
            parent = index[key]
            seq.append(parent)
        path_nodes.append(seq)
    return nodes, children, path_nodes


def run_tree(payload: dict[str, Any], table: Any, report: Any) -> int:
    """The untrusted side: run every distinct prefix once; ``report(node, df, error)`` per executed node (``df``:
    what ``df`` held after the step's raw code; ``error``: the step's error, and its subtree is not run).
    Returns the number of executions."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    pandas15_compat()
    codes: dict[str, dict[str, str]] = payload["codes"]
    nodes, children, _ = _tree(payload)
    executed = 0
    # depth first; a child forks its parent's namespace when it is popped (lazily, so at most one copy per
    # level is alive), except the last child, which runs after its siblings and takes the namespace over
    root_ns = _namespace(table)
    stack: list[tuple[int, dict[str, Any], bool]] = [
        (c, root_ns, i != 0) for i, c in enumerate(reversed(children[-1]))]
    while stack:
        node_id, parent_ns, fork = stack.pop()
        ns = _fork(parent_ns) if fork else parent_ns
        spec_id = nodes[node_id]["spec"]
        raw, processed = codes[spec_id]["raw"], codes[spec_id]["processed"]
        try:
            if raw == processed:
                _run(raw, spec_id, ns)
                executed += 1
                report(node_id, ns.get("df"), None)
            else:
                probe = _fork(ns)
                _run(raw, spec_id, probe)
                report(node_id, probe.get("df"), None)
                del probe
                _run(processed, spec_id, ns)
                executed += 2
        except Exception as exc:  # noqa: BLE001 - the analyst's code may raise anything
            report(node_id, None, _error(exc, spec_id))
            continue
        for i, kid in enumerate(reversed(children[node_id])):
            stack.append((kid, ns, i != 0))
    return executed


def _measured(payload: dict[str, Any], table: Any, reports: dict[int, tuple[Any, str | None]], executed: int,
              hasher: Any, started: float) -> dict[str, Any]:
    """The measuring side: every executed node's description and hashes, computed here from what was reported;
    the nodes below a failed step are marked skipped."""
    nodes, children, path_nodes = _tree(payload)
    for node_id, node in enumerate(nodes):
        if "kind" in node:
            continue  # skipped below a failure
        if node_id not in reports:
            from evaluation.sandbox.handoff import Interference

            raise Interference("it left out steps it should have run")
        obj, error = reports[node_id]
        if error is not None:
            node.update({"kind": "error", "columns": [], "hashes": [], "error": error[:MAX_ERROR_CHARS]})
            _skip(children[node_id], nodes, children, node["spec"])
        else:
            node.update(obj if isinstance(obj, dict) else _describe(obj, hasher))
    return {"nodes": nodes, "paths": path_nodes,
            "stats": {"executions": executed, "hash_hits": hasher.hits, "hash_subset_hits": hasher.subset_hits,
                      "hash_misses": hasher.misses,
                      "date_inferred": {c: sorted(h) for c, h in sorted(hasher.date_inferred.items())},
                      "rows": len(table), "columns": [str(c) for c in table.columns],
                      "seconds": round(time.perf_counter() - started, 4)}}


def execute_paths(payload: dict[str, Any], table: Any) -> dict[str, Any]:
    """Run every distinct prefix of the payload's paths once; return the hashed state of each step.

    Both sides in this process (for tests and tools that trust the code; the sandbox job splits them).
    Payload: ``{"codes": {id: {"raw": code, "processed": code}}, "paths": [[id, ...], ...]}`` where a path
    lists the transforms *with code* in execution order. Result: ``{"nodes": [{"parent", "spec", "kind",
    "columns", "hashes", "error"}], "paths": [[node index, ...], ...], "stats": {...}}``.
    """
    from evaluation.groundtruth.hashing import ColumnHasher

    started = time.perf_counter()
    hasher = ColumnHasher()
    reports: dict[int, tuple[Any, str | None]] = {}

    def report(node_id: int, df: Any, error: str | None) -> None:
        reports[node_id] = (None, error) if error is not None else (_describe(df, hasher), None)

    executed = run_tree(payload, table, report)
    return _measured(payload, table, reports, executed, hasher, started)


def _skip(kids: list[int], nodes: list[dict[str, Any]], children: dict[int, list[int]], failed: str) -> None:
    todo = list(kids)
    while todo:
        n = todo.pop()
        nodes[n].update({"kind": "skipped", "columns": [], "hashes": [],
                         "error": f"not run: an earlier step ({failed}) failed"})
        todo.extend(children[n])


@sandbox_job(JOB_NAME)
def execute_paths_job(ctx: JobContext) -> dict[str, Any]:
    """The sandbox job: the table is read before any code runs; the code runs in a child process
    (:mod:`evaluation.sandbox.handoff`) that hands over, per executed step, only the frame it left (or its
    error); this process, which never runs the code, decodes, describes and hashes it. Code that interfered
    with the hand-over fails the job with that sentence, and nothing it reported is recorded."""
    import pandas as pd
    from pandas.core.groupby import DataFrameGroupBy

    from evaluation.groundtruth.hashing import ColumnHasher
    from evaluation.sandbox.frames import Malformed, decode_object, encode_object
    from evaluation.sandbox.handoff import Interference

    started = time.perf_counter()
    table = ctx.load_table()
    ctx.close_data()
    payload = ctx.payload
    nodes, _, _ = _tree(payload)

    def body(sender: Any) -> None:
        def report(node_id: int, df: Any, error: str | None) -> None:
            if error is not None:
                sender.send({"type": "node", "id": node_id, "error": error})
            elif isinstance(df, pd.DataFrame | DataFrameGroupBy):
                header, blobs = encode_object(df, table)  # df is a copy: the table stays as read
                sender.send({"type": "node", "id": node_id, "error": None, "df": header}, blobs)
            else:  # what _describe says of anything else: its type's name
                sender.send({"type": "node", "id": node_id, "error": None,
                             "df": {"kind": "other", "type": type(df).__name__}})

        executed = run_tree(payload, table, report)
        sender.send({"type": "done", "executions": executed, "cpu_seconds": time.process_time()})

    hasher = ColumnHasher()
    reports: dict[int, tuple[Any, str | None]] = {}
    executed = -1
    child_cpu = 0.0
    try:
        for header, blobs in ctx.split(body):
            if header.get("type") == "done" and executed < 0:
                count, cpu = header.get("executions"), header.get("cpu_seconds")
                if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 2 * len(nodes):
                    raise Interference("it reported a number of executions that cannot be")
                executed = count
                child_cpu = float(cpu) if isinstance(cpu, int | float) and not isinstance(cpu, bool) else 0.0
                continue
            node_id, error = header.get("id"), header.get("error")
            if (header.get("type") != "node" or executed >= 0 or not isinstance(node_id, int)
                    or isinstance(node_id, bool) or not 0 <= node_id < len(nodes) or node_id in reports):
                raise Interference("it sent a message out of order")
            if error is not None:
                if not isinstance(error, str):
                    raise Interference("it sent an error that is not text")
                reports[node_id] = (None, error)
                continue
            kind = (header.get("df") or {}).get("kind") if isinstance(header.get("df"), dict) else None
            if kind == "other":
                reports[node_id] = ({"kind": "other", "columns": [], "hashes": [],
                                     "type": str(header["df"].get("type"))[:200]}, None)
                continue
            try:
                reports[node_id] = (_describe(decode_object(header.get("df"), blobs, table), hasher), None)
            except Malformed as exc:
                raise Interference(f"it handed over a malformed frame: {exc}") from None
        if executed < 0:
            raise Interference("it handed over no end of its run")
        result = _measured(payload, table, reports, executed, hasher, started)
    except Interference as exc:
        return {"ok": False, "error_kind": "interfered", "error": exc.sentence}
    result["stats"]["cpu_seconds"] = round(time.process_time() + child_cpu, 4)  # the job's and its child's
    return result
