"""What a programmatic run's outcomes add up to: completion rate, success rate (pass@1), and aggregates per
function label and per task type, each with a 95 % bootstrap interval over tasks.

Definitions (DataSciBench's, evaluation-seeds-reference §2.5, with the quirk noted):

* **CR** of a task in a run = Σ check scores / (2 × checks). The run's CR is the mean over (task, run) pairs.
  (The fork's script divides the sum of task CRs by the number of *functions*; here it is a plain mean over
  tasks and runs, which is what its own definition of CR per task implies.)
* **SR / pass@1**: a task passes in a run when its CR is 1; SR = mean over tasks of the share of runs in which
  it passed.
* **per function / per task type**: the mean of score/2 over every check outcome with that label.

Intervals: a percentile bootstrap that resamples *tasks* (the outcomes of one task are not independent), with
a fixed seed so the numbers are reproducible; None when fewer than two tasks contribute.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from evaluation.programmatic.runner import TaskOutcome

__all__ = ["Estimate", "aggregate", "bootstrap_mean"]

Estimate = dict[str, Any]  # {"point", "ci_low", "ci_high", "n"}


def bootstrap_mean(clusters: Sequence[Sequence[float]], *, n_bootstrap: int = 1000, seed: int = 0) -> Estimate:
    """Mean of every value, with a percentile interval from resampling whole clusters (tasks)."""
    clusters = [list(c) for c in clusters if c]
    values = [v for c in clusters for v in c]
    if not values:
        return {"point": None, "ci_low": None, "ci_high": None, "n": 0}
    point = sum(values) / len(values)
    if len(clusters) < 2:
        return {"point": point, "ci_low": None, "ci_high": None, "n": len(values)}
    rng = random.Random(seed)
    sums = [(sum(c), len(c)) for c in clusters]
    means = []
    for _ in range(n_bootstrap):
        total = count = 0.0
        for _ in range(len(sums)):
            s, n = sums[rng.randrange(len(sums))]
            total += s
            count += n
        means.append(total / count)
    means.sort()
    low = means[int(0.025 * (n_bootstrap - 1))]
    high = means[int(0.975 * (n_bootstrap - 1))]
    return {"point": point, "ci_low": low, "ci_high": high, "n": len(values)}


def aggregate(outcomes: Sequence[TaskOutcome], *, n_bootstrap: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The run's scores from every (task, run) outcome: CR, SR, per function and per task type, with CIs."""
    by_task: dict[str, list[TaskOutcome]] = defaultdict(list)
    for o in outcomes:
        by_task[o.task].append(o)
    cr = bootstrap_mean([[o.completion_rate for o in group if o.completion_rate is not None]
                         for group in by_task.values()], n_bootstrap=n_bootstrap, seed=seed)
    sr = bootstrap_mean([[1.0 if o.passed else 0.0 for o in group] for group in by_task.values()],
                        n_bootstrap=n_bootstrap, seed=seed)
    per: dict[str, dict[str, dict[str, list[float]]]] = {"functions": defaultdict(lambda: defaultdict(list)),
                                                         "task_types": defaultdict(lambda: defaultdict(list))}
    statuses: dict[str, int] = defaultdict(int)
    for o in outcomes:
        for c in o.checks:
            per["functions"][c.function][o.task].append(c.score / 2)
            per["task_types"][c.task_type][o.task].append(c.score / 2)
            statuses[c.status] += 1
    return {
        "completion_rate": cr,
        "success_rate": sr,
        "functions": {k: bootstrap_mean(list(v.values()), n_bootstrap=n_bootstrap, seed=seed)
                      for k, v in sorted(per["functions"].items())},
        "task_types": {k: bootstrap_mean(list(v.values()), n_bootstrap=n_bootstrap, seed=seed)
                       for k, v in sorted(per["task_types"].items())},
        "statuses": dict(sorted(statuses.items())),
        "tasks": len(by_task),
        "runs": len({o.run for o in outcomes}),
        "checks": sum(len(o.checks) for o in outcomes),
        "errors": sum(1 for o in outcomes for c in o.checks if c.score == 0),
        "n_bootstrap": n_bootstrap,
        "seed": seed,
    }
