"""The StatQA kind ("statqa"): for each StatQA question of the release, the model's reply naming the relevant
columns and the applicable statistical methods, scored by StatQA's own rules (HKUSTDial/StatQA,
``analyze_model_answer.py`` and ``utils.extract_json_answer``), quirks included, so that a run's figures are the
ones upstream's scripts would print for the same replies.

Submission (``evaluation/tasks/schemas/statqa.schema.json``; ``forkpaths score-schema statqa``)::

    {"answers": {"<question id>": "<the model's reply>", ...}, "source": {...}?}

The id is the record's index in upstream ``mini-StatQA.json`` (the id AIRepr uses); the reply is the model's text
as it came, holding the JSON object ``{"columns": [...], "methods": [...]}``; ``null`` is a question the model
did not answer.

Upstream's rules, as this module applies them (:func:`upstream_verdict`):

* the answer is the text from the reply's first ``{`` to the first ``}`` after it, if that text parses as JSON;
  otherwise the reply is an *Invalid Answer* (a nested object, or a ``}`` inside a string, cuts it short);
* for each target (``columns``, ``methods``) the answer's value (a missing key reads as an empty list) and the
  gold's are lower-cased and stripped item by item and compared as sets: correct = |answer ∩ gold|, wrong =
  |answer − gold|, missed = |gold − answer|. A value that cannot be read so (null, a number, a list holding a
  non-string) makes that target an *Invalid Answer*; a string is read letter by letter and an object by its keys,
  as upstream's loop reads them;
* the gold is read from its text after every ``'`` became ``"`` (upstream's own step): a gold naming a column with
  an apostrophe cannot be read, and every answer to it is an *Invalid Answer* for both targets;
* a target scores 1 only when correct > 0, wrong = 0 and missed = 0 (upstream's default ``acc`` policy); an
  Invalid Answer scores 0; ``selection_overall`` (the headline accuracy) is 1 when both targets score 1.

Accuracy (selection overall, and each target's) is the mean over the release's StatQA questions, an unanswered
one counting 0, with a 95 % percentile-bootstrap interval over questions (:func:`evaluation.metrics
.proportion_estimate`), and broken down by task type, difficulty and dataset. Item statuses: ``scored``,
``invalid_answer`` (no JSON object where upstream looks, or an object of the wrong shape that scores 0 on both
targets: said in a sentence), ``gold_unreadable`` (upstream's apostrophe quirk: scored 0, as upstream does) and
``unanswered``.

On the leaderboard StatQA is *ranked*: it is a benchmark of its own (AIRepr reports it beside QRData and
DiscoveryBench), so a run stands as a row whether or not the agent also answered another kind; as a companion its
accuracy would only show beside an analyses run of the same agent and model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluation.agents.base import ANSWERED, AgentTask, Submission, TaskAnswer
from evaluation.agents.briefs import file_preview, task_file
from evaluation.errors import EvaluationError
from evaluation.llm.quoting import quote
from evaluation.submissions import printable
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
from exports.schema import DatasetRelease, Release
from exports.statqa import (
    DIFFICULTIES,
    METHODS,
    SOURCE,
    TASK_TYPES,
    StatQAFormatError,
    StatQAPart,
    StatQAQuestion,
    blind_part,
    part_counts,
    part_hash_input,
    read_statqa_folder,
)

if TYPE_CHECKING:
    from evaluation.metrics import Estimate

__all__ = [
    "KIND",
    "RESULT_FORMAT",
    "SCHEMA_PATH",
    "Counts",
    "StatQAImportError",
    "ItemResult",
    "StatQAResult",
    "StatQASubmission",
    "UpstreamVerdict",
    "aggregate",
    "check_files",
    "extract_answer",
    "leaderboard_values",
    "planned_items",
    "read_folder",
    "read_result",
    "read_submission",
    "score",
    "submission_schema",
    "summary_line",
    "upstream_verdict",
]

name = "statqa"
RESULT_FORMAT = "forkpaths-statqa-result"
SCHEMA_PATH = Path(__file__).parent / "schemas" / "statqa.schema.json"
N_BOOTSTRAP = 1000
TARGETS = ("columns", "methods")
ANSWER_CHARS = 20_000  # a reply is kept in the result file up to this many characters (the verdict reads it all)
TYPE_KEYS = {t: "type." + t.lower().replace(" ", "_") for t in TASK_TYPES}

leaderboard = LeaderboardSpec(
    role="ranked", sort_key="accuracy",
    columns=(Column("accuracy", "accuracy", "ci", "StatQA's selection overall: columns and methods both exactly "
                                                 "right (upstream's rule), 95 % bootstrap CI over questions"),
             Column("methods", "methods accuracy", "ci", "the methods exactly right (as sets, case-insensitive)"),
             Column("columns", "columns accuracy", "ci", "the columns exactly right (as sets, case-insensitive)"),
             *(Column(TYPE_KEYS[t], t, help=f"accuracy on the {t} questions") for t in TASK_TYPES),
             *(Column(f"difficulty.{d}", f"{d} questions", help=f"accuracy on the {d} questions")
               for d in DIFFICULTIES),
             Column("invalid", "invalid answers", "count", "no JSON object where upstream looks, or the wrong shape "
                                                            "(counted 0)"),
             Column("unanswered", "unanswered", "count", "questions of the release without an answer (counted 0)"),
             Column("questions", "questions", "count")))


# ------------------------------------------------------------------------------------ upstream's rules


class Counts(BaseModel):
    """Upstream's comparison of one target: correct, wrong and missed items."""

    correct: int
    wrong: int
    missed: int

    @property
    def score(self) -> int:
        """Upstream's ``acc`` policy: 1 only for an exact, non-empty match."""
        return int(self.correct > 0 and self.wrong == 0 and self.missed == 0)


class UpstreamVerdict(BaseModel):
    """What upstream's scripts make of one reply: the extracted JSON text (None: *Invalid Answer*), each target's
    counts (None: *Invalid Answer* for that target), and the scores."""

    extracted: str | None
    columns: Counts | None
    methods: Counts | None

    @property
    def columns_score(self) -> int:
        return 0 if self.columns is None else self.columns.score

    @property
    def methods_score(self) -> int:
        return 0 if self.methods is None else self.methods.score

    @property
    def overall(self) -> int:
        return int(self.columns_score == 1 and self.methods_score == 1)


def extract_answer(reply: str) -> str | None:
    """The text from the first ``{`` to the first ``}`` after it, when it parses as JSON (upstream's
    ``extract_json_answer``); None where upstream says *Invalid Answer*."""
    start = reply.find("{")
    end = reply.find("}", start)
    if start == -1 or end == -1 or start >= end:
        return None
    text = reply[start:end + 1]
    try:
        json.loads(text)
    except ValueError:
        return None
    return text


def _items(value: Any) -> list[str] | None:
    """A target's value as upstream's loop reads it (``[x.lower().strip() for x in value]``); None where that loop
    raises (upstream: *Invalid Answer*)."""
    if isinstance(value, str | dict | list | tuple):
        out = []
        for x in value:
            if not isinstance(x, str):
                return None
            out.append(x.lower().strip())
        return out
    return None


def _gold_object(gold_text: str) -> dict[str, Any] | None:
    """The gold as upstream reads it: its text with every ``'`` turned into ``"``, parsed (None: it does not
    parse)."""
    try:
        value = json.loads(gold_text.replace("'", '"'))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def upstream_verdict(reply: str, gold_text: str) -> UpstreamVerdict:
    """Upstream's verdict on one reply against the gold text (``compare_and_count_answer_row`` and
    ``model_answer_score_policy``, ``acc`` metric)."""
    extracted = extract_answer(reply)
    if extracted is None:
        return UpstreamVerdict(extracted=None, columns=None, methods=None)
    answer = json.loads(extracted)
    gold = _gold_object(gold_text)
    counts: dict[str, Counts | None] = {}
    for target in TARGETS:
        mine = _items(answer.get(target, [])) if isinstance(answer, dict) else None
        theirs = _items(gold.get(target, [])) if gold is not None else None
        if mine is None or theirs is None:
            counts[target] = None
            continue
        a, g = set(mine), set(theirs)
        counts[target] = Counts(correct=len(a & g), wrong=len(a - g), missed=len(g - a))
    return UpstreamVerdict(extracted=extracted, columns=counts["columns"], methods=counts["methods"])


def _shape_problems(extracted: str) -> list[str]:
    """How the extracted object departs from ``{"columns": [text...], "methods": [text...]}``, in words."""
    value = json.loads(extracted)
    problems = []
    for target in TARGETS:
        if target not in value:
            problems.append(f"it has no '{target}' (read as an empty list)")
            continue
        v = value[target]
        if isinstance(v, list):
            if not all(isinstance(x, str) for x in v):
                problems.append(f"'{target}' holds something that is not text (upstream cannot read it)")
        elif isinstance(v, str):
            problems.append(f"'{target}' is a string, not a list (upstream reads it letter by letter)")
        elif isinstance(v, dict):
            problems.append(f"'{target}' is an object, not a list (upstream reads its keys)")
        else:
            problems.append(f"'{target}' is {json.dumps(v)[:40]}, not a list (upstream cannot read it)")
    return problems


# ------------------------------------------------------------------------------------ submission


class StatQASubmission(BaseModel):
    """A StatQA submission: the model's reply to each question answered, by the question's upstream id."""

    model_config = ConfigDict(extra="forbid")

    answers: dict[str, str | None] = Field(
        description="question id (the record's index in upstream mini-StatQA.json, as text) → the model's reply, "
                    "holding the JSON object {\"columns\": [...], \"methods\": [...]}; null: not answered")
    source: dict[str, Any] | None = Field(default=None, description="where the answers came from (optional)")


def submission_schema() -> dict[str, Any]:
    """The JSON schema of :class:`StatQASubmission` (the file in ``schemas/`` is this, checked by a test)."""
    schema = StatQASubmission.model_json_schema()
    schema["properties"]["answers"]["propertyNames"] = {"pattern": "^[0-9]+$"}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://forkpaths.invalid/schemas/statqa.schema.json"
    return schema


def _questions(release: Release) -> dict[str, tuple[DatasetRelease, StatQAQuestion]]:
    out: dict[str, tuple[DatasetRelease, StatQAQuestion]] = {}
    for ds in release.datasets:
        part: StatQAPart | None = part_of(ds, KIND)
        for q in part.questions if part is not None else []:
            out[q.id] = (ds, q)
    return out


def read_submission(data: bytes, *, label: str, release: Release) -> StatQASubmission:
    """One submission file, checked against ``release``.

    Raises:
        SubmissionCheckError: not UTF-8 JSON, not the shape, a question id the release does not have (the file
            and the field are named).
    """
    label = printable(label)
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise SubmissionCheckError(f"{label} is not UTF-8 text (byte {exc.start + 1}).") from None
    except ValueError as exc:
        raise SubmissionCheckError(f"{label} is not JSON: {exc}.") from None
    try:
        sub = StatQASubmission.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = "/".join(str(x) for x in err["loc"]) or "the document"
        what = {"missing": "is missing", "extra_forbidden": "is not a field of the format (answers, source)"
                }.get(err["type"], f"does not fit: {err['msg']}")
        raise SubmissionCheckError(f"{label}: {printable(where)} {what}. A StatQA submission is "
                                   "{\"answers\": {\"<question id>\": \"<the model's reply>\"}} (forkpaths "
                                   "score-schema statqa). Nothing was stored.") from None
    known = _questions(release)
    for qid in sub.answers:
        if qid not in known:
            sample = ", ".join(list(known)[:5])
            raise SubmissionCheckError(f"{label}: question id '{printable(qid)}' is no StatQA question of release "
                                       f"{release.version} (its ids are upstream indexes, e.g. {sample}). Nothing "
                                       "was stored.")
    return sub


def check_files(files: Sequence[tuple[str, bytes]], release: Release, *,
                max_items: int | None) -> list[CheckedFile]:
    """Exactly one answers file for StatQA questions of ``release``."""
    if not _questions(release):
        raise SubmissionCheckError(f"Release {release.version} holds no StatQA questions; a StatQA run needs a "
                                   "release cut after `forkpaths import-statqa`.")
    if len(files) != 1:
        raise SubmissionCheckError(f"A StatQA run takes exactly one answers file; {len(files)} were given.")
    fname, data = files[0]
    sub = read_submission(data, label=fname, release=release)
    if max_items is not None and len(sub.answers) > max_items:
        raise SubmissionCheckError(f"{printable(fname)} holds {len(sub.answers)} answers; the limit is {max_items} "
                                   "(FORKPATHS_MAX_ANALYSES_PER_SUBMISSION). Nothing was stored.")
    return [CheckedFile(fname, data, format="statqa-answers", items=len(sub.answers))]


# ------------------------------------------------------------------------------------ scoring


class ItemResult(BaseModel):
    """One question of the run: its verdict by upstream's rules, and what was compared."""

    id: str
    dataset: str
    table: str
    task: str
    difficulty: str
    question: str
    status: Literal["scored", "invalid_answer", "gold_unreadable", "unanswered"]
    message: str = ""
    answer: str | None = None
    extracted: str | None = None
    gold_columns: list[str] = Field(default_factory=list)
    gold_methods: list[str] = Field(default_factory=list)
    columns: Counts | None = None
    methods: Counts | None = None
    columns_score: int = 0
    methods_score: int = 0
    overall: int = 0


class StatQAResult(BaseModel):
    format: Literal["forkpaths-statqa-result"] = "forkpaths-statqa-result"
    format_version: Literal["1.0"] = "1.0"
    release_version: str
    ground_truth_hash: str
    rules: str = "StatQA analyze_model_answer.py (acc), HKUSTDial/StatQA@31ca981"
    n_bootstrap: int = N_BOOTSTRAP
    seed: int = 0
    items: list[ItemResult]
    scores: dict[str, Any]
    notes: list[str] = Field(default_factory=list)


def read_result(data: bytes | str) -> StatQAResult:
    return StatQAResult.model_validate_json(data)


def _item(ds: DatasetRelease, part_table: str, q: StatQAQuestion, reply: str | None) -> ItemResult:
    assert q.gold is not None
    item = ItemResult(id=q.id, dataset=ds.name, table=part_table, task=q.task, difficulty=q.difficulty,
                      question=q.question, status="scored", gold_columns=q.gold.columns, gold_methods=q.gold.methods,
                      answer=None if reply is None else reply[:ANSWER_CHARS])
    if reply is None:
        item.status, item.message = "unanswered", "No answer was submitted for this question (counted 0)."
        return item
    verdict = upstream_verdict(reply, q.gold.text)
    item.extracted, item.columns, item.methods = verdict.extracted, verdict.columns, verdict.methods
    item.columns_score, item.methods_score, item.overall = verdict.columns_score, verdict.methods_score, \
        verdict.overall
    if verdict.extracted is None:
        item.status = "invalid_answer"
        item.message = ("The reply holds no JSON object where StatQA looks for one (from its first '{' to the first "
                        "'}' after it): an Invalid Answer, counted 0.")
    elif _gold_object(q.gold.text) is None:
        item.status = "gold_unreadable"
        item.message = ("StatQA reads this gold after turning every ' into \", which breaks it (a column name holds "
                        "an apostrophe): upstream scores every answer to it as an Invalid Answer, and so does "
                        "this run (counted 0).")
    else:
        problems = _shape_problems(verdict.extracted)
        if problems and verdict.columns_score == 0 and verdict.methods_score == 0:
            item.status = "invalid_answer"
            item.message = (f"The answer is not {{\"columns\": [...], \"methods\": [...]}}: {'; '.join(problems)}. "
                            "Counted 0.")
        elif problems:
            item.message = f"Scored as StatQA reads it, though {'; '.join(problems)}."
    return item


def _estimate(values: list[int], seed: int, n_bootstrap: int) -> dict[str, Any]:
    from evaluation.metrics import proportion_estimate  # numpy: loaded to score, not to list the kinds

    est: Estimate = proportion_estimate([bool(v) for v in values], n_bootstrap=n_bootstrap, seed=seed)
    return est.model_dump(mode="json")


def _group(items: list[ItemResult], n_bootstrap: int, seed: int) -> dict[str, Any]:
    return {"accuracy": _estimate([i.overall for i in items], seed, n_bootstrap),
            "methods": _estimate([i.methods_score for i in items], seed, n_bootstrap),
            "columns": _estimate([i.columns_score for i in items], seed, n_bootstrap),
            "questions": len(items), "scored": sum(i.status == "scored" for i in items),
            "invalid": sum(i.status == "invalid_answer" for i in items),
            "gold_unreadable": sum(i.status == "gold_unreadable" for i in items),
            "unanswered": sum(i.status == "unanswered" for i in items)}


def aggregate(items: list[ItemResult], *, n_bootstrap: int = N_BOOTSTRAP, seed: int = 0) -> dict[str, Any]:
    """Accuracy (selection overall), methods and columns accuracy with their CIs, overall and by task type,
    difficulty and dataset (every question counted: an invalid or unanswered one as 0, as upstream counts it)."""

    def by(attr: str, order: Sequence[str] = ()) -> dict[str, Any]:
        keys = [k for k in order if any(getattr(i, attr) == k for i in items)] + \
            sorted({getattr(i, attr) for i in items} - set(order))
        return {k: _group([i for i in items if getattr(i, attr) == k], n_bootstrap, seed) for k in keys}

    return {"overall": _group(items, n_bootstrap, seed), "tasks": by("task", TASK_TYPES),
            "difficulties": by("difficulty", DIFFICULTIES), "datasets": by("dataset"),
            "n_bootstrap": n_bootstrap, "seed": seed}


def score(ctx: ScoringContext) -> ScoredRun:
    """Every StatQA question of the release with gold, scored by upstream's rules (an unanswered one counts 0)."""
    fname, data = ctx.files[0]
    sub = read_submission(data, label=fname, release=ctx.release)
    items: list[ItemResult] = []
    notes: list[str] = []
    every = [(ds, part, q) for ds in ctx.release.datasets if (part := part_of(ds, KIND)) is not None
             for q in part.questions]
    todo = [(ds, part, q) for ds, part, q in every if q.gold is not None]
    no_gold = len(every) - len(todo)
    for n, (ds, part, q) in enumerate(todo, 1):
        items.append(_item(ds, part.dataset, q, sub.answers.get(q.id)))
        ctx.progress(n, len(todo), f"{ds.name}: question {q.id}")
    if no_gold:
        notes.append(f"{no_gold} question(s) of the release have no gold and were not scored.")
    result = StatQAResult(release_version=ctx.release.version, ground_truth_hash=ctx.ground_truth_hash,
                          items=items, scores=aggregate(items), notes=notes)
    o = result.scores["overall"]
    counted = [f"{o[k]} {label}" for k, label in (("invalid", "invalid answer(s)"), ("unanswered", "unanswered"),
                                                   ("gold_unreadable", "with a gold StatQA cannot read"))
               if o[k]]
    message = " ".join(notes + ([f"Of {len(items)} questions, {', '.join(counted)} (each counted 0, as StatQA "
                                 "counts them)."] if counted else []))
    return ScoredRun(result_name="statqa-result.json",
                     result_bytes=(result.model_dump_json(indent=1) + "\n").encode("utf-8"),
                     scores=result.scores, items=len(items), message=message)


def planned_items(checked: Sequence[CheckedFile], release: Release) -> int:
    """What :func:`score` counts: every question of the release with gold, answered or not."""
    return sum(1 for _, q in _questions(release).values() if q.gold is not None)


# ------------------------------------------------------------------------------------ leaderboard and terminal


def leaderboard_values(run: RunView, dataset: str | None) -> dict[str, Any] | None:
    s = run.scores_effective or {}
    g = (s.get("datasets") or {}).get(dataset) if dataset else s.get("overall")
    if not g:
        return None
    row: dict[str, Any] = {}
    for key in ("accuracy", "methods", "columns"):
        est = g.get(key) or {}
        row |= {key: est.get("point"), f"{key}.low": est.get("ci_low"), f"{key}.high": est.get("ci_high")}
    tasks, levels = s.get("tasks") or {}, s.get("difficulties") or {}
    for t in TASK_TYPES:
        row[TYPE_KEYS[t]] = None if dataset else ((tasks.get(t) or {}).get("accuracy") or {}).get("point")
    for d in DIFFICULTIES:
        row[f"difficulty.{d}"] = None if dataset else ((levels.get(d) or {}).get("accuracy") or {}).get("point")
    return row | {"invalid": g.get("invalid"), "unanswered": g.get("unanswered"), "questions": g.get("questions")}


def summary_line(scores: Mapping[str, Any]) -> str:
    o = scores.get("overall", {})
    a = o.get("accuracy", {})
    return (f"StatQA accuracy {fmt_score(a.get('point'))} [{fmt_score(a.get('ci_low'))}, "
            f"{fmt_score(a.get('ci_high'))}]  methods {fmt_score((o.get('methods') or {}).get('point'))}  columns "
            f"{fmt_score((o.get('columns') or {}).get('point'))}  ({o.get('questions', 0)} questions, "
            f"{o.get('invalid', 0)} invalid, {o.get('unanswered', 0)} unanswered)")


# ------------------------------------------------------------------------------------ agents


_SHAPE = json.dumps({"columns": ["<header of a relevant column>", "..."],
                     "methods": ["<an applicable method, named as in the list>", "..."]})
BRIEF_TEMPLATE = "statqa-brief@1"


def _method_list() -> str:
    return "\n".join(f"- {task}: {', '.join(methods)}" for task, methods in METHODS.items())


class _Agent:
    """Agents on StatQA: one task per question; the brief is AIRepr's (the file, the dataset's description, each
    column's name, description and data type, the question) with StatQA's list of methods to choose from. The
    first reply is the answer (*strict*, as StatQA asks once): it goes into the answers file as it came, and the
    kind scores it by upstream's rules (a reply without JSON is an invalid answer, never guessed)."""

    name = "statqa"
    label = "StatQA (one task per question: relevant columns and applicable methods)"
    strategies = ("oneshot", "react")
    strict = True
    brief_template = BRIEF_TEMPLATE

    def narrow(self, release: Release, key: str) -> Release:
        """The release as it holds question ``key`` only: one answer scored on it is that question's score (an
        inspect sample's value)."""
        return keeping_items(release, KIND, lambda q: q.id == key)

    def tasks(self, release: Release, release_folder: Path, *, only: Sequence[str] | None = None
              ) -> list[AgentTask]:
        out = []
        for ds in release.datasets:
            part: StatQAPart | None = part_of(ds, KIND)
            if part is None:
                continue
            rf = next((f for f in ds.files if f.name == part.data_file), None)
            path = release_folder / (rf.path if rf is not None else ds.data_file)
            tf = task_file(part.data_file, path)
            preview, header = file_preview(tf, 5)
            columns = "\n".join(
                f"- {quote(c.column_header)}: {quote(c.column_description or '(no description)', limit=400)}; "
                f"data type {quote(c.data_type)}" for c in part.columns)
            for q in part.questions:
                if only and q.id not in only and ds.name not in only:
                    continue
                brief = (f"Data file (code finds it in its working folder; `df` is it, already loaded):\n{preview}\n\n"
                         + (f"Dataset description: {quote(part.description, limit=4000)}\n\n" if part.description
                            else "")
                         + f"Columns:\n{columns}\n\nStatistical question: {quote(q.question)}\n\n"
                         "Select the columns relevant to the question and every applicable statistical method. "
                         "Choose the methods only from this list, named exactly as written:\n"
                         f"{_method_list()}\n"
                         "If a strata or control variable is involved, put its column last in \"columns\".")
                out.append(AgentTask(key=q.id, kind=name, title=f"{part.dataset}: {q.question}"[:120],
                                     brief=brief, data_path=path, dataset=ds.name,
                                     columns=header or tuple(c.column_header for c in part.columns), files=(tf,)))
        return out

    def answer_shape(self, task: AgentTask, *, workflow: bool) -> str:
        return _SHAPE

    def validate_text(self, text: str, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
        """The reply, when StatQA finds a JSON object of the right shape in it (else ValueError saying why)."""
        extracted = extract_answer(text)
        if extracted is None:
            raise ValueError("StatQA finds no JSON object in the reply (it reads from the first '{' to the first "
                             "'}' after it)")
        problems = _shape_problems(extracted)
        if problems:
            raise ValueError("the answer is not {\"columns\": [...], \"methods\": [...]}: " + "; ".join(problems))
        value = json.loads(extracted)
        return {"columns": value["columns"], "methods": value["methods"], "raw": text}

    def validate(self, value: Any, task: AgentTask, *, workflow: bool) -> dict[str, Any]:
        return self.validate_text(value if isinstance(value, str) else json.dumps(value), task, workflow=workflow)

    def submissions(self, release: Release, answers: Sequence[TaskAnswer], *,
                    source: dict[str, Any]) -> list[Submission]:
        out = []
        for r in sorted({a.replicate for a in answers}):
            mine = sorted((a for a in answers if a.replicate == r), key=lambda a: int(a.task))
            errors = {a.task: a.message for a in mine if a.status not in ANSWERED and a.raw is None}
            body = {"answers": {a.task: (str(a.answer.get("raw")) if a.status in ANSWERED and a.answer is not None
                                         else a.raw) for a in mine},
                    "source": {"kind": "model", **source, "run": r, "template_version": BRIEF_TEMPLATE,
                               "errors": errors}}
            out.append(Submission(f"run {r}", [(f"statqa-answers-run{r}.json",
                                                json.dumps(body, ensure_ascii=False, indent=1).encode("utf-8"))]))
        return out


# ------------------------------------------------------------------------------------ import


class StatQAImportError(EvaluationError):
    """A StatQA folder that cannot be imported (the reader's sentence: the file, the record and the field)."""


ATTRIBUTION = ("StatQA: Zhu et al., \"Are Large Language Models Good Statisticians?\", NeurIPS 2024 Datasets and "
               f"Benchmarks; {SOURCE['repository']} at {SOURCE['commit'][:7]}")


def read_folder(path: Path) -> list[ImportedDataset]:
    """The datasets of a StatQA folder (:func:`exports.statqa.read_statqa_folder`), one per table, each with its
    table, StatQA's licence and its questions with their gold.

    Raises:
        StatQAImportError: the folder cannot be read (nothing is returned).
    """
    try:
        read = read_statqa_folder(path)
    except StatQAFormatError as exc:
        raise StatQAImportError(str(exc)) from None
    return [ImportedDataset(
        name=d.name, title=d.title, research_question=d.research_question, description=d.description,
        files=tuple(ImportedFile(name=f.name, path=f.source, role=f.role, format=f.format) for f in d.files),
        main_file=d.data_file, part=d.part, licence=read.licence, attribution=ATTRIBUTION,
        dictionary=tuple({"name": c.column_header, "description": c.column_description, "data_type": c.data_type}
                         for c in d.part.columns),
        extra={"statqa_dataset": d.title}) for d in read.datasets]



def airepr_accuracy(release: Release, release_folder: Path, answers: Mapping[str, str]) -> dict[str, Any] | None:
    """AIRepr's final answers (by sample index, the question id) scored by this kind's rules over the questions
    the release holds: the accuracy with its interval, or None when the release holds none of them."""
    return answers_accuracy(KIND, release, release_folder, answers, has_gold=lambda q: q.gold is not None,
                            accuracy=lambda scores: scores["overall"]["accuracy"])


release_part = ReleasePart(model=StatQAPart, noun="StatQA questions", counts=part_counts,
                           hash_input=part_hash_input, blind=blind_part, work=("with gold",), one="StatQA question")

KIND = TaskKind(name=name, label="StatQA answers (question id → the model's reply with columns and methods)",
                item_noun="questions", leaderboard=leaderboard, check_files=check_files, score=score,
                leaderboard_values=leaderboard_values, summary_line=summary_line, view="statqa", order=70,
                release_part=release_part, submission_schema=SCHEMA_PATH, agent=_Agent(), planned_items=planned_items,
                importer=Importer(source="a StatQA folder as AIRepr lays it out (mini-StatQA.json, upstream_index.json, "
                                         "processed_dataset/, column_metadata/, dataset_metadata.csv, LICENSE)",
                                  read=read_folder),
                airepr=AIReprAccuracy(dataset="StatQA", score=airepr_accuracy))
