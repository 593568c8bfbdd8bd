"""Task kinds, registered by name: each kind of task forkpaths scores is one module here.

``task_kind("analyses")`` gives the BLADE-analysis kind, ``task_kind("mcq")`` the MCQ kind; ``item_kind(name)``
the kind of decision item a kind brings to curation (``item_kind("hypothesis")``: the hypotheses kind's). A new kind is one
module that implements :class:`~evaluation.tasks.base.TaskKind` and calls :func:`register_kind`, plus its page
component in ``annotate_app/components/kinds/``.
"""

from __future__ import annotations

from evaluation.tasks import analyses as _analyses  # noqa: F401 - registers the kind
from evaluation.tasks import mcq as _mcq  # noqa: F401 - registers the kind
from evaluation.tasks.base import (
    CheckedFile,
    Column,
    ItemKind,
    LeaderboardSpec,
    RunView,
    ScoredRun,
    ScoringContext,
    ScoringLimits,
    SubmissionCheckError,
    TaskKind,
)
from evaluation.tasks.registry import (
    KINDS,
    UnknownKind,
    companion_kinds,
    item_kind,
    kind_names,
    ranked_kinds,
    register_kind,
    task_kind,
)

__all__ = [
    "KINDS",
    "CheckedFile",
    "Column",
    "ItemKind",
    "LeaderboardSpec",
    "RunView",
    "ScoredRun",
    "ScoringContext",
    "ScoringLimits",
    "SubmissionCheckError",
    "TaskKind",
    "UnknownKind",
    "companion_kinds",
    "item_kind",
    "kind_names",
    "ranked_kinds",
    "register_kind",
    "task_kind",
]

# registered after the first kinds, so their order (and the default ranked kind) stays as it was
from evaluation.tasks import hypotheses as _hypotheses  # noqa: E402, F401 - registers the kind
from evaluation.tasks import programmatic as _programmatic  # noqa: E402, F401 - registers the kind
from evaluation.tasks import reproducibility as _reproducibility  # noqa: E402, F401 - registers the kind
