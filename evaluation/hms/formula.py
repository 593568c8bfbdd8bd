"""The HMS formula (evaluation-seeds-reference §1.4 step 4) over judged facets, and experts' facet overrides.

Given the decompositions, the context checks and the facets of each pair, :func:`settle` does the rest with no
LLM: greedy context matching (each predicted sub-hypothesis, in order, takes the first unmatched gold
sub-hypothesis whose context matches), per matched pair ``accuracy = context (1) × variables F1 × relationship``,
``recall_context = matched gold / gold``, ``mean_accuracy = Σ accuracy / predicted`` (DiscoveryBench divides by the
number of *predicted* sub-hypotheses), and ``HMS = recall_context × mean_accuracy``.

The same function settles a freshly judged query and one an expert corrected (:func:`apply_overrides`), so the
scores always follow from the facets shown. A facet the formula needs but nobody judged makes the query a
*judge error* with a sentence saying which; it never becomes a number.
"""

from __future__ import annotations

from collections.abc import Iterable

from evaluation.hms.records import (
    LEVEL_SCORES,
    ContextCheck,
    Decomposition,
    FacetOverride,
    HMSMode,
    ItemResult,
    PairResult,
    RelationshipFacet,
    SubHypothesis,
    VariablesFacet,
    pair_key,
)

__all__ = ["OverrideRefused", "apply_overrides", "check_override", "f1_from_counts", "settle",
           "variables_from_counts"]


class OverrideRefused(ValueError):
    """An expert's facet judgement that does not fit the query (a pair it lacks, a value out of range)."""


def f1_from_counts(size_gold: int, size_pred: int, intersection: int) -> tuple[float | None, float | None, float]:
    """Precision (intersection / predicted), recall (intersection / gold) and F1; both empty counts as agreement."""
    if size_gold == 0 and size_pred == 0:
        return 1.0, 1.0, 1.0
    p = intersection / size_pred if size_pred else 0.0
    r = intersection / size_gold if size_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r > 0 else 0.0)


def variables_from_counts(size_gold: int, size_pred: int, intersection: int, *, explanation: str = "",
                          source: str = "judge") -> VariablesFacet:
    p, r, f = f1_from_counts(size_gold, size_pred, intersection)
    return VariablesFacet(size_gold=size_gold, size_pred=size_pred, intersection=intersection, precision=p,
                          recall=r, f1=f, explanation=explanation, source=source)  # type: ignore[arg-type]


def _subs(d: Decomposition | None) -> list[SubHypothesis]:
    return d.sub_hypo if d is not None else []


def settle(item: ItemResult, mode: HMSMode) -> ItemResult:
    """Match contexts greedily and compute the query's scores from its facets (in place; returns ``item``).

    An item whose judge failed before any facet existed stays a judge error with its message. ``discoverybench``
    lets the sentinels (-1) flow into the products as upstream does; ``default`` never has them."""
    if item.status in ("unanswered", "budget_exhausted"):
        return item
    gold, pred = _subs(item.gold), _subs(item.predicted)
    if not gold or not pred:
        item.status = "judge_error"
        item.message = item.message or "The hypotheses could not be decomposed."
        item.matched, item.recall_context, item.mean_accuracy, item.hms = [], None, None, None
        return item
    checks = {(c.pred, c.gold): c for c in item.contexts}
    facets = {(f.pred, f.gold): f for f in item.facets}
    taken: set[int] = set()
    matched: list[PairResult] = []
    missing: list[str] = []
    for i in range(len(pred)):
        for j in range(len(gold)):
            if j in taken:
                continue
            check = checks.get((i, j))
            if check is None or check.match is None:
                missing.append(f"the context of {pair_key(i, j)}")
                break  # the greedy scan cannot go past an undecided pair
            if check.match:
                taken.add(j)
                judged = facets.get((i, j)) or PairResult(pred=i, gold=j)
                matched.append(judged.model_copy(deep=True))
                break
    for m in matched:
        if m.variables is None:
            missing.append(f"the variables of {m.key}")
        if m.relationship is None:
            missing.append(f"the relationship of {m.key}")
    if missing:
        item.status, item.matched = "judge_error", matched
        item.recall_context = item.mean_accuracy = item.hms = None
        first = item.message if item.message and not item.message.startswith("Not judged:") else ""
        item.message = first or ("Not judged: " + ", ".join(missing) + ". An evaluator can judge "
                                 + ("them" if len(missing) > 1 else "it") + " on the run's page.")
        return item
    for m in matched:
        assert m.variables is not None and m.relationship is not None
        m.accuracy = 1.0 * m.variables.f1 * m.relationship.score
    item.matched = matched
    item.recall_context = len(matched) / len(gold)
    item.mean_accuracy = sum(m.accuracy or 0.0 for m in matched) / len(pred)
    item.hms = item.recall_context * item.mean_accuracy
    if mode == "default":  # no sentinel can reach here; keep the promise explicit
        item.hms = min(max(item.hms, 0.0), 1.0)
    item.status, item.message = "scored", ""
    return item


def _parse_pair(pair: str, item: ItemResult) -> tuple[int, int]:
    p, _, g = pair.partition("|")
    if not (p.startswith("P") and g.startswith("G") and p[1:].isdigit() and g[1:].isdigit()):
        raise OverrideRefused(f"'{pair}' is not a pair of sub-hypotheses like P0|G0.")
    i, j = int(p[1:]), int(g[1:])
    n_pred, n_gold = len(_subs(item.predicted)) or 1, len(_subs(item.gold)) or 1
    if i >= n_pred or j >= n_gold:
        raise OverrideRefused(f"query {item.task} has {n_pred} predicted and {n_gold} gold sub-hypotheses; "
                              f"there is no pair {pair}.")
    return i, j


def check_override(item: ItemResult, o: FacetOverride) -> str:
    """Raises :class:`OverrideRefused` when ``o`` does not fit ``item``; returns a description of the change."""
    if item.status == "unanswered":
        raise OverrideRefused(f"query {item.task} was not answered; there is nothing to judge.")
    if item.status == "budget_exhausted":
        raise OverrideRefused(f"query {item.task} was not scored (the run's time budget ran out); re-score the run.")
    _parse_pair(o.pair, item)
    v = o.value
    if o.facet == "context":
        if not isinstance(v.get("match"), bool):
            raise OverrideRefused("A context judgement is match yes or no.")
        return f"context of {o.pair}: {'match' if v['match'] else 'no match'}"
    if o.facet == "variables":
        try:
            a, b, n = (int(v[k]) for k in ("size_gold", "size_pred", "intersection"))
        except (KeyError, TypeError, ValueError):
            raise OverrideRefused("A variables judgement gives the gold count, the predicted count and how many "
                                  "of them match (whole numbers).") from None
        if min(a, b, n) < 0 or n > min(a, b):
            raise OverrideRefused(f"{n} matching variables cannot exceed the gold count ({a}) or the predicted "
                                  f"count ({b}), and no count can be negative.")
        return f"variables of {o.pair}: {n} of {a} gold, {b} predicted"
    if v.get("level") not in LEVEL_SCORES:
        raise OverrideRefused("A relationship judgement is A (very similar, 1), B (similar but more general than "
                              "the gold, 0.5) or C (different, 0).")
    return f"relationship of {o.pair}: {v['level']}"


def apply_overrides(item: ItemResult, overrides: Iterable[FacetOverride], mode: HMSMode) -> ItemResult:
    """A copy of ``item`` with the experts' facet judgements in place of the judge's, settled again.

    A query whose hypotheses could not be decomposed is judged as one gold and one predicted hypothesis
    (pair ``P0|G0``) once an expert gives a judgement."""
    mine = [o for o in overrides if o.task == item.task]
    out = item.model_copy(deep=True)
    if not mine:
        return out
    if out.gold is None:
        out.gold = Decomposition(source="expert", sub_hypo=[SubHypothesis(text=out.gold_hypothesis)])
    if out.predicted is None:
        out.predicted = Decomposition(source="expert", sub_hypo=[SubHypothesis(text=out.predicted_hypothesis)])
    checks = {(c.pred, c.gold): c for c in out.contexts}
    facets = {(f.pred, f.gold): f for f in out.facets}
    for o in mine:
        i, j = _parse_pair(o.pair, out)
        if o.facet == "context":
            c = checks.get((i, j))
            if c is None:
                c = checks[(i, j)] = ContextCheck(pred=i, gold=j, match=None, how="expert")
            c.original = c.match if c.how != "expert" else c.original
            c.match, c.how, c.explanation = bool(o.value["match"]), "expert", o.reason
            continue
        f = facets.get((i, j))
        if f is None:
            f = facets[(i, j)] = PairResult(pred=i, gold=j)
        if o.facet == "variables":
            old = f.variables.f1 if f.variables is not None else None
            f.variables = variables_from_counts(int(o.value["size_gold"]), int(o.value["size_pred"]),
                                                int(o.value["intersection"]), explanation=o.reason, source="expert")
            f.variables.original_f1 = old
        else:
            old = f.relationship.score if f.relationship is not None else None
            f.relationship = RelationshipFacet(level=o.value["level"], score=LEVEL_SCORES[o.value["level"]],
                                               explanation=o.reason, source="expert", original_score=old)
        out.overrides.append(o.model_dump(mode="json"))
    out.overrides.extend(o.model_dump(mode="json") for o in mine if o.facet == "context")
    out.contexts = sorted(checks.values(), key=lambda c: (c.pred, c.gold))
    out.facets = sorted(facets.values(), key=lambda f: (f.pred, f.gold))
    if out.status == "judge_error":  # settled again: what is still missing is said anew
        out.status, out.message = "scored", ""
    return settle(out, mode)
