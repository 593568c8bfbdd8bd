# mypy: disable-error-code="attr-defined,has-type"
# (a part of the interpreter: its methods call the other parts, assembled in analysis._Interpreter)
"""Expressions: names, literals, operators, attributes, subscripts, comprehensions."""

from __future__ import annotations

import ast
from dataclasses import replace

import pandas as pd

from evaluation.inference_ast.values import (
    _BINARY,
    _EMPTY,
    _FRAME_ATTRS,
    _INDEXERS,
    _MAX_STEPS,
    _MAX_UNROLL,
    _MODULE_ALIASES,
    _NO,
    _UNARY,
    ColInfo,
    Frame,
    RowOp,
    Val,
    _deps,
    _fold,
    _frame_deps,
    _internal,
    _is_const,
    _is_full_slice,
    _join,
    _plain,
    _Scope,
    _str_list,
    _TooComplex,
)


class _Expressions:
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
            deps = frozenset({nm}) if nm is not None and nm in self.column_set else _EMPTY
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
