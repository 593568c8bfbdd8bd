# mypy: disable-error-code="attr-defined,has-type"
# (a part of the interpreter: its methods call the other parts, assembled in analysis._Interpreter)
"""DataFrame methods: selection, drop, fill, rename, eval/query, merge and group-by creation."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

from evaluation.inference_ast.values import (
    _EMPTY,
    _REDUCTIONS,
    ColInfo,
    Frame,
    RowOp,
    Val,
    _deps,
    _frame_deps,
    _internal,
    _is_const,
    _join,
    _str_list,
)


class _FrameMethods:
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
