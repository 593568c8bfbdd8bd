"""Issue 26 points 1 and 9: the expression facet's answer code never shares a process with the expression or
its values, and the release's expressions evaluate with the builtins DiscoveryBench's expressions use.

Before, the job evaluated the gold and then forked the answer's child from inside that frame: code that walked
``sys._getframe()`` (or ``gc``) to ``gold`` or ``payload['expr']`` got "passed, agreement 1.0".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from evaluation.hms.expression import GOLD_JOB, expression_facet
from evaluation.sandbox import SandboxLimits, run_job

pytestmark = pytest.mark.usefixtures("os_sandbox")

SHARED = Path(__file__).resolve().parents[3] / "shared" / "discoverybench"
EXPR = "df['a'] * 2 + df['b']"
LIMITS = SandboxLimits(timeout_s=20, memory_mb=512)

# Looks for the gold or the expression wherever the measuring side might have left them: the frames below
# the code (f_locals 'gold', 'expr', the job's payload) and every object the garbage collector knows.
WALK = """
import sys, gc
found = None
f = sys._getframe()
while f is not None and found is None:
    for k, v in list(f.f_locals.items()):
        if k in ('gold', 'gold_obj') and v is not None:
            found = v
        elif k in ('expr', 'payload', 'ctx', 'spec'):
            if isinstance(v, str):
                e = v
            elif isinstance(v, dict):
                e = v.get('expr') or (v.get('payload') or {}).get('expr')
            else:
                e = getattr(v, 'payload', {}).get('expr')
            if isinstance(e, str):
                found = eval(e, {'__builtins__': __builtins__}, {'df': df, 'np': np, 'pd': pd})
    f = f.f_back
if found is None:
    for o in gc.get_objects():
        if isinstance(o, dict) and isinstance(o.get('expr'), str):
            found = eval(o['expr'], {'__builtins__': __builtins__}, {'df': df, 'np': np, 'pd': pd})
            break
hypothesis_values = found if found is not None else df['a'] * 0 + 12345.0
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("expr") / "data.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": [1.0, 0.0, 1.0, 0.0]}).to_csv(path, index=False)
    return path


def test_honest_answers_pass_and_fail_on_what_they_compute(data: Path) -> None:
    good = expression_facet(EXPR, "hypothesis_values = df['a'] * 2 + df['b']", data_path=data, limits=LIMITS)
    assert (good.status, good.agreement, good.rows) == ("passed", 1.0, 4)
    half = expression_facet(EXPR, "hypothesis_values = df['a'] * 2", data_path=data, limits=LIMITS)
    assert half.status == "failed" and half.agreement == pytest.approx(0.5)
    short = expression_facet(EXPR, "hypothesis_values = [1.0]", data_path=data, limits=LIMITS)
    assert short.status == "failed" and "1 values; the data has 4 rows" in short.message


def test_a_walk_to_the_gold_finds_nothing(data: Path, audit_hook: bool) -> None:
    forged = expression_facet(EXPR, WALK, data_path=data, limits=LIMITS)
    assert forged.status == "failed" and forged.agreement == 0.0, forged


def test_the_answer_job_is_never_given_the_expression(data: Path) -> None:
    out = run_job("hms.expression_check", {"code": "hypothesis_values = df['a']"}, data_path=data, limits=LIMITS)
    assert out["status"] == "values" and "expr" not in json.dumps(out)


def test_a_broken_expression_is_the_releases_error_not_the_answers(data: Path) -> None:
    check = expression_facet("df['nope'] + 1", "hypothesis_values = df['a']", data_path=data, limits=LIMITS)
    assert check.status == "error" and "The release's expression could not be evaluated: KeyError" in check.message


def _synthetic_expressions() -> list[tuple[str, str, Path]]:
    found = []
    for metadata in sorted(SHARED.glob("synth/*/*/metadata_*.json")):
        raw = metadata.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("cp1252")
        for query in json.loads(text).get("queries", []):
            for q in query if isinstance(query, list) else [query]:
                if q.get("true_hypothesis_expr"):
                    found.append((f"{metadata.parent.name}/{metadata.name}", q["true_hypothesis_expr"],
                                  metadata.parent / "data.csv"))
    return found


def test_every_real_synthetic_expression_evaluates_with_the_benchmarks_builtins() -> None:
    """Each of the real expressions evaluates, or fails for a reason of its data that the sentence names; none
    for want of a builtin (before: "NameError: name 'int' is not defined" for every ``.astype(int)``)."""
    expressions = _synthetic_expressions()
    if not expressions:
        pytest.skip(f"no DiscoveryBench synthetic metadata under {SHARED} (the shared data is absent)")
    casts = [(w, e, p) for w, e, p in expressions if "astype(int)" in e]
    assert len(casts) >= 4
    failures = {}
    for where, expr, data_path in expressions:
        out = run_job(GOLD_JOB, {"expr": expr}, data_path=data_path, limits=LIMITS)
        if out["status"] == "values":
            assert out["rows"] == len(pd.read_csv(data_path)), where
        else:
            failures[where] = out["message"]
    assert not [m for m in failures.values() if "NameError" in m or "is not defined" in m], failures
    # an int cast evaluates wherever the columns it casts have no missing value (pandas cannot cast NaN to int)
    for where, expr, data_path in casts:
        frame = pd.read_csv(data_path)
        cast_columns = re.findall(r"df\['([^']+)'\]\.astype\(int\)", expr)
        if not frame[cast_columns].isna().any().any() and ".isin(" not in expr:
            assert where not in failures, (where, failures.get(where))
        else:
            assert where in failures and ("NaN" in failures[where] or "isin" in failures[where])
