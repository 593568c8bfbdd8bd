"""The hypotheses kind ("hypotheses"): per DiscoveryBench query of the release, an agent's hypothesis and workflow
(optionally with code and its own decomposition), scored by the hypothesis matching score (HMS) through the ``hms``
judge (:mod:`evaluation.hms`), in ``default`` mode (deterministic, judge errors never become numbers) or
``discoverybench`` mode (upstream's algorithm step by step). HMS aggregates with a bootstrap CI clustered by dataset
folder, with breakdowns by domain and question type. Experts judge any facet of any query; the scores recompute.

Submissions (``evaluation/tasks/schemas/hypotheses.schema.json`` documents the first):

* ``{"format": "forkpaths-hypotheses", "format_version": "1.0", "answers": [{"task", "hypothesis", "workflow",
  "code"?, "context"?, "variables"?, "relationship"?}]}``;
* DiscoveryBench's evaluation records (``eval_output.json``: a list, or the stream of JSON objects upstream's
  evaluator appends), each with ``query``, ``HypoB`` and ``WorkflowB``, matched to the query with that question;
* rows in DiscoveryBench's answer-key layout (a JSON list, JSON lines or CSV) with ``dataset``, ``metadataid``,
  ``query_id`` and the agent's ``hypothesis`` (or ``gen_hypo`` / ``pred_hypo``) and ``workflow`` (or
  ``gen_workflow`` / ``pred_workflow``).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evaluation.agents import hypotheses as agent_hook
from evaluation.hms.formula import apply_overrides, check_override
from evaluation.hms.records import FacetOverride, HMSMode, ItemResult
from evaluation.submissions import printable
from evaluation.tasks.base import (
    VERDICT,
    CheckedFile,
    Column,
    FacetJudging,
    FanOutParts,
    ItemKind,
    JobKind,
    KindJudge,
    LeaderboardSpec,
    RunView,
    ScoredRun,
    ScoringContext,
    SubmissionCheckError,
    TaskKind,
    VoteQuestion,
    fmt_score,
)
from exports.hypotheses_part import RELEASE_PART, HypothesesPart, HypothesisTaskRelease
from exports.schema import DatasetRelease, Release

if TYPE_CHECKING:  # the judge and the scorer (the LLM client, the judges' code) load when a run is scored
    from evaluation.hms.judge import HMSJudge

__all__ = [
    "FORMAT",
    "HYPOTHESIS",
    "FORMAT_VERSION",
    "RESULT_FORMAT",
    "SCHEMA_PATH",
    "HypothesesResult",
    "HypothesisAnswer",
    "HypothesisSubmission",
    "aggregate",
    "check_files",
    "combine",
    "effective",
    "facet_label",
    "facet_value",
    "leaderboard_values",
    "part_count",
    "part_labels",
    "read_answers",
    "read_result",
    "score",
    "score_part",
    "summary_line",
]

FORMAT = "forkpaths-hypotheses"
FORMAT_VERSION = "1.0"
RESULT_FORMAT = "forkpaths-hms-result"
SCHEMA_PATH = Path(__file__).parent / "schemas" / "hypotheses.schema.json"
N_BOOTSTRAP = 1000
QUESTION_TYPES = ("context", "variables", "relationship", "general")

name = HypothesesPart.kind
label = "Hypotheses (DiscoveryBench queries: hypothesis and workflow per query)"
item_noun = "queries"
uses_judge = True
accepts_overrides = False  # BLADE-style match overrides and paired comparison do not apply; facets do
view: str | None = "hypotheses"
#: a DiscoveryBench hypothesis: a stage-1 one (vote target kind "hypothesis", a proposal row) or an LLM's
#: alternative; on a meeting card its concept is the query it answers and its rationale its workflow
#: (one verdict, with the reason)
HYPOTHESIS = ItemKind("hypothesis", subject="Query", rationale="Workflow", stage1_table="hypothesis_proposal",
                      unjustifiable="this hypothesis is unjustifiable", questions=(
                          VoteQuestion(VERDICT, "Is this hypothesis justifiable from the data?",
                                       "Justifiable: the variables exist or can be derived, the relationship "
                                       "follows from the workflow and its output, and it answers the query. "
                                       "Unjustifiable needs a reason.", answers=("yes", "no")),))
item_kinds = (HYPOTHESIS,)
modes = ("default", "discoverybench")
judges = ("hms",)
default_judge = "hms"
facets = ("context", "variables", "relationship")
judge_card_empty = ("No expert labels yet. Judge a facet of a query on Run details; the hms judge's agreement with "
                    "the experts, per facet, shows here.")
leaderboard = LeaderboardSpec(
    role="ranked", sort_key="hms",
    columns=(Column("hms", "HMS", "ci", "hypothesis matching score, 95 % bootstrap CI clustered by dataset folder"),
             Column("context", "context recall", help="matched gold sub-hypotheses / gold sub-hypotheses"),
             Column("variables_f1", "variables F1", help="mean over matched pairs"),
             Column("relationship", "relationship", help="mean over matched pairs (1, 0.5, 0)"),
             *(Column(f"type.{t}", f"HMS {t} questions") for t in QUESTION_TYPES),
             Column("judge_errors", "judge errors", "count", "queries the judge could not score (not in HMS)"),
             Column("unanswered", "unanswered", "count", "gold queries of the datasets answered with no answer "
                                                         "(count 0)"),
             Column("queries", "queries", "count")))


# ------------------------------------------------------------------------------------ submission format


class HypothesisAnswer(BaseModel):
    """The agent's answer to one query of the release."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1, description="the query's key in the release: <real|synth>/<split>/<folder>/"
                                                "metadata_<k>/q<qid>")
    hypothesis: str = Field(min_length=1, description="the hypothesis the agent concludes, in words")
    workflow: str = Field(description="how the agent got there, so a person could redo it")
    code: str | None = Field(default=None, description="the analysis code (Python; `df` is the query's first data "
                             "file). For a synthetic query with a known generating expression, set "
                             "`hypothesis_values` to the values your hypothesis predicts for its target column "
                             "to have them checked against the expression in the sandbox.")
    context: str | None = Field(default=None, description="the hypothesis's context, if the agent decomposed it")
    variables: list[str] | None = Field(default=None, description="its variables, if decomposed")
    relationship: str | None = Field(default=None, description="its relationship, if decomposed")


class HypothesisSubmission(BaseModel):
    """A hypotheses submission: one answer per query (task) answered."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["forkpaths-hypotheses"]
    format_version: Literal["1.0"]
    answers: list[HypothesisAnswer]


def submission_schema() -> dict[str, Any]:
    """The JSON schema of :class:`HypothesisSubmission` (the file in ``schemas/`` is this, checked by a test)."""
    schema = HypothesisSubmission.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://forkpaths.invalid/schemas/hypotheses.schema.json"
    return schema


def _tasks(release: Release) -> dict[str, tuple[DatasetRelease, HypothesisTaskRelease]]:
    return {t.key: (d, t) for d in release.datasets for t in HypothesesPart.of(d).tasks}


def _folder(key: str) -> str:
    parts = key.split("/")
    return parts[2] if len(parts) > 2 else key


class _Object(dict[str, Any]):
    """A JSON object as read, with the keys it gave more than once (``json`` would silently keep the last)."""

    repeated: list[str]


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    obj.repeated = []
    for key, value in pairs:
        if key in obj and key not in obj.repeated:
            obj.repeated.append(key)
        obj[key] = value
    return obj


def _where(path: tuple[str | int, ...], node: _Object, many: bool) -> str:
    """``answer 3 (task 'x')``, ``record 2``, ``answer 3, in workflow/0``, ``the document``."""
    rest: tuple[str | int, ...] = path
    what = ""
    for i, part in enumerate(path[:-1]):
        if part == "answers" and isinstance(path[i + 1], int):
            what, rest = f"answer {int(path[i + 1]) + 1}", path[i + 2:]
            break
    else:
        if many and path:
            what, rest = f"record {int(path[0]) + 1}", path[1:]
    task = node.get("task") if what and not rest else None
    if task is not None:
        what += f" (task '{printable(str(task))}')"
    inner = "/".join(str(p) for p in rest)
    if what:
        return f"{what}, in {inner}," if inner else what
    return f"the object at {inner}" if inner else "the document"


def _refuse_repeated_keys(values: list[Any], label: str) -> None:
    """Refuse the first object that gives a key twice, naming the key and the answer (or record) it is in."""
    many = len(values) > 1
    stack: list[tuple[Any, tuple[str | int, ...]]] = [
        (value, (index,) if many else ()) for index, value in reversed(list(enumerate(values)))]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Object):
            if node.repeated:
                key = node.repeated[0]
                if key == "format" and not path:
                    raise SubmissionCheckError(f"{label} gives the key 'format' twice; say once which format it is "
                                               f"(\"format\": \"{FORMAT}\"). Nothing was stored.")
                raise SubmissionCheckError(
                    f"{label}: {_where(path, node, many)} gives the key '{printable(key)}' twice; a JSON reader "
                    "keeps only the last, so say it once. Nothing was stored.")
            stack.extend((value, (*path, key)) for key, value in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((value, (*path, index)) for index, value in reversed(list(enumerate(node))))


def _json_values(text: str) -> list[Any]:
    """Every JSON value in ``text``: one document, JSON lines, or upstream's stream of pretty-printed objects."""
    decoder = json.JSONDecoder(object_pairs_hook=_object)
    values: list[Any] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            return values
        value, pos = decoder.raw_decode(text, pos)
        values.append(value)


def _near(key: str, known: Sequence[str]) -> str:
    import difflib

    close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _from_pydantic(label: str, exc: ValidationError, answers: Any) -> SubmissionCheckError:
    err = exc.errors()[0]
    loc = list(err["loc"])
    where = ""
    if len(loc) >= 2 and loc[0] == "answers" and isinstance(loc[1], int):
        n = loc[1]
        task = answers[n].get("task") if isinstance(answers, list) and n < len(answers) and \
            isinstance(answers[n], dict) else None
        where = f"answer {n + 1}" + (f" (task '{printable(str(task))}')" if task else "")
        loc = loc[2:]
    field_name = ".".join(str(x) for x in loc)
    what = {"missing": f"has no '{field_name}'", "extra_forbidden": f"has a field '{field_name}' the format does "
            "not know"}.get(err["type"], f"field '{field_name}': {err['msg']}")
    return SubmissionCheckError(f"{label}: {where or 'the submission'} {what}.")


def _rows_layout(rows: list[dict[str, Any]], label: str, tasks: Mapping[str, Any]) -> list[HypothesisAnswer]:
    by_id: dict[tuple[str, int, int], str] = {}
    for key, (_, t) in tasks.items():
        by_id.setdefault((_folder(key), t.metadata_k, t.qid), key)
    out = []
    for n, row in enumerate(rows, 1):
        try:
            ident = (str(row["dataset"]), int(row["metadataid"]), int(row["query_id"]))
        except (KeyError, TypeError, ValueError):
            raise SubmissionCheckError(f"{label}: row {n} needs dataset, metadataid and query_id (whole numbers), "
                                       "as in DiscoveryBench's answer keys.") from None
        hypo = next((row[k] for k in ("hypothesis", "gen_hypo", "pred_hypo", "HypoB") if row.get(k)), None)
        if not isinstance(hypo, str) or not hypo.strip():
            raise SubmissionCheckError(f"{label}: row {n} ({ident[0]}, metadata {ident[1]}, query {ident[2]}) has "
                                       "no hypothesis (hypothesis, gen_hypo or pred_hypo).")
        found = by_id.get(ident)
        if found is None:
            raise SubmissionCheckError(f"{label}: row {n} is for {printable(ident[0])}, metadata {ident[1]}, query "
                                       f"{ident[2]}, which the release does not have.")
        wf = next((row[k] for k in ("workflow", "gen_workflow", "pred_workflow", "WorkflowB") if row.get(k)), "")
        out.append(HypothesisAnswer(task=found, hypothesis=hypo, workflow=str(wf)))
    return out


def _eval_records(records: list[dict[str, Any]], label: str, tasks: Mapping[str, Any]) -> list[HypothesisAnswer]:
    by_question: dict[str, list[str]] = {}
    for key, (_, t) in tasks.items():
        by_question.setdefault(" ".join(t.question.split()), []).append(key)
    out = []
    for n, rec in enumerate(records, 1):
        q = " ".join(str(rec.get("query", "")).split())
        hypo = rec.get("HypoB")
        if not q or not isinstance(hypo, str) or not hypo.strip():
            raise SubmissionCheckError(f"{label}: record {n} needs 'query' and 'HypoB' (DiscoveryBench's evaluation "
                                       "record).")
        keys = by_question.get(q, [])
        if not keys:
            raise SubmissionCheckError(f"{label}: record {n} asks '{printable(q[:80])}', which is no query of the "
                                       "release.")
        if len(keys) > 1:
            raise SubmissionCheckError(f"{label}: record {n}'s question is asked by {len(keys)} queries "
                                       f"({', '.join(keys[:3])}); use the forkpaths-hypotheses format, which "
                                       "names the task.")
        out.append(HypothesisAnswer(task=keys[0], hypothesis=hypo, workflow=str(rec.get("WorkflowB") or "")))
    return out


def read_answers(data: bytes, *, label: str, release: Release) -> list[HypothesisAnswer]:
    """The answers of one submission file, in any accepted layout, checked against ``release``.

    Raises:
        SubmissionCheckError: unreadable, a missing or unknown field, an unknown task, two answers for one task
            (the file, the answer and the field are named).
    """
    label = printable(label)
    tasks = _tasks(release)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SubmissionCheckError(f"{label} is not UTF-8 text (byte {exc.start + 1}).") from None
    try:
        values = _json_values(text)
    except ValueError as exc:
        values = []
        head = text.lstrip()[:200].lower()
        if "dataset" in head and "query_id" in head and "," in head:  # answer-key layout as CSV
            answers = _rows_layout(list(csv.DictReader(io.StringIO(text))), label, tasks)
            return _unique(answers, label, release, tasks)
        raise SubmissionCheckError(f"{label} is not JSON: {exc}.") from None
    if not values:
        raise SubmissionCheckError(f"{label} is empty.")
    _refuse_repeated_keys(values, label)
    if len(values) == 1 and isinstance(values[0], dict) and "format" in values[0]:
        doc = values[0]
        if doc.get("format") != FORMAT:
            raise SubmissionCheckError(f"{label}: format '{printable(str(doc.get('format')))}' is not {FORMAT}.")
        if doc.get("format_version") != FORMAT_VERSION:
            raise SubmissionCheckError(f"{label}: format_version '{printable(str(doc.get('format_version')))}' is "
                                       f"not supported; this forkpaths reads {FORMAT} {FORMAT_VERSION}.")
        try:
            answers = HypothesisSubmission.model_validate(doc).answers
        except ValidationError as exc:
            raise _from_pydantic(label, exc, doc.get("answers")) from None
    else:
        flat = values[0] if len(values) == 1 and isinstance(values[0], list) else values
        if not flat or not all(isinstance(v, dict) for v in flat):
            raise SubmissionCheckError(f"{label} is neither a {FORMAT} document nor a list of DiscoveryBench "
                                       "records or answer-key rows.")
        if all("HypoB" in v or "query" in v for v in flat) and not all("query_id" in v for v in flat):
            answers = _eval_records(flat, label, tasks)
        else:
            answers = _rows_layout(flat, label, tasks)
    return _unique(answers, label, release, tasks)


def _unique(answers: list[HypothesisAnswer], label: str, release: Release,
            tasks: Mapping[str, Any]) -> list[HypothesisAnswer]:
    seen: dict[str, int] = {}
    for n, a in enumerate(answers, 1):
        if a.task not in tasks:
            raise SubmissionCheckError(
                f"{label}: answer {n} is for task '{printable(a.task)}', which release {release.version} does not "
                f"have{_near(a.task, list(tasks))}. Nothing was stored.")
        if a.task in seen:
            raise SubmissionCheckError(f"{label}: answers {seen[a.task]} and {n} are both for task "
                                       f"'{printable(a.task)}'; give one answer per task.")
        seen[a.task] = n
    if not answers:
        raise SubmissionCheckError(f"{label} holds no answers.")
    return answers


def check_files(files: Sequence[tuple[str, bytes]], release: Release, *,
                max_items: int | None) -> list[CheckedFile]:
    """Each file a hypotheses submission (any accepted layout) for queries of ``release``; no task twice."""
    if not _tasks(release):
        raise SubmissionCheckError(f"Release {release.version} holds no hypothesis tasks; a hypotheses run needs a "
                                   "release cut with DiscoveryBench queries.")
    out: list[CheckedFile] = []
    where: dict[str, str] = {}
    for fname, data in files:
        answers = read_answers(data, label=fname, release=release)
        if max_items is not None and len(answers) > max_items:
            raise SubmissionCheckError(f"{printable(fname)} holds {len(answers)} answers; the limit is {max_items} "
                                       "(FORKPATHS_MAX_ANALYSES_PER_SUBMISSION). Nothing was stored.")
        for a in answers:
            if a.task in where:
                raise SubmissionCheckError(f"{printable(fname)} and {printable(where[a.task])} both answer task "
                                           f"'{printable(a.task)}'; give one answer per task.")
            where[a.task] = fname
        out.append(CheckedFile(fname, data, format=FORMAT, items=len(answers)))
    return out


# ------------------------------------------------------------------------------------ result file


class HypothesesResult(BaseModel):
    format: Literal["forkpaths-hms-result"] = "forkpaths-hms-result"
    format_version: Literal["1.0"] = "1.0"
    release_version: str
    ground_truth_hash: str
    mode: str
    judge: dict[str, Any]
    n_bootstrap: int = N_BOOTSTRAP
    seed: int = 0
    items: list[ItemResult]
    scores: dict[str, Any]
    notes: list[str] = Field(default_factory=list)


def read_result(data: bytes | str) -> HypothesesResult:
    return HypothesesResult.model_validate_json(data)


def dump_result(result: HypothesesResult) -> str:
    return result.model_dump_json(indent=1) + "\n"


# ------------------------------------------------------------------------------------ scoring


def _datasets_for_prompt(ds: DatasetRelease, task: HypothesisTaskRelease, mode: HMSMode = "default",
                         release_folder: Path | None = None) -> list[dict[str, Any]]:
    """What the judge may see: each data file's name, description and columns (``discoverybench`` mode: what
    upstream shows, each data file of the query's metadata file with its own description,
    :func:`evaluation.hms.discoverybench.upstream_datasets`)."""
    if mode == "discoverybench":
        from evaluation.hms.discoverybench import upstream_datasets

        found = upstream_datasets(release_folder, ds, task) if release_folder is not None else None
        if found is not None:
            return found
        return [{"dataset_description": d["description"], "columns": d["columns"]}  # upstream's keys
                for d in _datasets_for_prompt(ds, task)]
    files = [f for f in ds.files if f.role == "data" and (not task.data_files or f.name in task.data_files)]
    if files:
        return [{"name": f.name, "description": ds.description,
                 "columns": [{"name": c.get("name", ""), "description": c.get("description", "")}
                             for c in f.columns]} for f in files]
    return [{"name": ds.name, "description": ds.description,
             "columns": [{"name": c.get("name", ""), "description": c.get("description", "")}
                         for c in ds.dictionary]}]


def _item(ds: DatasetRelease, t: HypothesisTaskRelease) -> ItemResult:
    return ItemResult(task=t.key, dataset=ds.name, source=t.source, domain=t.domain or "",
                      question_type=t.question_type or "", question=t.question, status="scored")


@dataclass
class _Plan:
    """What a run scores: the gold queries of the datasets answered, in the release's order, and their answers."""

    mode: HMSMode
    answers: dict[str, HypothesisAnswer]
    todo: list[tuple[DatasetRelease, HypothesisTaskRelease]]
    notes: list[str]

    @property
    def folders(self) -> list[str]:
        """The dataset folders of the queries to score, in order: the run's parts."""
        return list(dict.fromkeys(ds.name for ds, _ in self.todo))


def _plan(ctx: ScoringContext) -> _Plan:
    if ctx.mode not in modes:
        raise SubmissionCheckError(f"Unknown mode '{ctx.mode}' for hypotheses; choose {' or '.join(modes)}.")
    tasks = _tasks(ctx.release)
    answers: dict[str, HypothesisAnswer] = {}
    for fname, data in ctx.files:
        answers.update({a.task: a for a in read_answers(data, label=fname, release=ctx.release)})
    datasets = {tasks[k][0].name for k in answers}
    todo = [(d, t) for d, t in tasks.values() if d.name in datasets]
    no_gold = [t.key for _, t in todo if t.gold is None]
    todo = [(d, t) for d, t in todo if t.gold is not None]
    notes = []
    if no_gold:
        notes.append(f"{_n(len(no_gold), 'query', 'queries')} of the datasets answered "
                     f"{'has' if len(no_gold) == 1 else 'have'} no gold hypothesis yet and "
                     f"{'was' if len(no_gold) == 1 else 'were'} not scored.")
    unknown_answers = [k for k in answers if tasks[k][1].gold is None]
    if unknown_answers:
        notes.append(f"{_n(len(unknown_answers), 'answer is', 'answers are')} for queries without gold and "
                     "not scored.")
    return _Plan(mode=ctx.mode, answers=answers, todo=todo, notes=notes)  # type: ignore[arg-type]


def _build_hms_judge(**params: Any) -> HMSJudge:
    """The HMS judge, imported when one is built (listing the kinds loads no judge)."""
    from evaluation.hms.judge import HMSJudge

    return HMSJudge(**params)


def _hms_judge(ctx: ScoringContext) -> HMSJudge:
    from evaluation.hms.judge import HMSJudge

    judge = ctx.judge()
    if not isinstance(judge, HMSJudge):
        raise SubmissionCheckError(f"The {getattr(judge, 'name', '?')} judge cannot score hypotheses; choose the "
                                   "hms judge.")
    return judge


def _score_queries(ctx: ScoringContext, plan: _Plan, todo: list[tuple[DatasetRelease, HypothesisTaskRelease]],
                   progress: Callable[[int, int, str], None]) -> list[ItemResult]:
    """Score ``todo`` one query at a time (an unanswered one counts 0)."""
    from evaluation.hms.score import GoldHypothesis, Prediction, score_item

    judge = _hms_judge(ctx)
    items: list[ItemResult] = []
    for n, (ds, t) in enumerate(todo):
        item = _item(ds, t)
        a = plan.answers.get(t.key)
        assert t.gold is not None
        if a is None:
            item.status, item.hms, item.message = "unanswered", 0.0, "No answer was submitted for this query."
            item.gold_hypothesis = t.gold.hypothesis
        elif ctx.budget.exhausted():
            item.status, item.gold_hypothesis, item.predicted_hypothesis = "budget_exhausted", t.gold.hypothesis, \
                a.hypothesis
            item.message = (f"Not scored: the run's time budget of {ctx.limits.run_budget_s:g} s "
                            "(FORKPATHS_SCORE_RUN_BUDGET_S) ran out first.")
        else:
            gold = GoldHypothesis(hypothesis=t.gold.hypothesis, workflow=t.gold.workflow or "",
                                  context=t.gold.context, variables=t.gold.variables,
                                  relationship=t.gold.relationship)
            pred = Prediction(hypothesis=a.hypothesis, workflow=a.workflow, context=a.context,
                              variables=a.variables, relationship=a.relationship)
            score_item(item, gold, pred, judge=judge, mode=plan.mode,
                       datasets=_datasets_for_prompt(ds, t, plan.mode, ctx.release_folder))
            if a.code and t.true_hypothesis_expr and t.target_col:
                from evaluation.hms.expression import check_expression

                item.expression = check_expression(ctx, ds, t, a.code)
        items.append(item)
        progress(n + 1, len(todo), f"{ds.name}: query {n + 1} of {len(todo)}")
    return items


def _scored_run(ctx: ScoringContext, plan: _Plan, items: list[ItemResult]) -> ScoredRun:
    notes = list(plan.notes)
    result = HypothesesResult(release_version=ctx.release.version, ground_truth_hash=ctx.ground_truth_hash,
                              mode=plan.mode, judge=_hms_judge(ctx).configuration(), items=items,
                              scores=aggregate(items), notes=notes)
    out_of_time = sum(1 for i in items if i.status == "budget_exhausted")
    if out_of_time:
        notes.append(f"The run's time budget of {ctx.limits.run_budget_s:g} s (FORKPATHS_SCORE_RUN_BUDGET_S) ran out "
                     f"with {_n(out_of_time, 'query', 'queries')} of {len(items)} not scored (status "
                     "'budget_exhausted', left out of HMS).")
    errors = sum(1 for i in items if i.status == "judge_error")
    message = " ".join(notes + ([f"{errors} of {_n(len(items), 'query', 'queries')} "
                                 f"{'is a judge error' if errors == 1 else 'are judge errors'} (not in HMS); an "
                                 "evaluator can judge them on Run details."] if errors else []))
    return ScoredRun(result_name="hms-result.json", result_bytes=dump_result(result).encode("utf-8"),
                     scores=result.scores, items=len(items), message=message)


def score(ctx: ScoringContext) -> ScoredRun:
    """HMS of every gold query of the datasets answered (an unanswered one counts 0), one query at a time, folder
    after folder: the same parts a fanned-out run scores on several workers (:func:`score_part`), combined the
    same way (:func:`combine`), so both give the same result file."""
    plan = _plan(ctx)
    _hms_judge(ctx)
    total = len(plan.todo)
    parts: list[str] = []
    done_before = 0
    for index, folder in enumerate(plan.folders):
        def tick(done: int, _total: int, stage: str, *, base: int = done_before) -> None:
            ctx.progress(base + done, total, stage)

        parts.append(score_part(ctx, index, progress=tick))
        done_before += sum(1 for d, _ in plan.todo if d.name == folder)
    return combine(ctx, parts)


# A run fans out across workers one dataset folder per part (curation.services.fanout): each part scores its
# folder's queries, and combine puts the items back in the release's order, so the result is the one score gives
# whatever order the parts were scored in and whichever workers scored them.


def part_count(ctx: ScoringContext) -> int:
    """How many parts a run fans out into: one per dataset folder with queries to score."""
    return len(_plan(ctx).folders)


def part_labels(ctx: ScoringContext) -> list[str]:
    """The parts' names (the dataset folders), in order."""
    return _plan(ctx).folders


def score_part(ctx: ScoringContext, index: int, progress: Callable[[int, int, str], None] | None = None) -> str:
    """Score the queries of the run's ``index``-th dataset folder; the items as JSON, which :func:`combine`
    reads back."""
    plan = _plan(ctx)
    folder = plan.folders[index]
    items = _score_queries(ctx, plan, [(d, t) for d, t in plan.todo if d.name == folder], progress or ctx.progress)
    return json.dumps([i.model_dump(mode="json") for i in items])


def combine(ctx: ScoringContext, parts: Sequence[str]) -> ScoredRun:
    """The run's result from its parts, the items in the release's order."""
    plan = _plan(ctx)
    by_key = {i.task: i for p in parts for i in (ItemResult.model_validate(x) for x in json.loads(p))}
    missing = [t.key for _, t in plan.todo if t.key not in by_key]
    if missing:
        raise SubmissionCheckError(f"The parts of the run lack {_n(len(missing), 'query', 'queries')} "
                                   f"({', '.join(missing[:3])}); score the run again.")
    return _scored_run(ctx, plan, [by_key[t.key] for _, t in plan.todo])


# ------------------------------------------------------------------------------------ aggregation


def _n(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _group(items: list[ItemResult], n_bootstrap: int, seed: int) -> dict[str, Any]:
    from evaluation.metrics import cluster_bootstrap_mean

    counted = [i for i in items if i.status in ("scored", "unanswered") and i.hms is not None]
    est = cluster_bootstrap_mean([i.hms or 0.0 for i in counted], [_folder(i.task) for i in counted],
                                 n_bootstrap=n_bootstrap, seed=seed)
    scored = [i for i in items if i.status == "scored"]
    pairs = [m for i in scored for m in i.matched]
    return {"hms": est.model_dump(mode="json"), "queries": len(items), "scored": len(scored),
            "judge_errors": sum(1 for i in items if i.status == "judge_error"),
            "unanswered": sum(1 for i in items if i.status == "unanswered"),
            "not_scored": sum(1 for i in items if i.status == "budget_exhausted"),
            "context": _mean([i.recall_context for i in scored if i.recall_context is not None]),
            "variables_f1": _mean([m.variables.f1 for m in pairs if m.variables is not None]),
            "relationship": _mean([m.relationship.score for m in pairs if m.relationship is not None]),
            "expression": _mean([i.expression.agreement for i in items
                                 if i.expression is not None and i.expression.agreement is not None])}


def aggregate(items: list[ItemResult], *, n_bootstrap: int = N_BOOTSTRAP, seed: int = 0) -> dict[str, Any]:
    """HMS (mean over the queries scored and the unanswered ones, judge errors left out) with its CI clustered
    by dataset folder, facet means, and the same per dataset, domain and question type."""

    def by(attr: str) -> dict[str, Any]:
        keys = sorted({getattr(i, attr) or "unknown" for i in items})
        return {k: _group([i for i in items if (getattr(i, attr) or "unknown") == k], n_bootstrap, seed)
                for k in keys}

    return {"overall": _group(items, n_bootstrap, seed), "datasets": by("dataset"), "domains": by("domain"),
            "question_types": by("question_type"), "calls": sum(i.calls for i in items),
            "n_bootstrap": n_bootstrap, "seed": seed}


def effective(result: HypothesesResult, overrides: Sequence[FacetOverride]) -> HypothesesResult:
    """The result with the experts' facet judgements applied and the scores recomputed (no LLM)."""
    mode: HMSMode = result.mode  # type: ignore[assignment]
    items = [apply_overrides(i, overrides, mode) for i in result.items]
    return result.model_copy(update={"items": items, "scores": aggregate(items, n_bootstrap=result.n_bootstrap,
                                                                         seed=result.seed)})


def find_item(result: HypothesesResult, task: str) -> ItemResult:
    item = next((i for i in result.items if i.task == task), None)
    if item is None:
        raise SubmissionCheckError(f"The run has no query '{printable(task)}'.")
    return item


def check_facet(result: HypothesesResult, o: FacetOverride) -> str:
    """A description of the judgement, or :class:`~evaluation.hms.OverrideRefused` saying why it does not fit."""
    return check_override(find_item(result, o.task), o)


def facet_value(item: ItemResult, facet: str, pair: str) -> dict[str, Any] | None:
    """The judge's own judgement of a facet of a pair (None: not judged)."""
    p, _, g = pair.partition("|")
    i, j = int(p[1:]), int(g[1:])
    if facet == "context":
        c = next((c for c in item.contexts if c.pred == i and c.gold == j), None)
        return None if c is None or c.match is None or c.how == "expert" else {"match": c.match}
    f = next((f for f in item.facets if f.pred == i and f.gold == j), None)
    if f is None:
        return None
    if facet == "variables":
        v = f.variables
        if v is None or v.source in ("sentinel", "expert") or v.intersection is None:
            return None
        return {"size_gold": v.size_gold, "size_pred": v.size_pred, "intersection": v.intersection}
    r = f.relationship
    return None if r is None or r.level is None or r.source == "expert" else {"level": r.level}


def facet_label(facet: str, value: Mapping[str, Any] | None) -> str:
    """A facet judgement as a category, for agreement and κ."""
    if value is None:
        return "not judged"
    if facet == "context":
        return "match" if value.get("match") else "no match"
    if facet == "variables":
        return f"{value.get('intersection')} of {value.get('size_gold')} gold, {value.get('size_pred')} predicted"
    return str(value.get("level"))


# ------------------------------------------------------------------------------------ leaderboard and terminal


def leaderboard_values(run: RunView, dataset: str | None) -> dict[str, Any] | None:
    s = run.scores_effective or {}
    g = (s.get("datasets") or {}).get(dataset) if dataset else s.get("overall")
    if not g:
        return None
    hms = g.get("hms") or {}
    row = {"hms": hms.get("point"), "hms.low": hms.get("ci_low"), "hms.high": hms.get("ci_high"),
           "context": g.get("context"), "variables_f1": g.get("variables_f1"), "relationship": g.get("relationship"),
           "judge_errors": g.get("judge_errors"), "unanswered": g.get("unanswered"), "queries": g.get("queries")}
    types = s.get("question_types") or {}
    for t in QUESTION_TYPES:
        row[f"type.{t}"] = None if dataset else ((types.get(t) or {}).get("hms") or {}).get("point")
    return row


def summary_line(scores: Mapping[str, Any]) -> str:
    o = scores.get("overall", {})
    h = o.get("hms", {})
    return (f"HMS {fmt_score(h.get('point'))} [{fmt_score(h.get('ci_low'))}, {fmt_score(h.get('ci_high'))}]  "
            f"context {fmt_score(o.get('context'))}  variables F1 {fmt_score(o.get('variables_f1'))}  "
            f"relationship {fmt_score(o.get('relationship'))}  ({o.get('scored', 0)} scored, "
            f"{o.get('judge_errors', 0)} judge errors, {o.get('unanswered', 0)} unanswered)")


def planned_items(checked: Sequence[CheckedFile], release: Release) -> int:
    """What :func:`score` counts: every gold query of the datasets answered (an unanswered one scores 0)."""
    tasks = _tasks(release)
    answered = {tasks[a.task][0].name for c in checked for a in read_answers(c.data, label=c.name, release=release)}
    return sum(1 for d, t in tasks.values() if d.name in answered and t.gold is not None)


KIND = TaskKind(name=name, label=label, item_noun=item_noun, leaderboard=leaderboard, check_files=check_files,
                score=score, leaderboard_values=leaderboard_values, summary_line=summary_line, uses_judge=uses_judge,
                accepts_overrides=accepts_overrides, view=view, order=30, stages="hypotheses_stages",
                release_part=RELEASE_PART, curation="curation.services.hypotheses.consensus",
                item_kinds=item_kinds, modes=modes, judges=judges, default_judge=default_judge, facets=facets,
                submission_schema=SCHEMA_PATH, planned_items=planned_items,
                facet_judging=FacetJudging(read_result=read_result, effective=effective, find_item=find_item,
                                           check_facet=check_facet, facet_value=facet_value, facet_label=facet_label,
                                           card_empty=judge_card_empty),
                fan_out=FanOutParts(count=part_count, score_part=score_part, combine=combine, labels=part_labels),
                agent=agent_hook, own_judges=(KindJudge(default_judge, build=_build_hms_judge, needs_llm=True),),
                jobs=(JobKind("llm_hypotheses", "curation.services.hypotheses.llm:run_hypothesis_job"),),
                judged={"context": "HMS context matching", "variables": "HMS variable overlap",
                        "relationship": "HMS relationship level"},
                engine_modules=("evaluation.hms.expression",))
