# mypy: disable-error-code="attr-defined,has-type"
# (a part of the interpreter: its methods call the other parts, assembled in analysis._Interpreter)
"""The interpreter's state, column bookkeeping and statements."""

from __future__ import annotations

import ast
import contextlib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from evaluation.inference_ast.values import (
    _EMPTY,
    _MAX_UNROLL,
    _MODULE_ALIASES,
    ColInfo,
    Frame,
    Val,
    _deps,
    _FuncCtx,
    _internal,
    _is_const,
    _is_full_slice,
    _Scope,
    _str_list,
)


class _Core:
    def __init__(self, columns: list[str], namespace: Mapping[str, Any] | None) -> None:
        self.columns = [str(c) for c in columns]
        self.column_set = set(self.columns)
        self.ns = dict(namespace or {})
        self.globals = _Scope()
        self.scope: _Scope = self.globals
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
