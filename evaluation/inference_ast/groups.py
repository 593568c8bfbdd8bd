# mypy: disable-error-code="attr-defined,has-type"
# (a part of the interpreter: its methods call the other parts, assembled in analysis._Interpreter)
"""Group-by and Series methods."""

from __future__ import annotations

from dataclasses import replace

from evaluation.inference_ast.values import (
    _EMPTY,
    _FILL_METHODS,
    _GROUP_TRANSFORMS,
    _REDUCTIONS,
    ColInfo,
    Frame,
    RowOp,
    Val,
    _deps,
    _internal,
    _is_const,
    _join,
    _named_agg,
)


class _GroupAndSeriesMethods:
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
