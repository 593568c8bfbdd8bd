"""The inspector (any model behind the one LLM client) and how one item is judged.

Per item, at most three inspector calls, each cached by the client (so re-judging the same items sends none):

1. **code**: from the question, the data dictionary, the file names and the workflow only, write a script that
   prints its results (the original code is never shown);
2. **conclusion**: from the question, its own code and that code's output only, state the conclusion;
3. **comparison**: the original (code, output, final answer) against its own (code, output, conclusion): the
   same statistics with the same values, and the same conclusion? Both yes is *reproducible*.

Where a gold answer exists, one more call by the accuracy judge grades the final answer with explicit
tolerances; a judge that fails gives "not judged", never "correct".

Faults and their outcomes (each with a sentence): the original code fails or needs a missing file → original code
does not run; an empty or code-only workflow → not reproducible (nothing to reproduce from, no call made); the
inspector's code raises an error → not reproducible (AIRepr's rule: code written from the workflow did not run);
the inspector's code attacks the sandbox, loops, runs out of memory or does not parse, the inspector answers
garbage or cannot be reached → inspector failed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evaluation.llm.client import LLMCallError, LLMClient
from evaluation.llm.parsing import ParseError, extract_json
from evaluation.llm.quoting import CODE_CHARS, DATA_NOTICE, quote, quote_json
from evaluation.reproducibility.models import Accuracy, CodeRun, ItemResult, Outcome, ReproItem

__all__ = ["ACCURACY_TEMPLATE", "TEMPLATES", "TOLERANCES", "Inspector", "judge_item", "workflow_problem"]

TEMPLATES = {"code": "airepr-inspector-code@1", "conclusion": "airepr-inspector-conclusion@1",
             "compare": "airepr-inspector-compare@1"}
ACCURACY_TEMPLATE = "repro-accuracy@1"
#: AIRepr's accuracy tolerances (§3.3 step 5), stated to the judge and recorded with each grade.
TOLERANCES = {"numeric_relative": 0.01,
              "rule": "numbers match when within 1 % (relative) of the gold value; a direction or relationship "
                      "must be the same; extra detail that does not contradict the gold answer is allowed"}
OUTPUT_CHARS = 6000
_INSPECTOR_FAULTS = {"syntax", "timeout", "memory", "network", "filesystem", "forbidden", "interfered", "crashed",
                     "cancelled"}


_CLOCK = (re.compile(r"(Date:\s+)\w{3}, \d{2} \w{3} \d{4}"), re.compile(r"(Time:\s+)\d{2}:\d{2}:\d{2}"))


def _steady(output: str) -> str:
    """An output as the inspector sees it: the date and time statsmodels prints in a summary left out, so the
    same analysis gives the same prompt (and its cached answer) on any day."""
    for pattern in _CLOCK:
        output = pattern.sub(r"\1(time left out)", output)
    return output


class _Code(BaseModel):
    code: str


class _Conclusion(BaseModel):
    conclusion: str


class _Comparison(BaseModel):
    thoughts: str
    same_statistics: bool
    same_conclusion: bool


class _Grade(BaseModel):
    correct: bool
    reason: str = ""


def _model(kind: type[BaseModel], text: str) -> Any:
    value, _ = extract_json(text)
    if not isinstance(value, dict):
        raise ParseError("the answer is not a JSON object")
    try:
        return kind.model_validate(value)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ParseError(f"{'.'.join(str(p) for p in err['loc']) or 'the answer'}: {err['msg']}") from None


def _parse_code(text: str) -> str:
    fenced = re.findall(r"```(?:python|py)?\s*\n(.*?)```", text, re.DOTALL)
    try:
        code = _model(_Code, text).code
    except ParseError:
        if not fenced:
            raise
        code = "\n".join(fenced)
    if not code.strip():
        raise ParseError("the code is empty")
    return code


def _parse_conclusion(text: str) -> str:
    out = _model(_Conclusion, text).conclusion.strip()
    if not out:
        raise ParseError("the conclusion is empty")
    return out


def workflow_problem(workflow: str) -> str:
    """Why a workflow gives nothing to reproduce from ("" when it is a narrative)."""
    text = workflow.strip()
    if not text:
        return "The workflow is empty: there is nothing to rewrite the analysis from."
    prose = re.sub(r"```.*?(```|$)", " ", text, flags=re.DOTALL)
    had_fence = prose != text
    if had_fence and len(re.findall(r"[A-Za-z]{2,}", prose)) < 5:
        return ("The workflow is only code (a fenced block with hardly any words around it), not a description: "
                "rewriting it would copy the code, not reproduce the analysis from its description.")
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    code_like = (ast.Assign, ast.AugAssign, ast.Import, ast.ImportFrom, ast.FunctionDef, ast.For, ast.With, ast.Call)
    if any(isinstance(n, code_like) for n in ast.walk(tree)):
        return ("The workflow is only Python code, not a description: rewriting it would copy the code, not "
                "reproduce the analysis from its description.")
    return ""


class Inspector:
    """The inspector model, through the one client (its cache, retries and provenance)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    def describe(self) -> dict[str, Any]:
        return {**self.client.describe(), "templates": dict(TEMPLATES), "accuracy_template": ACCURACY_TEMPLATE,
                "tolerances": TOLERANCES}

    def _system(self, task: str) -> dict[str, str]:
        return {"role": "system", "content": f"You are a statistician inspecting a data analysis. {task} "
                                             f"{DATA_NOTICE} Answer with one JSON object only."}

    def write_code(self, item: ReproItem) -> str:
        user = (f"Question: {quote(item.question)}\n"
                f"Data files (in the working directory): {quote_json([f.name for f in item.files])}\n"
                f"Data dictionary: {quote_json(item.dictionary)}\n"
                f"Workflow: {quote(item.workflow, limit=CODE_CHARS)}\n\n"
                'Write one Python script that follows the workflow exactly, step by step, keeping its variable '
                'names, reads the data files by the names given, and prints every statistic it computes. Answer '
                '{"code": "<the script>"}.')
        messages = [self._system("Rewrite an analysis from its workflow alone."), {"role": "user", "content": user}]
        return self.client.ask(template=TEMPLATES["code"], messages=messages, parse=_parse_code).value

    def conclude(self, item: ReproItem, code: str, output: str) -> str:
        user = (f"Question: {quote(item.question)}\nYour code: {quote(code, limit=CODE_CHARS)}\n"
                f"Its output: {quote(_steady(output), limit=OUTPUT_CHARS)}\n\n"
                'From this output alone, answer the question in one or two sentences. Answer '
                '{"conclusion": "<text>"}.')
        messages = [self._system("State the conclusion your own analysis supports."),
                    {"role": "user", "content": user}]
        return self.client.ask(template=TEMPLATES["conclusion"], messages=messages, parse=_parse_conclusion).value

    def compare(self, item: ReproItem, original: tuple[str, str, str], own: tuple[str, str, str]) -> _Comparison:
        (c1, o1, a1), (c2, o2, a2) = original, own
        user = (f"Question: {quote(item.question)}\n"
                f"Analysis 1 code: {quote(c1, limit=CODE_CHARS)}\nAnalysis 1 output: {quote(_steady(o1), limit=OUTPUT_CHARS)}\n"
                f"Analysis 1 answer: {quote(a1)}\n"
                f"Analysis 2 code: {quote(c2, limit=CODE_CHARS)}\nAnalysis 2 output: {quote(_steady(o2), limit=OUTPUT_CHARS)}\n"
                f"Analysis 2 answer: {quote(a2)}\n\n"
                "Do the two analyses compute the same statistics, with the same values, and reach the same "
                'conclusion? Answer {"thoughts": "<your reasoning>", "same_statistics": true|false, '
                '"same_conclusion": true|false}.')
        messages = [self._system("Compare two analyses of the same question."), {"role": "user", "content": user}]
        return self.client.ask(template=TEMPLATES["compare"], messages=messages,
                               parse=lambda t: _model(_Comparison, t)).value

    def grade(self, item: ReproItem, answer: str) -> _Grade:
        user = (f"Question: {quote(item.question)}\nGold answer: {quote(item.gold or '')}\n"
                f"Answer to grade: {quote(answer)}\nTolerances: {TOLERANCES['rule']}.\n\n"
                'Is the answer correct? Answer {"correct": true|false, "reason": "<one sentence>"}.')
        messages = [self._system("Grade an answer against the gold answer."), {"role": "user", "content": user}]
        return self.client.ask(template=ACCURACY_TEMPLATE, messages=messages,
                               parse=lambda t: _model(_Grade, t)).value


Runner = Callable[[str, Sequence[tuple[str, Path]], str], dict[str, Any]]


def _run(runner: Runner, code: str, files: Sequence[tuple[str, Path]], who: str) -> CodeRun:
    r = runner(code, files, who)
    return CodeRun(ok=r["ok"], stdout=r.get("stdout", ""), error_kind=r.get("error_kind"), error=r.get("error", ""),
                   seconds=r.get("seconds", 0.0), code_seconds=r.get("code_seconds", 0.0))


def _accuracy(item: ReproItem, inspector: Inspector | None) -> Accuracy | None:
    if not item.gold or not item.answer.strip():
        return None
    if inspector is None:
        return Accuracy(correct=None, reason="No accuracy judge was asked.", tolerance=TOLERANCES)
    judge = {"model": inspector.client.config.model, "template": ACCURACY_TEMPLATE}
    try:
        g = inspector.grade(item, item.answer)
    except LLMCallError as exc:  # includes a refused (unparseable) answer: never counted as correct
        return Accuracy(correct=None, reason=f"The accuracy judge failed: {exc}", tolerance=TOLERANCES, judge=judge)
    return Accuracy(correct=g.correct, reason=g.reason, tolerance=TOLERANCES, judge=judge)


def judge_item(item: ReproItem, *, inspector: Inspector, runner: Runner, release_folder: Path) -> ItemResult:
    """Judge one item: both codes in the sandbox (through ``runner``), at most three inspector calls, and the
    accuracy where a gold answer exists. Never raises for what the item, its code or the inspector do."""
    calls0, hits0 = inspector.client.calls, inspector.client.cache_hits
    files = [(f.name, release_folder / f.path) for f in item.files if f.path]
    out = ItemResult(key=item.key, source=item.source, dataset=item.dataset, question=item.question,
                     workflow=item.workflow, outcome=Outcome.INSPECTOR_FAILED, sentence="", original_code=item.code,
                     original_answer=item.answer, gold=item.gold, published=item.published)

    def done(outcome: Outcome, sentence: str) -> ItemResult:
        out.outcome, out.sentence = outcome, sentence
        out.accuracy = _accuracy(item, inspector)
        out.calls = inspector.client.calls - calls0
        out.cached = inspector.client.cache_hits - hits0
        return out

    if item.problem:
        return done(Outcome.ORIGINAL_FAILED, f"The original code cannot run here. {item.problem}")
    out.original_run = _run(runner, item.code, files, "The original code")
    if not out.original_run.ok:
        return done(Outcome.ORIGINAL_FAILED, out.original_run.error)
    why = workflow_problem(item.workflow)
    if why:
        return done(Outcome.NOT_REPRODUCIBLE, why)
    try:
        out.inspector_code = inspector.write_code(item)
    except LLMCallError as exc:
        return done(Outcome.INSPECTOR_FAILED, f"The inspector did not write usable code: {exc}")
    out.inspector_run = _run(runner, out.inspector_code, files, "The inspector's code")
    if not out.inspector_run.ok:
        if out.inspector_run.error_kind in _INSPECTOR_FAULTS:
            return done(Outcome.INSPECTOR_FAILED, out.inspector_run.error + " The item says nothing about the "
                        "analysis.")
        return done(Outcome.NOT_REPRODUCIBLE, out.inspector_run.error + " Code written from the workflow did "
                    "not run.")
    try:
        out.inspector_conclusion = inspector.conclude(item, out.inspector_code, out.inspector_run.stdout)
        verdict = inspector.compare(item, (item.code, out.original_run.stdout, item.answer or "(none given)"),
                                    (out.inspector_code, out.inspector_run.stdout, out.inspector_conclusion))
    except LLMCallError as exc:
        return done(Outcome.INSPECTOR_FAILED, f"The inspector did not answer usably: {exc}")
    out.reasoning, out.same_statistics, out.same_conclusion = (verdict.thoughts, verdict.same_statistics,
                                                               verdict.same_conclusion)
    if verdict.same_statistics and verdict.same_conclusion:
        return done(Outcome.REPRODUCIBLE, "Both codes ran; the inspector found the same statistics with the same "
                    "values and the same conclusion.")
    differ = [w for w, same in (("the statistics", verdict.same_statistics),
                                ("the conclusion", verdict.same_conclusion)) if not same]
    return done(Outcome.NOT_REPRODUCIBLE, f"Both codes ran; the inspector found that {' and '.join(differ)} "
                f"{'differ' if len(differ) > 1 else 'differs'}.")
