"""MCQ accuracy (blade-reference 5.2): score an answers file, or ask a model under test, with strict parsing.

An answers file is a JSON object ``{question id: answer}`` over a release's MCQ ids (``hurricane:cvar:0``, ...);
an answer is a letter (``"B"``, ``"b"``, ``"(B)"``, ``"B."``) or BLADE's response object
``{"answer": "B", "rationale": ...}`` (also as JSON text, optionally in one fenced block). Anything else — ``"Answer: B"``, ``"B or C"``, a
letter past the last option — is *unparseable* and counted separately, never guessed (BLADE scans the first
line for any letter in hash order). Questions with no answer are *unanswered*. Accuracy is correct / questions,
per dataset and MCQ kind (variable, transform) and overall, next to the chance baseline Σ 1/len(options) /
questions (BLADE's ``expected_correct``). ``macro`` gives BLADE's across-dataset figure: the unweighted mean of
the per-dataset accuracies.

A model under test is asked the MCQs by the agent-run machinery (:mod:`evaluation.agents.mcq`: the one-shot
strategy in BLADE's strict protocol, calls cached, temperature, seed, template versions, tokens and cost recorded),
with the wording of :func:`mcq_messages`. The options are analysts' decisions: each is quoted as one JSON string
(:mod:`evaluation.llm.quoting`). An answer that names no valid letter is kept as the model's answer (it scores as
unparseable) but is not cached, so asking again re-sends it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from evaluation.errors import EvaluationError
from evaluation.llm import DATA_NOTICE, quote
from evaluation.llm.quoting import CODE_CHARS
from exports.jsontext import JsonTextError, load_json
from exports.mcq_part import MCQ, MCQPart
from exports.schema import DatasetRelease

__all__ = [
    "MCQ_REPORT_VERSION",
    "MCQ_TEMPLATE_VERSION",
    "AnswersFileError",
    "MCQGroupScore",
    "MCQItemResult",
    "MCQReport",
    "dump_mcq_report",
    "mcq_messages",
    "parse_answer",
    "parse_mcq_report",
    "read_answers",
    "score_answers",
]

MCQ_REPORT_VERSION = "1.0"
MCQ_TEMPLATE_VERSION = "blade-mcq@2"  # @2: options quoted as JSON strings
LETTERS = "ABCDEFGHIJ"
_LETTER = re.compile(r"^\(?([A-Ja-j])\)?[.)]?$")
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)  # one fenced block around the whole answer

Status = Literal["correct", "wrong", "unparseable", "unanswered"]


class AnswersFileError(EvaluationError):
    """The answers file as a whole is unreadable."""


class MCQItemResult(BaseModel):
    id: str
    dataset: str
    kind: str
    mc_type: str
    options: int
    correct: str
    answer: str | None = Field(description="the raw answer (truncated to 500 characters)")
    parsed: str | None = None
    status: Status
    reason: str = ""


class MCQGroupScore(BaseModel):
    dataset: str = Field(description="a dataset name, or 'all'")
    kind: str = Field(description="variable, transform, or 'all'")
    questions: int
    correct: int
    wrong: int
    unparseable: int
    unanswered: int
    accuracy: float
    chance: float


class MCQReport(BaseModel):
    format_version: str = MCQ_REPORT_VERSION
    release_version: str = ""
    source: dict[str, Any] = Field(default_factory=dict, description="answers file, or model + endpoint")
    groups: list[MCQGroupScore]
    macro: dict[str, float] = Field(default_factory=dict, description="mean of per-dataset accuracies, per kind")
    items: list[MCQItemResult]
    unknown_ids: list[str] = Field(default_factory=list, description="answered ids the release does not have")


def dump_mcq_report(report: MCQReport) -> str:
    """The report file's text: keys sorted, indent 2, trailing newline."""
    return json.dumps(report.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def parse_mcq_report(text: str | bytes, *, label: str = "MCQ report") -> MCQReport:
    """Read a report written by :func:`dump_mcq_report`, refusing unknown ``format_version`` values.

    Raises:
        AnswersFileError: not JSON, not a report, an unknown version, or fields that do not fit.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise AnswersFileError(f"{label} is not JSON: {exc}.") from exc
    if not isinstance(data, dict) or "format_version" not in data:
        raise AnswersFileError(f"{label} is not a forkpaths MCQ report (no format_version).")
    if data["format_version"] != MCQ_REPORT_VERSION:
        raise AnswersFileError(f"{label} has format_version {data['format_version']!r}; this forkpaths reads "
                               f"{MCQ_REPORT_VERSION}.")
    try:
        return MCQReport.model_validate(data)
    except ValidationError as exc:
        raise AnswersFileError(f"{label}: {exc.errors()[0].get('msg')} at "
                               f"{'.'.join(map(str, exc.errors()[0].get('loc', ())))}.") from exc


def parse_answer(raw: Any, n_options: int) -> tuple[str | None, str]:
    """The letter an answer names, or ``(None, why)``; strict, see the module docstring."""
    value = raw
    if isinstance(value, str):
        fenced = _FENCE.match(value.strip())
        value = fenced.group(1) if fenced else value
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value.strip())
        except json.JSONDecodeError:
            return None, "looks like JSON but does not parse"
    if isinstance(value, Mapping):
        if "answer" not in value:
            return None, "an object without an 'answer' field"
        value = value["answer"]
    if not isinstance(value, str):
        return None, f"a {type(value).__name__}, not a letter"
    m = _LETTER.match(value.strip())
    if not m:
        return None, f"not a single option letter: {value.strip()[:60]!r}"
    letter = m.group(1).upper()
    if LETTERS.index(letter) >= n_options:
        return None, f"{letter} is past the last option ({LETTERS[n_options - 1]})"
    return letter, ""


def read_answers(source: Path | str | bytes | Mapping[str, Any], *, label: str = "answers file") -> dict[str, Any]:
    """An answers file as ``{id: raw answer}``.

    Raises:
        AnswersFileError: unreadable, not JSON (or nested too deeply, or a number too long to read), or not an
            object.
    """
    if isinstance(source, Mapping):
        data: Any = dict(source)
    else:
        try:
            if isinstance(source, Path):
                label = str(source)
                text: str | bytes = source.read_bytes()
            else:
                text = source
            data = load_json(text, label=label)
        except OSError as exc:
            raise AnswersFileError(f"cannot read {label}: {exc.strerror or exc}.") from exc
        except JsonTextError as exc:  # not JSON, nested too deeply, a number Python refuses: with where
            raise AnswersFileError(str(exc)) from exc
    if isinstance(data, dict) and isinstance(data.get("answers"), dict):
        data = data["answers"]
    if not isinstance(data, dict):
        raise AnswersFileError(f"{label} holds a JSON {type(data).__name__}; expected an object "
                               "{question id: letter}.")
    return {str(k): v for k, v in data.items()}


def _unicode(text: str) -> str:
    """``text`` with lone surrogates (from a JSON ``\\ud800`` escape) written as escapes, so the report can be
    written as UTF-8: an answers file is hostile input."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _mcqs(datasets: Iterable[DatasetRelease]) -> list[tuple[str, MCQ]]:
    return [(ds.name, q) for ds in datasets for q in MCQPart.of(ds).items]


def _group(dataset: str, kind: str, items: Sequence[MCQItemResult], chance: float) -> MCQGroupScore:
    counts = {s: sum(1 for i in items if i.status == s) for s in ("correct", "wrong", "unparseable", "unanswered")}
    n = len(items)
    return MCQGroupScore(dataset=dataset, kind=kind, questions=n, accuracy=counts["correct"] / n if n else 0.0,
                         chance=chance / n if n else 0.0, **counts)


def score_answers(datasets: Sequence[DatasetRelease], answers: Mapping[str, Any], *, release_version: str = "",
                  source: dict[str, Any] | None = None) -> MCQReport:
    """Score ``{id: answer}`` against the MCQs of ``datasets``."""
    items: list[MCQItemResult] = []
    chance: dict[tuple[str, str], float] = {}
    for dataset, q in _mcqs(datasets):
        n = len(q.options)
        correct = LETTERS[q.correct_index]
        raw = answers.get(q.id)
        if q.id not in answers or raw is None:
            status: Status = "unanswered"
            parsed, reason = None, "no answer"
        else:
            parsed, reason = parse_answer(raw, n)
            status = "unparseable" if parsed is None else ("correct" if parsed == correct else "wrong")
        shown = raw if isinstance(raw, str) or raw is None else json.dumps(raw, ensure_ascii=False)
        shown = None if shown is None else _unicode(shown)
        items.append(MCQItemResult(id=q.id, dataset=dataset, kind=q.kind, mc_type=q.mc_type, options=n,
                                   correct=correct, answer=shown[:500] if shown is not None else None,
                                   parsed=parsed, status=status, reason=reason))
        for key in ((dataset, q.kind), (dataset, "all"), ("all", q.kind), ("all", "all")):
            chance[key] = chance.get(key, 0.0) + 1 / n
    groups = [_group(d, k, [i for i in items if d in ("all", i.dataset) and k in ("all", i.kind)], c)
              for (d, k), c in sorted(chance.items(), key=lambda kv: (kv[0][0] == "all", kv[0]))]
    macro: dict[str, float] = {}
    for kind in ("variable", "transform", "all"):
        per = [g.accuracy for g in groups if g.dataset != "all" and g.kind == kind]
        if per:
            macro[kind] = sum(per) / len(per)
    known = {q.id for _, q in _mcqs(datasets)}
    return MCQReport(release_version=release_version, source=source or {"kind": "answers_file"}, groups=groups,
                     macro=macro, items=items, unknown_ids=sorted(_unicode(i) for i in set(answers) - known))


# ------------------------------------------------------------------------------------- model under test

_SYSTEM = "You are an expert data analyst who chooses well-justified analysis decisions. " + DATA_NOTICE


def mcq_messages(ds: DatasetRelease, q: MCQ) -> list[dict[str, str]]:
    """The chat messages for one MCQ, after BLADE's MCQ prompt (5.2), in our words; every option (an analyst's
    decision) and the dataset's texts are quoted as JSON strings."""
    which = "MOST" if q.mc_type == "select_pos" else "LEAST"
    letters = LETTERS[:len(q.options)]
    if q.kind == "variable":
        task = (f"Given the research question and the dataset, select the conceptual variable that is {which} "
                "justifiable for the analysis.")
        choices = "\n".join(f"{letters[i]}: {quote(o.text)}" for i, o in enumerate(q.options))
    else:
        task = (f"Given the research question and the dataset, consider how to operationalise the conceptual "
                f"variable {quote(q.concept.lower())}. Select the transformation code that is {which} justifiable "
                "(each option is Python code quoted as one JSON string).")
        choices = "\n".join(f"{letters[i]}: {quote(o.text, limit=CODE_CHARS)}" for i, o in enumerate(q.options))
    description = json.dumps((ds.info or {}).get("data_desc") or {"description": ds.description},
                             ensure_ascii=False)[:12000]
    user = (f"{task}\n\nAnswer with one JSON object and nothing else: "
            '{"answer": "<letter>", "rationale": "<one or two sentences>"}\n\n'
            f"Research question: {quote(ds.research_question)}\n\nDataset: {quote(description, limit=12000)}\n\n"
            f"Choices:\n{choices}\n\nThe valid values are: {', '.join(letters)}.")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]
