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


@contextmanager
def _pandas15_to_datetime() -> Iterator[None]:
    """Within the block, ``pd.to_datetime`` of a column of text without a ``format`` reads each value on its own
    (``format="mixed"``), as pandas 1.5, which BLADE's expert code ran with, did: pandas 2 infers one format from
    the first value instead (``01.08.1983`` is 1 August under an inferred day-first format, 8 January read on its
    own). Only ever used inside the job's process, for the shadow run of :func:`execute_paths`."""
    import numpy as np
    import pandas as pd

    original = pd.to_datetime

    def to_datetime(arg: Any, *args: Any, **kwargs: Any) -> Any:
        texts = isinstance(arg, pd.Series | pd.Index | np.ndarray) and arg.dtype == object or isinstance(arg, list)
        if texts and not args and kwargs.get("format") is None:
            kwargs["format"] = "mixed"
        return original(arg, *args, **kwargs)

    pd.to_datetime = to_datetime
    try:
        yield
    finally:
        pd.to_datetime = original


def _differing(real: Any, shadow: Any) -> list[str] | None:
    """The columns of the frame ``real`` whose values differ in ``shadow`` (None: the frames are the same)."""
    import pandas as pd

    if not isinstance(real, pd.DataFrame):
        return None
    if not isinstance(shadow, pd.DataFrame) or not real.index.equals(shadow.index):
        return [str(c) for c in real.columns]  # other rows kept: every column differs
    out = [str(c) for c in real.columns if c not in shadow.columns or not real[c].equals(shadow[c])]
    return out or None


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


def execute_paths(payload: dict[str, Any], table: Any) -> dict[str, Any]:
    """Run every distinct prefix of the payload's paths once; return the hashed state of each step.

    Payload: ``{"codes": {id: {"raw": code, "processed": code}}, "paths": [[id, ...], ...]}`` where a path
    lists the transforms *with code* in execution order. Result: ``{"nodes": [{"parent", "spec", "kind",
    "columns", "hashes", "error"}], "paths": [[node index, ...], ...], "stats": {...}}``.
    """
    from evaluation.groundtruth.hashing import ColumnHasher

    started = time.perf_counter()
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    pandas15_compat()
    codes: dict[str, dict[str, str]] = payload["codes"]
    hasher = ColumnHasher()

    # the prefix tree: node = (parent node, spec id)
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

    executed = 0
    date_dependent: dict[str, set[str]] = {}
    # depth first; a child forks its parent's namespace when it is popped (lazily, so at most one copy per
    # level is alive), except the last child, which runs after its siblings and takes the namespace over.
    # A step whose code calls to_datetime also runs in a shadow namespace with pandas 1.5's per-value date
    # reading; the columns that come out different are the ones whose hashes differ from BLADE's (its pandas 1.5
    # ran that code), and the shadow follows the step's descendants while any of its frame still differs.
    root_ns = _namespace(table)
    stack: list[tuple[int, dict[str, Any], bool, dict[str, Any] | None]] = [
        (c, root_ns, i != 0, None) for i, c in enumerate(reversed(children[-1]))]
    while stack:
        node_id, parent_ns, fork, parent_shadow = stack.pop()
        ns = _fork(parent_ns) if fork else parent_ns
        spec_code = codes[nodes[node_id]["spec"]]["raw"]
        shadow = (_fork(parent_shadow) if fork else parent_shadow) if parent_shadow is not None else \
            (_fork(ns) if "to_datetime" in spec_code else None)
        node = nodes[node_id]
        spec_id = node["spec"]
        raw, processed = codes[spec_id]["raw"], codes[spec_id]["processed"]
        kids = children[node_id]
        try:
            if raw == processed:
                _run(raw, spec_id, ns)
                executed += 1
                node.update(_describe(ns.get("df"), hasher))
                after = ns
            else:
                probe = _fork(ns)
                _run(raw, spec_id, probe)
                node.update(_describe(probe.get("df"), hasher))
                del probe
                _run(processed, spec_id, ns)
                executed += 2
                after = ns
        except Exception as exc:  # noqa: BLE001 - the analyst's code may raise anything
            node.update({"kind": "error", "columns": [], "hashes": [], "error": _error(exc, spec_id)})
            _skip(kids, nodes, children, spec_id)
            continue
        if shadow is not None:
            shadow = _shadow_step(shadow, raw, processed, spec_id, ns.get("df"), node, date_dependent)
        for i, kid in enumerate(reversed(kids)):
            stack.append((kid, after, i != 0, shadow))
    return {"nodes": nodes, "paths": path_nodes,
            "stats": {"executions": executed, "hash_hits": hasher.hits, "hash_subset_hits": hasher.subset_hits,
                      "hash_misses": hasher.misses,
                      "date_inferred": {c: sorted(h) for c, h in sorted(hasher.date_inferred.items())},
                      "date_dependent": {c: sorted(h) for c, h in sorted(date_dependent.items())},
                      "rows": len(table), "columns": [str(c) for c in table.columns],
                      "seconds": round(time.perf_counter() - started, 4)}}


def _shadow_step(shadow: dict[str, Any], raw: str, processed: str, spec_id: str, real_df: Any,
                 node: dict[str, Any], found: dict[str, set[str]]) -> dict[str, Any] | None:
    """Run the step in the shadow namespace with pandas 1.5's date reading; record in ``found`` (column → value
    hashes) the described columns that differ from the real run's, and return the shadow for the step's children
    (None once its frame equals the real one again)."""
    try:
        with _pandas15_to_datetime():
            if raw == processed:
                _run(raw, spec_id, shadow)
                described = shadow.get("df")
            else:
                probe = _fork(shadow)
                _run(raw, spec_id, probe)
                described = probe.get("df")
                _run(processed, spec_id, shadow)
    except Exception:  # noqa: BLE001 - pandas 1.5's reading made the code fail: every column it described differs
        described = None
    hashes = dict(zip(node.get("columns", []), node.get("hashes", []), strict=False))
    if described is None:
        differ = list(hashes)
    else:
        candidates = _differing(real_df, described) if raw == processed else list(hashes)
        differ = _rehashed_differently(described, hashes, candidates or [])
    for column in differ:
        found.setdefault(column, set()).add(hashes[column])
    if described is None or _differing(real_df, shadow.get("df")) is None:
        return None
    return shadow


def _rehashed_differently(described: Any, hashes: dict[str, str], candidates: list[str]) -> list[str]:
    """Of ``candidates``, the described columns whose shadow values hash differently from the real run's (a
    throwaway hasher, so that the real one's date flags stay the real run's)."""
    import pandas as pd

    from evaluation.groundtruth.hashing import ColumnHasher

    if not isinstance(described, pd.DataFrame):
        return [c for c in candidates if c in hashes]
    by_name = {str(c): c for c in described.columns}
    scratch = ColumnHasher()
    return [c for c in candidates if c in hashes and (c not in by_name or scratch.hash(described[by_name[c]], c)
                                                       != hashes[c])]


def _skip(kids: list[int], nodes: list[dict[str, Any]], children: dict[int, list[int]], failed: str) -> None:
    todo = list(kids)
    while todo:
        n = todo.pop()
        nodes[n].update({"kind": "skipped", "columns": [], "hashes": [],
                         "error": f"not run: an earlier step ({failed}) failed"})
        todo.extend(children[n])


@sandbox_job(JOB_NAME)
def execute_paths_job(ctx: JobContext) -> dict[str, Any]:
    """The sandbox job: the table is read before the untrusted code runs, then the data file is closed."""
    table = ctx.load_table()
    ctx.untrusted()
    result = execute_paths(ctx.payload, table)
    result["stats"]["cpu_seconds"] = round(time.process_time(), 4)  # the job process's, from its fork on
    return result
