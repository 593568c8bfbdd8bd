# mypy: disable-error-code="attr-defined,has-type"
# (a part of the interpreter: its methods call the other parts, assembled in analysis._Interpreter)
"""Calls: builtins, inlined functions and lambdas, constant methods, pandas/numpy module functions."""

from __future__ import annotations

import ast

from evaluation.inference_ast.values import (
    _EMPTY,
    _MAX_INLINE_DEPTH,
    _NO,
    _SAFE_BUILTINS,
    _SAFE_CONST_METHODS,
    ColInfo,
    Frame,
    Val,
    _deps,
    _FuncCtx,
    _internal,
    _is_const,
    _join,
    _overwrite,
    _Scope,
    _str_list,
)


class _Calls:
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
