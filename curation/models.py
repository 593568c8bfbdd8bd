"""SQLModel tables of the curation database.

Decisions (conceptual variables, transforms, models) use 32-hex string ids so that BLADE's spec ids survive
import and export unchanged. Lists of structured values (columns, mappings, branches) are JSON columns holding
the dumps of the value objects in :mod:`evaluation.specs`; fields BLADE carries that forkpaths does not edit
(``time_stamp``, ``tags``, raw spec-id lists ...) live in ``extra`` so that nothing is lost.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import JSON, Column, DateTime, Text, TypeDecorator, UniqueConstraint
from sqlmodel import Field, SQLModel

__all__ = [
    "Analysis",
    "AuthSession",
    "SignInThrottle",
    "AnalysisStatus",
    "ConceptualVariable",
    "Dataset",
    "DatasetAssignment",
    "FormDraft",
    "HypothesisProposal",
    "HypothesisTask",
    "HypothesisTaskStatus",
    "Role",
    "StatModel",
    "Alternative",
    "Consensus",
    "MCQ",
    "ReleaseRecord",
    "RunStatus",
    "JudgeLabel",
    "ScoreOverride",
    "ScoringRun",
    "Transform",
    "User",
    "Vote",
    "VoteChange",
    "DatasetReview",
    "ProposerDisplay",
    "Stage",
    "UTCDateTime",
    "GroundTruthSetting",
    "Meeting",
    "MeetingEvent",
    "MeetingOutcome",
    "MCQReview",
    "ProgrammaticItem",
    "ProgrammaticTask",
    "new_spec_id",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_spec_id() -> str:
    """A BLADE-style spec id: a uuid4 as 32 hex characters."""
    return uuid.uuid4().hex


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC timestamps on every backend (SQLite drops the offset; this puts it back)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; forkpaths stores timezone-aware UTC only")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _ts(**kw: Any) -> Any:
    return Field(default_factory=utcnow, sa_type=UTCDateTime, **kw)


def _json(default: Any = list) -> Any:
    return Field(default_factory=default, sa_column=Column(JSON, nullable=False))


class Role(StrEnum):
    ANALYST = "analyst"
    CURATOR = "curator"
    ADMIN = "admin"
    EVALUATOR = "evaluator"


class AnalysisStatus(StrEnum):
    DRAFT = "draft"
    SUBMITTED = "submitted"


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, unique=True, max_length=64)
    display_name: str = Field(default="", max_length=128)
    password_hash: str = Field(default="", max_length=256)
    role: str = Field(default=Role.ANALYST.value, max_length=16)
    is_active: bool = True
    is_system: bool = Field(default=False, description="An account no one signs in with (e.g. imported annotators).")
    auth_epoch: int = Field(default=0, description="Bumped on password reset / deactivation; older sessions end.")
    created_at: datetime = _ts()


class AuthSession(SQLModel, table=True):
    """A signed-in browser: the cookie holds a random token, this row only its SHA-256 (a leaked database
    holds no usable token). Ended sessions are kept a while with the reason, so the browser can be told why."""

    __tablename__ = "auth_session"

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(max_length=64, unique=True, index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    auth_epoch: int = Field(description="The user's auth_epoch at sign-in; a later reset or deactivation ends it.")
    created_at: datetime = _ts()
    last_seen_at: datetime = _ts()
    expires_at: datetime = Field(sa_type=UTCDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    end_reason: str = Field(default="", max_length=32, description="sign_out | password | deactivated | ...")


class SignInThrottle(SQLModel, table=True):
    """Failed sign-ins of one account name or one client, for throttling across server processes.

    ``key`` is ``account:`` or ``client:`` followed by a SHA-256, so typed names (sometimes a password typed
    into the wrong field) and client addresses are not stored in clear.
    """

    __tablename__ = "sign_in_throttle"

    key: str = Field(primary_key=True, max_length=80)
    failures: int = 0
    window_started_at: datetime = _ts()
    locked_until: datetime | None = Field(default=None, sa_type=UTCDateTime)
    updated_at: datetime = _ts()


class Dataset(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True, unique=True, max_length=128)
    title: str = Field(default="", max_length=256)
    research_question: str
    description: str = ""
    dictionary: list[dict[str, Any]] = _json()
    info: dict[str, Any] = _json(dict)
    data_relpath: str = Field(max_length=512)
    data_sha256: str = Field(max_length=64)
    num_rows: int = 0
    num_columns: int = 0
    source: str = Field(default="", max_length=32)
    extra: dict[str, Any] = _json(dict)
    files: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False, server_default="[]"),
        description="Every file of a dataset that has more than its one table (a DiscoveryBench folder: metadata "
        "and data files), each {name, relpath, sha256, size, format, role, columns}; empty for BLADE datasets, "
        "whose one table is data_relpath. data_relpath is always the dataset's main table.",
    )
    created_at: datetime = _ts()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    archived_at: datetime | None = Field(
        default=None, sa_type=UTCDateTime,
        description="Set when a curator archives the dataset: kept, but hidden from annotation and new releases.",
    )
    archived_by_id: int | None = Field(default=None, foreign_key="user.id")

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


class DatasetAssignment(SQLModel, table=True):
    dataset_id: int = Field(foreign_key="dataset.id", primary_key=True)
    user_id: int = Field(foreign_key="user.id", primary_key=True)
    assigned_at: datetime = _ts()
    assigned_by_id: int | None = Field(default=None, foreign_key="user.id")


class Analysis(SQLModel, table=True):
    """One analyst's stage-1 analysis of one dataset."""

    __table_args__ = (UniqueConstraint("dataset_id", "annotator_id"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    annotator_id: int = Field(foreign_key="user.id", index=True)
    status: str = Field(default=AnalysisStatus.DRAFT.value, max_length=16)
    created_at: datetime = _ts()
    submitted_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class ConceptualVariable(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    variable_type: str = Field(max_length=16, description="IV, DV or Control (BLADE's vocabulary)")
    interaction: bool = Field(default=False, description="A moderator is a Control with interaction")
    moderates: str = Field(default="", description="For moderators: what it interacts with (BLADE 'on')")
    concept: str
    rationale: str = ""
    columns: list[dict[str, Any]] = _json()
    random_effect: bool = Field(default=False, description="BLADE's random_effect flag")
    tags: list[str] = _json()
    extra: dict[str, Any] = _json(dict)
    position: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Transform(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    spec_name: str = Field(max_length=256)
    specification: str = ""
    verbs: list[str] = _json()
    code: str = ""
    rationale: str = ""
    mapping: list[dict[str, Any]] = _json()
    branches: list[dict[str, Any]] = _json()
    tags: list[str] = _json()
    extra: dict[str, Any] = _json(dict)
    last_check: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    passed_check_sha256: str | None = Field(
        default=None, max_length=64,
        description="Fingerprint (code + the parent transforms' code it ran after) of the last sanity check that "
                    "passed on this code; None when the current code was never checked or its check failed.",
    )
    position: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class StatModel(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    family: str = Field(default="", max_length=64)
    specification: str = ""
    spec_name: str = Field(default="", max_length=256)
    code: str = ""
    rationale: str = ""
    columns: list[dict[str, Any]] = _json()
    variable_ids: list[str] = _json()
    transform_ids: list[str] = _json()
    tags: list[str] = _json()
    extra: dict[str, Any] = _json(dict)
    last_check: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    passed_check_sha256: str | None = Field(
        default=None, max_length=64,
        description="Fingerprint (code + the parent transforms' code it ran after) of the last sanity check that "
                    "passed on this code; None when the current code was never checked or its check failed.",
    )
    position: int = 0
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Alternative(SQLModel, table=True):
    """A decision proposed for review: LLM-generated (seeded from a decision) or put forward by a peer."""

    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, description="variable | transform")
    source: str = Field(max_length=16, description="llm | peer")
    proposed_by_id: int | None = Field(default=None, foreign_key="user.id")
    seed_id: str | None = Field(default=None, max_length=64, description="decision it was generated from")
    llm: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    payload: dict[str, Any] = _json(dict)
    extra: dict[str, Any] = _json(dict)
    position: int = 0
    created_at: datetime = _ts()


class Vote(SQLModel, table=True):
    """One annotator's answer to one question about one item; ``answer`` None means the question was skipped."""

    __table_args__ = (UniqueConstraint("target_kind", "target_id", "annotator_id", "question"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    target_kind: str = Field(max_length=16, description="alternative | variable | transform | model")
    target_id: str = Field(max_length=64, index=True)
    annotator_id: int = Field(foreign_key="user.id", index=True)
    question: str = Field(max_length=64)
    answer: str | None = Field(default=None, max_length=8, description="yes | no | unsure | None (skipped)")
    skipped_reason: str = ""
    explanation: str = ""
    position: int = 0
    created_at: datetime = _ts()


class Consensus(SQLModel, table=True):
    """The resolved status of one item, with how it was reached and the votes it was based on."""

    __table_args__ = (UniqueConstraint("target_kind", "target_id"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    target_kind: str = Field(max_length=16)
    target_id: str = Field(max_length=64)
    status: str = Field(max_length=16, description="justifiable | unjustifiable | split | unresolved")
    rule: str = Field(default="", max_length=64)
    decided_by_id: int | None = Field(default=None, foreign_key="user.id")
    decided_at: datetime = _ts()
    note: str = ""
    votes_snapshot: list[dict[str, Any]] = _json()


class MCQ(SQLModel, table=True):
    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, description="variable | transform")
    mc_type: str = Field(max_length=16, description="select_pos | select_neg")
    concept: str = ""
    options: list[dict[str, Any]] = _json()
    correct_index: int = 0
    extra: dict[str, Any] = _json(dict)
    position: int = 0
    created_at: datetime = _ts()


class ReleaseRecord(SQLModel, table=True):
    """A cut release. The files are the release; this row indexes them (they never change after cutting)."""

    __tablename__ = "release"

    id: int | None = Field(default=None, primary_key=True)
    version: str = Field(index=True, unique=True, max_length=32)
    format_version: str = Field(max_length=16)
    previous_version: str | None = Field(default=None, max_length=32)
    notes: str = ""
    created_at: datetime = _ts()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    path: str = Field(max_length=512, description="release directory, relative to the releases folder")
    manifest_sha256: str = Field(max_length=64, description="SHA-256 of the MANIFEST as cut; checked on every read")
    zip_sha256: str | None = Field(
        default=None, max_length=64,
        description="SHA-256 of <version>.zip as cut; releases cut before 0005 get it on their first full check")
    summary: dict[str, Any] = _json(dict)


# ----------------------------------------------------------------------------------------------- stage 2


class Stage(StrEnum):
    """Where a dataset is in the curation process."""

    ANNOTATE = "annotate"  # stage 1: each analyst annotates, blind to peers
    REVIEW = "review"  # stage 2: analysts who submitted review peers' decisions and alternatives
    CLOSED = "closed"  # stage 2 closed: votes are final


class ProposerDisplay(StrEnum):
    NAMED = "named"
    PSEUDONYMOUS = "pseudonymous"


class DatasetReview(SQLModel, table=True):
    """A dataset's stage and its review settings; a dataset without a row is in stage 1 with the defaults."""

    __tablename__ = "dataset_review"

    dataset_id: int = Field(foreign_key="dataset.id", primary_key=True)
    stage: str = Field(default=Stage.ANNOTATE.value, max_length=16)
    proposer_display: str = Field(default=ProposerDisplay.PSEUDONYMOUS.value, max_length=16)
    source_visible: bool = Field(default=False, description="Reviewers see whether a peer or the LLM proposed it")
    opened_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    opened_by_id: int | None = Field(default=None, foreign_key="user.id")
    closed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    closed_by_id: int | None = Field(default=None, foreign_key="user.id")
    updated_at: datetime = _ts()


class VoteChange(SQLModel, table=True):
    """One change of one current vote: who, what, when, before and after (``None``: no vote at that time)."""

    __tablename__ = "vote_change"

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    target_kind: str = Field(max_length=16)
    target_id: str = Field(max_length=64, index=True)
    annotator_id: int = Field(foreign_key="user.id", index=True)
    question: str = Field(max_length=64)
    before: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    after: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    changed_by_id: int | None = Field(default=None, foreign_key="user.id")
    changed_at: datetime = _ts()
    note: str = ""


# ----------------------------------------------------------------------------------------------- stage 3


class GroundTruthSetting(SQLModel, table=True):
    """The ground-truth rule a dataset uses (a dataset without a row uses the default rule); changes kept."""

    __tablename__ = "ground_truth_setting"

    dataset_id: int = Field(foreign_key="dataset.id", primary_key=True)
    rule: str = Field(max_length=64, description="name@version of a rule in curation.ground_truth.RULES")
    changed_by_id: int | None = Field(default=None, foreign_key="user.id")
    changed_at: datetime = _ts()
    history: list[dict[str, Any]] = _json()


class MCQReview(SQLModel, table=True):
    """A curator's review of one MCQ: accepted, rejected or edited (the MCQ row holds the edited content)."""

    __tablename__ = "mcq_review"

    mcq_id: str = Field(foreign_key="mcq.id", primary_key=True, max_length=64)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    status: str = Field(max_length=16, description="accepted | rejected | edited")
    note: str = ""
    reviewed_by_id: int | None = Field(default=None, foreign_key="user.id")
    reviewed_at: datetime = _ts()
    history: list[dict[str, Any]] = _json()


class Meeting(SQLModel, table=True):
    """A stage-3 consensus meeting on one dataset: agenda, attendance, the votes before and after."""

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    status: str = Field(default="open", max_length=16, description="open | closed")
    rule: str = Field(max_length=64, description="the ground-truth rule the agenda was built with")
    started_by_id: int | None = Field(default=None, foreign_key="user.id")
    started_at: datetime = _ts()
    closed_by_id: int | None = Field(default=None, foreign_key="user.id")
    closed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    attendance: list[int] = _json()
    agenda: list[dict[str, Any]] = _json()
    current: int = Field(default=0, description="agenda position shown on the projector")
    pre_votes: list[dict[str, Any]] = _json()
    post_votes: list[dict[str, Any]] = _json()


class MeetingOutcome(SQLModel, table=True):
    """The outcome of one agenda item; ``revision`` makes two facilitators' concurrent edits a clear conflict."""

    __tablename__ = "meeting_outcome"
    __table_args__ = (UniqueConstraint("meeting_id", "target_kind", "target_id"),)

    id: int | None = Field(default=None, primary_key=True)
    meeting_id: int = Field(foreign_key="meeting.id", index=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    target_kind: str = Field(max_length=16)
    target_id: str = Field(max_length=64)
    outcome: str = Field(max_length=16, description="justifiable | unjustifiable | contested")
    reason: str = ""
    dissent: str = ""
    recorded_by_id: int | None = Field(default=None, foreign_key="user.id")
    recorded_at: datetime = _ts()
    revision: int = 1


class MeetingEvent(SQLModel, table=True):
    """The audit trail of a meeting: who did what, when."""

    __tablename__ = "meeting_event"

    id: int | None = Field(default=None, primary_key=True)
    meeting_id: int = Field(foreign_key="meeting.id", index=True)
    actor_id: int | None = Field(default=None, foreign_key="user.id")
    at: datetime = _ts()
    action: str = Field(max_length=32)
    target_kind: str = Field(default="", max_length=16)
    target_id: str = Field(default="", max_length=64)
    detail: dict[str, Any] = _json(dict)
class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"  # the process scoring it died (killed, machine lost); re-score it


class ScoringRun(SQLModel, table=True):
    """One agent run scored against one release: an immutable record of what was scored, how and by whom.

    The provenance columns (submission, release, ground-truth hashes, evaluator version, judge, mode, k) are
    written once at registration and never changed; only the lifecycle columns (status, progress, timings,
    message, result) move forward, and ``official`` is a curator's flag. The scores a human override changes
    are kept apart (``scores_effective``) from those the engine computed (``scores``).
    """

    __tablename__ = "scoring_run"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(default="analyses", max_length=16, description="analyses | mcq")
    agent: str = Field(max_length=128, index=True)
    model_name: str = Field(default="", max_length=128)
    release_version: str = Field(max_length=32, index=True)
    ground_truth_hash: str = Field(max_length=64)
    dataset_hashes: dict[str, Any] = _json(dict)
    submission_sha256: str = Field(max_length=64)
    submission_files: list[dict[str, Any]] = _json()
    evaluator_version: str = Field(max_length=32)
    judge: dict[str, Any] = _json(dict)
    transform_matcher: dict[str, Any] = _json(dict)
    mode: str = Field(default="default", max_length=16)
    k: int = 10
    source: str = Field(default="web", max_length=8, description="web | cli")
    rescore_of_id: int | None = Field(default=None, foreign_key="scoring_run.id")
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = _ts()
    status: str = Field(default=RunStatus.QUEUED.value, max_length=16, index=True)
    progress_done: int = 0
    progress_total: int = 0
    stage: str = Field(default="", max_length=256)
    message: str = ""
    cancel_requested: bool = False
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    executor: str = Field(default="", max_length=256,
                          description="host/pid/start of the process scoring it (curation.services.run_lifecycle)")
    attempts: int = Field(default=0, description="how many times a scorer claimed it (more than 1: retried)")
    job_id: int | None = Field(default=None, description="its procrastinate job, when a worker scores it")
    result_path: str | None = Field(default=None, max_length=512,
                                    description="the result file's name (runs scored before the artifact store: "
                                    "its path under the data dir's runs/ folder)")
    release_sha256: str | None = Field(default=None, max_length=64,
                                       description="SHA-256 of the release's MANIFEST: its address in the "
                                       "artifact store")
    result_sha256: str | None = Field(default=None, max_length=64,
                                      description="SHA-256 of the result file: its address in the artifact store")
    scores: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    scores_effective: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    official: bool = False
    official_by_id: int | None = Field(default=None, foreign_key="user.id")
    official_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    agent_run_id: int | None = Field(default=None, index=True,
                                     description="the agent run whose generated submission this is")


class ScoringRunPart(SQLModel, table=True):
    """One part of a fanned-out run (one dataset's file): scored by whichever worker claims it, its result kept
    here until the last part is in and the run's result is combined from all of them, in the files' order.

    A part is claimed by one conditional UPDATE (queued -> running, with the claimer's ``executor``), and its
    result is accepted only from the process holding it, once (``done``): a part retried after its worker died is
    scored again from its start, and never counted twice."""

    __tablename__ = "scoring_run_part"
    __table_args__ = (UniqueConstraint("run_id", "idx"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="scoring_run.id", index=True)
    idx: int
    label: str = Field(default="", max_length=128)
    status: str = Field(default=RunStatus.QUEUED.value, max_length=16)
    executor: str = Field(default="", max_length=256)
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    attempts: int = 0
    progress_done: int = 0
    progress_total: int = 0
    result: str | None = Field(default=None, sa_column=Column(Text, nullable=True))


class ScoreOverride(SQLModel, table=True):
    """An evaluator's correction of one automatic match, with the original value, who, why and when.

    One override per item: a second evaluator correcting the same item is refused (the unique constraint makes
    that hold under concurrency too), never silently overwritten.
    """

    __tablename__ = "score_override"
    __table_args__ = (UniqueConstraint("run_id", "dataset", "analysis_key", "kind", "item"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="scoring_run.id", index=True)
    dataset: str = Field(max_length=128)
    analysis_key: str = Field(max_length=256, description="the analysis, or a hypothesis task's key")
    kind: str = Field(max_length=16, description="variable | model | transform; hypotheses: context | variables | "
                      "relationship")
    item: str = Field(max_length=256, description="variable: '<gt_id>|<agent_index>'; model: the GT model id; "
                      "transform: 'value|<unit id>' or 'graph|<unit id>'; a hypothesis facet: the pair 'P0|G0'")
    label: str = Field(default="", description="what the item is, in words, for the record")
    original: bool = Field(description="whether the engine counted it as a match")
    value: bool = Field(description="whether it counts as a match after the override")
    reason: str
    author_id: int = Field(foreign_key="user.id")
    created_at: datetime = _ts()
    detail: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True),
                                          description="a hypothesis facet: {'value': {...}, 'original': {...}}")


class ReproducibilityOverride(SQLModel, table=True):
    """An evaluator's correction of one item's reproducibility outcome (a reproducibility run), with the engine's
    outcome, who, why and when. One per item: a second override of the same item is refused, not overwritten."""

    __tablename__ = "reproducibility_override"
    __table_args__ = (UniqueConstraint("run_id", "item"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="scoring_run.id", index=True)
    item: str = Field(max_length=256, description="the item's key in the run's result")
    original: str = Field(max_length=32, description="the engine's outcome")
    value: str = Field(max_length=32, description="the outcome after the override")
    reason: str
    author_id: int = Field(foreign_key="user.id")
    created_at: datetime = _ts()


class JudgeLabel(SQLModel, table=True):
    """One judge decision sampled for expert labelling (the judge validation queue) and, once labelled, the
    expert's answer: does this pair / model row really match?"""

    __tablename__ = "judge_label"
    __table_args__ = (UniqueConstraint("run_id", "dataset", "analysis_key", "kind", "item"),)

    id: int | None = Field(default=None, primary_key=True)
    run_id: int = Field(foreign_key="scoring_run.id", index=True)
    dataset: str = Field(max_length=128)
    analysis_key: str = Field(max_length=256)
    kind: str = Field(max_length=16, description="variable | model; hypotheses: context | variables | relationship")
    item: str = Field(max_length=256)
    judge: str = Field(max_length=32)
    ground_truth: str = ""
    agent: str = ""
    judge_rationale: str = ""
    judge_value: bool
    expert_value: bool | None = None
    judge_label: str | None = Field(default=None, max_length=128, description="a categorical decision (hypothesis "
                                    "facets: match / no match, 'k of n gold, m predicted', A / B / C)")
    expert_label: str | None = Field(default=None, max_length=128)
    reason: str | None = None
    expert_id: int | None = Field(default=None, foreign_key="user.id")
    labelled_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = _ts()


class FormDraft(SQLModel, table=True):
    """A half-filled form of one user (an annotation form, release notes), kept on the server so that a reload
    or a new tab brings it back; removed when the form is saved or cancelled."""

    __tablename__ = "form_draft"

    user_id: int = Field(foreign_key="user.id", primary_key=True)
    name: str = Field(max_length=128, primary_key=True, description="the form, e.g. 'annotate.3.tf'")
    data: dict[str, Any] = _json(dict)
    updated_at: datetime = _ts()


class BackgroundJob(SQLModel, table=True):
    """A long job other than scoring a run (LLM alternative generation; agent runs next): what was asked, by
    whom, and its lifecycle, which every page and every worker machine reads from here
    (:mod:`curation.services.background_jobs`).

    ``active_scope`` holds ``scope`` while the job is queued or running and is cleared when it ends; it is unique,
    so one job per scope (e.g. one generation per dataset) is enforced by the database, also between machines.
    """

    __tablename__ = "background_job"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=32, index=True, description="e.g. llm_alternatives")
    params: dict[str, Any] = _json(dict)
    scope: str = Field(default="", max_length=128, index=True, description="e.g. dataset:3")
    active_scope: str | None = Field(default=None, max_length=128, unique=True, index=True)
    requested_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = _ts()
    status: str = Field(default=RunStatus.QUEUED.value, max_length=16, index=True)
    progress_done: int = 0
    progress_total: int = 0
    stage: str = Field(default="", max_length=256)
    message: str = ""
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    cancel_requested: bool = False
    started_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    heartbeat_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    executor: str = Field(default="", max_length=256, description="host/pid/start of the process running it")
    attempts: int = 0
    job_id: int | None = Field(default=None, description="its procrastinate job, when a worker runs it")
    dismissed_at: datetime | None = Field(default=None, sa_type=UTCDateTime,
                                          description="when its summary was dismissed from the page")


class HypothesisTaskStatus(StrEnum):
    NEEDS_CURATION = "needs_curation"  # no gold hypothesis shipped: experts write one (stages 1-3)
    GOLD = "gold"  # a gold hypothesis came with the import (metadata or answer key), or stage 3 decided one


class HypothesisTask(SQLModel, table=True):
    """One DiscoveryBench query over a registered dataset (folder): the question, what the folder says about it,
    and its gold hypothesis (natural-language text, workflow, and the decomposition curation fills in)."""

    __tablename__ = "hypothesis_task"
    __table_args__ = (UniqueConstraint("dataset_id", "metadata_k", "qid"),)

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    key: str = Field(unique=True, index=True, description="real/test/<folder>/metadata_<k>/q<qid>")
    source: str = Field(max_length=8, description="real or synth")
    split: str = Field(max_length=16, description="train, dev or test")
    metadata_k: int = Field(description="k of metadata_<k>.json (the answer keys' metadataid)")
    qid: int
    query_field: str = Field(default="", description="JSON path of the query: queries[0][1]")
    question: str
    question_type: str | None = Field(default=None, max_length=16, description="normalised: context, variables...")
    question_type_raw: str | None = Field(default=None, description="as written (relationhsip)")
    difficulty: int | None = None
    domain: str | None = None
    domain_knowledge: str | None = None
    workflow_tags: str | None = None
    data_files: list[str] = _json()
    gold_hypothesis: str | None = None
    gold_source: str | None = Field(default=None, max_length=16, description="metadata or answer_key")
    gold_workflow: str | None = None
    gold_context: str | None = None
    gold_variables: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    gold_relationship: str | None = None
    true_hypothesis_expr: str | None = None
    target_col: str | None = None
    relevant_cols: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    status: str = Field(default=HypothesisTaskStatus.NEEDS_CURATION.value, max_length=16, index=True)
    created_at: datetime = _ts()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    gold_provenance: dict[str, Any] | None = Field(
        default=None, sa_column=Column(JSON, nullable=True),
        description="gold_source consensus: how stage 3 decided it (rule, tally, meeting, candidate, by, at)")


class HypothesisProposal(SQLModel, table=True):
    """One analyst's stage-1 hypothesis for one DiscoveryBench query, written blind, decomposed into context,
    variables (each a data-dictionary column or a derived column with how it is derived) and relationship, with
    a workflow and optional supporting code whose sandbox run is kept (``check``).

    It belongs to the analyst's :class:`Analysis` of the dataset: submitting that analysis submits every
    hypothesis in it at once, and the stage-1 blinding rule that holds for BLADE decisions holds for these."""

    __tablename__ = "hypothesis_proposal"
    __table_args__ = (UniqueConstraint("analysis_id", "task_id"),)

    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    analysis_id: int = Field(foreign_key="analysis.id", index=True)
    task_id: int = Field(foreign_key="hypothesis_task.id", index=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    hypothesis: str
    context: str = ""
    variables: list[dict[str, Any]] = _json()
    relationship: str = ""
    workflow: str = ""
    code: str = ""
    check: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class ProgrammaticTask(SQLModel, table=True):
    """A programmatic task over a registered dataset (DataSciBench style): a prompt, the dataset files it reads;
    its checks and ground-truth artifacts are :class:`ProgrammaticItem` rows, reviewed like any decision."""

    __tablename__ = "programmatic_task"

    id: int | None = Field(default=None, primary_key=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    key: str = Field(unique=True, index=True, max_length=128, description="the task id, also its outputs folder")
    prompt: str
    input_files: list[str] = _json()
    data_source_type: str = ""
    extra: dict[str, Any] = _json(dict)
    created_at: datetime = _ts()
    created_by_id: int | None = Field(default=None, foreign_key="user.id")


class ProgrammaticItem(SQLModel, table=True):
    """A candidate check or ground-truth artifact of a programmatic task. Votes and consensus are the usual
    :class:`Vote` / :class:`Consensus` rows with ``target_kind`` ``prog_check`` or ``prog_artifact``."""

    __tablename__ = "programmatic_item"

    id: str = Field(default_factory=new_spec_id, primary_key=True, max_length=64)
    task_id: int = Field(foreign_key="programmatic_task.id", index=True)
    dataset_id: int = Field(foreign_key="dataset.id", index=True)
    kind: str = Field(max_length=16, description="check | artifact")
    source: str = Field(max_length=16, description="llm | peer | imported | agreement")
    proposed_by_id: int | None = Field(default=None, foreign_key="user.id")
    seed_id: str | None = Field(default=None, max_length=64, description="the item it is an edit of")
    payload: dict[str, Any] = _json(dict)
    gate: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    extra: dict[str, Any] = _json(dict)
    position: int = 0
    created_at: datetime = _ts()


class AgentRun(SQLModel, table=True):
    """A model under test answering a release's tasks with a strategy (:mod:`curation.services.agent_runs`):
    what was asked (release, kind, endpoint, strategy, runs per task, temperature, seed, the prompt templates'
    versions), its lifecycle (the :class:`BackgroundJob` running it carries the heartbeat), what it cost, the
    submissions it generated and the scoring runs they became."""

    __tablename__ = "agent_run"

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=32, description="the task kind answered (analyses, hypotheses, mcq)")
    release_version: str = Field(max_length=32, index=True)
    agent: str = Field(max_length=128, description="the name it has on the leaderboard")
    model: str = Field(max_length=128)
    base_url: str = Field(max_length=512)
    strategy: str = Field(max_length=16)
    workflow: bool = False
    runs_per_task: int = 1
    temperature: float = 0.0
    seed: int = 0
    only: list[str] = _json(list)
    settings: dict[str, Any] = _json(dict)
    templates: dict[str, Any] = _json(dict)
    prices: list[float] | None = Field(default=None, sa_column=Column(JSON, nullable=True),
                                       description="USD per million input and output tokens, as set at start")
    job_id: int | None = Field(default=None, description="the background job running it (the latest)")
    status: str = Field(default=RunStatus.QUEUED.value, max_length=16, index=True)
    message: str = ""
    tasks_total: int = 0
    tasks_done: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    cost: float | None = None
    submissions: list[dict[str, Any]] = _json(list)
    scoring_run_ids: list[int] = _json(list)
    created_by_id: int | None = Field(default=None, foreign_key="user.id")
    created_at: datetime = _ts()
    finished_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class AgentTaskRun(SQLModel, table=True):
    """One run of one task of an agent run: its status and sentence, the validated answer, what it cost, and
    where its transcript is kept (a JSON file under the data folder). Written once, in one transaction, when
    the task ends: a crash never leaves half a task, and a resumed run skips the tasks found here."""

    __tablename__ = "agent_task_run"
    __table_args__ = (UniqueConstraint("agent_run_id", "task_key", "replicate"),)

    id: int | None = Field(default=None, primary_key=True)
    agent_run_id: int = Field(foreign_key="agent_run.id", index=True)
    task_key: str = Field(max_length=256)
    title: str = Field(default="", max_length=256)
    replicate: int = 0
    status: str = Field(max_length=32)
    message: str = ""
    answer: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    transcript_path: str = Field(default="", max_length=512, description="relative to the runs folder")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cache_hits: int = 0
    tool_calls: int = 0
    model_seconds: float = 0.0
    seconds: float = 0.0
    cost: float | None = None
    finished_at: datetime = _ts()
