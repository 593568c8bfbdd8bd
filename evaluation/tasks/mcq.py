"""The MCQ kind ("mcq"): one answers file (question id → letter) for the release's multiple-choice questions,
scored by strict parsing (an unparseable answer is never guessed), with accuracy and chance per dataset and per
question kind (:mod:`evaluation.mcq_scoring`). On the leaderboard it is a companion: an agent's latest MCQ accuracy
on the release sits beside its analysis runs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evaluation.agents import mcq as agent_hook
from evaluation.mcq_scoring import dump_mcq_report, read_answers, score_answers
from evaluation.tasks.base import (
    CheckedFile,
    Column,
    CuratedShape,
    LeaderboardSpec,
    RunView,
    ScoredRun,
    ScoringContext,
    SubmissionCheckError,
    TaskKind,
    fmt_score,
)
from exports.mcq_part import RELEASE_PART, MCQOption, MCQPart, MCQType, QuestionKind
from exports.schema import Release

__all__ = ["CURATED", "MCQPayload", "MCQReviewPayload", "asked_model", "check_files", "leaderboard_values", "score",
           "summary_line"]

name = MCQPart.kind
label = "MCQ answers (question id → letter)"
item_noun = "answers files"
uses_judge = False
accepts_overrides = False
view: str | None = "mcq"
leaderboard = LeaderboardSpec(role="companion", columns=(Column("mcq_accuracy", "MCQ accuracy"),))


class MCQReviewPayload(BaseModel):
    """A curator's review of an MCQ as its curated item keeps it (its state, ``accepted | rejected | edited |
    pending``, is the item's ``status``): the last reviewer, when, their note, and every review action."""

    model_config = ConfigDict(extra="forbid")

    note: str = ""
    reviewed_by_id: int | None = None
    reviewed_at: datetime
    history: list[dict[str, Any]] = Field(default_factory=list)


class MCQPayload(BaseModel):
    """An MCQ as a curated item keeps it (its id is the item's ``key``): the question a release carries (an edit
    replaces it), its place among its dataset's MCQs, and its review (None: never reviewed)."""

    model_config = ConfigDict(extra="forbid")

    kind: QuestionKind
    mc_type: MCQType
    concept: str = ""
    options: list[MCQOption]
    correct_index: int = 0
    extra: dict[str, Any] = Field(default_factory=dict)
    position: int = 0
    review: MCQReviewPayload | None = None


#: its questions are curated items (no candidates: a curator edits the question itself)
CURATED = CuratedShape(item=MCQPayload)


def check_files(files: Sequence[tuple[str, bytes]], release: Release, *,
                max_items: int | None) -> list[CheckedFile]:
    """Exactly one answers file, a JSON object {question id: letter} (or {"answers": {...}}).

    Raises:
        SubmissionCheckError: not exactly one file.
        AnswersFileError: the file is not such an object (with where).
    """
    if len(files) != 1:
        raise SubmissionCheckError("An MCQ run takes exactly one answers file (question id → letter).")
    read_answers(files[0][1], label=files[0][0])
    return [CheckedFile(files[0][0], files[0][1], format="answers")]


def asked_model(data: bytes) -> dict[str, Any]:
    """The model-under-test provenance an answers file made by ``score-mcq --ask-model`` carries, if any."""
    try:
        parsed = json.loads(data)
    except ValueError:
        return {}
    source = parsed.get("source") if isinstance(parsed, dict) else None
    return {"asked": source} if isinstance(source, dict) and source.get("kind") == "model" else {}


def score(ctx: ScoringContext) -> ScoredRun:
    """Accuracy overall, per dataset and per question kind, with the chance level beside it."""
    fname, data = ctx.files[0]
    report = score_answers(ctx.release.datasets, read_answers(data, label=fname),
                           release_version=ctx.release.version,
                           source={"kind": "answers_file", "file": fname, **asked_model(data)})
    overall = next((g for g in report.groups if g.dataset == "all" and g.kind == "all"), None)
    scores: dict[str, Any] = {"mcq": {
        "accuracy": overall.accuracy if overall else None, "chance": overall.chance if overall else None,
        "unparseable": overall.unparseable if overall else 0,
        "datasets": {g.dataset: g.accuracy for g in report.groups if g.kind == "all" and g.dataset != "all"}}}
    return ScoredRun(result_name="mcq-report.json", result_bytes=dump_mcq_report(report).encode("utf-8"),
                     scores=scores, items=1)


def leaderboard_values(run: RunView, dataset: str | None) -> dict[str, Any] | None:
    m = (run.scores_effective or {}).get("mcq", {})
    return {"mcq_accuracy": m.get("datasets", {}).get(dataset) if dataset else m.get("accuracy")}


def summary_line(scores: Mapping[str, Any]) -> str:
    m = scores.get("mcq", {})
    return f"MCQ accuracy {fmt_score(m.get('accuracy'))} (chance {fmt_score(m.get('chance'))})"


KIND = TaskKind(name=MCQPart.kind, label=label, item_noun=item_noun, leaderboard=leaderboard,
                check_files=check_files, score=score, leaderboard_values=leaderboard_values, summary_line=summary_line,
                uses_judge=uses_judge, accepts_overrides=accepts_overrides, view=view, order=20,
                release_part=RELEASE_PART, agent=agent_hook, curation="curation.services.mcq_store",
                curated=CURATED)
