"""The QRData kind ("qrdata"): statistical and causal questions over data files (QRData, Findings of ACL 2024),
answered in text and scored with upstream's rules (``benchmark/eval.py``, ``calc_acc``).

A submission is one JSON file ``{"answers": {"<question id>": "<answer text>"}}`` (``schemas/qrdata.schema.json``,
``forkpaths score-schema qrdata``); the id is the question's position in upstream's QRData.json, the id AIRepr
uses. An optional ``source`` object says where the answers came from.

Upstream's rules, as its evaluator applies them (answer and gold both lower-cased):

* **numerical**: the gold is read as a number, a trailing ``%`` dividing it by 100. The answer's FIRST number
  (an optional minus, digits, optionally a point and more digits, optionally ``%``, with the same ``%`` rule) is
  correct when it lies strictly between gold × 0.97 and gold × 1.03 (the bounds ordered, so negative golds work;
  a gold of 0 is never matched, nor is the bound itself). So ``"5.36"`` does not match the gold ``"5.36%"``
  (0.0536), ``".5"`` reads as 5, ``"1,234"`` as 1, and a Unicode minus is not a minus.
* **multiple choice**: correct when the answer starts with the gold label (``b`` matches ``"B"`` and
  ``"b. because…"``; ``no`` matches ``"no, …"`` and also ``"not sure"``).

An answer upstream cannot read at all gets the status ``invalid_answer`` with a sentence (no number in a numerical
answer; an answer that starts with none of the choices; an answer that is not text) and counts as wrong, as
upstream counts it; a question with no answer is ``unanswered`` (wrong too). So accuracy (correct / questions) is
upstream's figure; it comes with a 95 % bootstrap interval over questions, and with breakdowns by question type
(numerical, multiple_choice), by reasoning (causal: upstream's keyword ``Causality``; statistical otherwise, the
paper's split) and by dataset. On the leaderboard the kind is ranked: a QRData run is a benchmark of its own.

Agents answer one question per task (one-shot, or ReAct with the question's data files in the working folder).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evaluation.agents.base import ANSWERED, AgentTask, Submission, TaskAnswer, TaskFile
from evaluation.agents.briefs import file_preview, task_file
from evaluation.errors import EvaluationError
from evaluation.llm.quoting import quote
from evaluation.tasks.base import (
    AIReprAccuracy,
    CheckedFile,
    Column,
    ImportedDataset,
    ImportedFile,
    Importer,
    LeaderboardSpec,
    ReleasePart,
    RunView,
    ScoredRun,
    ScoringContext,
    SubmissionCheckError,
    TaskKind,
    fmt_score,
)
from evaluation.tasks.parts import answers_accuracy, keeping_items, part_of
from exports.jsontext import JsonTextError, load_json
from exports.qrdata import QRDataFormatError, QRDataPart, QRDataQuestion, blind_part, gold_number, read_qrdata
from exports.schema import DatasetRelease, Release

__all__ = [
    "AGENT",
    "KIND",
    "RESULT_FORMAT",
    "SCHEMA_PATH",
    "TOLERANCE",
    "QRDataImportError",
    "QRDataItem",
    "QRDataResult",
    "QRDataSubmission",
    "Verdict",
    "check_files",
    "first_number",
    "import_folder",
    "judge_answer",
    "read_answer",
    "leaderboard_values",
    "planned_items",
    "read_result",
    "release_questions",
    "score",
    "submission_schema",
    "summary_line",
]

name = "qrdata"
SCHEMA_PATH = Path(__file__).parent / "schemas" / "qrdata.schema.json"
RESULT_FORMAT = "forkpaths-qrdata-result"
RESULT_VERSION: Literal["1.0"] = "1.0"
#: upstream's relative tolerance (``error_scale``)
TOLERANCE = 0.03
N_BOOTSTRAP = 1000
SHOWN_CHARS = 500  # an answer is kept in the result up to this many characters
STATUSES = ("correct", "wrong", "invalid_answer", "unanswered")
# upstream's number: an optional minus, digits, optionally a point and digits, optionally a percent sign (``\d``:
# any Unicode digit, which Python's float reads too)
_NUMBER = re.compile(r"-?\d+(?:\.\d*)?%?")

Status = Literal["correct", "wrong", "invalid_answer", "unanswered"]


# ------------------------------------------------------------------------------------ upstream's rules


@dataclass(frozen=True)
class Verdict:
    """How one answer scores: its status, what was read from it (the number or the choice), and why."""

    status: Status
    read: str | None
    sentence: str


def first_number(text: str) -> tuple[str, float] | None:
    """The first number in ``text`` as upstream reads it: the token and its value (``%``: divided by 100)."""
    m = _NUMBER.search(text.lower())
    if m is None:
        return None
    token = m.group()
    return token, (float(token[:-1]) / 100 if token.endswith("%") else float(token))


def read_answer(q: QRDataQuestion, answer: Any) -> tuple[str | None, float | None, str]:
    """What upstream reads from ``answer``: the first number (its token and value) of a numerical answer, or the
    choice a multiple-choice answer starts with; ``(None, None, why)`` when it reads nothing (the gold is not
    needed, so an agent's answer is checked with it before it is kept)."""
    if not isinstance(answer, str):
        return None, None, (f"The answer is a JSON {_json_type(answer)}, not text: write it as a string, e.g. "
                            "\"0.033\" or \"B\".")
    text = answer.lower()
    if q.question_type == "numerical":
        found = first_number(text)
        if found is None:
            return None, None, "The answer holds no number (upstream reads the first number of a numerical answer)."
        return found[0], found[1], ""
    chosen = next((c for c in sorted(q.choices, key=len, reverse=True) if text.startswith(c)), None)
    if chosen is None:
        return None, None, (f"The answer starts with none of the choices ({', '.join(q.choices)}); upstream "
                            "compares its beginning with the gold label.")
    return chosen, None, ""


def judge_answer(q: QRDataQuestion, answer: Any) -> Verdict:
    """Score ``answer`` (the submission's value for ``q``) against ``q``'s gold by upstream's rules."""
    if answer is None:
        return Verdict("unanswered", None, "No answer was given.")
    read, value, why = read_answer(q, answer)
    if read is None:
        return Verdict("invalid_answer", None, why)
    gold = (q.answer or "").lower()
    if value is not None:
        target = gold_number(gold)
        low, high = sorted((target * (1 - TOLERANCE), target * (1 + TOLERANCE)))
        if low < value < high:
            return Verdict("correct", read, f"{read} is within 3 % of the gold.")
        return Verdict("wrong", read, f"{read} (read as {value:g}) is not strictly within 3 % of the gold "
                       f"({target:g}: between {low:g} and {high:g}).")
    if answer.lower().startswith(gold):
        return Verdict("correct", gold, f"The answer starts with the gold choice {gold!r}.")
    return Verdict("wrong", read, f"The answer chooses {read!r}, not the gold choice {gold!r}.")


def _json_type(value: Any) -> str:
    return {bool: "boolean", int: "number", float: "number", list: "list", dict: "object"}.get(type(value),
                                                                                               type(value).__name__)


# ------------------------------------------------------------------------------------ submission


class QRDataSubmission(BaseModel):
    """A QRData submission: the answer text per question id (the question's position in upstream's QRData.json,
    the id AIRepr uses). Answer the numerical questions with the number first (a trailing % divides it by 100), and
    the multiple-choice questions starting with the choice's label (``B``, ``no``)."""

    model_config = ConfigDict(extra="forbid")

    answers: dict[str, str | None] = Field(description="question id → the answer text (null: not answered)",
                                           json_schema_extra={"propertyNames": {"pattern": "^[0-9]+$"}})
    source: dict[str, Any] | None = Field(default=None, description="where the answers come from (free-form; an "
                                                                    "agent run records its model and run here)")


def submission_schema() -> dict[str, Any]:
    """The JSON schema of :class:`QRDataSubmission` (the file in ``schemas/`` is this, checked by a test)."""
    schema = QRDataSubmission.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://forkpaths.invalid/schemas/qrdata.schema.json"
    return schema


def release_questions(release: Release) -> list[tuple[DatasetRelease, QRDataQuestion]]:
    """Every QRData question of the release with its dataset, in the release's order.

    Raises:
        SubmissionCheckError: two datasets hold a question with the same id (answers could not be told apart).
    """
    out: list[tuple[DatasetRelease, QRDataQuestion]] = []
    seen: dict[str, str] = {}
    for ds in release.datasets:
        part = part_of(ds, KIND)
        for q in part.questions if part is not None else []:
            if q.id in seen:
                raise SubmissionCheckError(f"Release {release.version} holds QRData question {q.id} twice (datasets "
                                           f"{seen[q.id]} and {ds.name}); its answers could not be told apart.")
            seen[q.id] = ds.name
            out.append((ds, q))
    return out


def _read(data: bytes, label: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The answers object and the source of a submission file (its envelope checked, not its answers)."""
    try:
        doc = load_json(data, label=label)
    except JsonTextError as exc:
        raise SubmissionCheckError(f"{exc} Nothing was stored.") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("answers"), dict):
        raise SubmissionCheckError(f"{label} is not a QRData submission: expected one JSON object "
                                   '{"answers": {"<question id>": "<answer text>"}} (forkpaths score-schema qrdata).')
    extra = sorted(set(doc) - {"answers", "source"})
    if extra:
        raise SubmissionCheckError(f"{label} has the field{'s' if len(extra) > 1 else ''} {', '.join(extra)}, which a "
                                   "QRData submission does not have (only answers and source).")
    source = doc.get("source")
    if source is not None and not isinstance(source, dict):
        raise SubmissionCheckError(f"{label}: source must be an object, not a JSON {_json_type(source)}.")
    return doc["answers"], source or {}


def check_files(files: Sequence[tuple[str, bytes]], release: Release, *,
                max_items: int | None) -> list[CheckedFile]:
    """Exactly one answers file over a release that holds QRData questions.

    Raises:
        SubmissionCheckError: not one file, a release without QRData questions, or a file that is not a QRData
            submission (which file, what is wrong).
    """
    if len(files) != 1:
        raise SubmissionCheckError("A QRData run takes exactly one answers file "
                                   '{"answers": {"<question id>": "<answer text>"}}.')
    questions = release_questions(release)
    if not questions:
        raise SubmissionCheckError(f"Release {release.version} holds no QRData question; import some with "
                                   "forkpaths import-qrdata and cut a release.")
    fname, data = files[0]
    answers, _ = _read(data, fname)
    if max_items is not None and len(answers) > max_items:
        raise SubmissionCheckError(f"{fname} answers {len(answers):,} questions; at most {max_items:,} are taken.")
    return [CheckedFile(fname, data, format="qrdata-answers", items=len(answers))]


def planned_items(checked: Sequence[CheckedFile], release: Release) -> int:
    """A run scores every QRData question of the release, answered or not: its count from queued to finished."""
    return len(release_questions(release))


# ------------------------------------------------------------------------------------ result


class QRDataItem(BaseModel):
    """One question of a run: what was answered and how it scored."""

    id: str
    dataset: str
    question_type: str
    reasoning: str
    question: str = ""
    gold: str | None
    answer: str | None = Field(description="the answer as given (cut to 500 characters; JSON for a non-text one)")
    read: str | None = Field(default=None, description="what was read from it: the first number, or the choice")
    status: Status
    sentence: str


class QRDataResult(BaseModel):
    """The result file of a QRData run."""

    format: Literal["forkpaths-qrdata-result"] = "forkpaths-qrdata-result"
    format_version: Literal["1.0"] = RESULT_VERSION
    release_version: str
    ground_truth_hash: str
    source: dict[str, Any] = Field(default_factory=dict)
    items: list[QRDataItem]
    scores: dict[str, Any]
    unknown_ids: list[str] = Field(default_factory=list, description="answered ids the release does not hold")


def read_result(data: bytes | str) -> QRDataResult:
    """Read a result file (pydantic refuses another format or version)."""
    return QRDataResult.model_validate_json(data)


def _shown(answer: Any) -> str | None:
    if answer is None:
        return None
    text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")[:SHOWN_CHARS]  # lone surrogates: escaped


def _group(items: Sequence[QRDataItem]) -> dict[str, Any]:
    from evaluation.metrics import proportion_estimate  # numpy: loaded to score, not to list the kinds

    est = proportion_estimate([i.status == "correct" for i in items], n_bootstrap=N_BOOTSTRAP)
    return {"accuracy": est.model_dump(), "questions": len(items),
            **{s: sum(i.status == s for i in items) for s in STATUSES}}


def _by(items: Sequence[QRDataItem], key: str, order: Iterable[str] = ()) -> dict[str, Any]:
    values = list(dict.fromkeys([*order, *(getattr(i, key) for i in items)]))
    return {v: _group(mine) for v in values if (mine := [i for i in items if getattr(i, key) == v])}


def aggregate(items: Sequence[QRDataItem]) -> dict[str, Any]:
    """Accuracy with its interval and the counts, overall and by question type, reasoning and dataset (each
    dataset again by question type)."""
    return {**_group(items),
            "question_types": _by(items, "question_type", ("numerical", "multiple_choice")),
            "reasoning": _by(items, "reasoning", ("causal", "statistical")),
            "datasets": {d: {**g, "question_types": _by([i for i in items if i.dataset == d], "question_type",
                                                        ("numerical", "multiple_choice"))}
                         for d, g in _by(items, "dataset").items()}}


def score(ctx: ScoringContext) -> ScoredRun:
    """Every QRData question of the release, answered or not, by upstream's rules."""
    fname, data = ctx.files[0]
    answers, source = _read(data, fname)
    items = []
    questions = release_questions(ctx.release)
    for n, (ds, q) in enumerate(questions):
        verdict = judge_answer(q, answers.get(q.id))
        items.append(QRDataItem(id=q.id, dataset=ds.name, question_type=q.question_type, reasoning=q.reasoning,
                                question=q.question, gold=q.answer, answer=_shown(answers.get(q.id)), read=verdict.read,
                                status=verdict.status, sentence=verdict.sentence))
        ctx.progress(n + 1, len(questions), f"question {n + 1} of {len(questions)}")
    known = {q.id for _, q in questions}
    unknown = sorted(_shown(k) or "" for k in answers if k not in known)
    scores = {"qrdata": aggregate(items)}
    result = QRDataResult(release_version=ctx.release.version, ground_truth_hash=ctx.ground_truth_hash,
                          source={"file": fname, **source}, items=items, scores=scores, unknown_ids=unknown)
    s = scores["qrdata"]
    notes = []
    if s["invalid_answer"]:
        notes.append(f"{s['invalid_answer']} answer{'s' if s['invalid_answer'] != 1 else ''} could not be read "
                     "(invalid_answer, counted wrong as upstream counts them; Run details say why).")
    if unknown:
        notes.append(f"{len(unknown)} answered id{'s' if len(unknown) != 1 else ''} the release does not hold "
                     f"({', '.join(unknown[:5])}{'…' if len(unknown) > 5 else ''}) were left out.")
    return ScoredRun(result_name="qrdata-result.json", result_bytes=result.model_dump_json(indent=1).encode("utf-8"),
                     scores=scores, items=len(items), message=" ".join(notes))


# ------------------------------------------------------------------------------------ leaderboard


leaderboard = LeaderboardSpec(
    role="ranked", sort_key="accuracy",
    columns=(Column("accuracy", "accuracy", "ci", "correct / questions (upstream's rules), 95 % bootstrap CI over "
                                                  "questions"),
             Column("type.numerical", "numerical", "ci", "first number within 3 % of the gold"),
             Column("type.multiple_choice", "multiple choice", "ci", "answer starts with the gold choice"),
             Column("reasoning.causal", "causal", "ci", "questions upstream marks Causality"),
             Column("reasoning.statistical", "statistical", "ci"),
             Column("invalid_answer", "invalid answers", "count", "answers with no number, or starting with no "
                                                                   "choice (counted wrong)"),
             Column("unanswered", "unanswered", "count", "questions with no answer (counted wrong)"),
             Column("questions", "questions", "count")))


def _ci(row: dict[str, Any], key: str, group: Mapping[str, Any] | None) -> None:
    est = (group or {}).get("accuracy") or {}
    row[key], row[f"{key}.low"], row[f"{key}.high"] = est.get("point"), est.get("ci_low"), est.get("ci_high")


def leaderboard_values(run: RunView, dataset: str | None) -> dict[str, Any] | None:
    """Accuracy with its interval, by question type and reasoning, and the counts (on one dataset: its own)."""
    s = (run.scores_effective or {}).get("qrdata")
    if s is None:
        return None
    if dataset is not None:
        s = s.get("datasets", {}).get(dataset)
        if s is None:
            return None
    row: dict[str, Any] = {k: s.get(k) for k in ("invalid_answer", "unanswered", "questions")}
    _ci(row, "accuracy", s)
    for t in ("numerical", "multiple_choice"):
        _ci(row, f"type.{t}", s.get("question_types", {}).get(t))
    for r in ("causal", "statistical"):
        _ci(row, f"reasoning.{r}", s.get("reasoning", {}).get(r))
    return row


def summary_line(scores: Mapping[str, Any]) -> str:
    s = scores.get("qrdata", {})
    acc = s.get("accuracy", {})
    types = s.get("question_types", {})
    by_type = "  ".join(f"{t} {fmt_score(types[t]['accuracy'].get('point'))}" for t in types)
    return (f"accuracy {fmt_score(acc.get('point'))} [{fmt_score(acc.get('ci_low'))}, {fmt_score(acc.get('ci_high'))}]"
            f"  {by_type}  questions {s.get('questions', 0)}  invalid {s.get('invalid_answer', 0)}  "
            f"unanswered {s.get('unanswered', 0)}")


# ------------------------------------------------------------------------------------ release part


def _counts(part: QRDataPart) -> dict[str, int]:
    qs = part.questions
    return {"questions": len(qs), "numerical": sum(q.question_type == "numerical" for q in qs),
            "multiple choice": sum(q.question_type == "multiple_choice" for q in qs),
            "with gold": sum(q.answer is not None for q in qs)}


def _hash_input(part: QRDataPart) -> Any:
    """What the scores depend on: each question's id, type, choices, gold and keywords (its reasoning)."""
    return [{"id": q.id, "type": q.question_type, "choices": q.choices, "gold": q.answer, "keywords": q.keywords}
            for q in part.questions]


release_part = ReleasePart(model=QRDataPart, noun="QRData questions", counts=_counts, hash_input=_hash_input,
                           blind=blind_part, work=("with gold",), one="QRData question")


# ------------------------------------------------------------------------------------ import


class QRDataImportError(EvaluationError):
    """A QRData folder that cannot be imported (the sentence names the file, the record and the field)."""


def import_folder(path: Path) -> list[ImportedDataset]:
    """Upstream's benchmark folder (:func:`exports.qrdata.read_qrdata`) as the datasets to register, one per set
    of data files, each with its part (the questions and their gold), its licence and QRData's attribution.

    Raises:
        QRDataImportError: the folder does not fit (nothing is stored by this).
    """
    try:
        imported = read_qrdata(path)
    except QRDataFormatError as exc:
        raise QRDataImportError(str(exc)) from None
    return [ImportedDataset(
        name=d.name, title=d.title, research_question=d.research_question, description=d.description,
        files=tuple(ImportedFile(f.name, f.source, role="data",
                                 format="csv" if f.name.lower().endswith(".csv") else "other") for f in d.files),
        main_file=d.files[0].name, part=d.part, licence=d.licence, attribution=imported.attribution,
        extra={"benchmark": "QRData", "origins": {f.name: f.origin for f in d.files if f.origin}})
        for d in imported.datasets]


importer = Importer(source="a QRData folder: QRData.json (upstream's questions), data/ with their files, LICENSE "
                           "(optional: upstream_index.json, each record's position upstream)", read=import_folder)


# ------------------------------------------------------------------------------------ agents


@dataclass(frozen=True)
class QRDataTask(AgentTask):
    """One question as an agent's task, with what its answer is checked against before it is kept."""

    question_type: str = "numerical"
    choices: tuple[str, ...] = ()


class _Reply(BaseModel):
    model_config = ConfigDict(extra="ignore")
    answer: str | float | int
    rationale: str = ""


SAMPLE_ROWS = 5
BRIEF_TEMPLATE = "qrdata-brief@1"


def _task_files(release_folder: Path, ds: DatasetRelease, q: QRDataQuestion) -> tuple[TaskFile, ...]:
    by_name = {f.name: f.path for f in ds.files} | {Path(f.name).name: f.path for f in ds.files}
    if ds.data_file:
        by_name.setdefault(Path(ds.data_file).name, ds.data_file)
    return tuple(task_file(f, release_folder / by_name[f]) for f in q.data_files if f in by_name)


def _brief(q: QRDataQuestion, files: tuple[TaskFile, ...]) -> str:
    listing = "\n".join(file_preview(f, SAMPLE_ROWS)[0] for f in files) or "(no data file)"
    first = next((f.name for f in files if f.table), None)
    how = (f"Each data file is in the working folder under its name; `df` is {quote(first)}, already loaded."
           if first else "")
    if q.question_type == "numerical":
        rule = ("Give one number as the answer, as the question asks for it (rounded as asked); it is scored by "
                "the first number in your answer, within 3 % of the correct one; write a percentage with %.")
    else:
        rule = (f"Answer with one of the choices ({', '.join(q.choices)}): your answer must start with the "
                "choice's label.")
    return (f"Data description: {quote(q.data_description or '(none)', limit=8000)}\n\nData files:\n{listing}\n"
            f"{how}\n\nQuestion: {quote(q.question, limit=8000)}\n\n{rule}")


class _Agent:
    """The agent hook of the QRData kind (an :class:`evaluation.agents.AgentKind`): one task per question."""

    name = name
    label = "QRData questions (one task per question)"
    strategies = ("oneshot", "react")
    brief_template = BRIEF_TEMPLATE

    def narrow(self, release: Release, key: str) -> Release:
        """The release as it holds question ``key`` only: one answer scored on it is that question's score (an
        inspect sample's value)."""
        return keeping_items(release, KIND, lambda q: q.id == key)

    def tasks(self, release: Release, release_folder: Path, *, only: Sequence[str] | None = None
              ) -> list[AgentTask]:
        out: list[AgentTask] = []
        for ds, q in release_questions(release):
            if only and q.id not in only and ds.name not in only:
                continue
            files = _task_files(release_folder, ds, q)
            first = next((f for f in files if f.table), None)
            out.append(QRDataTask(key=q.id, kind=name, title=f"{ds.name}: QRData {q.question_type} question {q.id}",
                                  brief=_brief(q, files), data_path=first.path if first else None, dataset=ds.name,
                                  files=files, question_type=q.question_type, choices=tuple(q.choices)))
        return out

    def answer_shape(self, task: AgentTask, *, workflow: bool) -> str:
        if isinstance(task, QRDataTask) and task.question_type == "multiple_choice":
            answer = f"<one of {', '.join(task.choices)}>"
        else:
            answer = "<the number, e.g. 0.033 or -4.91 or 5.36%>"
        return json.dumps({"answer": answer, "rationale": "<one or two sentences>"})

    def validate(self, value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
        """The answer as text, checked by the kind's reading rule (a number; a choice's label first)."""
        reply = _Reply.model_validate(value)
        if isinstance(reply.answer, bool):
            raise ValueError("the answer is a boolean, not a number or a choice")
        # a JSON number written out in full (1e-05 would read as 1 by upstream's rule)
        text = reply.answer if isinstance(reply.answer, str) else format(Decimal(repr(reply.answer)), "f")
        qtype = task.question_type if isinstance(task, QRDataTask) else "numerical"
        choices = list(task.choices) if isinstance(task, QRDataTask) else []
        probe = QRDataQuestion(id="0", question="-", data_files=["-"], question_type=qtype,  # type: ignore[arg-type]
                               choices=choices)
        read, _, why = read_answer(probe, text)
        if read is None:
            raise ValueError(why)
        return {"answer": text, "rationale": reply.rationale}

    def submissions(self, release: Release, answers: Sequence[TaskAnswer], *,
                    source: dict[str, Any]) -> list[Submission]:
        """One answers file per run of the agent; an answer that could not be used goes in as the model gave it
        (scored invalid_answer), a task with no answer at all is left out (unanswered)."""
        out = []
        for r in sorted({a.replicate for a in answers}):
            mine = [a for a in answers if a.replicate == r]
            given = {a.task: (str(a.answer["answer"]) if a.status in ANSWERED and a.answer is not None else a.raw)
                     for a in mine}
            errors = {a.task: a.message for a in mine if a.status not in ANSWERED}
            body = {"answers": {k: v for k, v in given.items() if v is not None},
                    "source": {"kind": "model", **source, "run": r, "template_version": BRIEF_TEMPLATE,
                               "errors": errors}}
            out.append(Submission(f"run {r}", [(f"qrdata-answers-run{r}.json",
                                                json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8"))]))
        return out


def airepr_accuracy(release: Release, release_folder: Path, answers: Mapping[str, str]) -> dict[str, Any] | None:
    """AIRepr's final answers (by sample index, the question id) scored by this kind's rules over the questions
    the release holds: the accuracy with its interval, or None when the release holds none of them."""
    return answers_accuracy(KIND, release, release_folder, answers, has_gold=lambda q: q.answer is not None,
                            accuracy=lambda scores: scores["qrdata"]["accuracy"])


AGENT = _Agent()

KIND = TaskKind(name=name, label="QRData answers (question id → answer text)", item_noun="questions",
                leaderboard=leaderboard, check_files=check_files, score=score,
                leaderboard_values=leaderboard_values, summary_line=summary_line, view="qrdata", order=60,
                release_part=release_part, submission_schema=SCHEMA_PATH, agent=AGENT, importer=importer,
                planned_items=planned_items,
                airepr=AIReprAccuracy(dataset="QRData", score=airepr_accuracy))
