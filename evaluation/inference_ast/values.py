"""Abstract values of the static pandas analysis: frames, columns, row operations and helpers."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

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
