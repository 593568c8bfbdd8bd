"""A reproducibility run's figures, with evaluators' overrides applied: the four outcomes counted apart, the
reproducibility rate and the accuracy with bootstrap CIs, overall and per dataset.

The rate is reproducible / (reproducible + not reproducible): the items where the inspector judged the analysis.
"Original code does not run" and "inspector failed" are counted beside it, never folded into it as numbers
(AIRepr's mean over 1 / 0 / -1 is what this replaces, evaluation-seeds-reference §3.5). Accuracy counts only the
items the judge graded; "not judged" (the judge failed) is counted beside it, never as correct.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evaluation.metrics import proportion_estimate
from evaluation.reproducibility.models import ItemResult, Outcome, ReproResult

__all__ = ["N_BOOTSTRAP", "effective_items", "figures", "scores_of"]

N_BOOTSTRAP = 1000


def effective_items(result: ReproResult, overrides: Mapping[str, Outcome]) -> list[ItemResult]:
    """The items with each overridden outcome replaced (the result file itself is never changed)."""
    return [i.model_copy(update={"outcome": overrides[i.key]}) if i.key in overrides else i for i in result.items]


def figures(items: Sequence[ItemResult], *, n_bootstrap: int = N_BOOTSTRAP, seed: int = 0) -> dict[str, Any]:
    """Counts per outcome, the rate over judged items and the accuracy over graded items, with 95 % CIs."""
    counts = {o.value: sum(1 for i in items if i.outcome == o) for o in Outcome}
    judged = [i.outcome == Outcome.REPRODUCIBLE for i in items
              if i.outcome in (Outcome.REPRODUCIBLE, Outcome.NOT_REPRODUCIBLE)]
    rate = proportion_estimate(judged, n_bootstrap=n_bootstrap, seed=seed)
    graded = [i.accuracy.correct for i in items if i.accuracy is not None and i.accuracy.correct is not None]
    acc = proportion_estimate([bool(c) for c in graded], n_bootstrap=n_bootstrap, seed=seed)
    return {"items": len(items), "counts": counts, "judged": len(judged),
            "rate": rate.model_dump(), "accuracy": {**acc.model_dump(), "graded": len(graded),
                                                    "correct": sum(1 for c in graded if c),
                                                    "not_judged": sum(1 for i in items if i.accuracy is not None
                                                                      and i.accuracy.correct is None)}}


def scores_of(result: ReproResult, overrides: Mapping[str, Outcome] | None = None, *,
              n_bootstrap: int = N_BOOTSTRAP, seed: int = 0) -> dict[str, Any]:
    """What a run stores (``scores`` / ``scores_effective``): the figures overall and per dataset."""
    items = effective_items(result, overrides or {})
    datasets = sorted({i.dataset for i in items if i.dataset})
    return {"reproducibility": {
        **figures(items, n_bootstrap=n_bootstrap, seed=seed), "overrides": len(overrides or {}),
        "datasets": {d: figures([i for i in items if i.dataset == d], n_bootstrap=n_bootstrap, seed=seed)
                     for d in datasets}}}
