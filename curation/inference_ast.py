"""Static dataflow analysis of a transform's pandas code.

A small abstract interpreter walks the statements of the code (as BLADE stores it: statements on a frame named
``df``, no function wrapper) and tracks, per column of every frame value, which columns of the frame *before the
code* its values come from. It follows local variables, lambdas and functions defined in the code (by inlining
them), comprehensions and loops over literal column lists, row operations (masks, ``query``, ``dropna``,
``drop_duplicates``, ``sort_values``), group-bys and their aggregations, ``rename``/``assign``/``insert``/
``get_dummies``/``merge``/``concat`` and in-place methods. Anything it does not know is treated conservatively:
the result depends on everything its operands depend on.

Nothing is executed here; :mod:`curation.inference` combines this with what running the code really did.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

__all__ = [
    "CodeEffects",
    "ColInfo",
    "Frame",
    "RowOp",
    "analyse_code",
    "order_columns",
    "rewrite_groupby_targets",
]

_NO: Any = object()  # "no constant value"
_EMPTY: frozenset[str] = frozenset()
_MAX_INLINE_DEPTH = 6
_MAX_UNROLL = 200
_MAX_STEPS = 200_000  # expressions evaluated; analyst code needs a few hundred, this bounds pathological code


@dataclass(eq=False)
class ColInfo:
    """What the analysis knows about one column of a frame value."""

    deps: frozenset[str]
    written: bool = False  # assigned by the code (not just passed through)
    blanket: bool = False  # written by a whole-frame method (``df.fillna(0)``): an output only if it changed
    fill: bool = False  # the last write filled missing values (fillna, interpolate, isna-mask assignment)
    reduced: bool = False  # values are aggregates of a group-by


@dataclass(frozen=True)
class RowOp:
    """A row operation applied to a frame: ``filter``, ``deduplicate``, ``orderby`` or ``slice``."""

    kind: str
    inputs: frozenset[str]


@dataclass(eq=False)
class Frame:
    """A frame (or group-by) value: its known columns and how its rows were derived."""

    cols: dict[str, ColInfo] = field(default_factory=dict)
    identity: bool = False  # an unknown column name resolves to the original column of that name
    base: frozenset[str] = _EMPTY  # deps of unknown columns of an opaque frame
    unknown_new: frozenset[str] | None = None  # deps of unknown *new* columns (concat/merge of opaque parts)
    patterns: list[tuple[str, frozenset[str]]] = field(default_factory=list)  # name prefix -> deps
    removed: set[str] = field(default_factory=set)
    row_ops: list[RowOp] = field(default_factory=list)
    from_df: bool = False
    aggregated: bool = False  # the rows are groups (result of a group-by aggregation)
    # group-by objects only
    group_keys: frozenset[str] | None = None
    group_key_names: list[str] = field(default_factory=list)
    key_in_code: bool = False
    as_index: bool = True
    selection: list[str] | None = None
    series_selection: bool = False

    def clone(self) -> Frame:
        return replace(
            self,
            cols={name: replace(info) for name, info in self.cols.items()},
            patterns=list(self.patterns),
            removed=set(self.removed),
            row_ops=list(self.row_ops),
            group_key_names=list(self.group_key_names),
            selection=None if self.selection is None else list(self.selection),
        )

    def names(self) -> list[str]:
        return [name for name in self.cols if name not in self.removed]


@dataclass(eq=False)
class Val:
    """An abstract value: its kind, the original columns it depends on, and what else is known."""

    kind: str = "scalar"  # scalar | series | frame | groupby | func | module | list | dict | indexer | none
    deps: frozenset[str] = _EMPTY
    internal: frozenset[str] = _EMPTY  # columns written earlier in the code that this value read
    const: Any = _NO
    frame: Frame | None = None
    items: list[Val] | None = None
    dkeys: list[Any] | None = None
    func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | None = None
    closure: _Scope | None = None
    origin: tuple[Frame, str] | None = None
    module: str | None = None
    indexer: str | None = None
    fill: bool = False
    isna: bool = False
    reduced: bool = False
    name: str | None = None
    elem: Val | None = None


@dataclass
class CodeEffects:
    """What the code does to ``df`` according to the static analysis."""

    df: Frame | None  # the frame bound to ``df`` at the end (None if ``df`` is not a frame any more)
    df_kind: str
    consumed: set[str]  # columns written by the code and then read by another output or a row operation
    groupbys: list[tuple[list[str], frozenset[str]]]  # (key names, key deps) of each ``.groupby`` call
    side_frames: dict[str, Frame]  # other variables holding frames derived from ``df`` with row operations
    reads: frozenset[str]  # every original column the code reads
    error: str | None = None


class _Scope:
    def __init__(self, parent: _Scope | None = None) -> None:
        self.vars: dict[str, Val] = {}
        self.parent = parent

    def lookup(self, name: str) -> Val | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        return None


class _TooComplex(Exception):
    pass


@dataclass
class _FuncCtx:
    seen: set[str] = field(default_factory=set)
    internal: set[str] = field(default_factory=set)
    returns: list[Val] = field(default_factory=list)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_REDUCTIONS = _words(
    "mean median sum std var min max count nunique quantile prod sem skew kurt kurtosis mode any all "
    "idxmax idxmin first last size"
)
_FILL_METHODS = _words("fillna interpolate ffill bfill backfill pad combine_first")
_GROUP_TRANSFORMS = _words(
    "transform cumsum cumprod cummax cummin cumcount rank shift diff pct_change fillna ffill bfill"
)
_FRAME_ATTRS = _words(
    "shape index columns dtypes values size ndim empty T axes iloc loc at iat str dt cat plot attrs"
)
_INDEXERS = frozenset({"loc", "iloc", "at", "iat"})
_SAFE_BUILTINS: dict[str, Callable[..., Any]] = {
    "list": list,
    "tuple": tuple,
    "sorted": sorted,
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "min": min,
    "max": max,
    "sum": sum,
    "range": range,
    "zip": zip,
    "enumerate": enumerate,
    "dict": dict,
    "set": set,
    "reversed": reversed,
    "abs": abs,
    "round": round,
}
_SAFE_CONST_METHODS = _words(
    "format join replace lower upper strip lstrip rstrip split startswith endswith title capitalize "
    "keys values items get index count copy"
)
_MODULE_ALIASES = {"pandas": "pd", "numpy": "np"}


def _is_const(v: Val) -> bool:
    return v.const is not _NO


def _str_list(v: Val) -> list[str] | None:
    """Column names held by a value: a string, a list/tuple of strings, or an Index of names."""
    if _is_const(v):
        c = v.const
        if isinstance(c, str):
            return [c]
        if isinstance(c, list | tuple) and all(isinstance(x, str) for x in c):
            return list(c)
        return None
    if v.items is not None and v.kind == "list":
        out: list[str] = []
        for item in v.items:
            sub = _str_list(item)
            if sub is None or len(sub) != 1:
                return None
            out.extend(sub)
        return out
    return None


def _frame_deps(frame: Frame) -> frozenset[str]:
    """What a reference to a whole frame depends on: named columns of a selection, nothing for ``df`` itself."""
    if frame.identity:
        return _EMPTY
    out: set[str] = set(frame.base)
    for info in frame.cols.values():
        out |= info.deps
    return frozenset(out)


def _deps(v: Val) -> frozenset[str]:
    if v.kind in ("frame", "groupby") and v.frame is not None:
        return _frame_deps(v.frame) | v.deps
    if v.items is not None:
        return frozenset().union(v.deps, *(_deps(i) for i in v.items))
    return v.deps


def _internal(v: Val) -> frozenset[str]:
    if v.items is not None:
        return frozenset().union(v.internal, *(_internal(i) for i in v.items))
    return v.internal


def _join(vals: Iterable[Val], kind: str | None = None) -> Val:
    vals = list(vals)
    deps = frozenset().union(*(_deps(v) for v in vals)) if vals else _EMPTY
    internal = frozenset().union(*(_internal(v) for v in vals)) if vals else _EMPTY
    if kind is None:
        kind = "series" if any(v.kind in ("series", "frame", "groupby") for v in vals) else "scalar"
    return Val(kind=kind, deps=deps, internal=internal, reduced=any(v.reduced for v in vals))


def _order_key(columns: list[str]) -> Callable[[str], tuple[int, str]]:
    pos = {c: i for i, c in enumerate(columns)}
    return lambda c: (pos.get(c, len(pos)), c)


class _Interpreter:
    def __init__(self, columns: list[str], namespace: Mapping[str, Any] | None) -> None:
        self.columns = [str(c) for c in columns]
        self.column_set = set(self.columns)
        self.ns = dict(namespace or {})
        self.globals = _Scope()
        self.scope = self.globals
        self.consumed: set[str] = set()
        self.groupbys: list[tuple[list[str], frozenset[str]]] = []
        self.reads: set[str] = set()
        self.ctx: list[_FuncCtx] = []
        self.depth = 0
        self.steps = 0
        self.df0 = Frame(cols={c: ColInfo(frozenset({c})) for c in self.columns}, identity=True, from_df=True)
        self.globals.vars["df"] = Val(kind="frame", frame=self.df0)

    # ------------------------------------------------------------------ columns
    def read_col(self, frame: Frame, name: str) -> Val:
        info = frame.cols.get(name)
        if info is None or name in frame.removed:
            deps: frozenset[str]
            if frame.identity and (frame.unknown_new is None or name in self.column_set):
                deps = frozenset({name})
            elif (pat := self.match_pattern(frame, name)) is not None:
                deps = pat
            elif frame.identity and frame.unknown_new is not None:
                deps = frame.unknown_new
            else:
                deps = frame.base
            info = ColInfo(deps)
        internal = frozenset({name}) if info.written else _EMPTY
        self.reads |= info.deps
        return Val(
            kind="series",
            deps=info.deps,
            internal=internal,
            origin=(frame, name),
            fill=info.fill,
            reduced=info.reduced,
            name=name,
        )

    @staticmethod
    def match_pattern(frame: Frame, name: str) -> frozenset[str] | None:
        best: tuple[int, frozenset[str]] | None = None
        for prefix, deps in frame.patterns:
            if name.startswith(prefix) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), deps)
        return None if best is None else best[1]

    def known_col(self, frame: Frame, name: str) -> bool:
        if name in frame.removed:
            return False
        return name in frame.cols or (frame.identity and name in self.column_set)

    def consume(self, internal: Iterable[str], target: str | None = None) -> None:
        for name in internal:
            if name != target:
                self.consumed.add(name)

    def write_cols(
        self,
        frame: Frame,
        names: list[str],
        value: Val,
        *,
        extra: Val | None = None,
        partial: bool = False,
        fill_hint: bool = False,
    ) -> None:
        per_name = self.split_value(value, names)
        extra_deps = _deps(extra) if extra is not None else _EMPTY
        extra_internal = _internal(extra) if extra is not None else _EMPTY
        for name, (deps, internal, fill, reduced) in zip(names, per_name, strict=True):
            prev = frame.cols.get(name)
            new_deps = deps | extra_deps
            if partial and prev is not None and prev.written and name not in frame.removed:
                # a masked update keeps the rest of what this code already wrote into the column
                new_deps = new_deps | prev.deps
                fill = fill or prev.fill or fill_hint
                reduced = reduced or prev.reduced
            elif partial:
                fill = fill or fill_hint
            self.consume(internal | extra_internal, target=name)
            frame.cols[name] = ColInfo(new_deps, written=True, fill=fill, reduced=reduced)
            frame.removed.discard(name)

    def split_value(
        self, value: Val, names: list[str]
    ) -> list[tuple[frozenset[str], frozenset[str], bool, bool]]:
        """One (deps, internal, fill, reduced) per target column; frames and lists pair up by position."""
        if value.kind in ("frame", "groupby") and value.frame is not None and not value.frame.identity:
            src = value.frame
            src_names = src.names()
            if len(names) > 1 and len(src_names) == len(names):
                return [self.col_tuple(src, s) for s in src_names]
            if all(n in src.cols for n in names):
                return [self.col_tuple(src, n) for n in names]
        if value.kind in ("frame", "groupby") and value.frame is not None and value.frame.identity:
            src = value.frame
            if len(names) > 1 and all(self.known_col(src, n) for n in names):
                return [self.col_tuple(src, n) for n in names]
        if value.items is not None and len(value.items) == len(names) and len(names) > 1:
            return [(_deps(i), _internal(i), i.fill, i.reduced) for i in value.items]
        one = (_deps(value), _internal(value), value.fill, value.reduced)
        return [one for _ in names]

    def col_tuple(self, frame: Frame, name: str) -> tuple[frozenset[str], frozenset[str], bool, bool]:
        v = self.read_col(frame, name)
        return v.deps, v.internal, v.fill, v.reduced

    # ------------------------------------------------------------------ statements
    def run(self, tree: ast.Module) -> None:
        self.exec_block(tree.body)

    def exec_block(self, stmts: Iterable[ast.stmt]) -> None:
        for st in stmts:
            self.exec_stmt(st)

    def exec_stmt(self, st: ast.stmt) -> None:
        if isinstance(st, ast.Assign):
            value = self.ev(st.value)
            for target in st.targets:
                self.assign(target, value)
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self.assign(st.target, self.ev(st.value))
        elif isinstance(st, ast.AugAssign):
            current = self.ev(st.target)  # evaluation does not depend on the load/store context
            value = self.binop([current, self.ev(st.value)])
            self.assign(st.target, value)
        elif isinstance(st, ast.Expr):
            self.ev(st.value)
        elif isinstance(st, ast.FunctionDef | ast.AsyncFunctionDef):
            self.scope.vars[st.name] = Val(kind="func", func=st, closure=self.scope)
        elif isinstance(st, ast.Return):
            value = self.ev(st.value) if st.value is not None else Val(kind="none")
            if self.ctx:
                self.ctx[-1].returns.append(value)
        elif isinstance(st, ast.If):
            self.ev(st.test)
            self.exec_block(st.body)
            self.exec_block(st.orelse)
        elif isinstance(st, ast.For | ast.AsyncFor):
            self.exec_for(st.target, st.iter, st.body)
            self.exec_block(st.orelse)
        elif isinstance(st, ast.While):
            self.ev(st.test)
            self.exec_block(st.body)
            self.exec_block(st.orelse)
        elif isinstance(st, ast.With | ast.AsyncWith):
            for item in st.items:
                v = self.ev(item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, v)
            self.exec_block(st.body)
        elif isinstance(st, ast.Try):
            self.exec_block(st.body)
            for handler in st.handlers:
                self.exec_block(handler.body)
            self.exec_block(st.orelse)
            self.exec_block(st.finalbody)
        elif isinstance(st, ast.Import):
            for alias in st.names:
                name = alias.asname or alias.name.split(".")[0]
                module = alias.name if alias.asname else alias.name.split(".")[0]
                self.scope.vars[name] = Val(kind="module", module=_MODULE_ALIASES.get(module, module))
        elif isinstance(st, ast.ImportFrom):
            for alias in st.names:
                mod = _MODULE_ALIASES.get(st.module or "", st.module or "")
                self.scope.vars[alias.asname or alias.name] = Val(kind="module", module=f"{mod}.{alias.name}")
        elif isinstance(st, ast.Delete):
            for target in st.targets:
                self.delete(target)
        elif isinstance(st, ast.Global | ast.Nonlocal | ast.Pass | ast.Break | ast.Continue):
            return
        else:
            for child in ast.iter_child_nodes(st):
                if isinstance(child, ast.expr):
                    self.ev(child)
                elif isinstance(child, ast.stmt):
                    self.exec_stmt(child)

    def exec_for(self, target: ast.expr, iter_node: ast.expr, body: list[ast.stmt]) -> None:
        it = self.ev(iter_node)
        elements = self.iter_elements(it)
        if elements is not None:
            for element in elements[:_MAX_UNROLL]:
                self.assign(target, element)
                self.exec_block(body)
            return
        element = it.elem or Val(kind="scalar", deps=_deps(it), internal=_internal(it))
        for _ in range(2):  # twice, so values carried around the loop reach a fixed point
            self.assign(target, element)
            self.exec_block(body)

    def iter_elements(self, it: Val) -> list[Val] | None:
        if _is_const(it):
            c = it.const
            if isinstance(c, list | tuple | set | frozenset | range | dict):
                return [Val(kind="scalar", const=x) for x in itertools.islice(iter(c), _MAX_UNROLL)]
            return None
        if it.kind == "list" and it.items is not None:
            return list(it.items)
        return None

    def delete(self, target: ast.expr) -> None:
        if isinstance(target, ast.Subscript):
            base = self.ev(target.value)
            if base.kind == "frame" and base.frame is not None:
                names = _str_list(self.ev(target.slice))
                for name in names or []:
                    base.frame.cols.pop(name, None)
                    base.frame.removed.add(name)
        elif isinstance(target, ast.Name):
            self.scope.vars.pop(target.id, None)

    def assign(self, target: ast.expr, value: Val) -> None:
        if isinstance(target, ast.Name):
            self.scope.vars[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            elts = target.elts
            if value.items is not None and len(value.items) == len(elts):
                for t, v in zip(elts, value.items, strict=True):
                    self.assign(t, v)
            elif _is_const(value) and isinstance(value.const, list | tuple) and len(value.const) == len(elts):
                for t, c in zip(elts, value.const, strict=True):
                    self.assign(t, Val(const=c))
            else:
                for t in elts:
                    self.assign(
                        t,
                        Val(
                            kind=value.kind if value.kind != "list" else "scalar",
                            deps=_deps(value),
                            internal=_internal(value),
                        ),
                    )
        elif isinstance(target, ast.Starred):
            self.assign(target.value, value)
        elif isinstance(target, ast.Subscript):
            self.assign_subscript(target, value)
        elif isinstance(target, ast.Attribute):
            base = self.ev(target.value)
            if base.kind == "frame" and base.frame is not None:
                frame = base.frame
                if target.attr == "columns":
                    self.set_columns(frame, value)
                elif target.attr in frame.cols and target.attr not in frame.removed:
                    self.write_cols(frame, [target.attr], value)

    def assign_subscript(self, target: ast.Subscript, value: Val) -> None:
        base = self.ev(target.value)
        if base.kind == "frame" and base.frame is not None:
            key = self.ev(target.slice)
            names = _str_list(key)
            if names:
                self.write_cols(base.frame, names, value)
            elif key.kind in ("series", "frame"):  # df[mask] = value: every column, masked
                self.write_all(base.frame, value, extra=key)
            return
        if base.kind == "indexer" and base.frame is not None:
            frame = base.frame
            slc = target.slice
            if isinstance(slc, ast.Tuple) and len(slc.elts) == 2:
                row_node, col_node = slc.elts
                rows = self.ev(row_node)
                cols = self.ev(col_node)
                names = _str_list(cols)
                if names is None and base.indexer in ("iloc", "iat"):
                    names = self.positions_to_names(frame, cols)
                full = _is_full_slice(row_node)
                if names:
                    self.write_cols(
                        frame,
                        names,
                        value,
                        extra=None if full else rows,
                        partial=not full,
                        fill_hint=rows.isna,
                    )
                else:
                    self.write_all(frame, value, extra=rows)
            else:
                rows = self.ev(slc)
                self.write_all(frame, value, extra=rows)
            return
        if base.kind == "series" and base.origin is not None:  # df['x'][mask] = value
            frame, name = base.origin
            key = self.ev(target.slice)
            self.write_cols(frame, [name], value, extra=key, partial=True, fill_hint=key.isna)
            return
        if _is_const(base):
            key = self.ev(target.slice)
            if _is_const(key) and _is_const(value) and isinstance(base.const, dict | list):
                with contextlib.suppress(TypeError, IndexError):
                    base.const[key.const] = value.const

    def write_all(self, frame: Frame, value: Val, extra: Val | None) -> None:
        names = frame.names()
        if not names:
            return
        for name in names:
            info = frame.cols.get(name) or ColInfo(frozenset({name}))
            deps = info.deps | _deps(value) | (_deps(extra) if extra is not None else _EMPTY)
            frame.cols[name] = ColInfo(
                deps, written=True, blanket=True, fill=extra is not None and extra.isna
            )

    def positions_to_names(self, frame: Frame, cols: Val) -> list[str] | None:
        order = frame.names()
        c = cols.const if _is_const(cols) else None
        idx = (
            [c]
            if isinstance(c, int)
            else c
            if isinstance(c, list) and all(isinstance(i, int) for i in c)
            else None
        )
        if idx is None:
            return None
        try:
            return [order[i] for i in idx]
        except IndexError:
            return None

    def set_columns(self, frame: Frame, value: Val) -> None:
        new = _str_list(value)
        if new is None:
            return
        old = frame.names()
        written = [frame.cols[n] for n in old if frame.cols[n].written]
        if len(old) == len(new):
            cols: dict[str, ColInfo] = {}
            for o, n in zip(old, new, strict=True):
                info = replace(frame.cols[o])
                if o != n:
                    info.written = True
                    frame.removed.add(o)
                cols[n] = info
        else:  # unknown layout: a new name inherits what the frame's written columns hold
            deps = frozenset().union(frame.base, *(i.deps for i in written))
            reduced = any(i.reduced for i in written) or frame.aggregated
            cols = {
                n: replace(frame.cols[n]) if n in frame.cols else ColInfo(deps, written=True, reduced=reduced)
                for n in new
            }
        frame.cols = cols
        frame.removed -= set(new)

    # ------------------------------------------------------------------ expressions
    def ev(self, node: ast.expr | None) -> Val:
        if node is None:
            return Val(kind="none")
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _TooComplex
        method = getattr(self, f"ev_{type(node).__name__}", None)
        v: Val = method(node) if method is not None else self.ev_generic(node)
        if self.ctx and v.kind in ("scalar", "series"):
            self.ctx[-1].seen |= v.deps
            self.ctx[-1].internal |= v.internal
        return v

    def ev_generic(self, node: ast.AST) -> Val:
        parts = [self.ev(child) for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
        return _join(parts)

    def ev_Constant(self, node: ast.Constant) -> Val:
        return Val(const=node.value)

    def ev_JoinedStr(self, node: ast.JoinedStr) -> Val:
        out = []
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                out.append(str(value.value))
                continue
            assert isinstance(value, ast.FormattedValue)
            v = self.ev(value.value)
            parts.append(v)
            if _is_const(v) and value.format_spec is None and value.conversion == -1:
                out.append(str(v.const))
            else:
                out.append("\0")
        text = "".join(out)
        if "\0" not in text:
            return Val(const=text)
        return _join(parts, kind="scalar")

    def ev_Name(self, node: ast.Name) -> Val:
        found = self.scope.lookup(node.id)
        if found is not None:
            return found
        v = self.from_namespace(node.id)
        self.globals.vars[node.id] = v
        return v

    def from_namespace(self, name: str) -> Val:
        obj = self.ns.get(name, _NO)
        if obj is _NO and f"{name}_grp" in self.ns:
            obj = self.ns[f"{name}_grp"]
        if isinstance(obj, pd.core.groupby.DataFrameGroupBy | pd.core.groupby.SeriesGroupBy):
            frame = Frame(identity=True, from_df=True, group_keys=_EMPTY)
            underlying = getattr(obj, "obj", None)
            if isinstance(underlying, pd.DataFrame):
                frame.cols = {str(c): ColInfo(frozenset({str(c)})) for c in underlying.columns}
            keys = getattr(obj, "keys", None)
            key_names = [keys] if isinstance(keys, str) else list(keys) if isinstance(keys, list) else []
            frame.group_key_names = [k for k in key_names if isinstance(k, str)]
            frame.as_index = bool(getattr(obj, "as_index", True))
            return Val(kind="groupby", frame=frame)
        if isinstance(obj, pd.DataFrame):
            frame = Frame(
                cols={str(c): ColInfo(frozenset({str(c)})) for c in obj.columns}, identity=True, from_df=True
            )
            # a frame an earlier transform aggregated (fewer rows than df): merging it back is a rollup
            df_now = self.ns.get("df")
            frame.aggregated = isinstance(df_now, pd.DataFrame) and len(obj) < len(df_now)
            return Val(kind="frame", frame=frame)
        if isinstance(obj, pd.Series):
            nm = str(obj.name) if obj.name is not None else None
            deps = frozenset({nm}) if nm in self.column_set else _EMPTY
            return Val(kind="series", deps=deps)
        if obj is not _NO:
            if isinstance(obj, str | int | float | bool | list | tuple | dict) and _plain(obj):
                return Val(const=obj)
            module = getattr(obj, "__name__", None) if type(obj).__name__ == "module" else None
            if module is not None:
                return Val(kind="module", module=_MODULE_ALIASES.get(module, module))
            return Val(kind="scalar")
        # without a namespace: names that look like frames or BLADE's rewritten group-bys
        if name.endswith("_grp"):
            return Val(kind="groupby", frame=Frame(identity=True, from_df=True, group_keys=_EMPTY))
        if name.startswith("df"):
            return Val(kind="frame", frame=Frame(identity=True, from_df=True))
        return Val(kind="module", module=_MODULE_ALIASES.get(name, name))

    def ev_List(self, node: ast.List | ast.Tuple | ast.Set) -> Val:
        items = [self.ev(e) for e in node.elts]
        if all(_is_const(i) for i in items):
            consts = [i.const for i in items]
            return Val(const=tuple(consts) if isinstance(node, ast.Tuple) else consts)
        return Val(kind="list", items=items)

    ev_Tuple = ev_List
    ev_Set = ev_List

    def ev_Dict(self, node: ast.Dict) -> Val:
        keys = [self.ev(k) if k is not None else Val() for k in node.keys]
        values = [self.ev(v) for v in node.values]
        if all(_is_const(k) for k in keys) and all(_is_const(v) for v in values):
            try:
                return Val(const={k.const: v.const for k, v in zip(keys, values, strict=True)})
            except TypeError:
                pass
        return Val(kind="dict", items=values, dkeys=[k.const if _is_const(k) else None for k in keys])

    def ev_Lambda(self, node: ast.Lambda) -> Val:
        return Val(kind="func", func=node, closure=self.scope)

    def ev_IfExp(self, node: ast.IfExp) -> Val:
        return _join([self.ev(node.test), self.ev(node.body), self.ev(node.orelse)])

    def ev_NamedExpr(self, node: ast.NamedExpr) -> Val:
        v = self.ev(node.value)
        self.assign(node.target, v)
        return v

    def ev_Starred(self, node: ast.Starred) -> Val:
        return self.ev(node.value)

    def ev_Slice(self, node: ast.Slice) -> Val:
        parts = [self.ev(p) for p in (node.lower, node.upper, node.step)]
        if all(_is_const(p) or p.kind == "none" for p in parts):
            lo, hi, st = (p.const if _is_const(p) else None for p in parts)
            return Val(const=slice(lo, hi, st))
        return _join(parts, kind="scalar")

    def ev_UnaryOp(self, node: ast.UnaryOp) -> Val:
        v = self.ev(node.operand)
        if _is_const(v):
            try:
                return Val(const=_UNARY[type(node.op)](v.const))
            except Exception:
                pass
        if v.kind == "frame":
            return self.elementwise(v, [])
        return Val(
            kind=v.kind if v.kind in ("series", "scalar") else "series",
            deps=_deps(v),
            internal=_internal(v),
            reduced=v.reduced,
        )

    def ev_BinOp(self, node: ast.BinOp) -> Val:
        left, right = self.ev(node.left), self.ev(node.right)
        if _is_const(left) and _is_const(right):
            folded = _fold(_BINARY.get(type(node.op)), left.const, right.const)
            if folded is not _NO:
                return Val(const=folded)
        return self.binop([left, right])

    def ev_BoolOp(self, node: ast.BoolOp) -> Val:
        vals = [self.ev(v) for v in node.values]
        out = self.binop(vals)
        out.isna = any(v.isna for v in vals)
        return out

    def ev_Compare(self, node: ast.Compare) -> Val:
        return self.binop([self.ev(node.left), *(self.ev(c) for c in node.comparators)])

    def binop(self, vals: list[Val]) -> Val:
        frames = [v for v in vals if v.kind == "frame" and v.frame is not None]
        if frames:
            return self.elementwise(frames[0], [v for v in vals if v is not frames[0]])
        out = _join(vals)
        return out

    def elementwise(self, fv: Val, others: list[Val]) -> Val:
        """An element-wise operation on a frame: each column keeps its own inputs plus the other operands'."""
        assert fv.frame is not None
        src = fv.frame
        new = Frame(from_df=src.from_df, aggregated=src.aggregated, row_ops=list(src.row_ops))
        extra: set[str] = set()
        extra_internal: set[str] = set()
        other_frames: list[Frame] = []
        for o in others:
            if o.kind == "frame" and o.frame is not None:
                other_frames.append(o.frame)
            else:
                extra |= _deps(o)
                extra_internal |= _internal(o)
        for name in src.names():
            v = self.read_col(src, name)
            deps = set(v.deps) | extra
            for of in other_frames:
                if self.known_col(of, name):
                    deps |= self.read_col(of, name).deps
                else:
                    deps |= _frame_deps(of)
            new.cols[name] = ColInfo(frozenset(deps), written=True, blanket=True, reduced=v.reduced)
        return Val(kind="frame", frame=new, internal=frozenset(extra_internal))

    def ev_Attribute(self, node: ast.Attribute) -> Val:
        base = self.ev(node.value)
        attr = node.attr
        if base.kind == "module":
            return Val(kind="module", module=f"{base.module}.{attr}")
        if base.kind in ("frame", "groupby") and base.frame is not None:
            frame = base.frame
            if attr in _INDEXERS and base.kind == "frame":
                return Val(kind="indexer", frame=frame, indexer=attr)
            if attr == "columns":
                return Val(const=frame.names())
            if attr == "index":
                inputs = frozenset().union(*(op.inputs for op in frame.row_ops)) if frame.row_ops else _EMPTY
                return Val(kind="series", deps=inputs)
            if attr not in _FRAME_ATTRS and self.known_col(frame, attr):
                if base.kind == "groupby":
                    return self.group_select(base, [attr], series=True)
                return self.read_col(frame, attr)
            return Val(kind="scalar") if attr in ("shape", "size", "ndim", "empty") else base
        if _is_const(base):
            return Val()
        # series accessors (.str, .dt, .values, .cat) keep the series
        return base

    def ev_Subscript(self, node: ast.Subscript) -> Val:
        base = self.ev(node.value)
        if base.kind == "indexer" and base.frame is not None:
            return self.index_read(base, node.slice)
        key = self.ev(node.slice)
        if base.kind == "frame" and base.frame is not None:
            frame = base.frame
            names = _str_list(key)
            if names is not None:
                if _is_const(key) and isinstance(key.const, str):
                    return self.read_col(frame, names[0])
                return self.select(frame, names)
            if _is_const(key) and isinstance(key.const, slice):
                return self.with_row_op(base, RowOp("slice", _EMPTY))
            if key.kind in ("series", "scalar") and not _is_const(key):
                return self.with_row_op(base, RowOp("filter", key.deps), internal=key.internal)
            return base
        if base.kind == "groupby" and base.frame is not None:
            names = _str_list(key)
            if names is not None:
                return self.group_select(base, names, series=isinstance(key.const, str))
            return base
        if _is_const(base) and _is_const(key):
            try:
                return Val(const=base.const[key.const])
            except Exception:
                return Val()
        if base.kind == "list" and base.items is not None and _is_const(key) and isinstance(key.const, int):
            try:
                return base.items[key.const]
            except IndexError:
                return _join(base.items)
        if base.kind == "dict" and base.items is not None and base.dkeys is not None and _is_const(key):
            for k, v in zip(base.dkeys, base.items, strict=True):
                if k == key.const:
                    return v
        out = _join([base, key], kind=base.kind if base.kind in ("series", "scalar") else "series")
        out.reduced = base.reduced
        return out

    def index_read(self, base: Val, slc: ast.expr) -> Val:
        assert base.frame is not None
        frame = base.frame
        if isinstance(slc, ast.Tuple) and len(slc.elts) == 2:
            row_node, col_node = slc.elts
            rows, cols = self.ev(row_node), self.ev(col_node)
            names = _str_list(cols)
            if names is None and base.indexer in ("iloc", "iat"):
                names = self.positions_to_names(frame, cols)
            full = _is_full_slice(row_node)
            if names is not None and isinstance(cols.const, str | int):
                v = self.read_col(frame, names[0])
                if not full:
                    v = replace(
                        v, deps=v.deps | _deps(rows), internal=v.internal | _internal(rows), origin=None
                    )
                return v
            fv = self.select(frame, names) if names is not None else Val(kind="frame", frame=frame)
            if full:
                return fv
            return self.row_subset(fv, rows)
        rows = self.ev(slc)
        return self.row_subset(Val(kind="frame", frame=frame), rows)

    def row_subset(self, fv: Val, rows: Val) -> Val:
        if _is_const(rows):
            return self.with_row_op(fv, RowOp("slice", _EMPTY))
        return self.with_row_op(fv, RowOp("filter", _deps(rows)), internal=_internal(rows))

    def with_row_op(self, fv: Val, op: RowOp, internal: frozenset[str] = _EMPTY) -> Val:
        assert fv.frame is not None
        new = fv.frame.clone()
        new.row_ops.append(op)
        self.consume(internal)
        self.reads |= op.inputs
        return Val(kind=fv.kind, frame=new)

    def select(self, frame: Frame, names: list[str]) -> Val:
        new = Frame(from_df=frame.from_df, aggregated=frame.aggregated, row_ops=list(frame.row_ops))
        internal: set[str] = set()
        for name in names:
            v = self.read_col(frame, name)
            internal |= v.internal
            new.cols[name] = ColInfo(v.deps, written=name in v.internal, fill=v.fill, reduced=v.reduced)
        return Val(kind="frame", frame=new, internal=frozenset(internal))

    def group_select(self, gv: Val, names: list[str], *, series: bool) -> Val:
        assert gv.frame is not None
        new = gv.frame.clone()
        new.selection = names
        new.series_selection = series
        return Val(kind="groupby", frame=new)

    def comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> Val:
        saved = self.scope
        self.scope = _Scope(parent=saved)
        try:
            results: list[Val] = []
            keys: list[Val] = []

            def walk(i: int) -> None:
                if i == len(node.generators):
                    if isinstance(node, ast.DictComp):
                        keys.append(self.ev(node.key))
                        results.append(self.ev(node.value))
                    else:
                        results.append(self.ev(node.elt))
                    return
                gen = node.generators[i]
                it = self.ev(gen.iter)
                elements = self.iter_elements(it)
                if elements is None:
                    elements = [it.elem or Val(kind="scalar", deps=_deps(it), internal=_internal(it))]
                for element in elements[:_MAX_UNROLL]:
                    self.assign(gen.target, element)
                    conds = [self.ev(c) for c in gen.ifs]
                    if all(_is_const(c) for c in conds) and not all(c.const for c in conds):
                        continue
                    walk(i + 1)

            walk(0)
        finally:
            self.scope = saved
        if isinstance(node, ast.DictComp):
            if all(_is_const(k) for k in keys) and all(_is_const(v) for v in results):
                try:
                    return Val(const={k.const: v.const for k, v in zip(keys, results, strict=True)})
                except TypeError:
                    pass
            return Val(kind="dict", items=results, dkeys=[k.const if _is_const(k) else None for k in keys])
        if all(_is_const(r) for r in results):
            return Val(const=[r.const for r in results])
        return Val(kind="list", items=results)

    ev_ListComp = comprehension
    ev_SetComp = comprehension
    ev_GeneratorExp = comprehension
    ev_DictComp = comprehension

    # ------------------------------------------------------------------ calls
    def ev_Call(self, node: ast.Call) -> Val:
        args = [self.ev(a) for a in node.args]
        kw = {k.arg: self.ev(k.value) for k in node.keywords if k.arg is not None}
        for k in node.keywords:
            if k.arg is None:
                extra = self.ev(k.value)
                if _is_const(extra) and isinstance(extra.const, dict):
                    kw.update({str(a): Val(const=b) for a, b in extra.const.items()})
        if isinstance(node.func, ast.Attribute):
            recv = self.ev(node.func.value)
            return self.call_method(recv, node.func.attr, args, kw)
        fv = self.ev(node.func)
        return self.call_value(fv, args, kw, name=node.func.id if isinstance(node.func, ast.Name) else None)

    def call_value(self, fv: Val, args: list[Val], kw: dict[str, Val], name: str | None = None) -> Val:
        if fv.kind == "func":
            return self.inline(fv, args, kw)
        if fv.kind == "module" and name is not None and fv.module == name and name in _SAFE_BUILTINS:
            return self.call_builtin(name, args, kw)
        if fv.kind == "module" and fv.module is not None:
            return self.call_module(fv.module, args, kw)
        return self.generic_call(args, kw)

    def call_builtin(self, name: str, args: list[Val], kw: dict[str, Val]) -> Val:
        if all(_is_const(a) for a in args) and all(_is_const(v) for v in kw.values()):
            try:
                out = _SAFE_BUILTINS[name](*(a.const for a in args), **{k: v.const for k, v in kw.items()})
                if isinstance(out, zip | enumerate | reversed | range | set | dict | list | tuple):
                    out = list(out) if not isinstance(out, dict | tuple | range) else out
                return Val(const=out)
            except Exception:
                pass
        if name == "len":
            return Val(kind="scalar")
        if name in ("list", "tuple", "sorted", "set") and args:
            elements = self.iter_elements(args[0])
            if elements is not None:
                return Val(kind="list", items=elements)
            return args[0]
        if name in ("zip", "enumerate") and args:
            return Val(
                kind="list",
                deps=_join(args).deps,
                elem=Val(
                    kind="list",
                    items=[Val(kind="scalar", deps=_deps(a), internal=_internal(a)) for a in args],
                ),
            )
        return self.generic_call(args, kw)

    def generic_call(self, args: list[Val], kw: dict[str, Val], recv: Val | None = None) -> Val:
        """Unknown call: the result depends on everything passed in (functions passed are called too)."""
        vals = [v for v in [recv, *args, *kw.values()] if v is not None]
        data = [v for v in vals if v.kind != "func"]
        results = list(data)
        element = _join(data)
        for f in vals:
            if f.kind == "func":
                results.append(self.inline(f, [element], {}))
        # string constants naming columns of a frame passed to the call count as reads of those columns
        frames = [v.frame for v in vals if v.kind in ("frame", "groupby") and v.frame is not None]
        for frame in frames:
            for v in vals:
                names = _str_list(v) if _is_const(v) else None
                for name in names or []:
                    if self.known_col(frame, name):
                        results.append(self.read_col(frame, name))
        out = _join(results)
        if (
            recv is not None
            and recv.kind == "scalar"
            and not any(a.kind in ("series", "frame") for a in vals)
        ):
            out.kind = "scalar"
        return out

    def inline(self, fv: Val, args: list[Val], kw: dict[str, Val]) -> Val:
        node = fv.func
        if node is None or self.depth >= _MAX_INLINE_DEPTH:
            return _join([*args, *kw.values()])
        scope = _Scope(parent=fv.closure or self.globals)
        a = node.args
        params = [p.arg for p in [*a.posonlyargs, *a.args]]
        defaults = [self.ev(d) for d in a.defaults]
        for i, p in enumerate(params):
            if i < len(args):
                scope.vars[p] = args[i]
            elif p in kw:
                scope.vars[p] = kw[p]
            else:
                j = i - (len(params) - len(defaults))
                scope.vars[p] = defaults[j] if j >= 0 else Val()
        if a.vararg is not None:
            scope.vars[a.vararg.arg] = Val(kind="list", items=args[len(params) :])
        for kwp, d in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            scope.vars[kwp.arg] = kw.get(kwp.arg) or (self.ev(d) if d is not None else Val())
        if a.kwarg is not None:
            scope.vars[a.kwarg.arg] = Val(kind="dict", items=list(kw.values()), dkeys=list(kw))
        saved = self.scope
        self.scope = scope
        self.depth += 1
        ctx = _FuncCtx()
        self.ctx.append(ctx)
        try:
            if isinstance(node, ast.Lambda):
                ctx.returns.append(self.ev(node.body))
            else:
                self.exec_block(node.body)
        finally:
            self.ctx.pop()
            self.depth -= 1
            self.scope = saved
        frames = [r for r in ctx.returns if r.kind in ("frame", "groupby")]
        if frames:
            return frames[-1]
        kinds = {r.kind for r in ctx.returns}
        kind = "series" if "series" in kinds else "scalar"
        # control flow counts: whatever the body looked at decides what it returns
        deps = frozenset(ctx.seen).union(*(_deps(r) for r in ctx.returns))
        internal = frozenset(ctx.internal).union(*(_internal(r) for r in ctx.returns))
        return Val(
            kind=kind,
            deps=deps,
            internal=internal,
            reduced=any(r.reduced for r in ctx.returns),
            fill=len(ctx.returns) == 1 and ctx.returns[0].fill,
        )

    def call_method(self, recv: Val, name: str, args: list[Val], kw: dict[str, Val]) -> Val:
        if recv.kind == "module" and recv.module is not None:
            return self.call_module(f"{recv.module}.{name}", args, kw)
        if recv.kind == "frame" and recv.frame is not None:
            inplace = kw.pop("inplace", Val(const=False))
            result = self.frame_method(recv, name, args, kw)
            if _is_const(inplace) and inplace.const is True and result.frame is not None:
                _overwrite(recv.frame, result.frame)
                return Val(kind="none")
            return result
        if recv.kind == "groupby" and recv.frame is not None:
            return self.group_method(recv, name, args, kw)
        if recv.kind == "indexer":
            return self.generic_call(args, kw)
        if recv.kind == "func" and name in ("__call__",):
            return self.inline(recv, args, kw)
        if _is_const(recv):
            return self.const_method(recv, name, args, kw)
        if recv.kind == "list" and name in ("append", "extend") and recv.items is not None and args:
            if name == "append":
                recv.items.append(args[0])
            else:
                recv.items.extend(self.iter_elements(args[0]) or [args[0]])
            return Val(kind="none")
        return self.series_method(recv, name, args, kw)

    def const_method(self, recv: Val, name: str, args: list[Val], kw: dict[str, Val]) -> Val:
        c = recv.const
        if name in ("append", "extend", "insert", "update") and isinstance(c, list | dict):
            if all(_is_const(a) for a in args):
                try:
                    getattr(c, name)(*(a.const for a in args))
                    return Val(kind="none")
                except Exception:
                    return Val(kind="none")
            if isinstance(c, list) and name in ("append", "extend"):
                # a list of column names that turns dynamic: keep it as a list of values
                items = [Val(const=x) for x in c]
                recv.const = _NO
                recv.kind = "list"
                recv.items = items
                if name == "append":
                    items.append(args[0])
                else:
                    items.extend(self.iter_elements(args[0]) or [args[0]])
            return Val(kind="none")
        if name in _SAFE_CONST_METHODS and isinstance(c, str | list | tuple | dict):
            if all(_is_const(a) for a in args) and all(_is_const(v) for v in kw.values()):
                try:
                    out = getattr(c, name)(*(a.const for a in args), **{k: v.const for k, v in kw.items()})
                    if type(out).__name__ in ("dict_keys", "dict_values", "dict_items"):
                        out = list(out)
                    return Val(const=out)
                except Exception:
                    pass
            if isinstance(c, str) and name == "join" and args:
                return _join(args, kind="scalar")
        return self.generic_call(args, kw)

    # ---------------------------------------------------------------- frame methods
    def frame_method(self, recv: Val, name: str, args: list[Val], kw: dict[str, Val]) -> Val:
        frame = recv.frame
        assert frame is not None

        def arg(i: int, key: str) -> Val | None:
            if key in kw:
                return kw[key]
            return args[i] if i < len(args) else None

        axis = kw.get("axis")
        axis_cols = axis is not None and _is_const(axis) and axis.const in (1, "columns")
        if name == "copy":
            return Val(kind="frame", frame=frame.clone())
        if name == "dropna":
            if axis_cols:
                return Val(
                    kind="frame", frame=frame.clone()
                )  # columns vanish; the observed change tells which
            subset = arg(3, "subset")
            names = _str_list(subset) if subset is not None else None
            return self.with_row_op(recv, RowOp("filter", self.resolve(frame, names or [])))
        if name == "drop_duplicates":
            subset = arg(0, "subset")
            names = _str_list(subset) if subset is not None else None
            return self.with_row_op(recv, RowOp("deduplicate", self.resolve(frame, names or [])))
        if name == "sort_values":
            by = arg(0, "by")
            names = (_str_list(by) if by is not None else None) or []
            return self.with_row_op(recv, RowOp("orderby", self.resolve(frame, names)))
        if name == "sort_index":
            return self.with_row_op(recv, RowOp("orderby", _EMPTY))
        if name in ("head", "tail", "sample", "take", "truncate"):
            return self.with_row_op(recv, RowOp("slice", _EMPTY))
        if name in ("nlargest", "nsmallest"):
            cols = arg(1, "columns")
            names = (_str_list(cols) if cols is not None else None) or []
            return self.with_row_op(recv, RowOp("slice", self.resolve(frame, names)))
        if name == "query":
            expr = arg(0, "expr")
            if expr is not None and _is_const(expr) and isinstance(expr.const, str):
                v = self.query_deps(expr.const, frame)
                return self.with_row_op(recv, RowOp("filter", v.deps), internal=v.internal)
            return recv
        if name == "drop":
            return self.frame_drop(recv, args, kw)
        if name == "groupby":
            return self.make_groupby(frame, arg(0, "by"), kw, from_df=frame.from_df)
        if name == "rename":
            mapper = kw.get("columns")
            if mapper is None and axis_cols:
                mapper = arg(0, "mapper")
            new = frame.clone()
            if mapper is not None:
                self.rename(new, mapper)
            return Val(kind="frame", frame=new)
        if name in (
            "rename_axis",
            "set_axis",
            "reset_index",
            "set_index",
            "reindex",
            "astype_like",
            "convert_dtypes",
            "infer_objects",
            "to_frame",
            "squeeze",
            "__call__",
        ):
            if name == "reset_index" and frame.aggregated and frame.group_key_names:
                drop = kw.get("drop")
                if not (drop is not None and _is_const(drop) and drop.const):
                    new = frame.clone()
                    with_keys = {k: ColInfo(frozenset({k})) for k in new.group_key_names}
                    with_keys.update(new.cols)
                    new.cols = with_keys
                    return Val(kind="frame", frame=new)
            return Val(kind="frame", frame=frame.clone())
        if name == "assign":
            new = frame.clone()
            nv = Val(kind="frame", frame=new)
            for col, value in kw.items():
                if value.kind == "func":
                    value = self.inline(value, [nv], {})
                self.write_cols(new, [col], value)
            return nv
        if name == "insert":
            col_arg = arg(1, "column")
            value_arg = arg(2, "value")
            if col_arg is not None and _is_const(col_arg) and value_arg is not None:
                self.write_cols(frame, [str(col_arg.const)], value_arg)
            return Val(kind="none")
        if name == "pop":
            item = arg(0, "item")
            names = _str_list(item) if item is not None else None
            if names:
                out = self.read_col(frame, names[0])
                frame.cols.pop(names[0], None)
                frame.removed.add(names[0])
                return out
            return Val(kind="series")
        if name == "eval":
            expr = arg(0, "expr")
            if expr is not None and _is_const(expr) and isinstance(expr.const, str):
                return self.frame_eval(recv, expr.const)
            return recv
        if name == "merge":
            right = arg(0, "right")
            return self.merge(recv, right, kw) if right is not None else recv
        if name == "join":
            other = arg(0, "other")
            return self.merge(recv, other, kw) if other is not None else recv
        if name == "apply" and axis_cols:
            func = arg(0, "func")
            if func is not None and func.kind == "func":
                row = Val(kind="frame", frame=frame.clone())
                res = self.inline(func, [row], {})
                return Val(kind="series", deps=_deps(res), internal=_internal(res))
            return Val(kind="series", deps=self.all_deps(frame))
        if name == "pipe":
            func = arg(0, "func")
            if func is not None and func.kind == "func":
                return self.inline(func, [recv, *args[1:]], kw)
            return recv
        if name in ("fillna", "interpolate", "ffill", "bfill", "backfill", "pad"):
            return self.frame_fill(frame, arg(0, "value") if name == "fillna" else None)
        if name == "astype":
            dtype = arg(0, "dtype")
            if dtype is not None and _is_const(dtype) and isinstance(dtype.const, dict):
                new = frame.clone()
                for col in dtype.const:
                    self.write_cols(new, [str(col)], self.read_col(frame, str(col)))
                return Val(kind="frame", frame=new)
        if name in (
            "replace",
            "astype",
            "round",
            "clip",
            "abs",
            "where",
            "mask",
            "apply",
            "applymap",
            "map",
            "transform",
            "shift",
            "diff",
            "pct_change",
            "rank",
            "cumsum",
            "cumprod",
            "cummax",
            "cummin",
            "add",
            "sub",
            "mul",
            "div",
            "truediv",
            "floordiv",
            "pow",
            "mod",
            "radd",
            "rsub",
            "rmul",
            "rdiv",
            "rtruediv",
            "isna",
            "isnull",
            "notna",
            "notnull",
            "isin",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "rolling",
            "expanding",
            "ewm",
            "combine_first",
            "update",
        ):
            funcs = [a for a in [*args, *kw.values()] if a.kind == "func"]
            others = [a for a in [*args, *kw.values()] if a.kind != "func"]
            out = self.elementwise(recv, others)
            assert out.frame is not None
            for f in funcs:
                for info in out.frame.cols.values():
                    res = self.inline(f, [Val(kind="series", deps=info.deps)], {})
                    info.deps = info.deps | _deps(res)
            if name == "update" and args and args[0].kind == "frame" and args[0].frame is not None:
                upd = args[0].frame
                for col in upd.names():
                    self.write_cols(frame, [col], self.read_col(upd, col))
                return Val(kind="none")
            return out
        if name in _REDUCTIONS or name in ("describe", "corr", "cov", "agg", "aggregate"):
            if axis_cols:
                return Val(kind="series", deps=self.all_deps(frame), internal=self.all_internal(frame))
            out = self.elementwise(recv, [a for a in [*args, *kw.values()] if a.kind != "func"])
            return out
        if name in (
            "melt",
            "pivot",
            "pivot_table",
            "stack",
            "unstack",
            "explode",
            "transpose",
            "T",
            "crosstab",
            "filter",
            "select_dtypes",
            "to_numpy",
            "itertuples",
            "iterrows",
            "items",
            "iteritems",
            "duplicated",
            "value_counts",
            "nunique",
            "memory_usage",
        ):
            if name in ("iterrows", "itertuples", "items", "iteritems"):
                row = Val(kind="frame", frame=frame.clone())
                return Val(
                    kind="list",
                    elem=Val(kind="list", items=[Val(kind="scalar"), row]) if name != "itertuples" else row,
                )
            if name == "duplicated":
                subset = arg(0, "subset")
                names = _str_list(subset) if subset is not None else None
                return Val(kind="series", deps=self.resolve(frame, names) if names else self.all_deps(frame))
            if name in ("filter", "select_dtypes"):
                return Val(kind="frame", frame=frame.clone())
            deps = self.all_deps(frame)
            return Val(kind="frame", frame=Frame(base=deps | _join(args).deps, from_df=frame.from_df))
        # most DataFrame methods return a DataFrame with the same columns
        self.generic_call(args, kw)
        return Val(kind="frame", frame=frame.clone())

    def resolve(self, frame: Frame, names: Iterable[str]) -> frozenset[str]:
        """The original columns behind column names of a frame (through columns the code wrote)."""
        out: set[str] = set()
        for name in names:
            v = self.read_col(frame, name)
            out |= v.deps
            self.consume(v.internal)
        return frozenset(out)

    def all_deps(self, frame: Frame) -> frozenset[str]:
        out: set[str] = set(frame.base)
        for name in frame.names():
            out |= self.read_col(frame, name).deps
        return frozenset(out)

    def all_internal(self, frame: Frame) -> frozenset[str]:
        return frozenset(n for n in frame.names() if frame.cols[n].written)

    def frame_drop(self, recv: Val, args: list[Val], kw: dict[str, Val]) -> Val:
        frame = recv.frame
        assert frame is not None
        axis = kw.get("axis")
        axis_cols = axis is not None and _is_const(axis) and axis.const in (1, "columns")
        cols = kw.get("columns")
        labels = kw.get("labels", args[0] if args else None)
        index = kw.get("index")
        new = frame.clone()
        if cols is None and axis_cols:
            cols = labels
        elif index is None and labels is not None and not axis_cols:
            index = labels
        if cols is not None:
            for name in _str_list(cols) or []:
                new.cols.pop(name, None)
                new.removed.add(name)
        if index is not None:
            new.row_ops.append(RowOp("filter", _deps(index)))
            self.consume(_internal(index))
        return Val(kind="frame", frame=new)

    def frame_fill(self, frame: Frame, value: Val | None) -> Val:
        new = frame.clone()
        per_col = None
        if value is not None and _is_const(value) and isinstance(value.const, dict):
            per_col = {str(k): Val(const=v) for k, v in value.const.items()}
        elif (
            value is not None and value.kind == "dict" and value.dkeys is not None and value.items is not None
        ):
            per_col = {str(k): v for k, v in zip(value.dkeys, value.items, strict=True) if k is not None}
        names = list(per_col) if per_col is not None else frame.names()
        for name in names:
            col = self.read_col(frame, name)
            fill_value: Val | None = per_col[name] if per_col is not None else value
            extra = _EMPTY
            if fill_value is not None:
                if fill_value.kind == "frame" and fill_value.frame is not None:
                    extra = (
                        self.read_col(fill_value.frame, name).deps
                        if self.known_col(fill_value.frame, name)
                        else _frame_deps(fill_value.frame)
                    )
                else:
                    extra = _deps(fill_value)
            new.cols[name] = ColInfo(
                col.deps | extra, written=True, blanket=per_col is None, fill=True, reduced=col.reduced
            )
        return Val(kind="frame", frame=new)

    def rename(self, frame: Frame, mapper: Val) -> None:
        mapping: dict[str, str] = {}
        if _is_const(mapper) and isinstance(mapper.const, dict):
            mapping = {str(k): str(v) for k, v in mapper.const.items()}
        elif mapper.kind == "dict" and mapper.dkeys is not None and mapper.items is not None:
            mapping = {
                str(k): str(v.const)
                for k, v in zip(mapper.dkeys, mapper.items, strict=True)
                if k is not None and _is_const(v)
            }
        if not mapping:
            return
        cols: dict[str, ColInfo] = {}
        for name, info in frame.cols.items():
            if name in mapping and name not in frame.removed:
                cols[mapping[name]] = ColInfo(info.deps, written=True, fill=info.fill, reduced=info.reduced)
                frame.removed.add(name)
            else:
                cols[name] = info
        for old, new_name in mapping.items():
            if old not in frame.cols and frame.identity:
                cols[new_name] = ColInfo(frozenset({old}), written=True)
                frame.removed.add(old)
        for new_name in mapping.values():
            frame.removed.discard(new_name)
        frame.cols = cols

    def frame_eval(self, recv: Val, text: str) -> Val:
        frame = recv.frame
        assert frame is not None
        m = re.match(r"^\s*([A-Za-z_]\w*)\s*=(?!=)(.*)$", text, re.S)
        if m is None:
            return self.query_deps(text, frame)
        new = frame.clone()
        self.write_cols(new, [m.group(1)], self.query_deps(m.group(2), frame))
        return Val(kind="frame", frame=new)

    def query_deps(self, text: str, frame: Frame) -> Val:
        """Columns and local variables a ``query``/``eval`` string refers to."""
        backticked: dict[str, str] = {}

        def tick(m: re.Match[str]) -> str:
            key = f"__col{len(backticked)}__"
            backticked[key] = m.group(1)
            return key

        src = re.sub(r"`([^`]*)`", tick, text)
        local_names = set(re.findall(r"@([A-Za-z_]\w*)", src))
        src = re.sub(r"@([A-Za-z_]\w*)", r"\1", src)
        try:
            tree = ast.parse(src.strip(), mode="eval")
        except SyntaxError:
            return Val(kind="series")
        deps: set[str] = set()
        internal: set[str] = set()
        for n in ast.walk(tree):
            if not isinstance(n, ast.Name):
                continue
            name = backticked.get(n.id, n.id)
            if n.id in local_names:
                v = self.scope.lookup(n.id) or Val()
                deps |= _deps(v)
                internal |= _internal(v)
            elif self.known_col(frame, name):
                v = self.read_col(frame, name)
                deps |= v.deps
                internal |= v.internal
        return Val(kind="series", deps=frozenset(deps), internal=frozenset(internal))

    def merge(self, left: Val, right: Val, kw: dict[str, Val]) -> Val:
        assert left.frame is not None
        new = left.frame.clone()
        keys: set[str] = set()
        for k in ("on", "left_on", "right_on"):
            if k in kw:
                keys |= set(_str_list(kw[k]) or [])
        if right.kind == "frame" and right.frame is not None:
            rf = right.frame
            for name in rf.names():
                if name in keys:
                    continue
                v = self.read_col(rf, name)
                if self.known_col(new, name) and name not in keys:
                    continue  # pandas suffixes both; the observed change tells which appeared
                new.cols[name] = ColInfo(v.deps, written=True, reduced=v.reduced or rf.aggregated)
            if not rf.identity:
                new.unknown_new = (new.unknown_new or _EMPTY) | rf.base
        elif right.kind == "series":
            new.unknown_new = (new.unknown_new or _EMPTY) | _deps(right)
            if right.name is not None:
                new.cols[right.name] = ColInfo(_deps(right), written=True, reduced=right.reduced)
        return Val(kind="frame", frame=new)

    def make_groupby(self, frame: Frame, by: Val | None, kw: dict[str, Val], *, from_df: bool) -> Val:
        names: list[str] = []
        deps: frozenset[str] = _EMPTY
        if by is not None:
            str_names = _str_list(by)
            if str_names is not None:
                names = str_names
                deps = self.resolve(frame, names)
            elif by.kind == "list" and by.items is not None:
                for item in by.items:
                    sub = _str_list(item)
                    if sub is not None:
                        names.extend(sub)
                        deps |= self.resolve(frame, sub)
                    else:
                        deps |= _deps(item)
                        if item.name is not None:
                            names.append(item.name)
            else:
                deps = _deps(by)
                if by.name is not None:
                    names = [by.name]
        new = frame.clone()
        new.group_keys = deps
        new.group_key_names = names
        new.key_in_code = True
        as_index = kw.get("as_index")
        new.as_index = not (as_index is not None and _is_const(as_index) and as_index.const is False)
        new.from_df = from_df
        self.groupbys.append((names, deps))
        self.reads |= deps
        return Val(kind="groupby", frame=new)

    # ---------------------------------------------------------------- group-by methods
    def group_cols(self, g: Frame) -> list[str]:
        if g.selection is not None:
            return list(g.selection)
        keys = set(g.group_key_names)
        return [n for n in g.names() if n not in keys]

    def group_method(self, recv: Val, name: str, args: list[Val], kw: dict[str, Val]) -> Val:
        g = recv.frame
        assert g is not None
        key_deps = g.group_keys if (g.key_in_code and g.group_keys) else _EMPTY
        if name in ("agg", "aggregate") or name in _REDUCTIONS or name == "apply":
            outs: dict[str, Val] = {}
            spec = kw.get("func", args[0] if args else None)
            named = {k: v for k, v in kw.items() if k not in ("func", "numeric_only", "engine")}
            if name in ("agg", "aggregate") and named:
                for out_name, v in named.items():
                    col, func = _named_agg(v)
                    if col is not None:
                        outs[out_name] = self.agg_column(g, col, func)
            elif (
                name in ("agg", "aggregate")
                and spec is not None
                and ((_is_const(spec) and isinstance(spec.const, dict)) or spec.kind == "dict")
            ):
                pairs = (
                    [(str(k), Val(const=v)) for k, v in spec.const.items()]
                    if _is_const(spec)
                    else [
                        (str(k), v)
                        for k, v in zip(spec.dkeys or [], spec.items or [], strict=True)
                        if k is not None
                    ]
                )
                for col, func in pairs:
                    outs[col] = self.agg_column(g, col, func)
            elif name == "apply" and spec is not None and spec.kind == "func":
                sub = Val(kind="frame", frame=self.group_frame(g))
                res = self.inline(spec, [sub], {})
                if res.kind == "frame":
                    return res
                return Val(kind="series", deps=_deps(res) | key_deps, internal=_internal(res), reduced=True)
            else:
                for col in self.group_cols(g):
                    outs[col] = self.agg_column(g, col, spec)
            if g.series_selection and len(outs) == 1 and not named:
                ((col, v),) = outs.items()
                return replace(v, kind="series", deps=v.deps | key_deps, name=col)
            new = Frame(
                from_df=g.from_df,
                aggregated=True,
                group_key_names=list(g.group_key_names),
                row_ops=list(g.row_ops),
            )
            if not g.as_index:
                new.cols = {k: ColInfo(frozenset({k})) for k in g.group_key_names}
            for col, v in outs.items():
                new.cols[col] = ColInfo(v.deps | key_deps, written=True, reduced=True)
                self.consume(v.internal)
            return Val(kind="frame", frame=new)
        if name in _GROUP_TRANSFORMS or name in ("filter", "head", "tail", "nth"):
            funcs = [a for a in [*args, *kw.values()] if a.kind == "func"]
            cols = self.group_cols(g)
            if name in ("filter", "head", "tail", "nth"):
                deps = key_deps
                for f in funcs:
                    deps |= _deps(self.inline(f, [Val(kind="frame", frame=self.group_frame(g))], {}))
                base_frame = Frame(
                    identity=g.identity,
                    cols={k: replace(v) for k, v in g.cols.items()},
                    from_df=g.from_df,
                    row_ops=list(g.row_ops),
                    removed=set(g.removed),
                )
                kind = "filter" if name == "filter" else "slice"
                op = RowOp(kind, deps | (g.group_keys or _EMPTY))
                return self.with_row_op(Val(kind="frame", frame=base_frame), op)
            outs_t: dict[str, ColInfo] = {}
            for col in cols:
                v = self.read_col(g, col)
                deps = v.deps | key_deps
                for f in funcs:
                    deps |= _deps(self.inline(f, [Val(kind="series", deps=v.deps)], {}))
                outs_t[col] = ColInfo(deps, written=True, fill=name in _FILL_METHODS)
            if g.series_selection and len(outs_t) == 1:
                ((col, info),) = outs_t.items()
                return Val(kind="series", deps=info.deps, fill=info.fill, name=col)
            return Val(kind="frame", frame=Frame(cols=outs_t, from_df=g.from_df, row_ops=list(g.row_ops)))
        return self.generic_call(args, kw, recv=Val(kind="series", deps=self.all_deps(g) | key_deps))

    def group_frame(self, g: Frame) -> Frame:
        new = Frame(identity=g.identity, from_df=g.from_df)
        new.cols = {k: replace(v) for k, v in g.cols.items()}
        if g.selection is not None:
            new.cols = {n: ColInfo(self.read_col(g, n).deps) for n in g.selection}
            new.identity = False
        return new

    def agg_column(self, g: Frame, col: str, func: Val | None) -> Val:
        v = self.read_col(g, col)
        deps = v.deps
        funcs: list[Val] = []
        if func is not None:
            if func.kind == "func":
                funcs = [func]
            elif func.kind == "list" and func.items:
                funcs = [f for f in func.items if f.kind == "func"]
        for f in funcs:
            deps |= _deps(self.inline(f, [Val(kind="series", deps=v.deps, internal=v.internal)], {}))
        return Val(kind="series", deps=deps, internal=v.internal, reduced=True)

    # ---------------------------------------------------------------- series methods
    def series_method(self, recv: Val, name: str, args: list[Val], kw: dict[str, Val]) -> Val:
        inplace = kw.pop("inplace", Val(const=False))
        if name == "groupby":
            by = kw.get("by", args[0] if args else None)
            g = Frame(cols={recv.name or "__series__": ColInfo(_deps(recv))}, from_df=True)
            gv = self.make_groupby(g, by, kw, from_df=True)
            assert gv.frame is not None
            gv.frame.selection = [recv.name or "__series__"]
            gv.frame.series_selection = True
            return gv
        if name in ("apply", "map", "transform", "agg", "aggregate", "pipe", "applymap", "combine"):
            funcs = [a for a in [*args, *kw.values()] if a.kind == "func"]
            others = [a for a in [*args, *kw.values()] if a.kind != "func"]
            element = Val(kind="scalar", deps=_deps(recv), internal=_internal(recv))
            results = [recv, *others] + [self.inline(f, [element], {}) for f in funcs]
            out = _join(results, kind="scalar" if recv.kind == "scalar" else "series")
        elif name in _FILL_METHODS:
            out = _join([recv, *args, *kw.values()], kind="series")
            out.fill = True
        elif name in ("isna", "isnull"):
            out = _join([recv], kind="series")
            out.isna = True
        elif name in _REDUCTIONS and not args:
            out = _join([recv, *kw.values()], kind="scalar")
        elif name in ("copy", "astype", "reset_index") and recv.kind == "series":
            out = replace(recv, origin=None) if name != "reset_index" else self.series_reset_index(recv)
        elif name == "to_frame":
            out = Val(
                kind="frame",
                frame=Frame(
                    base=_deps(recv),
                    cols={recv.name: ColInfo(_deps(recv), written=True, reduced=recv.reduced)}
                    if recv.name
                    else {},
                ),
            )
        else:
            out = self.generic_call(args, kw, recv=recv)
            out.reduced = recv.reduced
            if recv.kind == "series":
                out.kind = "series"
        if _is_const(inplace) and inplace.const is True and recv.origin is not None:
            frame, col = recv.origin
            self.write_cols(frame, [col], out)
            return Val(kind="none")
        return out

    def series_reset_index(self, recv: Val) -> Val:
        cols: dict[str, ColInfo] = {}
        if recv.reduced and recv.name is not None:
            cols[recv.name] = ColInfo(_deps(recv), written=True, reduced=True)
        return Val(
            kind="frame", frame=Frame(cols=cols, base=_deps(recv), aggregated=recv.reduced, from_df=True)
        )

    # ---------------------------------------------------------------- module functions
    def call_module(self, qual: str, args: list[Val], kw: dict[str, Val]) -> Val:
        short = qual.split(".", 1)[1] if qual.startswith(("pd.", "np.")) else qual
        is_pd = qual.startswith("pd.")
        if is_pd and short == "get_dummies":
            return self.get_dummies(args, kw)
        if is_pd and short == "concat":
            return self.concat(args, kw)
        if is_pd and short == "merge":
            left = kw.get("left", args[0] if args else None)
            right = kw.get("right", args[1] if len(args) > 1 else None)
            if left is not None and left.kind == "frame" and right is not None:
                return self.merge(left, right, kw)
        if is_pd and short in ("isna", "isnull"):
            out = _join(args, kind="series")
            out.isna = True
            return out
        if is_pd and short == "NamedAgg":
            col = kw.get("column", args[0] if args else None)
            func = kw.get("aggfunc", args[1] if len(args) > 1 else None)
            return Val(kind="list", items=[col or Val(), func or Val()])
        if is_pd and short == "DataFrame":
            data = kw.get("data", args[0] if args else None)
            if data is not None and data.kind == "frame":
                return Val(kind="frame", frame=data.frame.clone() if data.frame else Frame())
            return Val(kind="frame", frame=Frame(base=_join([*args, *kw.values()]).deps))
        if short in ("where", "select") and qual.startswith("np."):
            return _join([*args, *kw.values()], kind="series")
        if qual in ("builtins.len", "len"):
            return Val(kind="scalar")
        frames = [a for a in args if a.kind == "frame" and a.frame is not None]
        if frames and qual.startswith("np.") and len(args) == 1:
            return self.elementwise(frames[0], [])
        return self.generic_call(args, kw)

    def get_dummies(self, args: list[Val], kw: dict[str, Val]) -> Val:
        data = kw.get("data", args[0] if args else None)
        if data is None:
            return Val(kind="frame")
        prefix = kw.get("prefix", args[1] if len(args) > 1 else None)
        sep = kw.get("prefix_sep")
        sep_s = sep.const if sep is not None and _is_const(sep) and isinstance(sep.const, str) else "_"
        if data.kind == "frame" and data.frame is not None:
            frame = data.frame
            new = frame.clone()
            cols = kw.get("columns")
            names = _str_list(cols) if cols is not None else None
            if names is None:
                names = frame.names()
            prefixes: list[str] = list(names)
            if prefix is not None and _is_const(prefix):
                if isinstance(prefix.const, str):
                    prefixes = [prefix.const] * len(names)
                elif isinstance(prefix.const, list) and len(prefix.const) == len(names):
                    prefixes = [str(p) for p in prefix.const]
                elif isinstance(prefix.const, dict):
                    prefixes = [str(prefix.const.get(n, n)) for n in names]
            explicit = cols is not None
            for name, pre in zip(names, prefixes, strict=True):
                v = self.read_col(frame, name)
                new.patterns.append((pre + sep_s, v.deps))
                if explicit:
                    self.consume(v.internal)
                    new.cols.pop(name, None)
                    new.removed.add(name)
            return Val(kind="frame", frame=new)
        deps = _deps(data)
        new = Frame(base=deps, from_df=True)
        if prefix is not None and _is_const(prefix) and isinstance(prefix.const, str):
            new.patterns.append((prefix.const + sep_s, deps))
        return Val(kind="frame", frame=new, internal=_internal(data))

    def concat(self, args: list[Val], kw: dict[str, Val]) -> Val:
        objs = kw.get("objs", args[0] if args else None)
        axis = kw.get("axis")
        parts = objs.items if objs is not None and objs.kind == "list" and objs.items is not None else []
        if not parts:
            return _join(args)
        first = parts[0]
        if not (axis is not None and _is_const(axis) and axis.const in (1, "columns")):
            return first if first.kind == "frame" else _join(parts)
        if first.kind == "frame" and first.frame is not None:
            new = first.frame.clone()
        else:
            new = Frame(base=_deps(first), from_df=True)
        for part in parts[1:]:
            if part.kind == "frame" and part.frame is not None:
                pf = part.frame
                for name in pf.names():
                    v = self.read_col(pf, name)
                    new.cols[name] = ColInfo(v.deps, written=True, reduced=v.reduced)
                new.patterns.extend(pf.patterns)
                if not pf.identity:
                    new.unknown_new = (new.unknown_new or _EMPTY) | pf.base
            else:
                new.unknown_new = (new.unknown_new or _EMPTY) | _deps(part)
                if part.name is not None:
                    new.cols[part.name] = ColInfo(_deps(part), written=True, reduced=part.reduced)
        return Val(kind="frame", frame=new)


def _named_agg(v: Val) -> tuple[str | None, Val | None]:
    """``out=('col', 'mean')`` or ``out=pd.NamedAgg(column='col', aggfunc=...)``."""
    if (
        _is_const(v)
        and isinstance(v.const, tuple | list)
        and len(v.const) == 2
        and isinstance(v.const[0], str)
    ):
        return v.const[0], Val(const=v.const[1])
    if v.kind == "list" and v.items is not None and len(v.items) == 2:
        col = v.items[0]
        if _is_const(col) and isinstance(col.const, str):
            return col.const, v.items[1]
    return None, None


def _overwrite(target: Frame, source: Frame) -> None:
    for f in target.__dataclass_fields__:
        setattr(target, f, getattr(source, f))


def _is_full_slice(node: ast.expr) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None


def _plain(obj: Any, depth: int = 0) -> bool:
    if depth > 3:
        return False
    if isinstance(obj, str | int | float | bool) or obj is None:
        return True
    if isinstance(obj, list | tuple):
        return len(obj) < 1000 and all(_plain(x, depth + 1) for x in obj)
    if isinstance(obj, dict):
        return len(obj) < 1000 and all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in obj.items())
    return False


_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: lambda x: -x,
    ast.UAdd: lambda x: +x,
    ast.Not: lambda x: not x,
    ast.Invert: lambda x: ~x,
}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b if abs(b) < 64 else _NO,
}


def _fold(op: Callable[[Any, Any], Any] | None, a: Any, b: Any) -> Any:
    """Fold an operation on two constants (column names built with ``+``/f-strings); _NO when unsafe."""
    if op is None:
        return _NO
    if (
        isinstance(a, str | list | tuple)
        and isinstance(b, int)
        or isinstance(b, str | list | tuple)
        and isinstance(a, int)
    ):
        return _NO  # 'x' * n and friends: never needed for column names, can be huge
    try:
        out = op(a, b)
    except Exception:
        return _NO
    return out


def analyse_code(
    code: str, columns: Iterable[Any], namespace: Mapping[str, Any] | None = None
) -> CodeEffects:
    """Run the static analysis of ``code`` against a frame ``df`` with the given columns.

    Args:
        code: pandas statements acting on ``df``.
        columns: the columns of ``df`` before the code runs.
        namespace: the variables after the code ran (used to recognise group-by objects and frames made by
            earlier transforms, e.g. ``df_summed_grp``).

    Returns:
        The per-column dataflow of the frame left in ``df`` and the row operations applied to it.
    """
    interp = _Interpreter(list(columns), namespace)
    try:
        tree = ast.parse(code or "")
    except SyntaxError as exc:
        return CodeEffects(
            df=interp.df0,
            df_kind="frame",
            consumed=set(),
            groupbys=[],
            side_frames={},
            reads=_EMPTY,
            error=f"line {exc.lineno}: {exc.msg}",
        )
    error = None
    try:
        interp.run(tree)
    except RecursionError:
        error = "the code is nested too deeply to analyse"
    except _TooComplex:
        error = "the code is too long or loops too much to analyse completely"
    final = interp.globals.vars.get("df")
    df_frame = final.frame if final is not None and final.kind == "frame" else None
    side: dict[str, Frame] = {}
    for name, v in interp.globals.vars.items():
        if name != "df" and v.kind == "frame" and v.frame is not None and v.frame.from_df and v.frame.row_ops:
            side[name] = v.frame
    return CodeEffects(
        df=df_frame,
        df_kind=final.kind if final is not None else "none",
        consumed=interp.consumed,
        groupbys=interp.groupbys,
        side_frames=side,
        reads=frozenset(interp.reads),
        error=error,
    )


def rewrite_groupby_targets(code: str) -> str:
    """Apply BLADE's group-by rewrite: ``dfX = <...>.groupby(...)`` binds ``dfX_grp`` instead of ``dfX``.

    Only a statement whose whole right-hand side is a ``.groupby(...)`` call and whose single target is a name
    starting with ``df`` is rewritten, so the frame ``df`` is not replaced by a group-by object and a later
    rollup can refer to ``<name>_grp``. The rest of the code is left byte for byte.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    edits: list[tuple[int, int, int]] = []
    for st in ast.walk(tree):
        if (
            isinstance(st, ast.Assign)
            and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name)
            and st.targets[0].id.startswith("df")
            and isinstance(st.value, ast.Call)
            and isinstance(st.value.func, ast.Attribute)
            and st.value.func.attr == "groupby"
        ):
            t = st.targets[0]
            assert t.end_col_offset is not None
            edits.append((t.lineno, t.col_offset, t.end_col_offset))
    if not edits:
        return code
    lines = code.splitlines(keepends=True)
    for lineno, _start, end in sorted(edits, reverse=True):
        line = lines[lineno - 1]
        raw = line.encode("utf-8")
        lines[lineno - 1] = (raw[:end] + b"_grp" + raw[end:]).decode("utf-8")
    return "".join(lines)


def order_columns(names: Iterable[str], columns: list[str]) -> list[str]:
    """Names sorted by their position in ``columns`` (unknown names last, alphabetically)."""
    return sorted(set(names), key=_order_key(columns))
