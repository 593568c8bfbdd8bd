"""Task kinds, registered by name: each kind of task forkpaths scores is one module here.

``task_kind("analyses")`` gives the BLADE-analysis kind, ``task_kind("mcq")`` the MCQ kind; ``item_kind(name)``
the kind of decision item a kind brings to curation (``item_kind("hypothesis")``: the hypotheses kind's). A new kind is one
module that defines ``KIND = TaskKind(...)`` (:class:`~evaluation.tasks.base.TaskKind`), plus its page
component in ``annotate_app/components/kinds/``. Kinds are found by a scan of this package (any module defining
``KIND``) and the ``forkpaths.kinds`` entry points: no list here names them.
"""

from __future__ import annotations

from evaluation.tasks.base import (
    JOB_KIND_MAX,
    KIND_NAME_MAX,
    VERDICT,
    VOTE_ANSWERS,
    AIReprAccuracy,
    CheckedFile,
    Column,
    CuratedShape,
    FacetJudging,
    FanOutParts,
    ImportedDataset,
    ImportedFile,
    Importer,
    ItemKind,
    JobKind,
    KindJudge,
    LeaderboardSpec,
    ReleasePart,
    RunView,
    ScoredRun,
    ScoringContext,
    ScoringLimits,
    SubmissionCheckError,
    TaskKind,
    VoteQuestion,
)
from evaluation.tasks.registry import (
    ENTRY_POINT_GROUP,
    KINDS,
    KindDeclarationError,
    UnknownKind,
    companion_kinds,
    discover_kinds,
    item_kind,
    item_kinds,
    kind_names,
    kinds_with,
    ranked_kinds,
    register_kind,
    registered,
    task_kind,
)

__all__ = [
    "ENTRY_POINT_GROUP",
    "KINDS",
    "KIND_NAME_MAX",
    "AIReprAccuracy",
    "CheckedFile",
    "Column",
    "CuratedShape",
    "FacetJudging",
    "FanOutParts",
    "ImportedDataset",
    "ImportedFile",
    "Importer",
    "ItemKind",
    "JOB_KIND_MAX",
    "JobKind",
    "KindJudge",
    "KindDeclarationError",
    "LeaderboardSpec",
    "ReleasePart",
    "RunView",
    "ScoredRun",
    "ScoringContext",
    "ScoringLimits",
    "SubmissionCheckError",
    "TaskKind",
    "UnknownKind",
    "VERDICT",
    "VOTE_ANSWERS",
    "VoteQuestion",
    "companion_kinds",
    "discover_kinds",
    "item_kind",
    "item_kinds",
    "kind_names",
    "kinds_with",
    "ranked_kinds",
    "register_kind",
    "registered",
    "task_kind",
]

discover_kinds()
