"""HMS ``discoverybench`` mode: upstream's evaluator (allenai/discoverybench ``eval/new_eval.py`` with
``utils/openai_helpers.py`` and ``eval/lm_utils.py``, commit c31fcf0) step by step and prompt by prompt, in our
own code and words. Upstream file:line references below are to that commit.

The steps, each with upstream's number of requests:

1. **Decomposition**, gold then predicted, asked once each (``get_response(..., max_retry=1)``,
   new_eval.py:258). The answer is read as upstream reads it (openai_helpers.py:95-97: blanks stripped, then the
   characters ``` ` j s o n ``` stripped from both ends, then parsed as JSON). An answer that does not parse, or
   JSON ``null``, makes the whole hypothesis one sub-hypothesis with context "None" (new_eval.py:260-266,
   372-373). JSON that is not an object, or an object without ``sub_hypo``, or a ``sub_hypo`` with no length is
   where upstream raises (new_eval.py:268, 372): a judge error. The sub-hypotheses' ``variables`` and
   ``relations`` are never read (upstream never reads them either), so ``"variables": null`` is fine.
2. **Context matching**, one question per pair the greedy scan reaches (new_eval.py:390-412): each predicted
   sub-hypothesis, in order, scans the gold ones not yet taken; identical contexts match with no call, a context
   "None" never matches (new_eval.py:304-309; a missing ``context`` reads as "" there); otherwise the judge is
   asked, up to 5 times while its answer does not parse (openai_helpers.py:87-109), and any *truthy* ``match``
   matches (new_eval.py:301, 399: the string ``"false"`` is a match, a missing ``match`` is not). An answer that
   never parses, JSON that is not an object (new_eval.py:301), a sub-hypothesis that is not an object or has no
   ``text`` (new_eval.py:398), and a matched pair whose ``context`` key is missing (new_eval.py:408) are where
   upstream raises: a judge error.
3. **Variables and relationship**, asked about the *full* hypotheses, once per matched pair each
   (new_eval.py:419-425, 322-331), in JSON mode, temperature 0, top_p 1, max_tokens 250 (lm_utils.py:23-29, 45-51).
   Variables (new_eval.py:37-68): the answer is parsed as JSON as it is (a fenced answer does not parse); p =
   intersection / sizeB when sizeB is truthy, else 0; r = intersection / sizeA when sizeA is truthy, else 0;
   F1 = 2pr / (p + r) when both are above 0, else 0 (so one side with no variables gives F1 0, never a division
   by zero); an answer that is not JSON, lacks any of sizeA, sizeB, intersection or explanation, or whose
   arithmetic fails gives F1 -1. Relationship (new_eval.py:69-79): the answer must be a JSON object with a text
   ``answer`` (else upstream raises: a judge error); it scores 1 when it starts with "A" or contains
   "very similar", 0.5 when it starts with "B" or contains "similar but general than HypoA", 0 when it starts
   with "C" or contains "different" (tested in that order, case-sensitive), and -1 otherwise.
4. **Score**: per matched pair accuracy = 1 × F1 × relationship (new_eval.py:334); recall_context = matched gold /
   gold sub-hypotheses (new_eval.py:428); mean accuracy = Σ accuracy / predicted sub-hypotheses (new_eval.py:429);
   HMS = their product (new_eval.py:431). The -1 sentinels flow into the products as upstream's do.

What the judge is shown is upstream's: the datasets as ``{"dataset_description", "columns": [{name,
description}]}`` per data file of the query's metadata, each with its own description (new_eval.py:190-215);
the decomposition prompt's definitions (a full-dataset context is taken from the dataset description), the
context prompt with the two sub-hypotheses' texts and contexts and nothing else (new_eval.py:272-297); the
variables and relationship prompts with the datasets, the query and both hypotheses and workflows
(new_eval.py:104-166), the three relationship options in upstream's exact words (its scoring matches them).
Decomposition and context are sampled as upstream samples them (temperature 1, top_p 1, max_tokens 4096, no JSON
mode; openai_helpers.py:16-22, 90-94).

The differences that remain, on purpose:

* **Where upstream raises, the query is a judge error** (the reason and the judge's raw answer kept, never a
  number): the cases named above, and an endpoint that fails (upstream raises for the decomposition and context
  steps, and scores the variables -1 and the relationship 0 after three failed tries, lm_utils.py:40-65,
  new_eval.py:87-96, 184-186).
* The wording is ours, not upstream's (the same definitions, examples, options and answer formats); everything
  someone wrote (hypotheses, workflows, contexts, descriptions, the query) is quoted as JSON strings under
  :data:`~evaluation.llm.DATA_NOTICE` and capped at 20,000 characters, where upstream pastes it raw inside its
  JSON-like block (a text with a quote in it breaks that block); the datasets are JSON, where upstream shows a
  Python list's repr; upstream's context prompt says its definition twice, ours once.
* A dataset that did not come from a DiscoveryBench folder has no metadata file to read the data files'
  descriptions from: the judge is shown the release's description for each of its data files, in upstream's
  shape.
* An answer with no text at all is an endpoint failure for forkpaths' client (a judge error), where upstream
  reads "" (a fallback decomposition, another context try, variables -1, a raise for the relationship).
* Every answer is cached with its provenance (a re-score sends nothing); upstream samples again.
* HTTP retries follow forkpaths' client (``max_retries``), not the openai library's defaults; the frequency and
  presence penalties (0 upstream) are not sent, which is the API's default of 0.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluation.errors import EvaluationError
from evaluation.hms.records import (
    ContextCheck,
    Decomposition,
    ItemResult,
    PairResult,
    RelationshipFacet,
    SubHypothesis,
    VariablesFacet,
)
from evaluation.llm import DATA_NOTICE, Answer, LLMAnswerError, LLMCallError, ParseError, quote, quote_json

if TYPE_CHECKING:
    from evaluation.hms.judge import HMSJudge
    from exports.hypotheses_part import HypothesisTaskRelease
    from exports.schema import DatasetRelease

log = logging.getLogger(__name__)

__all__ = ["DB_LIMIT", "JudgeFailed", "datasets_from_metadata", "upstream_datasets", "read_like_get_response", "relationship_score",
           "score_discoverybench", "variables_score"]

DB_LIMIT = 20_000  # characters of one quoted string (upstream pastes texts uncapped)

_SYSTEM_SAMPLED = ("You are a helpful assistant who does not chat: you answer a request with the exact answer "
                   "only, and nothing else. " + DATA_NOTICE)
_SYSTEM_DIMENSIONS = ("You are an AI assistant that helps to evaluate a data-driven hypothesis. You are helpful and "
                      "do not chat: you answer a request with the exact answer only, and nothing else. "
                      + DATA_NOTICE)

_DECOMPOSE = """Given the columns of some datasets, a hypothesis taken as ground truth and the analysis workflow \
behind it, extract the three dimensions that define the hypothesis: Context, Variables and Relations. They are \
defined as follows.
- Contexts: boundary conditions that limit the scope of a hypothesis, such as "for men over the age of 30" or \
"in Asia and Europe". When the context applies to the full dataset, take the context from the \
dataset_description.
- Variables: known concepts that interact in a meaningful way under a given context to produce the hypothesis, \
such as gender, age or income; "None" when no variable interacts.
- Relations: the interactions between a given set of variables under a given context that produce the \
hypothesis, such as "quadratic relationship", "inversely proportional" or piecewise conditionals; "None" when \
there is no interacting relationship.
Use only the information in the hypothesis and the workflow, and add nothing new. For each dimension be \
specific and leave out no important detail.

The task's metadata, each value quoted as JSON:
datasets: {datasets}
hypothesis: {hypothesis}
workflow: {workflow}

Answer with a JSON object of this form:
{{"sub_hypo": [{{"text": <the hypothesis in natural language>, "context": <a short description of the context of \
the hypothesis>, "variables": <a list of the columns involved in the hypothesis>, "relations": <a short \
description of the relationship between the variables of the hypothesis>}}, ...]}}"""

_CONTEXT = """Given a gold hypothesis, a gold context, a predicted hypothesis and a predicted context, decide \
whether the predicted context semantically matches the gold (ground-truth) context. A context is the set of \
boundary conditions that limit the scope of a sub-hypothesis, such as "for men over the age of 30" or "in Asia \
and Europe"; when it applies to the full dataset, the context is derived from the dataset_description. Answer \
true when the predicted context matches the gold context, false otherwise. When both the gold and the predicted \
hypothesis are defined over the context of the full dataset, also answer true.

The task's metadata, each value quoted as JSON:
gold_hypothesis: {gold_hypothesis}
gold_context: {gold_context}
predicted_hypothesis: {predicted_hypothesis}
predicted_context: {predicted_context}

Answer with a JSON object of this form:
{{"match": true or false}}"""

_DIMENSIONS = """You will compare two natural-language hypotheses, HypoA and HypoB, each with an optional \
workflow: WorkflowA for HypoA and WorkflowB for HypoB. Both hypotheses answer the natural-language query QUERY \
over the dataset(s) described below by their dataset description(s) and column description(s). Compare HypoA \
and HypoB on three aspects: Contexts, Variables and Relations. For example, for the hypothesis "From 1995 to \
2009, the number of sandhill cranes around the tundra (Indigilka River) surged by an astounding ~10X":
* Contexts are the stratification of the data under which the hypothesis is true, such as "For all women" or \
"From 1995 to 2009".
* Variables are the variables (dependent or independent) the hypothesis mentions, such as number of sandhill \
cranes, location.
* Relations are the form of the relation between the variables, such as "surged by ~10x".

Answer the question below for this pair of hypotheses, HypoA and HypoB, with an explanation grounded on the QUERY \
and the DATASET(S).

The task's metadata, each value quoted as JSON:
datasets: {datasets}
query: {query}
HypoA: {hypo_a}
WorkflowA: {workflow_a}
HypoB: {hypo_b}
WorkflowB: {workflow_b}

{question}"""

_VARIABLES = """Question: for HypoA and for HypoB, which variables do the hypotheses contain? Answer with a JSON \
object holding:
"sizeA": the number of variables HypoA uses,
"sizeB": the number of variables HypoB uses,
"intersection": the number of variables HypoA and HypoB have in common; match them *fuzzily*, allowing for \
paraphrases and slightly different surface forms,
"explanation": a short explanation about the variables.
Answer:"""

_RELATIONSHIP = """Question: does HypoB show the same relation as HypoA?
Compare them with this example hierarchy of relationships, by specificity: "there exists a relationship" > \
"positive relationship" > "positive AND (linear OR quadratic)" > "positive AND linear".
Options: A) very similar B) similar but general than HypoA C) different
Answer with a JSON object holding:
"answer": one of the options A) very similar B) similar but general than HypoA C) different,
"explanation": a short explanation of how the relationships compare.
Answer:"""

_MISSING = object()


class JudgeFailed(Exception):
    """Where upstream raises: the sentence says which step and why; the judge's raw answer is in it."""

    def __init__(self, sentence: str, raw: str | None = None) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.raw = raw


def _q(value: Any) -> str:
    return quote(value, limit=DB_LIMIT)


def _raw(text: str) -> str:
    return text if len(text) <= 2000 else text[:2000] + f"… [{len(text) - 2000} more characters]"


def datasets_from_metadata(metadata: Any) -> list[dict[str, Any]]:
    """What upstream shows the judge of a query's data (new_eval.py:190-215): per entry of its metadata's
    ``datasets``, that entry's own description and its columns (names and descriptions), no file name.
    ``metadata`` is a parsed :class:`exports.discoverybench.models.Metadata`."""
    return [{"dataset_description": d.description,
             "columns": [{"name": c.name, "description": c.description} for c in d.column_list]}
            for d in metadata.datasets]


def upstream_datasets(release_folder: Path, ds: DatasetRelease, task: HypothesisTaskRelease,
                      ) -> list[dict[str, Any]] | None:
    """:func:`datasets_from_metadata` of the query's own ``metadata_<k>.json``, read from the release folder
    (a DiscoveryBench folder's release keeps it byte for byte); None when the release has no such file (a
    dataset not imported from DiscoveryBench), and the caller shows the release's description instead."""
    from exports.discoverybench.metadata import parse_metadata

    name = f"metadata_{task.metadata_k}.json"
    f = next((f for f in ds.files if f.name == name and f.role == "metadata"), None)
    if f is None:
        return None
    path = release_folder / f.path
    try:
        meta = parse_metadata(path.read_bytes(), k=task.metadata_k, label=f.path)
    except (OSError, EvaluationError, ValueError) as exc:
        log.warning("HMS discoverybench mode: %s cannot be read (%s); the judge is shown the release's "
                    "description", path, exc)
        return None
    return datasets_from_metadata(meta.metadata)


# ------------------------------------------------------------------------------------ reading answers as upstream


def read_like_get_response(text: str) -> Any:
    """The JSON value of an answer as upstream's ``get_response`` reads it (openai_helpers.py:95-97): blanks
    stripped, then any of the characters ``` ` j s o n ``` stripped from both ends, then ``` ` ``` again.
    Raises :class:`ParseError` where upstream's ``json.loads`` raises (it then asks again)."""
    body = text.strip().strip("`json").strip("`")
    try:
        return json.loads(body)
    except ValueError as exc:
        raise ParseError(f"the answer is not JSON ({exc})") from None


@dataclass(frozen=True)
class VariablesScore:
    f1: float
    precision: float
    recall: float
    size_gold: Any = None
    size_pred: Any = None
    intersection: Any = None
    explanation: str = ""
    sentinel: str = ""  # why upstream's -1 branch was taken


def variables_score(text: str) -> VariablesScore:
    """Upstream's variables score of an answer (new_eval.py:37-68); never raises: what upstream's ``except``
    catches is the -1 branch."""
    answer = text.strip()
    try:
        data = json.loads(answer)
        size_a, size_b, inter = data["sizeA"], data["sizeB"], data["intersection"]
        p = inter / size_b if size_b else 0.0
        r = inter / size_a if size_a else 0.0
        f1 = (2 * p * r) / (p + r) if p > 0.0 and r > 0.0 else 0.0
        explanation = data["explanation"]
    except Exception as exc:  # noqa: BLE001 - upstream's bare except: every failure is the -1 branch
        why = ("the answer is not JSON" if isinstance(exc, json.JSONDecodeError) else
               f"the answer lacks {exc}" if isinstance(exc, KeyError) else f"{type(exc).__name__}: {exc}")
        return VariablesScore(f1=-1.0, precision=-1.0, recall=-1.0, sentinel=why)
    return VariablesScore(f1=float(f1), precision=float(p), recall=float(r), size_gold=size_a, size_pred=size_b,
                          intersection=inter, explanation=str(explanation))


def relationship_score(text: str) -> tuple[float, str | None, str]:
    """Upstream's relationship score (new_eval.py:69-79): (score, level or None, explanation).

    Raises:
        ParseError: where upstream raises (not JSON, not an object, no text ``answer``)."""
    try:
        data = json.loads(text.strip())
    except ValueError as exc:
        raise ParseError(f"the answer is not JSON ({exc}); upstream raises here") from None
    if not isinstance(data, dict) or "answer" not in data:
        raise ParseError("the answer is not a JSON object with an 'answer'; upstream raises here")
    if not isinstance(data["answer"], str):
        raise ParseError(f"'answer' is {type(data['answer']).__name__}, not text; upstream raises here")
    said = data["answer"].strip()
    explanation = str(data.get("explanation", ""))
    for level, score, phrase in (("A", 1.0, "very similar"), ("B", 0.5, "similar but general than HypoA"),
                                 ("C", 0.0, "different")):
        if said.startswith(level) or phrase in said:
            return score, level, explanation
    return -1.0, None, explanation


# ------------------------------------------------------------------------------------ the steps


@dataclass
class _Step:
    """One question of the mode: its template step, the cache tag (so that a question upstream asks twice is
    sent twice), its system prompt and user text, its generation step (sampled or dimensions)."""

    step: str
    tag: str
    system: str
    user: str


def _get(sub: Any, key: str, default: Any = _MISSING, *, where: str) -> Any:
    """``sub[key]`` (or ``sub.get(key, default)``) as upstream does it; where it raises, a judge error."""
    if not isinstance(sub, dict):
        raise JudgeFailed(f"{where} is a {type(sub).__name__}, not an object; upstream raises here "
                          "(new_eval.py:398).")
    if key in sub:
        return sub[key]
    if default is _MISSING:
        raise JudgeFailed(f"{where} has no '{key}'; upstream raises here (new_eval.py:"
                          f"{'408' if key == 'context' else '398'}).")
    return default


def _text(value: Any) -> str:
    """How upstream's f-strings render a JSON value (Python's ``str``)."""
    return value if isinstance(value, str) else str(value)


class _Session:
    """One query's questions, with the bookkeeping of :func:`evaluation.hms.score.score_item`."""

    def __init__(self, judge: HMSJudge, keep: Callable[[str, Answer[Any]], None], log: list[dict[str, Any]]) -> None:
        self.judge, self.keep, self.log = judge, keep, log
        self.last_refused = ""

    def ask(self, s: _Step, parse: Callable[[str], Any], *, tries: int, what: str) -> tuple[Any, str] | None:
        """The parsed answer and its text, or None after ``tries`` answers that did not parse; an endpoint
        failure raises :class:`JudgeFailed`."""
        last = ""
        for _ in range(tries):
            try:
                answer = self.judge.ask("discoverybench", s.step, s.user, parse, system=s.system, tag=s.tag)
            except LLMAnswerError as exc:
                last = exc.result.content
                self.log.append({"step": s.step, "tag": s.tag, "refused": str(exc), "raw": _raw(last)})
                continue
            except LLMCallError as exc:
                raise JudgeFailed(f"The judge could not be asked about {what}: {exc}") from None
            self.keep(f"{s.step} {s.tag}".strip(), answer)
            return answer.value, answer.result.content
        if tries > 1:
            self.log.append({"step": s.step, "tag": s.tag, "gave_up_after": tries, "raw": _raw(last)})
        self.last_refused = last
        return None


def _decompose(sess: _Session, which: str, hypothesis: str, workflow: str,
               datasets: Any) -> tuple[Decomposition, list[Any]]:
    """The decomposition shown, and the sub-hypotheses as the judge gave them (what the scan reads)."""
    user = _DECOMPOSE.format(datasets=quote_json(datasets, limit=DB_LIMIT), hypothesis=_q(hypothesis),
                             workflow=_q(workflow))
    got = sess.ask(_Step("decompose", which, _SYSTEM_SAMPLED, user), read_like_get_response, tries=1,
                   what=f"the {which} decomposition")
    fallback = Decomposition(source="fallback", sub_hypo=[SubHypothesis(text=hypothesis, context="None")],
                             note="The judge's answer was not JSON (or was null); as upstream does "
                                  "(new_eval.py:260-266, 372-373), the whole text is one sub-hypothesis with "
                                  "context None.")
    if got is None or got[0] is None:
        return fallback, [s.model_dump() for s in fallback.sub_hypo]
    value, raw = got
    if not isinstance(value, dict):
        raise JudgeFailed(f"The {which} decomposition is a JSON {type(value).__name__}, not an object; upstream "
                          f"raises here (new_eval.py:268). The judge answered {_raw(raw)!r}.", raw)
    if "sub_hypo" not in value:
        raise JudgeFailed(f"The {which} decomposition has no 'sub_hypo'; upstream raises here (new_eval.py:372). "
                          f"The judge answered {_raw(raw)!r}.", raw)
    subs = value["sub_hypo"]
    if not isinstance(subs, str | list | dict):
        raise JudgeFailed(f"The {which} decomposition's 'sub_hypo' is a {type(subs).__name__}, which has no "
                          f"length; upstream raises here (new_eval.py:372). The judge answered {_raw(raw)!r}.", raw)
    if len(subs) == 0:
        return fallback, [s.model_dump() for s in fallback.sub_hypo]
    items = list(subs)  # a string or an object is iterated as upstream's enumerate does
    shown = [SubHypothesis(text=_text(s.get("text", "")), context=_text(s.get("context", "")),
                           variables=[_text(v) for v in s["variables"]] if isinstance(s.get("variables"), list)
                           else [], relations=_text(s.get("relations", "")))
             if isinstance(s, dict) else SubHypothesis(text=_text(s), context="") for s in items]
    return Decomposition(source="judge", sub_hypo=shown), items


def _context_question(sess: _Session, key: str, g_text: Any, g_ctx: Any, p_text: Any, p_ctx: Any) -> bool:
    user = _CONTEXT.format(gold_hypothesis=_q(_text(g_text)), gold_context=_q(_text(g_ctx)),
                           predicted_hypothesis=_q(_text(p_text)), predicted_context=_q(_text(p_ctx)))
    got = sess.ask(_Step("context", key, _SYSTEM_SAMPLED, user), read_like_get_response, tries=5,
                   what=f"the context of {key}")
    if got is None:
        raise JudgeFailed(f"The judge's answer about the context of {key} was not JSON five times; upstream raises "
                          f"here (new_eval.py:301, openai_helpers.py:109). The last answer was "
                          f"{_raw(sess.last_refused)!r}.", sess.last_refused)
    value, raw = got
    if not isinstance(value, dict):
        raise JudgeFailed(f"The judge's answer about the context of {key} is a JSON {type(value).__name__}, not an "
                          f"object; upstream raises here (new_eval.py:301). The judge answered {_raw(raw)!r}.", raw)
    return bool(value.get("match", False))


def _dimension_user(question: str, datasets: Any, query: str, gold: tuple[str, str], pred: tuple[str, str]) -> str:
    return _DIMENSIONS.format(datasets=quote_json(datasets, limit=DB_LIMIT), query=_q(query), hypo_a=_q(gold[0]),
                              workflow_a=_q(gold[1]), hypo_b=_q(pred[0]), workflow_b=_q(pred[1]),
                              question=question)


def _keep_any(text: str) -> str:
    return text


def score_discoverybench(item: ItemResult, *, gold: tuple[str, str], pred: tuple[str, str], judge: HMSJudge,
                         datasets: Sequence[dict[str, Any]] | Any,
                         keep: Callable[[str, Answer[Any]], None], log: list[dict[str, Any]]) -> None:
    """Fill ``item``'s decompositions, context checks and facets as upstream computes them (the formula is then
    :func:`evaluation.hms.formula.settle`'s). ``keep`` records each answer's provenance, ``log`` the answers that
    were refused (with their text). Raises :class:`JudgeFailed` where upstream raises."""
    sess = _Session(judge, keep, log)
    item.gold, g_raw = _decompose(sess, "gold", gold[0], gold[1], datasets)
    item.predicted, p_raw = _decompose(sess, "predicted", pred[0], pred[1], datasets)
    checks: list[ContextCheck] = []
    covered: set[int] = set()
    matched: list[tuple[int, int]] = []
    try:
        for i, p in enumerate(p_raw):
            for j, g in enumerate(g_raw):
                if j in covered:
                    continue
                key = f"P{i}|G{j}"
                g_text = _get(g, "text", where=f"gold sub-hypothesis {j}")
                g_ctx = _get(g, "context", "", where=f"gold sub-hypothesis {j}")
                p_text = _get(p, "text", where=f"predicted sub-hypothesis {i}")
                p_ctx = _get(p, "context", "", where=f"predicted sub-hypothesis {i}")
                if g_ctx == p_ctx:
                    check = ContextCheck(pred=i, gold=j, match=True, how="identical")
                elif "None" in (g_ctx, p_ctx):
                    check = ContextCheck(pred=i, gold=j, match=False, how="none")
                else:
                    said = _context_question(sess, key, g_text, g_ctx, p_text, p_ctx)
                    check = ContextCheck(pred=i, gold=j, match=said, how="judge")
                checks.append(check)
                if check.match:
                    _get(g, "context", where=f"gold sub-hypothesis {j}")
                    _get(p, "context", where=f"predicted sub-hypothesis {i}")
                    covered.add(j)
                    matched.append((i, j))
                    break
    finally:
        item.contexts = sorted(checks, key=lambda c: (c.pred, c.gold))
    facets: list[PairResult] = []
    for i, j in matched:
        key = f"P{i}|G{j}"
        got = sess.ask(_Step("variables", key, _SYSTEM_DIMENSIONS,
                             _dimension_user(_VARIABLES, datasets, item.question, gold, pred)),
                       _keep_any, tries=1, what=f"the variables of {key}")
        assert got is not None
        v = variables_score(got[1])
        variables = (VariablesFacet(f1=-1.0, precision=-1.0, recall=-1.0, source="sentinel",
                                    explanation=f"Upstream scores this F1 -1 ({v.sentinel}; new_eval.py:63-68). "
                                                f"The judge answered {_raw(got[1])!r}.")
                     if v.sentinel else
                     VariablesFacet(size_gold=_count(v.size_gold), size_pred=_count(v.size_pred),
                                    intersection=_count(v.intersection), precision=v.precision, recall=v.recall,
                                    f1=v.f1, explanation=v.explanation))
        got = sess.ask(_Step("relationship", key, _SYSTEM_DIMENSIONS,
                             _dimension_user(_RELATIONSHIP, datasets, item.question, gold, pred)),
                       _keep_any, tries=1, what=f"the relationship of {key}")
        assert got is not None
        try:
            score, level, why = relationship_score(got[1])
        except ParseError as exc:
            item.facets = facets
            raise JudgeFailed(f"The judge's answer about the relationship of {key} fits no branch of upstream's "
                              f"(new_eval.py:71-72): {exc}. The judge answered {_raw(got[1])!r}.", got[1]) from None
        relationship = (RelationshipFacet(level=level, score=score, explanation=why) if level else
                        RelationshipFacet(level=None, score=-1.0, source="sentinel",
                                          explanation=f"No option recognised in {_raw(got[1])!r}; upstream scores "
                                                      f"it -1 (new_eval.py:79). {why}"))
        facets.append(PairResult(pred=i, gold=j, variables=variables, relationship=relationship))
    item.facets = facets


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
