"""Scoring one query: the decompositions, the context checks and the facets from the ``hms`` judge, then the
formula (:func:`evaluation.hms.formula.settle`).

``discoverybench`` mode is upstream's evaluator step by step, prompt by prompt and request by request:
:mod:`evaluation.hms.discoverybench` (its docstring lists every remaining difference, with the reasons).

``default`` mode: the gold's curated decomposition and the answer's own context / variables / relationship are
used when given (no call); otherwise one decomposition call each. Every context pair that is not decided by a rule
is asked in one call, the variables of every matched pair in one call (the judge maps predicted to gold
variables one to one; precision, recall and F1 are counted from the map) and their relationships in one call:
at most five calls per query, temperature 0 with a seed. Any answer that does not parse makes the query a judge
error with the reason, never a number.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from evaluation.hms.discoverybench import JudgeFailed, score_discoverybench
from evaluation.hms.formula import settle, variables_from_counts
from evaluation.hms.judge import HMSJudge
from evaluation.hms.records import (
    LEVEL_SCORES,
    ContextCheck,
    Decomposition,
    HMSMode,
    ItemResult,
    PairResult,
    RelationshipFacet,
    SubHypothesis,
    pair_key,
)
from evaluation.llm import Answer, LLMAnswerError, LLMCallError

__all__ = ["GoldHypothesis", "Prediction", "score_item"]

T = TypeVar("T")
_NONE = {"", "none", "n/a", "na", "null"}


@dataclass(frozen=True)
class GoldHypothesis:
    hypothesis: str
    workflow: str = ""
    context: str | None = None
    variables: list[str] | None = None
    relationship: str | None = None


@dataclass(frozen=True)
class Prediction:
    hypothesis: str
    workflow: str = ""
    context: str | None = None
    variables: list[str] | None = None
    relationship: str | None = None


@dataclass
class _Calls:
    llm: list[dict[str, Any]] = field(default_factory=list)

    def keep(self, step: str, answer: Answer[Any]) -> None:
        r = answer.result
        self.llm.append({"step": step, "template": r.template, "cache_key": r.cache_key, "cached": r.cached,
                         "model": r.model, "base_url": r.base_url, "parameters": r.parameters,
                         "attempts": r.attempts})


class _JudgeFailed(Exception):
    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


def _ask(step: str, what: str, call: Callable[[], Answer[T]], calls: _Calls, retries: int = 0) -> Answer[T]:
    """One judge question; ``retries`` more tries when the answer does not parse. A failure is a sentence."""
    for attempt in range(retries + 1):
        try:
            answer = call()
        except LLMAnswerError as exc:
            if attempt < retries:
                continue
            raise _JudgeFailed(f"The judge's answer about {what} could not be read ({exc}); "
                               f"answer begins {exc.result.content[:80]!r}.") from None
        except LLMCallError as exc:
            raise _JudgeFailed(f"The judge could not be asked about {what}: {exc}") from None
        calls.keep(step, answer)
        return answer
    raise AssertionError("unreachable")


def _given(h: GoldHypothesis | Prediction) -> Decomposition | None:
    if h.context and h.context.strip() and h.variables is not None and h.relationship and h.relationship.strip():
        return Decomposition(source="given", sub_hypo=[SubHypothesis(
            text=h.hypothesis, context=h.context.strip(), variables=[v for v in h.variables if v.strip()],
            relations=h.relationship.strip())])
    return None


def _is_none(text: str, mode: HMSMode) -> bool:
    return text == "None" if mode == "discoverybench" else text.strip().lower() in _NONE


def _same(a: str, b: str, mode: HMSMode) -> bool:
    return a == b if mode == "discoverybench" else " ".join(a.lower().split()) == " ".join(b.lower().split())


def score_item(item: ItemResult, gold: GoldHypothesis, pred: Prediction, *, judge: HMSJudge, mode: HMSMode,
               datasets: Any) -> ItemResult:
    """Judge ``pred`` against ``gold`` for the query of ``item`` (its task fields filled) and settle its score."""
    start, calls0, hits0 = time.perf_counter(), judge.calls, judge.cache_hits
    calls = _Calls()
    item.gold_hypothesis, item.gold_workflow = gold.hypothesis, gold.workflow
    item.predicted_hypothesis, item.predicted_workflow = pred.hypothesis, pred.workflow
    try:
        if mode == "discoverybench":
            score_discoverybench(item, gold=(gold.hypothesis, gold.workflow), pred=(pred.hypothesis, pred.workflow),
                                 judge=judge, datasets=datasets, keep=calls.keep, log=calls.llm)
        else:
            _default(item, gold, pred, judge, datasets, calls)
        item.status = "scored"
        settle(item, mode)
    except (_JudgeFailed, JudgeFailed) as exc:
        item.status, item.message = "judge_error", exc.sentence
        item.matched, item.recall_context, item.mean_accuracy, item.hms = [], None, None, None
    item.llm = calls.llm
    item.calls, item.cache_hits = judge.calls - calls0, judge.cache_hits - hits0
    item.seconds = round(time.perf_counter() - start, 4)
    return item


def _context_checks(item: ItemResult, g_subs: list[SubHypothesis], p_subs: list[SubHypothesis], mode: HMSMode,
                    judge: HMSJudge, datasets: Any, calls: _Calls) -> dict[tuple[int, int], ContextCheck]:
    """The context check of every (predicted, gold) pair, kept on ``item.contexts``: identical contexts match and
    "None" never matches with no call; every other pair is asked in ONE call. When that call fails the undecided
    pairs are kept as judge errors and :class:`_JudgeFailed` propagates."""
    checks: dict[tuple[int, int], ContextCheck] = {}
    ask: dict[str, tuple[str, str]] = {}
    for i, p in enumerate(p_subs):
        for j, g in enumerate(g_subs):
            if _same(p.context, g.context, mode):
                checks[(i, j)] = ContextCheck(pred=i, gold=j, match=True, how="identical")
            elif _is_none(p.context, mode) or _is_none(g.context, mode):
                checks[(i, j)] = ContextCheck(pred=i, gold=j, match=False, how="none")
            else:
                ask[pair_key(i, j)] = (g.context, p.context)
    if ask:
        try:
            ans = _ask("context", "the contexts", lambda: judge.contexts_many(
                datasets=datasets, query=item.question, pairs=ask), calls)
        except _JudgeFailed:
            for k in ask:
                i, j = (int(x[1:]) for x in k.split("|"))
                checks[(i, j)] = ContextCheck(pred=i, gold=j, match=None, how="judge_error")
            item.contexts = sorted(checks.values(), key=lambda c: (c.pred, c.gold))
            raise
        for k, (match, why) in ans.value.items():
            i, j = (int(x[1:]) for x in k.split("|"))
            checks[(i, j)] = ContextCheck(pred=i, gold=j, match=match, how="judge", explanation=why)
    item.contexts = sorted(checks.values(), key=lambda c: (c.pred, c.gold))
    return checks


_Decompose = Callable[[str, GoldHypothesis | Prediction, HMSJudge, Any, _Calls], Decomposition]


def _decompose_and_match(
    item: ItemResult, gold: GoldHypothesis, pred: Prediction, judge: HMSJudge, datasets: Any, calls: _Calls,
    mode: HMSMode, decompose: _Decompose,
) -> tuple[list[SubHypothesis], list[SubHypothesis], list[tuple[int, int]]]:
    """Decompose both hypotheses (``decompose``: the mode's way), check every pair's context, and return the gold
    and predicted sub-hypotheses with the (predicted, gold) pairs upstream's greedy scan takes: each predicted
    sub-hypothesis takes the first unmatched gold sub-hypothesis whose context matches
    (:func:`~evaluation.hms.formula.settle` recomputes the same scan from the checks kept on ``item``)."""
    item.gold = decompose("gold", gold, judge, datasets, calls)
    item.predicted = decompose("predicted", pred, judge, datasets, calls)
    g_subs, p_subs = item.gold.sub_hypo, item.predicted.sub_hypo
    checks = _context_checks(item, g_subs, p_subs, mode, judge, datasets, calls)
    taken: set[int] = set()
    matched: list[tuple[int, int]] = []
    for i in range(len(p_subs)):
        for j in range(len(g_subs)):
            if j not in taken and checks[(i, j)].match:
                taken.add(j)
                matched.append((i, j))
                break
    return g_subs, p_subs, matched


# ------------------------------------------------------------------------------------ default mode


def _decompose_default(which: str, h: GoldHypothesis | Prediction, judge: HMSJudge, datasets: Any,
                       calls: _Calls) -> Decomposition:
    given = _given(h)
    if given is not None:
        return given
    answer = _ask(f"decompose {which}", f"the {which} decomposition",
                  lambda: judge.decompose(datasets=datasets, hypothesis=h.hypothesis, workflow=h.workflow),
                  calls)
    return Decomposition(source="judge", sub_hypo=answer.value)


def _default(item: ItemResult, gold: GoldHypothesis, pred: Prediction, judge: HMSJudge, datasets: Any,
             calls: _Calls) -> None:
    g_subs, p_subs, matched = _decompose_and_match(item, gold, pred, judge, datasets, calls, "default",
                                                   _decompose_default)
    facets = {(i, j): PairResult(pred=i, gold=j) for i, j in matched}
    item.facets = list(facets.values())
    if not matched:
        return
    var_ask: dict[str, tuple[list[str], list[str]]] = {}
    for i, j in matched:
        gv, pv = g_subs[j].variables, p_subs[i].variables
        if not gv or not pv:  # nothing to pair: counted by rule
            facets[(i, j)].variables = variables_from_counts(len(gv), len(pv), 0, source="rule", explanation=(
                "Neither names a variable." if not gv and not pv else "One side names no variable."))
        else:
            var_ask[pair_key(i, j)] = (gv, pv)
    if var_ask:
        v = _ask("variables", "the variables", lambda: judge.variables_many(datasets=datasets, pairs=var_ask), calls)
        for k, (inter, why) in v.value.items():
            i, j = (int(x[1:]) for x in k.split("|"))
            gv, pv = var_ask[k]
            facets[(i, j)].variables = variables_from_counts(len(gv), len(pv), inter, explanation=why)
    rel_ask = {pair_key(i, j): (g_subs[j], p_subs[i]) for i, j in matched}
    r = _ask("relationship", "the relationships",
             lambda: judge.relationships_many(datasets=datasets, pairs=rel_ask), calls)
    for k, (level, why) in r.value.items():
        i, j = (int(x[1:]) for x in k.split("|"))
        facets[(i, j)].relationship = RelationshipFacet(level=level, score=LEVEL_SCORES[level], explanation=why)
