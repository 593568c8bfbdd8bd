"""The ``hms`` judge: the LLM questions of DiscoveryBench's hypothesis matching score, through the one client.

Prompts are written in our own words after evaluation-seeds-reference §1.4. Two families:

* ``discoverybench`` (template ``hms-db@3``): upstream's questions, settings and number of requests, in
  :mod:`evaluation.hms.discoverybench` (which lists every remaining difference). Each question is cached under its
  step and a tag (``gold``, ``predicted``, the pair ``P0|G1``), so that a question upstream asks twice (the same
  variables question for two matched pairs) is sent twice, as upstream sends it;
* ``default`` (template ``hms@1``): temperature 0 and a fixed seed for every call, and each question asked once
  for all pairs of a query (context, variables, relationship), so a query costs at most five calls
  (two decompositions, one each for contexts, variables and relationships) and fewer when the gold or the
  answer brings its own decomposition.

Everything a person or an agent wrote (hypotheses, workflows, contexts, variables, dataset descriptions) is
quoted as JSON strings with :data:`~evaluation.llm.DATA_NOTICE`, and answers that name pairs or variables that
were not listed are refused (:class:`~evaluation.llm.ParseError`). Every call goes through
:class:`~evaluation.llm.LLMClient`, which caches it with its provenance, so scoring again costs no call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from evaluation.hms.records import HMSMode, SubHypothesis
from evaluation.judges.base import (
    AgentVar,
    GTModel,
    GTVariable,
    JudgeContext,
    JudgeError,
    ModelJudgement,
    VariableJudgement,
)
from evaluation.judges.model_code import AgentModel
from evaluation.llm import DATA_NOTICE, Answer, LLMClient, ParseError, quote, quote_json
from evaluation.llm.parsing import extract_json
from evaluation.submissions import ExtractedFunction

__all__ = ["DEFAULT_SEED", "HMSJudge", "TEMPLATE_DB", "TEMPLATE_DEFAULT"]

TEMPLATE_DEFAULT = "hms@1"
TEMPLATE_DB = "hms-db@3"  # @3: upstream's prompts, one context question per pair
DEFAULT_SEED = 0
T = TypeVar("T")

_SYSTEM = ("You evaluate data-driven hypotheses against gold hypotheses. Answer only with the JSON asked for. "
           + DATA_NOTICE)

_DIMENSIONS = """A hypothesis has three dimensions:
- context: the boundary conditions under which it holds (a population, a place, a period, a subset of the
  data). A hypothesis about the whole dataset has the dataset's description as its context.
- variables: the concepts that interact in it (for example "age" and "income").
- relations: the form of the interaction (for example "positive", "positive and linear", "no relationship").
Example: "Among sandhill cranes in Nebraska in 2019, body mass rose linearly with wing length" has the context
"sandhill cranes in Nebraska in 2019", the variables "body mass" and "wing length", and the relation "positive
and linear"."""

_DECOMPOSE = """{dimensions}

Below are the datasets (names, descriptions, columns), a hypothesis and the workflow that produced it, each
quoted as JSON. Split the hypothesis into self-contained sub-hypotheses and give each one's dimensions, using only
what the text states: the context ("None" if the text gives none), the variables (an empty list if none) and the
relations ("None" if none).

Datasets: {datasets}
Hypothesis: {hypothesis}
Workflow: {workflow}

Answer as JSON: {{"sub_hypo": [{{"text": "<the sub-hypothesis>", "context": "<context>", "variables": ["<variable>"],
"relations": "<relations>"}}]}}"""

_CONTEXT_MANY = """{dimensions}

Datasets: {datasets}
Question asked of the data: {query}
For each pair below (named like P0|G1), does the predicted context describe the same boundary conditions as the
gold context? Two contexts that both cover the whole dataset match.
{pairs}

Answer as JSON with one entry per pair and no other: {{"pairs": {{"<pair>": {{"match": true or false,
"explanation": "<one sentence>"}}}}}}"""

_LADDER = ('From general to specific: "some relationship" > "positive" > "positive and (linear or quadratic)" > '
           '"positive and linear".')

_VARS_MANY = """{dimensions}

Datasets: {datasets}
For each pair below (named like P0|G1), match the predicted variables to the gold variables one to one,
counting paraphrases and close matches: list the [gold label number, predicted label number] pairs that name the
same concept (gold variables are labelled G1, G2, ...; predicted ones B1, B2, ...).
{pairs}

Answer as JSON with one entry per pair and no other: {{"pairs": {{"<pair>": {{"matches": [[<gold number>,
<predicted number>]], "explanation": "<one sentence>"}}}}}}"""

_REL_MANY = """{dimensions}

Datasets: {datasets}
For each pair below (named like P0|G1), compare the predicted relationship with the gold one. Choose A if they
are very similar, B if the predicted one is similar but more general than the gold one, C if they are different.
""" + _LADDER + """
{pairs}

Answer as JSON with one entry per pair and no other: {{"pairs": {{"<pair>": {{"answer": "A" | "B" | "C",
"explanation": "<one sentence>"}}}}}}"""


def _object(text: str) -> dict[str, Any]:
    value, _ = extract_json(text)
    if not isinstance(value, dict):
        raise ParseError("the answer is not a JSON object")
    return value


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 0:
        raise ParseError(f"{what} is not a whole number ≥ 0 ({value!r})")
    return int(value)


def parse_decomposition(text: str) -> list[SubHypothesis]:
    data = _object(text)
    items = data.get("sub_hypo")
    if not isinstance(items, list) or not items:
        raise ParseError("the answer has no sub_hypo list")
    out = []
    for n, it in enumerate(items):
        if not isinstance(it, dict):
            raise ParseError(f"sub_hypo[{n}] is not an object")
        variables = it.get("variables", [])
        if isinstance(variables, str):
            variables = [] if variables.strip().lower() in ("", "none") else [variables]
        if not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
            raise ParseError(f"sub_hypo[{n}].variables is not a list of strings")
        context, relations = it.get("context", "None"), it.get("relations", "None")
        if not isinstance(context, str) or not isinstance(relations, str):
            raise ParseError(f"sub_hypo[{n}]: context and relations must be strings")
        out.append(SubHypothesis(text=str(it.get("text", "")), context=context or "None",
                                 variables=[v for v in variables if v.strip()], relations=relations or "None"))
    return out


def _pairs_of(text: str, asked: Sequence[str]) -> dict[str, dict[str, Any]]:
    pairs = _object(text).get("pairs")
    if not isinstance(pairs, dict):
        raise ParseError("the answer has no pairs object")
    extra = sorted(set(pairs) - set(asked))
    if extra:
        raise ParseError(f"the answer names pairs that were not asked about: {', '.join(extra)[:200]}")
    missing = [p for p in asked if p not in pairs]
    if missing:
        raise ParseError(f"the answer leaves out {', '.join(missing)}")
    if not all(isinstance(v, dict) for v in pairs.values()):
        raise ParseError("each pair's answer must be an object")
    return pairs


class HMSJudge:
    """The LLM judge of hypotheses (registered as ``hms``); built with the one :class:`LLMClient`."""

    name = "hms"

    def __init__(self, client: LLMClient) -> None:
        self.base = client
        self._clients: dict[tuple[tuple[str, Any], ...], LLMClient] = {}

    # ---------------------------------------------------------------- clients and bookkeeping

    def client(self, **params: Any) -> LLMClient:
        """A client with the base configuration and these generation parameters (same endpoint, same cache)."""
        key = tuple(sorted(params.items()))
        if key not in self._clients:
            self._clients[key] = LLMClient(self.base.config.model_copy(update=params))
        return self._clients[key]

    def settings(self, mode: HMSMode, step: str) -> dict[str, Any]:
        """Generation parameters of a step: upstream's in ``discoverybench`` mode, temperature 0 and the seed
        otherwise."""
        if mode == "discoverybench":  # openai_helpers.py:16-22 (no JSON mode), lm_utils.py:23-29 (JSON mode)
            if step in ("decompose", "context"):
                return {"temperature": 1.0, "max_tokens": 4096, "top_p": 1.0, "seed": None, "json_mode": False}
            return {"temperature": 0.0, "max_tokens": 250, "top_p": 1.0, "seed": None, "json_mode": True}
        return {"temperature": 0.0, "seed": self.base.config.seed if self.base.config.seed is not None
                else DEFAULT_SEED, "top_p": None}

    @property
    def calls(self) -> int:
        return sum(c.calls for c in self._clients.values())

    @property
    def cache_hits(self) -> int:
        return sum(c.cache_hits for c in self._clients.values())

    def configuration(self) -> dict[str, Any]:
        return {"name": self.name, **self.base.describe(),
                "templates": {"default": TEMPLATE_DEFAULT, "discoverybench": TEMPLATE_DB},
                "settings": {m: {s: self.settings(m, s) for s in ("decompose", "context", "variables",  # type: ignore[arg-type]
                                                                  "relationship")}
                             for m in ("default", "discoverybench")}}

    def ask(self, mode: HMSMode, step: str, user: str, parse: Callable[[str], T], *, system: str = _SYSTEM,
            tag: str = "") -> Answer[T]:
        """One question. ``tag`` is part of the cache key (the template), not of the messages."""
        template = f"{TEMPLATE_DB if mode == 'discoverybench' else TEMPLATE_DEFAULT}/{step}" + (f"/{tag}" if tag else "")
        return self.client(**self.settings(mode, step)).ask(
            template=template, messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            parse=parse)

    # ---------------------------------------------------------------- the questions

    def decompose(self, *, datasets: Any, hypothesis: str, workflow: str) -> Answer[list[SubHypothesis]]:
        """``default`` mode's decomposition (``discoverybench`` mode asks upstream's own question)."""
        user = _DECOMPOSE.format(dimensions=_DIMENSIONS, datasets=quote_json(datasets), hypothesis=quote(hypothesis),
                                 workflow=quote(workflow or ""))
        return self.ask("default", "decompose", user, parse_decomposition)

    def contexts_many(self, *, datasets: Any, query: str, pairs: dict[str, tuple[str, str]],
                      ) -> Answer[dict[str, tuple[bool, str]]]:
        """``default`` mode: every listed context pair (``P<i>|G<j>`` → (gold context, predicted context)) in one
        question."""
        lines = "\n".join(f"{k}: gold {quote(g)}; predicted {quote(p)}" for k, (g, p) in pairs.items())

        def parse(text: str) -> dict[str, tuple[bool, str]]:
            out = {}
            for k, v in _pairs_of(text, list(pairs)).items():
                if not isinstance(v.get("match"), bool):
                    raise ParseError(f"{k}: match is not true or false")
                out[k] = (v["match"], str(v.get("explanation", "")))
            return out

        user = _CONTEXT_MANY.format(dimensions=_DIMENSIONS, datasets=quote_json(datasets), query=quote(query),
                                    pairs=lines)
        return self.ask("default", "context", user, parse)

    def variables_many(self, *, datasets: Any, pairs: dict[str, tuple[list[str], list[str]]],
                       ) -> Answer[dict[str, tuple[int, str]]]:
        lines = "\n".join(
            f"{k}: gold variables: " + ", ".join(f"G{n}: {quote(v)}" for n, v in enumerate(g, 1))
            + "; predicted variables: " + ", ".join(f"B{n}: {quote(v)}" for n, v in enumerate(p, 1))
            for k, (g, p) in pairs.items())

        def parse(text: str) -> dict[str, tuple[int, str]]:
            out = {}
            for k, v in _pairs_of(text, list(pairs)).items():
                n_gold, n_pred = len(pairs[k][0]), len(pairs[k][1])
                matches = v.get("matches")
                if not isinstance(matches, list):
                    raise ParseError(f"{k}: matches is not a list")
                seen_g: set[int] = set()
                seen_p: set[int] = set()
                for m in matches:
                    if not (isinstance(m, list) and len(m) == 2):
                        raise ParseError(f"{k}: a match is not a [gold, predicted] pair")
                    g, p = _int(m[0], "a gold number"), _int(m[1], "a predicted number")
                    if not (1 <= g <= n_gold and 1 <= p <= n_pred):
                        raise ParseError(f"{k}: the match [{g}, {p}] names a variable that was not listed")
                    if g in seen_g or p in seen_p:
                        raise ParseError(f"{k}: a variable is matched twice")
                    seen_g.add(g)
                    seen_p.add(p)
                out[k] = (len(seen_g), str(v.get("explanation", "")))
            return out

        user = _VARS_MANY.format(dimensions=_DIMENSIONS, datasets=quote_json(datasets), pairs=lines)
        return self.ask("default", "variables", user, parse)

    def relationships_many(self, *, datasets: Any, pairs: dict[str, tuple[SubHypothesis, SubHypothesis]],
                           ) -> Answer[dict[str, tuple[str, str]]]:
        lines = "\n".join(f"{k}: gold {quote(g.relations)} (in {quote(g.text)}); predicted {quote(p.relations)} "
                          f"(in {quote(p.text)})" for k, (g, p) in pairs.items())

        def parse(text: str) -> dict[str, tuple[str, str]]:
            out = {}
            for k, v in _pairs_of(text, list(pairs)).items():
                level = str(v.get("answer", "")).strip().upper()
                level = re.sub(r"^\(?([ABC])[).:]?.*$", r"\1", level)
                if level not in ("A", "B", "C"):
                    raise ParseError(f"{k}: the answer {v.get('answer')!r} is not A, B or C")
                out[k] = (level, str(v.get("explanation", "")))
            return out

        user = _REL_MANY.format(dimensions=_DIMENSIONS, datasets=quote_json(datasets), pairs=lines)
        return self.ask("default", "relationship", user, parse)

    # ---------------------------------------------------------------- not a BLADE judge

    def _not_blade(self) -> JudgeError:
        return JudgeError("The hms judge scores hypotheses (kind 'hypotheses'); choose the offline or llm judge "
                          "for BLADE analyses.")

    def describe_model(self, model: ExtractedFunction, *, context: JudgeContext,
                       frame_columns: Sequence[str] | None = None) -> AgentModel:
        raise self._not_blade()

    def match_variables(self, gt: Sequence[GTVariable], agent: Sequence[AgentVar], *,
                        context: JudgeContext) -> list[VariableJudgement]:
        raise self._not_blade()

    def match_models(self, gt: Sequence[GTModel], agent: AgentModel, *,
                     context: JudgeContext) -> list[ModelJudgement]:
        raise self._not_blade()

