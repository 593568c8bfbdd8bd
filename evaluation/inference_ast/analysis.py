"""The interpreter, assembled from its parts, and the public entry points."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from typing import Any

from evaluation.inference_ast.calls import _Calls
from evaluation.inference_ast.core import _Core
from evaluation.inference_ast.expressions import _Expressions
from evaluation.inference_ast.frames import _FrameMethods
from evaluation.inference_ast.groups import _GroupAndSeriesMethods
from evaluation.inference_ast.values import _EMPTY, CodeEffects, Frame, _order_key, _TooComplex


class _Interpreter(_Core, _Expressions, _Calls, _FrameMethods, _GroupAndSeriesMethods):
    """The abstract interpreter: one class, its methods grouped by what they interpret (one module each)."""


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
