"""The ``llm`` judge: BLADE's three judging prompts (blade-reference 4.3) through the shared LLM client.

* model code → ``{"m_spec": str, "m_columns": [str]}`` (BLADE's ``CodeToModelLLM``);
* variable matching: ground-truth strings (A) against agent strings (B), each pair rated 5–10 with BLADE's
  rubric, answer ``{"A<i>-B<j>": {"rationale": str, "similarity": int}}``;
* model matching: unique ground-truth specifications (A, stripped and lower-cased) against the agent's (B),
  answer ``{"A<i>-B<j>": {"rationale": str}}`` for every equivalent pair.

The prompts are written in our own words after the reference's description; the dataset schema is sent once
(BLADE sends it twice) with sample values capped. Everything an agent or analyst wrote (variable descriptions,
model specifications, model code, the data dictionary) is quoted as JSON strings with a notice that quoted
strings are data (:mod:`evaluation.llm.quoting`), and an answer that names an item that was not listed, or a
rating off the scale, is a :class:`JudgeError`: text planted in a submission cannot change a score.

Calls go through :class:`~evaluation.llm.LLMClient` (one configuration, one cache keyed by model, base URL,
template version, messages and parameters; an answer is cached only once it parsed). Within a run, every
(ground-truth variable, agent variable) pair the LLM rated is remembered; a matching request whose pairs are all
known is answered from memory, so the per-model variable checks (BLADE: one call per matched model row per type,
48 for one hurricane analysis) cost nothing and an analysis needs at most 1 (model) + 3 (IV, DV, controls with
moderators) + 1 (models) = 5 calls.

A judge that is down or answers something that is not the requested JSON raises :class:`JudgeError`; the
analysis is recorded as ``judge_failed`` with that sentence and the other analyses go on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from evaluation.judges.base import (
    AgentVar,
    GTModel,
    GTVariable,
    JudgeContext,
    JudgeError,
    ModelJudgement,
    VariableJudgement,
    register_judge,
)
from evaluation.judges.model_code import AgentModel, analyse_model_code
from evaluation.llm import DATA_NOTICE, LLMCallError, LLMClient, ParseError, quote, quoted_items
from evaluation.llm.parsing import extract_json
from evaluation.llm.quoting import CODE_CHARS
from evaluation.submissions import ExtractedFunction
from exports.blade_convert import classify_model_family

__all__ = ["TEMPLATE_VERSION", "LLMJudge"]

TEMPLATE_VERSION = "blade-judge@2"  # @2: agent and analyst text quoted as JSON strings, answers checked
_MAX_SAMPLES = 5
T = TypeVar("T")

# ------------------------------------------------------------------------------------------ prompts

_MODEL_SYSTEM = "You are an expert statistician who reads data-analysis code. " + DATA_NOTICE
_MODEL_USER = """Identify the statistical model that the Python function below fits, and the exact names of
the data-frame columns the model uses (dependent variable, predictors, grouping or random-effect columns).
The function's source is quoted as one JSON string:

CODE: {code}

Answer with one JSON object and nothing else:
{{"m_spec": "<the model, e.g. 'Logistic regression' or 'Mixed-effects Poisson regression'>",
  "m_columns": ["<column>", ...]}}"""

_CVAR_SYSTEM = ("You are an expert in data analysis who judges whether two variables capture the same concept. "
                + DATA_NOTICE)
_CVAR_USER = """Research question: {question}

Dataset schema, one JSON string per column (column: description, sample values):
{schema}

Compare every conceptual variable in list A with every one in list B. For each pair that is at least somewhat
related, rate its similarity:
5 = somewhat related; 6 = related; 7 = strongly related; 8 = very strongly related, the same construct
operationalised the same way; 9 = nearly identical; 10 = identical.
Leave out pairs that are unrelated. Each variable is quoted as one JSON string after its label.

List A ({n_a} items, A1 to A{n_a}):
{list_a}

List B ({n_b} items, B1 to B{n_b}):
{list_b}

Answer with one JSON object and nothing else, keyed "A<i>-B<j>" with only the labels above:
{{"A1-B2": {{"rationale": "<why>", "similarity": <5-10>}}}}"""

_MODEL_MATCH_SYSTEM = "You are an expert statistician. " + DATA_NOTICE
_MODEL_MATCH_USER = """Two models are equivalent when they would give the same results on the same data; for
example, logistic regression is equivalent to a binomial GLM with a logit link. Ignore which variables are used.
Return every pair of equivalent model specifications between list A and list B. Each specification is quoted
as one JSON string after its label.

List A ({n_a} items, A1 to A{n_a}):
{list_a}

List B ({n_b} items, B1 to B{n_b}):
{list_b}

Answer with one JSON object and nothing else, keyed "A<i>-B<j>" with only the labels above (an empty object if
none):
{{"A1-B1": {{"rationale": "<why>"}}}}"""


def _schema(context: JudgeContext) -> str:
    lines = []
    for f in context.dictionary:
        name = f.get("column") or f.get("name") or ""
        props = f.get("properties") or {}
        desc = f.get("description") or props.get("description") or ""
        samples = (props.get("samples") or f.get("samples") or [])[:_MAX_SAMPLES]
        lines.append("- " + quote(f"{name}: {desc}" + (f" (e.g. {', '.join(map(str, samples))})" if samples else "")))
    return "\n".join(lines) or "(no data dictionary)"


_KEY = re.compile(r"A\s*(\d+)\s*-\s*B\s*(\d+)", re.IGNORECASE)


def _json_object(text: str, what: str) -> dict[str, Any]:
    try:
        data, _repairs = extract_json(text)
    except ParseError:
        data = None
    if not isinstance(data, dict):
        raise ParseError(f"the LLM's answer to the {what} prompt is not the requested JSON object: "
                         f"{text.strip()[:160]!r}.")
    return data


def _pairs(data: dict[str, Any], n_a: int, n_b: int, what: str) -> list[tuple[int, int, dict[str, Any]]]:
    """The answer's pairs; a key that is not a listed pair is refused (the answer may name only listed items)."""
    out = []
    for key, value in data.items():
        m = _KEY.fullmatch(str(key).strip())
        i, j = (int(m.group(1)) - 1, int(m.group(2)) - 1) if m else (-1, -1)
        if not (0 <= i < n_a and 0 <= j < n_b):
            raise ParseError(f"the LLM's answer to the {what} prompt names {str(key)[:40]!r}, which is not a pair "
                             f"of the listed items (A1–A{n_a}, B1–B{n_b}).")
        if not isinstance(value, dict):
            raise ParseError(f"the LLM's answer to the {what} prompt gives {str(key)[:40]!r} a "
                             f"{type(value).__name__}, not an object with a rationale.")
        out.append((i, j, value))
    return out


def _similarities(data: dict[str, Any], n_a: int, n_b: int) -> list[tuple[int, int, int, str]]:
    out = []
    for i, j, v in _pairs(data, n_a, n_b, "variable-matching"):
        sim = v.get("similarity")
        if isinstance(sim, bool) or not isinstance(sim, int | float) or not 0 <= sim <= 10 or sim != int(sim):
            raise ParseError(f"the LLM's answer to the variable-matching prompt rates A{i + 1}-B{j + 1} "
                             f"{str(sim)[:20]!r}, not a whole number from 0 to 10.")
        out.append((i, j, int(sim), str(v.get("rationale", ""))))
    return out


def _model_description(text: str) -> tuple[str, list[str]]:
    data = _json_object(text, "model-code")
    spec, cols = data.get("m_spec"), data.get("m_columns")
    if not isinstance(spec, str) or not spec.strip() or not isinstance(cols, list):
        raise ParseError("the LLM's model description lacks m_spec (text) or m_columns (a list).")
    return spec.strip(), [str(c) for c in cols]


@register_judge("llm", needs_llm=True)
class LLMJudge:
    """BLADE's judging prompts through an :class:`~evaluation.llm.LLMClient`, de-duplicated per pair."""

    name = "llm"

    def __init__(self, *, client: LLMClient) -> None:
        self.client = client
        self._pairs: dict[tuple[str, str, str, str], tuple[int, str] | None] = {}

    @property
    def calls(self) -> int:
        """Requests sent to the endpoint by this judge's client."""
        return self.client.calls

    @property
    def cache_hits(self) -> int:
        return self.client.cache_hits

    def configuration(self) -> dict[str, Any]:
        d = self.client.describe()
        return {"name": self.name, "model": d["model"], "base_url": d["base_url"],
                "template_version": TEMPLATE_VERSION, "params": d["params"], "match_threshold": 8}

    def _ask(self, template: str, messages: list[dict[str, str]], parse: Callable[[str], T]) -> T:
        try:
            return self.client.ask(template=f"{TEMPLATE_VERSION}/{template}", messages=messages, parse=parse).value
        except LLMCallError as exc:  # down, refused, or an answer that is not the JSON asked for
            text = str(exc).rstrip(".")
            raise JudgeError(text[:1].lower() + text[1:] + ".") from exc

    # ------------------------------------------------------------------ models
    def describe_model(self, model: ExtractedFunction, *, context: JudgeContext,
                       frame_columns: Sequence[str] | None = None) -> AgentModel:
        messages = [{"role": "system", "content": _MODEL_SYSTEM},
                    {"role": "user", "content": _MODEL_USER.format(code=quote(model.source, limit=CODE_CHARS))}]
        known = set(frame_columns or ())

        def parse(text: str) -> tuple[str, list[str]]:  # columns: only names the code or the frame has
            spec, cols = _model_description(text)
            unlisted = [c for c in cols if c not in known and c not in model.source]
            if unlisted:
                raise ParseError(f"the LLM's model description names columns that are neither in the model code "
                                 f"nor in the data: {', '.join(repr(c[:40]) for c in unlisted[:5])}.")
            return spec, cols

        spec, cols = self._ask("code_to_model", messages, parse)
        static = analyse_model_code(model.source, frame_columns=frame_columns)
        return AgentModel(family=classify_model_family(spec), specification=spec, columns=cols,
                          derived_in_model=static.derived_in_model,
                          notes=[f"static reading: {static.specification or 'no model recognised'}"], source="llm")

    def match_models(self, gt: Sequence[GTModel], agent: AgentModel, *,
                     context: JudgeContext) -> list[ModelJudgement]:
        if not gt or not agent.specification:
            return []
        user = _MODEL_MATCH_USER.format(n_a=len(gt), n_b=1,
                                        list_a=quoted_items("A", (m.specification.strip().lower() for m in gt)),
                                        list_b=quoted_items("B", [agent.specification]))
        messages = [{"role": "system", "content": _MODEL_MATCH_SYSTEM}, {"role": "user", "content": user}]
        pairs = self._ask("model_match", messages,
                          lambda text: _pairs(_json_object(text, "model-matching"), len(gt), 1, "model-matching"))
        return [ModelJudgement(gt_index=i, judge=self.name, rationale=str(v.get("rationale", "")))
                for i, _j, v in pairs]

    # ------------------------------------------------------------------ variables
    def _pair_key(self, context: JudgeContext, g: GTVariable, a: AgentVar) -> tuple[str, str, str, str]:
        return (context.dataset, context.research_question, g.text, a.text)

    def match_variables(self, gt: Sequence[GTVariable], agent: Sequence[AgentVar], *,
                        context: JudgeContext) -> list[VariableJudgement]:
        if not gt or not agent:
            return []
        keys = {(g.id, a.index): self._pair_key(context, g, a) for g in gt for a in agent}
        if any(k not in self._pairs for k in keys.values()):
            user = _CVAR_USER.format(question=quote(context.research_question or "(not given)"),
                                     schema=_schema(context), n_a=len(gt), n_b=len(agent),
                                     list_a=quoted_items("A", (g.text for g in gt)),
                                     list_b=quoted_items("B", (a.text for a in agent)))
            messages = [{"role": "system", "content": _CVAR_SYSTEM}, {"role": "user", "content": user}]
            rated = self._ask("cvar_match", messages,
                              lambda text: _similarities(_json_object(text, "variable-matching"), len(gt), len(agent)))
            for k in keys.values():
                self._pairs.setdefault(k, None)
            for i, j, sim, rationale in rated:
                self._pairs[keys[(gt[i].id, agent[j].index)]] = (sim, rationale)
        out = []
        for (gt_id, index), k in keys.items():
            found = self._pairs.get(k)
            if found is not None:
                out.append(VariableJudgement(gt_id=gt_id, agent_index=index, similarity=found[0],
                                             rationale=found[1], judge=self.name))
        return out
