"""BLADE's branch conditions (blade-reference 1.5.1): a tiny language over the branch choices of other
multi-branch transforms, e.g. ``remove_outliers == 'drop_na'``, ``'log_y' in model_y``,
``remove_outliers.index == 2``, combined with ``and`` / ``or`` / ``not``.

Checked here structurally with :mod:`ast` (BLADE evaluated them with ``eval``; we never do).
"""

from __future__ import annotations

import ast
from collections.abc import Collection

__all__ = ["condition_problem"]

_COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def condition_problem(condition: str, known_names: Collection[str]) -> str | None:
    """Why ``condition`` is not a valid branch condition, or ``None`` when it is (or is empty)."""
    text = condition.strip()
    if not text:
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        return f"the condition is not valid syntax at column {exc.offset}: {text!r}"

    def operand(node: ast.expr) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str | int):
            return None
        if isinstance(node, ast.Name):
            return None if node.id in known_names else f"'{node.id}' is not one of your transforms"
        if isinstance(node, ast.Attribute) and node.attr == "index" and isinstance(node.value, ast.Name):
            return operand(node.value)
        return f"'{ast.unparse(node)}' is not a transform name, '<name>.index' or a quoted value"

    def check(node: ast.expr) -> str | None:
        if isinstance(node, ast.BoolOp):
            return next((p for v in node.values if (p := check(v))), None)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return check(node.operand)
        if isinstance(node, ast.Compare):
            if not all(isinstance(op, _COMPARE_OPS) for op in node.ops):
                return "only ==, !=, in and not in compare branch choices"
            return next((p for v in [node.left, *node.comparators] if (p := operand(v))), None)
        return f"'{ast.unparse(node)}' is not a comparison of branch choices"

    return check(tree.body)
