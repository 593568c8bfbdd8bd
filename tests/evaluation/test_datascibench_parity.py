"""Issue 28: the ``datascibench`` scoring mode follows upstream's rule, case by case, beside the stricter default.

Every row of the table says what upstream's code does with a check's result and where (deeppavlov/DataSciBench at
commit 317fc1f61eee7aa417b08ab03227c9999a41c068, read line by line; no upstream code is copied here):

* ``src/utils.py:16``: checks are keyed by ``metric`` (a later one replaces an earlier one);
* ``src/utils.py:21``: the code runs as ``exec(code, globals(), local_vars)``: separate globals (those of
  ``src/utils.py``, which imported ``os``, ``sys`` and ``yaml``) and locals;
* ``src/utils.py:25-28``: the function is the first callable of ``local_vars``; none gives ``None``;
* ``src/evaluator/generic_evaluator.py`` ``GenericRule``: ``eval(rule)`` applied to the result;
* ``src/schemas/dag.py:74``: the code runs (and the rule is evaluated) while the checks are built, which
  ``experiments/evaluate.py:173`` does outside its ``try``: an exception there stops the whole script;
* ``src/schemas/dag.py:94-95``: an ``int`` result must be 0 or 1 (``assert``), other types are kept (99-100);
* ``experiments/evaluate.py:193-207``: a ``float`` scores 2 from 3 on, else 1 (then ``int()`` of it, which
  fails for NaN and infinity after the score was appended, breaking the script's final assertion);
* ``experiments/evaluate.py:208-221``: anything else scores 2 when ``bool()`` of it is true, else 1;
* ``experiments/evaluate.py:223-230``: an exception scores 0;
* ``experiments/evaluate.py:151,157-161``: the ground truth is ``normpath(join(<task>/gt/, ground_truth))``, or
  ``<task>/gt/`` with its slash; ``evaluate.py:164``: checks run in the run's folder inside ``data/<task>/``.

Upstream "crash" rows are where upstream's script stops for every task; forkpaths scores the check 0 instead
(the one intended difference). The ``default`` column is forkpaths's stricter default on the same check.
"""

from __future__ import annotations

import pytest

from evaluation.programmatic.runner import CheckLimits, by_metric, run_checks
from exports.programmatic_part import ProgrammaticCheck, ProgrammaticTaskRelease

LIMITS = CheckLimits(check_timeout_s=10.0)
INPUTS = {"input.csv": b"a,b\n1,2\n", "data/part_1.xlsx": b"not really excel"}
GT = {"answer.csv": b"a\n1\n"}

# (case, code, rule, ground_truth, upstream score, default score, upstream's line that decides it)
CASES = [
    ("true", "def f(gt):\n    return True", None, "", 2, 2, "evaluate.py:208-216"),
    ("false", "def f(gt):\n    return False", None, "", 1, 1, "evaluate.py:217-221"),
    ("numpy bool", "import numpy\ndef f(gt):\n    import numpy as np\n    return np.bool_(True)", None, "", 2, 2,
     "dag.py:99-100, evaluate.py:209"),
    ("int 1", "def f(gt):\n    return 1", None, "", 2, 0, "dag.py:94-96, evaluate.py:209"),
    ("int 0", "def f(gt):\n    return 0", None, "", 1, 0, "dag.py:94-96, evaluate.py:217"),
    ("int 5", "def f(gt):\n    return 5", None, "", 0, 0, "dag.py:95 assert, evaluate.py:223-230"),
    ("int -1", "def f(gt):\n    return -1", None, "", 0, 0, "dag.py:95 assert"),
    ("float 4.0", "def f(gt):\n    return 4.0", None, "", 2, 0, "evaluate.py:193-201"),
    ("float 3.0", "def f(gt):\n    return 3.0", None, "", 2, 0, "evaluate.py:196 (>= 3)"),
    ("float 2.99", "def f(gt):\n    return 2.99", None, "", 1, 0, "evaluate.py:202-207"),
    ("float 0.5", "def f(gt):\n    return 0.5", None, "", 1, 0, "evaluate.py:202-207"),
    ("numpy float64 3.5", "def f(gt):\n    import numpy as np\n    return np.float64(3.5)", None, "", 2, 0,
     "evaluate.py:193 (a float subclass)"),
    ("numpy float32 0.5", "def f(gt):\n    import numpy as np\n    return np.float32(0.5)", None, "", 2, 0,
     "evaluate.py:209 (not a float: bool(0.5))"),
    ("numpy int64 7", "def f(gt):\n    import numpy as np\n    return np.int64(7)", None, "", 2, 0,
     "dag.py:99 (not an int), evaluate.py:209"),
    ("string 'False'", "def f(gt):\n    return 'False'", None, "", 2, 0, "evaluate.py:209 (bool of text)"),
    ("empty string", "def f(gt):\n    return ''", None, "", 1, 0, "evaluate.py:209"),
    ("None", "def f(gt):\n    return None", None, "", 1, 0, "dag.py:99-100, evaluate.py:209"),
    ("empty list", "def f(gt):\n    return []", None, "", 1, 0, "evaluate.py:209"),
    ("list [0]", "def f(gt):\n    return [0]", None, "", 2, 0, "evaluate.py:209"),
    ("series", "def f(gt):\n    import pandas as pd\n    return pd.Series([True, False])", None, "", 0, 0,
     "evaluate.py:209 raises in the try, 223-230"),
    ("raises", "def f(gt):\n    raise ValueError('no output')", None, "", 0, 0, "evaluate.py:223-230"),
    ("rule true", "def f(gt):\n    return 0.9", "lambda x: x > 0.8", "", 2, 2, "generic_evaluator.py GenericRule"),
    ("rule raising", "def f(gt):\n    return None", "lambda x: x > 0.8", "", 0, 0,
     "generic_evaluator.py GenericRule, evaluate.py:223-230"),
    ("first function", "def helper(gt):\n    return False\n\ndef check(gt):\n    return True", None, "", 1, 2,
     "utils.py:25-27 (helper is first)"),
    ("first callable is an import", "from math import sqrt\n\ndef check(gt):\n    return True", None, "", 0, 2,
     "utils.py:25-27 (sqrt(path) raises)"),
    ("top-level import unseen", "import json\n\ndef f(gt):\n    return json.dumps(1) == '1'", None, "", 0, 2,
     "utils.py:21 (separate globals: NameError)"),
    ("os from upstream's globals", "def f(gt):\n    return os.path.isdir(gt)", None, "", 2, 0,
     "utils.py:1,21 (utils.py imports os)"),
    ("no callable", "x = 1", None, "", 0, 0, "utils.py:28, schemas.py TestFunction (None(gt) raises)"),
    ("NaN", "def f(gt):\n    return float('nan')", None, "", 0, 0, "evaluate.py:196-206 (int(nan) raises; crash)"),
    ("code raising while built", "raise RuntimeError('top level')\ndef f(gt):\n    return True", None, "", 0, 0,
     "dag.py:74, evaluate.py:173 (outside the try; crash)"),
    ("rule that does not parse", "def f(gt):\n    return True", "lambda x:", "", 0, 0,
     "generic_evaluator.py eval(rule) at dag.py:78, evaluate.py:173 (crash)"),
    ("gt folder with its slash", "def f(gt):\n    return gt.endswith('/gt/')", None, "", 2, 2,
     "evaluate.py:151,157"),
    ("gt file joined", "def f(gt):\n    return gt.endswith('/gt/answer.csv') and open(gt).read() == 'a\\n1\\n'",
     None, "answer.csv", 2, 2, "evaluate.py:159-161"),
    ("inputs beside the run folder",
     "def f(gt):\n    import glob\n    return open('../input.csv').read().startswith('a,b') and "
     "glob.glob('../data/*.xlsx') == ['../data/part_1.xlsx'] and open('out.csv').read() == 'x\\n'",
     None, "", 2, 2, "evaluate.py:164 (cwd data/<task>/<run>/)"),
]


def _checks() -> list[ProgrammaticCheck]:
    return [ProgrammaticCheck(id=f"k{i}", task_type="data cleaning & preprocessing", function="F", metric=name,
                              code=code, rule=rule, ground_truth=gt)
            for i, (name, code, rule, gt, *_rest) in enumerate(CASES)]


@pytest.mark.usefixtures("os_sandbox")
@pytest.mark.parametrize("mode", ["datascibench", "default"])
def test_each_case_scores_as_upstream_in_datascibench_mode_and_strictly_by_default(mode: str) -> None:
    task = ProgrammaticTaskRelease(key="t", prompt="p", checks=_checks())
    outcome = run_checks(task, {"out.csv": b"x\n"}, gt=GT, inputs=INPUTS, mode=mode, limits=LIMITS)
    got = {c.metric: (c.score, c.sentence) for c in outcome.checks}
    column = 4 if mode == "datascibench" else 5
    wrong = [f"{case[0]} ({case[6]}): expected {case[column]}, got {got[case[0]]}" for case in CASES
             if got[case[0]][0] != case[column]]
    assert not wrong, "\n".join(wrong)
    if mode == "datascibench":
        sentences = {c.metric: c.sentence for c in outcome.checks}
        assert "DataSciBench's rule: a float of 3 or more passes" in sentences["float 3.0"]
        assert "bool() of the result is True" in sentences["string 'False'"]
        assert "Upstream's scoring would stop here" in sentences["NaN"]
        assert "Upstream's scoring would stop here" in sentences["code raising while built"]
        assert "AssertionError" in sentences["int 5"]


def _dup(cid: str, metric: str, value: bool) -> ProgrammaticCheck:
    return ProgrammaticCheck(id=cid, task_type="data visualization", function="F", metric=metric,
                             code=f"def f(gt):\n    return {value}")


def test_checks_are_keyed_by_metric_the_later_replacing_the_earlier_in_its_place() -> None:
    """utils.py:16: ``{item["metric"]: item for item in data_list}``."""
    kept, replaced = by_metric([_dup("a", "m", False), _dup("b", "n", False), _dup("c", "m", True),
                                _dup("d", "m", True)])
    assert [c.id for c in kept] == ["d", "b"] and replaced == {"d": ["c", "a"]}


@pytest.mark.usefixtures("os_sandbox")
def test_a_duplicate_metric_counts_once_in_datascibench_mode_and_twice_by_default() -> None:
    task = ProgrammaticTaskRelease(key="t", prompt="p", checks=[_dup("a", "m", False), _dup("b", "m", True)])
    upstream = run_checks(task, {"out.csv": b""}, mode="datascibench", limits=LIMITS)
    assert [(c.check_id, c.score) for c in upstream.checks] == [("b", 2)] and upstream.completion_rate == 1.0
    assert "replaces check a with the same metric" in upstream.checks[0].detail
    default = run_checks(task, {"out.csv": b""}, limits=LIMITS)
    assert [(c.check_id, c.score) for c in default.checks] == [("a", 1), ("b", 2)]
    assert default.completion_rate == 0.75
