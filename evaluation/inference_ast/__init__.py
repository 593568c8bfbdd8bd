"""Static dataflow analysis of a transform's pandas code.

A small abstract interpreter walks the statements of the code (as BLADE stores it: statements on a frame named
``df``, no function wrapper) and tracks, per column of every frame value, which columns of the frame *before the
code* its values come from. It follows local variables, lambdas and functions defined in the code (by inlining
them), comprehensions and loops over literal column lists, row operations (masks, ``query``, ``dropna``,
``drop_duplicates``, ``sort_values``), group-bys and their aggregations, ``rename``/``assign``/``insert``/
``get_dummies``/``merge``/``concat`` and in-place methods. Anything it does not know is treated conservatively:
the result depends on everything its operands depend on.

Nothing is executed here; :mod:`evaluation.inference` combines this with what running the code really did.

The package: :mod:`.values` (abstract values), :mod:`.core` (state, columns, statements),
:mod:`.expressions`, :mod:`.calls`, :mod:`.frames`, :mod:`.groups` (the interpreter's methods by topic) and
:mod:`.analysis` (the assembled interpreter and the entry points).
"""

from evaluation.inference_ast.analysis import analyse_code, order_columns, rewrite_groupby_targets
from evaluation.inference_ast.values import CodeEffects, ColInfo, Frame, RowOp

__all__ = [
    "CodeEffects",
    "ColInfo",
    "Frame",
    "RowOp",
    "analyse_code",
    "order_columns",
    "rewrite_groupby_targets",
]
