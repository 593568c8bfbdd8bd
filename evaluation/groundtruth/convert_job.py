"""Sandbox job: an agent's transform code → BLADE transform units, with the frame state after each unit.

No LLM (BLADE asks one to rewrite the code as unit functions, blade-reference 4.2-4.3). The code runs one
top-level statement at a time on the dataset; a statement that leaves ``df`` as it was (same kind, columns,
rows and value hashes) is a helper (a variable, a group-by object, an import) and joins the next statement
that changes ``df``. Each such segment is one unit: :func:`evaluation.inference.infer_transform` gives its
verb and mapping from the segment's code (static dataflow analysis) and the observed change of the frame;
a roll-up also records the group-by keys the analysis saw. Consecutive segments with the same verb writing the
same columns (``df.loc[m1, 'y'] = 1`` then ``df.loc[m2, 'y'] = 0``) merge into one unit, as an expert would
annotate them; a derive whose helper column the next unit reads and removes (one-hot encoding of a mapped
column) folds into that unit. The code runs in a child process that hands over only the frames it made
(:mod:`evaluation.sandbox.handoff`); this process infers, hashes (BLADE's value hash) and reports, so nothing the
code does can write the units. Frames never leave the job.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evaluation.sandbox.registry import sandbox_job

if TYPE_CHECKING:
    from evaluation.sandbox.runtime import JobContext

__all__ = ["CONVERT_BATCH_JOB", "CONVERT_JOB", "StateMemo", "convert_batch_job", "convert_code", "convert_code_job",
           "execute_codes", "measure_codes"]

CONVERT_JOB = "groundtruth.convert_transform"
CONVERT_BATCH_JOB = "groundtruth.convert_transform_batch"


def _state(obj: Any, hasher: Any) -> tuple[str, list[str], list[str], int | None]:
    import pandas as pd
    from pandas.core.groupby import DataFrameGroupBy

    if isinstance(obj, pd.DataFrame):
        hashes = hasher.hash_frame(obj)
        return "frame", list(hashes), list(hashes.values()), len(obj)
    if isinstance(obj, DataFrameGroupBy):
        try:
            cols = [str(c) for c in obj.any().columns]
        except Exception:  # noqa: BLE001
            cols = [str(c) for c in obj.obj.columns]
        return "groupby", cols, [], None
    return "other", [], [], None


_ROW_VERBS = ("filter", "deduplicate", "orderby", "slice")


def _writes_df(stmt: ast.stmt) -> bool:
    """Does the statement assign ``df`` (or into it), or call an in-place method on it?"""
    def root(node: ast.expr) -> str | None:
        while isinstance(node, ast.Subscript | ast.Attribute):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    if isinstance(stmt, ast.Assign):
        targets = [t for target in stmt.targets for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        return any(root(t) == "df" for t in targets)
    if isinstance(stmt, ast.AugAssign | ast.AnnAssign):
        return root(stmt.target) == "df"
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        inplace = any(k.arg == "inplace" for k in call.keywords)
        return inplace and isinstance(call.func, ast.Attribute) and root(call.func.value) == "df"
    return False


def _mapping_key(unit: dict[str, Any]) -> tuple[str, frozenset[str]]:
    return unit["verb"], frozenset(out for _, out in unit["mapping"])


def convert_code(payload: dict[str, Any], table: Any) -> dict[str, Any]:
    """Payload ``{"code": str}`` (or ``{"codes": [str, ...]}`` for several independent conversions on the same
    data, answered as ``{"results": [...]}``). Result ``{"units": [{"verb", "mapping": [[inputs], output],
    "groupby_cols", "code", "kind", "columns", "hashes", "notes"}], "columns": [...], "error": str | None}``.

    Both sides in this process (for tests and tools that trust the code): the code runs, its states are encoded
    and decoded as they are between the sandbox's two processes, then measured."""
    messages: list[tuple[dict[str, Any], list[bytes]]] = []

    class _Collect:
        def send(self, header: dict[str, Any], blobs: list[bytes] | None = None) -> None:
            messages.append((json.loads(json.dumps(header)), list(blobs or [])))

    execute_codes(payload, table, _Collect())
    return measure_codes(payload, table, iter(messages))


_WARM_UP_CODE = """df = df.dropna(subset=['a'])
df['a'] = pd.to_numeric(df['a'], errors='coerce')
df = df[df['n'] > 1]
df['c'] = np.log1p(df['a']).astype(float)
df['b'] = df['b'].astype('category')
df = df.groupby('b', observed=True).agg({'a': 'mean', 'n': 'sum'}).reset_index()
"""


def warm_up() -> None:
    """Convert a small trusted code on a small table, both sides, in this process: called by the sandbox's
    template process (:mod:`evaluation.sandbox.zygote`) before it forks any job, so that every measurer and
    every analysis's process starts with the converter's paths already run once (pandas' and numpy's lazily
    built parts, Python's specialised bytecode) instead of paying for them again in each fork: about 14 ms CPU
    per analysis's process (benchmarks/fork_cost.py). ``pd.get_dummies`` is left as it is (``compat=False``):
    the template serves other jobs, which must see pandas as installed."""
    import numpy as np
    import pandas as pd

    table = pd.DataFrame({"a": [1.0, None, 3.0, 4.5, 2.0], "b": ["x", "y", None, "x", "y"],
                          "n": np.arange(5, dtype="int64")})
    messages: list[tuple[dict[str, Any], list[bytes]]] = []

    class _Collect:
        def send(self, header: dict[str, Any], blobs: list[bytes] | None = None) -> None:
            messages.append((json.loads(json.dumps(header)), list(blobs or [])))

    execute_codes({"code": _WARM_UP_CODE}, table, _Collect(), compat=False)
    measure_codes({"code": _WARM_UP_CODE}, table, iter(messages))


def _codes(payload: dict[str, Any]) -> list[str]:
    codes = payload["codes"] if "codes" in payload else [payload["code"]]
    return [str(code) for code in codes]


def execute_codes(payload: dict[str, Any], table: Any, sender: Any, *, compat: bool = True) -> None:
    """The untrusted side: run each code one top-level statement at a time and hand over, per statement, what
    ``df`` holds (in full) and the shape of every other variable; a statement that raises ends its code.
    ``compat``: make ``pd.get_dummies`` behave as pandas 1.5's first (:func:`~.jobs.pandas15_compat`)."""
    from evaluation.groundtruth.jobs import code_error, code_namespace, pandas15_compat
    from evaluation.sandbox.frames import encode_object, shape_of

    if compat:
        pandas15_compat()
    for code in _codes(payload):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        ns = code_namespace(table)
        for stmt in tree.body:
            try:
                exec(compile(ast.Module(body=[stmt], type_ignores=[]), "<transform>", "exec"), ns)  # noqa: S102
            except BaseException as exc:  # noqa: BLE001 - the agent's code may raise anything, SystemExit too
                sender.send({"type": "state", "error": code_error(exc, "transform")})
                break
            header, blobs = encode_object(ns.get("df"), table)  # df is a copy: the table stays as read
            names = {str(k): shape_of(v) for k, v in list(ns.items())
                     if k not in ("__builtins__", "df") and not str(k).startswith("__")}
            sender.send({"type": "state", "error": None, "df": header, "names": names}, blobs)


class StateMemo:
    """What the measuring side worked out once per distinct state of one table, for the codes measured after.

    Agents repeat the first steps of their code across the analyses of a file (the same ``dropna``, the same
    renaming), so the same states are handed over again and again. A state is known by the SHA-256 of the bytes
    that were handed over for it (the frame's encoding and the shapes of the other variables), computed here:
    the same bytes decode to the same frame on this table, so its decoding and its hashes are reused, and the
    description of a step (:func:`evaluation.inference.infer_transform`, the roll-up's keys) is reused for the
    same code between the same two states. A child cannot reach this memo but by handing over the same bytes,
    which would give the same measurement anyway. One memo serves one table (one job)."""

    def __init__(self, hasher: Any = None) -> None:
        from evaluation.groundtruth.hashing import ColumnHasher

        self.hasher = hasher or ColumnHasher()
        self.table_state: tuple[str, list[str], list[str], int | None] | None = None
        self.states: dict[str, tuple[Any, dict[str, Any], tuple[str, list[str], list[str], int | None]]] = {}
        self.steps: dict[tuple[str, str, str], tuple[Any, list[str]]] = {}


def _digest(header: dict[str, Any], blobs: list[bytes]) -> str:
    digest = hashlib.sha256(json.dumps(header, sort_keys=True, allow_nan=True).encode("utf-8", "surrogatepass"))
    for blob in blobs:
        digest.update(len(blob).to_bytes(8, "big"))
        digest.update(blob)
    return digest.hexdigest()


def measure_codes(payload: dict[str, Any], table: Any, states: Iterator[Any], hasher: Any = None,
                  memo: StateMemo | None = None) -> dict[str, Any]:
    """The measuring side: turn the handed-over states into units and hashes (see :func:`convert_code`).

    ``hasher``: a :class:`~evaluation.groundtruth.hashing.ColumnHasher` to reuse (its cache is keyed by the
    columns' content, so what it holds cannot change a hash). ``memo``: a :class:`StateMemo` of this table
    to reuse (the job's earlier codes)."""
    from evaluation.sandbox.handoff import Interference

    memo = memo or StateMemo(hasher)
    results = [_convert_one(code, table, memo, states) for code in _codes(payload)]
    for _extra in states:
        raise Interference("it handed over more states than the code has statements")
    return {"results": results} if "codes" in payload else results[0]


def _next_state(states: Iterator[Any], table: Any,
                memo: StateMemo) -> tuple[str | None, Any, dict[str, Any], tuple[Any, ...] | None, str]:
    """(error, df, namespace stand-ins, df's state, the state's key) of one statement, checked."""
    from evaluation.groundtruth.jobs import MAX_ERROR_CHARS
    from evaluation.sandbox.frames import Malformed, decode_object, stand_in
    from evaluation.sandbox.handoff import Interference

    try:
        header, blobs = next(states)
    except StopIteration:
        raise Interference("it handed over fewer states than the code has statements") from None
    if header.get("type") != "state":
        raise Interference("it sent a message of an unknown type")
    error = header.get("error")
    if error is not None:
        if not isinstance(error, str):
            raise Interference("it sent an error that is not text")
        return error[:MAX_ERROR_CHARS], None, {}, None, ""
    names = header.get("names")
    if not isinstance(names, dict):
        raise Interference("it sent variables that are not a mapping")
    try:
        key = _digest(header, blobs)
    except (TypeError, ValueError) as exc:  # not JSON again (it was parsed from JSON): not the protocol
        raise Interference("it wrote something that is not a message of the protocol") from exc
    known = memo.states.get(key)
    if known is not None:
        after, namespace, state = known
        return None, after, dict(namespace), state, key
    try:
        after = decode_object(header.get("df"), blobs, table)
        namespace = {str(k): stand_in(v) for k, v in names.items()}
    except Malformed as exc:
        raise Interference(f"it handed over a malformed frame: {exc}") from None
    state = _state(after, memo.hasher)
    memo.states[key] = (after, dict(namespace), state)
    return None, after, namespace, state, key


def _convert_one(code: str, table: Any, memo: StateMemo, states: Iterator[Any]) -> dict[str, Any]:
    import pandas as pd

    from evaluation.inference import infer_transform
    from evaluation.inference_ast import analyse_code

    result: dict[str, Any] = {"units": [], "columns": [str(c) for c in table.columns], "error": None}
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        result["error"] = f"the transform code does not parse (line {exc.lineno}: {exc.msg})"
        return result
    before: Any = table
    if memo.table_state is None:
        memo.table_state = _state(table, memo.hasher)
    before_state = memo.table_state
    before_key = ""  # the table as read
    pending: list[str] = []
    units: list[dict[str, Any]] = []
    final: Any = table
    for stmt in tree.body:
        text = ast.get_source_segment(code, stmt) or ast.unparse(stmt)
        error, after, namespace, measured, after_key = _next_state(states, table, memo)
        if error is not None or measured is None:
            result["error"] = f"the transform code raised at line {stmt.lineno}: {error}"
            break
        final = after
        after_state = measured
        pending.append(text)
        if not isinstance(before, pd.DataFrame):
            before_frame = getattr(before, "obj", None)
            before_frame = before_frame if isinstance(before_frame, pd.DataFrame) else table
        else:
            before_frame = before
        namespace["df"] = after
        segment = "\n".join(pending)
        if after_state == before_state and not _writes_df(stmt):
            # nothing changed: a helper, unless it is a row operation on df that happened to keep every row
            # (an expert still annotates ``df = df[df.age <= 55]`` as a filter when no age is above 55)
            continue
        step = (segment, before_key, after_key)
        described = memo.steps.get(step)
        if described is None:
            inferred = infer_transform(segment, before_frame, after, namespace=namespace)
            keys: list[str] = []
            if inferred.verb == "rollup":
                effects = analyse_code(segment, before_frame.columns, namespace)
                for names, _deps in effects.groupbys:
                    keys += [n for n in names if n not in keys]
            described = memo.steps[step] = (inferred, keys)
        inferred, keys = described[0], list(described[1])
        if after_state == before_state and inferred.verb not in _ROW_VERBS:
            continue
        pending = []
        mapping = [[list(m.inputs), m.output] for m in inferred.mapping]
        if keys:  # the keys are the group-by's inputs; a roll-up's inputs are what it aggregates
            mapping = [[[c for c in inputs if c not in keys] or inputs, out] for inputs, out in mapping]
        unit = {"verb": inferred.verb, "mapping": mapping,
                "groupby_cols": keys, "code": segment, "kind": after_state[0], "columns": after_state[1],
                "hashes": after_state[2], "notes": list(inferred.notes)}
        if units and units[-1]["verb"] in ("derive", "impute") and _mapping_key(units[-1]) == _mapping_key(unit):
            prev = units[-1]
            merged = {out: set(inputs) for inputs, out in prev["mapping"]}
            for inputs, out in unit["mapping"]:
                merged.setdefault(out, set()).update(inputs)
            order = [str(c) for c in before_frame.columns]
            prev.update({"mapping": [[sorted(ins, key=lambda c: (order.index(c) if c in order else len(order), c)),
                                      out] for out, ins in merged.items()],
                         "code": prev["code"] + "\n" + segment, "kind": unit["kind"], "columns": unit["columns"],
                         "hashes": unit["hashes"], "notes": prev["notes"] + unit["notes"]})
        else:
            units.append(unit)
        before = after  # decoded from the hand-over: nothing changes it (the memo may hold it for later codes)
        before_state, before_key = after_state, after_key
    result["units"] = _fold_consumed(units)
    if result["error"] is None and not isinstance(final, pd.DataFrame | pd.Series):
        result["error"] = (f"the transform code left df as {_type_name(final)}, not a data frame, so what it "
                           "computed last has no columns to match")
    return result


def _type_name(obj: Any) -> str:
    declared = getattr(obj, "type", None) if type(obj).__name__ == "SimpleNamespace" else None
    return declared if isinstance(declared, str) else type(obj).__name__


def _fold_consumed(units: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold a derive whose outputs the next unit reads and removes into that unit (``pop_class`` made from
    ``pop`` and then one-hot encoded away): the helper column is not an output, its inputs are."""
    out: list[dict[str, Any]] = []
    for unit in units:
        if out and unit["kind"] == "frame":
            prev = out[-1]
            made = {o for _, o in prev["mapping"] if o}
            reads = {c for inputs, _ in unit["mapping"] for c in inputs}
            if prev["verb"] in ("derive", "impute") and made and made <= reads and not made & set(unit["columns"]):
                source = {o: inputs for inputs, o in prev["mapping"]}
                mapping = []
                for inputs, o in unit["mapping"]:
                    expanded: list[str] = []
                    for c in inputs:
                        for x in source.get(c, [c]):
                            if x not in expanded:
                                expanded.append(x)
                    mapping.append([expanded, o])
                out[-1] = {**unit, "mapping": mapping, "code": prev["code"] + "\n" + unit["code"],
                           "notes": prev["notes"] + unit["notes"]}
                continue
        out.append(unit)
    return out


@sandbox_job(CONVERT_JOB)
def convert_code_job(ctx: JobContext) -> dict[str, Any]:
    """The sandbox job: the table is read before the agent's code runs; the code runs in a child process that
    hands over only the frames it made, and this process (which never runs the code) measures them. Code that
    interfered with the hand-over gets an error for every conversion, and no units."""
    from evaluation.sandbox.handoff import Interference

    payload = ctx.payload
    table = ctx.load_table()
    ctx.close_data()
    # the child inherits the table as read; the code works on a copy, so the table stays as read in both
    messages = ctx.split(lambda sender: execute_codes(payload, table, sender))
    try:
        return measure_codes(payload, table, messages)
    except Interference as exc:
        failed = {"units": [], "columns": [str(c) for c in table.columns], "error": exc.sentence,
                  "interfered": True}
        return {"results": [dict(failed) for _ in _codes(payload)]} if "codes" in payload else failed


@sandbox_job(CONVERT_BATCH_JOB)
def convert_batch_job(ctx: JobContext) -> dict[str, Any]:
    """The converter for many analyses on one table (:mod:`evaluation.sandbox.batch`): payload ``{"items":
    [code, ...], "item_limits": {...}}``; each code is converted as :func:`convert_code_job` converts one, in a
    child of its own forked from this process (which has read the table and never runs any code), and reported
    as an ``item`` event. Code that interfered with the hand-over gets the interference error; the others are
    untouched by it."""
    from evaluation.sandbox.batch import child_limits, run_items
    from evaluation.sandbox.handoff import Interference

    codes = [str(code) for code in ctx.payload["items"]]
    prepare = child_limits(float(ctx.payload["item_limits"]["timeout_s"]))
    table = ctx.load_table()
    ctx.close_data()
    memo = StateMemo()  # the states of the table measured so far, for the codes that repeat their first steps
    converted: dict[str, dict[str, Any]] = {}  # sha256 of a code -> what this process measured of it
    # Items whose code is one this job has already converted (agents repeat themselves across the analyses of a
    # file) are answered from that conversion instead of forking a child to run the same code on the same table
    # again. The key is the code's own text, which this process holds; the value is what this process measured,
    # never anything a child said about itself. Only conversions that ended (units, a failure of the code, or
    # interference) are kept: an item that died (time, memory, a crash) ends the job and leaves nothing here.
    forks = [i for i, code in enumerate(codes) if codes.index(code) == i]
    last_fork = forks[-1] if forks else -1

    def convert(index: int, last: bool) -> dict[str, Any]:
        key = hashlib.sha256(codes[index].encode("utf-8", "surrogatepass")).hexdigest()
        known = converted.get(key)
        if known is not None:
            return known
        payload = {"code": codes[index]}
        # the measurer's last fork is that of the last code not seen before (a repeat after it forks nothing)
        messages = ctx.split(lambda sender: execute_codes(payload, table, sender), prepare=prepare,
                             last=last or index == last_fork)
        try:
            result = measure_codes(payload, table, messages, memo=memo)
        except Interference as exc:
            result = {"units": [], "columns": [str(c) for c in table.columns], "error": exc.sentence,
                      "interfered": True}
        finally:
            messages.close()  # the child is killed now, before the next item's starts
        converted[key] = result
        return result

    return run_items(ctx, len(codes), convert)
