"""SQLModel tables of the curation database, one module per part of the process; every table is importable
from here (``from curation.models import Dataset``), and importing this package registers all of them on
``SQLModel.metadata`` (what Alembic compares against).

Decisions (conceptual variables, transforms, models) use 32-hex string ids so that BLADE's spec ids survive
import and export unchanged. Lists of structured values (columns, mappings, branches) are JSON columns holding
the dumps of the value objects in :mod:`evaluation.specs`; fields BLADE carries that forkpaths does not edit
(``time_stamp``, ``tags``, raw spec-id lists ...) live in ``extra`` so that nothing is lost.
"""

from curation.models.accounts import (
    IMPORTED_USERNAME,
    PENDING_ROLE,
    AuthSession,
    FormDraft,
    Role,
    SignInThrottle,
    User,
)
from curation.models.agents import (
    AgentRun,
    AgentTaskRun,
)
from curation.models.annotation import (
    Analysis,
    AnalysisStatus,
    ConceptualVariable,
    Dataset,
    DatasetAssignment,
    StatModel,
    Transform,
)
from curation.models.columns import (
    UTCDateTime,
    new_spec_id,
    utcnow,
)
from curation.models.curated import CuratedCandidate, CuratedItem
from curation.models.jobs import (
    BackgroundJob,
    RunStatus,
)
from curation.models.meetings import (
    GroundTruthSetting,
    Meeting,
    MeetingEvent,
    MeetingOutcome,
)
from curation.models.releases import (
    ReleaseRecord,
)
from curation.models.review import (
    Alternative,
    Consensus,
    DatasetReview,
    ProposerDisplay,
    Stage,
    Vote,
    VoteChange,
)
from curation.models.scoring import (
    JudgeLabel,
    ReproducibilityOverride,
    ScoreOverride,
    ScoringRun,
    ScoringRunPart,
)
from curation.models.tasks import (
    HypothesisProposal,
    HypothesisTask,
    HypothesisTaskStatus,
)

__all__ = [
    "IMPORTED_USERNAME",
    "PENDING_ROLE",
    "AgentRun",
    "AgentTaskRun",
    "Alternative",
    "Analysis",
    "AnalysisStatus",
    "AuthSession",
    "BackgroundJob",
    "ConceptualVariable",
    "Consensus",
    "CuratedCandidate",
    "CuratedItem",
    "Dataset",
    "DatasetAssignment",
    "DatasetReview",
    "FormDraft",
    "GroundTruthSetting",
    "HypothesisProposal",
    "HypothesisTask",
    "HypothesisTaskStatus",
    "JudgeLabel",
    "Meeting",
    "MeetingEvent",
    "MeetingOutcome",
    "new_spec_id",
    "ProposerDisplay",
    "ReleaseRecord",
    "ReproducibilityOverride",
    "Role",
    "RunStatus",
    "ScoreOverride",
    "ScoringRun",
    "ScoringRunPart",
    "SignInThrottle",
    "Stage",
    "StatModel",
    "Transform",
    "User",
    "UTCDateTime",
    "utcnow",
    "Vote",
    "VoteChange",
]
