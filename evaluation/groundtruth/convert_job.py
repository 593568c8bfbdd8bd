"""Sandbox job: an agent's transform code → BLADE transform units, with the frame state after each unit.

No LLM (BLADE asks one to rewrite the code as unit functions, blade-reference 4.2-4.3). The code runs one
top-level statement at a time on the dataset; a statement that leaves ``df`` as it was (same kind, columns,
rows and value hashes) is a helper (a variable, a group-by object, an import) and joins the next statement
that changes ``df``. Each such segment is one unit: :func:`evaluation.inference.infer_transform` gives its
verb and mapping from the segment's code (static dataflow analysis) and the observed change of the frame;
a roll-up also records the group-by keys the analysis saw. Consecutive segments with the same verb writing the
same columns (``df.loc[m1, 'y'] = 1`` then ``df.loc[m2, 'y'] = 0``) merge into one unit, as an expert would
annotate them; a derive whose helper column the next unit reads and removes (one-hot encoding of a mapped
column) folds into that unit. The frame after each unit is hashed here (BLADE's value hash), so frames never leave the job.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from evaluation.sandbox.registry import sandbox_job

if TYPE_CHECKING:
    from evaluation.sandbox.runtime import JobContext

__all__ = ["CONVERT_JOB", "convert_code", "convert_code_job"]

CONVERT_JOB = "groundtruth.convert_transform"


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
    "groupby_cols", "code", "kind", "columns", "hashes", "notes"}], "columns": [...], "error": str | None}``."""
    from evaluation.groundtruth.hashing import ColumnHasher
    from evaluation.groundtruth.jobs import pandas15_compat

    pandas15_compat()
    hasher = ColumnHasher()
    if "codes" in payload:
        return {"results": [_convert_one(code, table, hasher) for code in payload["codes"]]}
    return _convert_one(payload["code"], table, hasher)


def _convert_one(code: str, table: Any, hasher: Any) -> dict[str, Any]:
    import pandas as pd

    from evaluation.groundtruth.jobs import _error, _fork, _namespace
    from evaluation.inference import infer_transform
    from evaluation.inference_ast import analyse_code

    result: dict[str, Any] = {"units": [], "columns": [str(c) for c in table.columns], "error": None}
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        result["error"] = f"the transform code does not parse (line {exc.lineno}: {exc.msg})"
        return result
    ns = _namespace(table)
    before = ns["df"].copy(deep=True)
    before_state = _state(before, hasher)
    pending: list[str] = []
    units: list[dict[str, Any]] = []
    for stmt in tree.body:
        text = ast.get_source_segment(code, stmt) or ast.unparse(stmt)
        try:
            exec(compile(ast.Module(body=[stmt], type_ignores=[]), "<transform>", "exec"), ns)  # noqa: S102
        except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt...: the code's failure too
            result["error"] = f"the transform code raised at line {stmt.lineno}: {_error(exc, 'transform')}"
            break
        after = ns.get("df")
        after_state = _state(after, hasher)
        pending.append(text)
        if not isinstance(before, pd.DataFrame):
            before_frame = getattr(before, "obj", None)
            before_frame = before_frame if isinstance(before_frame, pd.DataFrame) else table
        else:
            before_frame = before
        namespace = {k: v for k, v in ns.items() if k != "__builtins__"}
        segment = "\n".join(pending)
        if after_state == before_state:
            # nothing changed: a helper, unless it is a row operation on df that happened to keep every row
            # (an expert still annotates ``df = df[df.age <= 55]`` as a filter when no age is above 55)
            if not _writes_df(stmt):
                continue
            inferred = infer_transform(segment, before_frame, after, namespace=namespace)
            if inferred.verb not in _ROW_VERBS:
                continue
        else:
            inferred = infer_transform(segment, before_frame, after, namespace=namespace)
        pending = []
        keys: list[str] = []
        if inferred.verb == "rollup":
            effects = analyse_code(segment, before_frame.columns, namespace)
            for names, _deps in effects.groupbys:
                keys += [n for n in names if n not in keys]
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
        before = after.copy(deep=True) if isinstance(after, pd.DataFrame) else _fork({"x": after})["x"]
        before_state = after_state
    result["units"] = _fold_consumed(units)
    final = ns.get("df")
    if result["error"] is None and not isinstance(final, pd.DataFrame | pd.Series):
        result["error"] = (f"the transform code left df as {_kind_of(final)}, not a data frame, so what it "
                           "computed last has no columns to match")
    return result


def _kind_of(value: Any) -> str:
    """What a non-frame value is, in words (a transform returning None, a number or a generator says so)."""
    import inspect
    import numbers

    if value is None:
        return "None"
    name = type(value).__name__
    if isinstance(value, bool):
        return f"a boolean ({name})"
    if isinstance(value, numbers.Number):
        return f"a number ({name})"
    if inspect.isgenerator(value):
        return "a generator"
    return name


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
    """The sandbox job: the table is read before the agent's code runs, then the data file is closed."""
    table = ctx.load_table()
    ctx.untrusted()
    return convert_code(ctx.payload, table)
