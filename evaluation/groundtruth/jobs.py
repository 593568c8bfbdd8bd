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

__all__ = ["code_error", "code_namespace", "JOB_NAME", "execute_paths", "execute_paths_job"]

JOB_NAME = "groundtruth.execute_paths"
MAX_ERROR_CHARS = 2000


def code_namespace(frame: Any) -> dict[str, Any]:
    """The globals a transform's code runs with: ``df`` (a copy of ``frame``) and the libraries it may use."""
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


def code_error(exc: BaseException, spec_id: str) -> str:
    """The sentence for an exception a step's code raised, with the line of that code where it was raised."""
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


def run_tree(payload: dict[str, Any], table: Any, report: Any, shadow_report: Any = None) -> int:
    """The untrusted side: run every distinct prefix once; ``report(node, df, error)`` per executed node (``df``:
    what ``df`` held after the step's raw code; ``error``: the step's error, and its subtree is not run).

    With ``shadow_report``, a step whose code calls ``to_datetime`` also runs in a shadow namespace with pandas
    1.5's per-value date reading (:func:`_shadow_step`), and ``shadow_report(node, df, candidates)`` says what the
    shadow's step left when it may differ from the real run's (``df`` None: the shadow run failed). The shadow
    follows the step's descendants while any of its frame still differs.
    Returns the number of executions."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    pandas15_compat()
    codes: dict[str, dict[str, str]] = payload["codes"]
    nodes, children, _ = _tree(payload)
    executed = 0
    # depth first; a child forks its parent's namespace when it is popped (lazily, so at most one copy per
    # level is alive), except the last child, which runs after its siblings and takes the namespace over
    root_ns = code_namespace(table)
    stack: list[tuple[int, dict[str, Any], bool, dict[str, Any] | None]] = [
        (c, root_ns, i != 0, None) for i, c in enumerate(reversed(children[-1]))]
    while stack:
        node_id, parent_ns, fork, parent_shadow = stack.pop()
        ns = _fork(parent_ns) if fork else parent_ns
        spec_id = nodes[node_id]["spec"]
        raw, processed = codes[spec_id]["raw"], codes[spec_id]["processed"]
        shadow: dict[str, Any] | None = None
        if shadow_report is not None:  # the shadow starts from the state before the step
            shadow = (_fork(parent_shadow) if fork else parent_shadow) if parent_shadow is not None else \
                (_fork(ns) if "to_datetime" in raw else None)
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
            report(node_id, None, code_error(exc, spec_id))
            continue
        if shadow is not None:
            shadow = _shadow_step(shadow, raw, processed, spec_id, ns.get("df"), node_id, shadow_report)
        for i, kid in enumerate(reversed(children[node_id])):
            stack.append((kid, ns, i != 0, shadow))
    return executed


def _shadow_step(shadow: dict[str, Any], raw: str, processed: str, spec_id: str, real_df: Any, node_id: int,
                 shadow_report: Any) -> dict[str, Any] | None:
    """Run the step in the shadow namespace with pandas 1.5's date reading; report what it described when that may
    differ from the real run's (with the columns whose values differ, or None for every column), and return the
    shadow for the step's children (None once its frame equals the real one again)."""
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
    if described is None:
        shadow_report(node_id, None, None)
    else:
        candidates = _differing(real_df, described) if raw == processed else None
        if candidates is None and raw == processed:
            candidates = []
        if candidates != []:
            shadow_report(node_id, described, candidates)
    if described is None or _differing(real_df, shadow.get("df")) is None:
        return None
    return shadow


def _date_dependent(nodes: list[dict[str, Any]], shadows: dict[int, tuple[Any, list[str] | None]]
                    ) -> dict[str, list[str]]:
    """Column → the value hashes (of the real run) that pandas 1.5's date reading would have made differently:
    per reported shadow step, the described columns whose shadow values hash differently."""
    found: dict[str, set[str]] = {}
    for node_id, (frame, candidates) in shadows.items():
        node = nodes[node_id]
        hashes = dict(zip(node.get("columns", []), node.get("hashes", []), strict=False))
        if frame is None:
            differ = list(hashes)
        else:
            differ = _rehashed_differently(frame, hashes, list(hashes) if candidates is None else candidates)
        for column in differ:
            found.setdefault(column, set()).add(hashes[column])
    return {c: sorted(h) for c, h in sorted(found.items())}


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


def _measured(payload: dict[str, Any], table: Any, reports: dict[int, tuple[Any, str | None]], executed: int,
              hasher: Any, started: float, shadows: dict[int, tuple[Any, list[str] | None]] | None = None
              ) -> dict[str, Any]:
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
                      "date_dependent": _date_dependent(nodes, shadows or {}),
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

    shadows: dict[int, tuple[Any, list[str] | None]] = {}

    def report(node_id: int, df: Any, error: str | None) -> None:
        reports[node_id] = (None, error) if error is not None else (_describe(df, hasher), None)

    def shadow_report(node_id: int, df: Any, candidates: list[str] | None) -> None:
        shadows[node_id] = (df, candidates)

    executed = run_tree(payload, table, report, shadow_report)
    return _measured(payload, table, reports, executed, hasher, started, shadows)


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

        def shadow_report(node_id: int, df: Any, candidates: list[str] | None) -> None:
            message: dict[str, Any] = {"type": "shadow", "id": node_id, "candidates": candidates, "df": None}
            blobs: list[bytes] = []
            if isinstance(df, pd.DataFrame):
                keep = [c for c in df.columns if candidates is None or str(c) in set(candidates)]
                message["df"], blobs = encode_object(df.loc[:, keep], table)
            elif df is not None:
                message["df"] = {"kind": "other"}
            sender.send(message, blobs)

        executed = run_tree(payload, table, report, shadow_report)
        sender.send({"type": "done", "executions": executed, "cpu_seconds": time.process_time()})

    hasher = ColumnHasher()
    reports: dict[int, tuple[Any, str | None]] = {}
    shadows: dict[int, tuple[Any, list[str] | None]] = {}
    executed = -1
    child_cpu = 0.0
    try:
        for header, blobs in ctx.split(body):
            if header.get("type") == "shadow" and executed < 0:  # a diagnosis (date reading), never a score
                node_id, candidates, frame = header.get("id"), header.get("candidates"), header.get("df")
                if (not isinstance(node_id, int) or isinstance(node_id, bool) or node_id not in reports
                        or node_id in shadows or not (candidates is None or (isinstance(candidates, list)
                                                                                and all(isinstance(c, str) for c in candidates)))):
                    raise Interference("it sent a message out of order")
                if frame is None:
                    shadows[node_id] = (None, None)
                elif isinstance(frame, dict) and frame.get("kind") == "other":
                    shadows[node_id] = ("other", candidates)
                else:
                    try:
                        shadows[node_id] = (decode_object(frame, blobs, table), candidates)
                    except Malformed as exc:
                        raise Interference(f"it handed over a malformed frame: {exc}") from None
                continue
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
        result = _measured(payload, table, reports, executed, hasher, started, shadows)
    except Interference as exc:
        return {"ok": False, "error_kind": "interfered", "error": exc.sentence}
    result["stats"]["cpu_seconds"] = round(time.process_time() + child_cpu, 4)  # the job's and its child's
    return result
