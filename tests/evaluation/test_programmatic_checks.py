"""Programmatic checks (issue 20): every scoring outcome worked by hand, the metrics by hand, the outputs reader
against bombs and traversal, and attacks through check code with the audit hook switched off (the sandbox's
process separation and the measurer's byte comparison are what must hold)."""

from __future__ import annotations

import io
import pickle
import zipfile
from collections.abc import Iterator

import pytest

from evaluation.programmatic.metrics import aggregate, bootstrap_mean
from evaluation.programmatic.outputs import (
    OutputLimits,
    OutputsError,
    read_output_folder,
    read_outputs_zip,
    split_by_task,
)
from evaluation.programmatic.runner import CheckLimits, CheckResult, TaskOutcome, completion_rate, run_checks
from evaluation.sandbox import isolation
from exports.programmatic_part import ProgrammaticCheck, ProgrammaticTaskRelease

CLEAN = "data cleaning & preprocessing"
VIS = "data visualization"
FAST = CheckLimits(check_timeout_s=3.0)


def check(cid: str, code: str, rule: str | None = None, *, ttype: str = CLEAN, function: str = "F",
          gt: str = "") -> ProgrammaticCheck:
    return ProgrammaticCheck(id=cid, task_type=ttype, function=function, metric=f"m-{cid}", code=code, rule=rule,
                             ground_truth=gt)


def task(*checks: ProgrammaticCheck) -> ProgrammaticTaskRelease:
    return ProgrammaticTaskRelease(key="t", prompt="clean the table", checks=list(checks))


OUT = {"clean.csv": b"a,b\n1,2\n3,4\n"}
GT = {"answer.json": b'{"rows": 2}'}


def statuses(outcome: TaskOutcome) -> dict[str, tuple[str, int]]:
    return {c.check_id: (c.status, c.score) for c in outcome.checks}


# --------------------------------------------------------------------------------------------- outcomes by hand


@pytest.mark.usefixtures("os_sandbox")
def test_each_outcome_and_the_completion_rate_worked_by_hand() -> None:
    t = task(
        check("true", "import pandas as pd\ndef f(gt):\n    return bool(pd.read_csv('clean.csv').notna().all().all())"),
        check("false", "def f(gt):\n    return open('clean.csv').read().startswith('zzz')"),
        check("gt", "import json\ndef f(gt):\n    return json.load(open(gt))['rows'] == 2", gt="answer.json"),
        check("rule", "def f(gt):\n    return 0.93", rule="lambda x: x > 0.9"),
        check("rulefalse", "def f(gt):\n    return 0.5", rule="lambda x: x > 0.9"),
        check("numpy", "import numpy as np\ndef f(gt):\n    return np.bool_(True)"),
        check("syntax", "def f(gt):\n    return (("),
        check("nofunc", "x = 1"),
        check("raises", "def f(gt):\n    return 1 / 0"),
        check("missing", "def f(gt):\n    return open('nope.csv').read() == ''"),
        check("int", "def f(gt):\n    return 1"),
        check("float", "def f(gt):\n    return 4.5"),
        check("none", "def f(gt):\n    pass"),
        check("rulebad", "def f(gt):\n    return 1", rule="lambda x: x.nope"),
        check("ruleint", "def f(gt):\n    return 3", rule="lambda x: x + 1"),
    )
    outcome = run_checks(t, OUT, gt=GT, limits=FAST)
    got = statuses(outcome)
    assert got == {
        "true": ("true", 2), "false": ("false", 1), "gt": ("true", 2), "rule": ("true", 2),
        "rulefalse": ("false", 1), "numpy": ("true", 2), "syntax": ("syntax", 0), "nofunc": ("no_function", 0),
        "raises": ("raised", 0), "missing": ("missing_file", 0), "int": ("not_boolean", 0),
        "float": ("not_boolean", 0), "none": ("not_boolean", 0), "rulebad": ("rule_error", 0),
        "ruleint": ("not_boolean", 0)}
    # by hand: 2+1+2+2+1+2 = 10 points of 15 checks x 2 = 30
    assert outcome.completion_rate == pytest.approx(10 / 30)
    assert not outcome.passed
    by_id = {c.check_id: c for c in outcome.checks}
    assert "line 2" in by_id["syntax"].sentence
    assert "ZeroDivisionError" in by_id["raises"].sentence and by_id["raises"].detail == ""  # traceback logged
    assert "nope.csv" in by_id["missing"].sentence
    assert "never counts as correct" in by_id["int"].sentence and "builtins.int" in by_id["int"].sentence
    assert "defines no function" in by_id["nofunc"].sentence


@pytest.mark.usefixtures("os_sandbox")
def test_a_folder_that_passes_every_check_passes_and_a_missing_folder_scores_zero() -> None:
    t = task(check("a", "def f(gt):\n    return True"), check("b", "def f(gt):\n    return 1 == 1"))
    outcome = run_checks(t, OUT, limits=FAST)
    assert outcome.completion_rate == 1.0 and outcome.passed
    missing = run_checks(t, None, limits=FAST)
    assert [(c.status, c.score) for c in missing.checks] == [("no_output", 0), ("no_output", 0)]
    assert missing.completion_rate == 0.0 and "no output folder" in missing.checks[0].sentence


@pytest.mark.usefixtures("os_sandbox")
def test_a_looping_check_times_out_and_the_next_check_still_runs() -> None:
    t = task(check("loop", "def f(gt):\n    while True:\n        pass"), check("after", "def f(gt):\n    return True"))
    outcome = run_checks(t, OUT, limits=CheckLimits(check_timeout_s=1.0))
    assert statuses(outcome) == {"loop": ("timeout", 0), "after": ("true", 2)}
    assert "1 s" in outcome.checks[0].sentence


# --------------------------------------------------------------------------------------------- metrics by hand


def _outcome(task_key: str, run: str, scores: list[int], function: str = "F", ttype: str = CLEAN) -> TaskOutcome:
    checks = [CheckResult(check_id=str(i), task_type=ttype, function=function, metric="m",
                          status={2: "true", 1: "false", 0: "raised"}[s], score=s, sentence="") for i, s in
              enumerate(scores)]
    cr = completion_rate(checks)
    return TaskOutcome(task=task_key, run=run, checks=checks, completion_rate=cr, passed=cr == 1.0)


def test_completion_and_success_rate_by_hand() -> None:
    outcomes = [
        _outcome("t1", "r1", [2, 2]),          # CR 1, passed
        _outcome("t1", "r2", [2, 1]),          # CR 0.75
        _outcome("t2", "r1", [0, 1, 2], function="G", ttype=VIS),  # CR 0.5
        _outcome("t2", "r2", [2, 2, 2], function="G", ttype=VIS),  # CR 1, passed
    ]
    scores = aggregate(outcomes, n_bootstrap=200)
    # CR: mean of 1, 0.75, 0.5, 1 = 0.8125; SR: t1 passes 1 of 2 runs, t2 1 of 2 -> 0.5
    assert scores["completion_rate"]["point"] == pytest.approx(0.8125)
    assert scores["success_rate"]["point"] == pytest.approx(0.5)
    # per function: F has scores 2,2,2,1 -> (1+1+1+0.5)/4 = 0.875; G has 0,1,2,2,2,2 -> (0+.5+1+1+1+1)/6
    assert scores["functions"]["F"]["point"] == pytest.approx(0.875)
    assert scores["functions"]["G"]["point"] == pytest.approx(4.5 / 6)
    assert scores["task_types"][VIS]["point"] == pytest.approx(4.5 / 6)
    assert scores["errors"] == 1 and scores["runs"] == 2 and scores["tasks"] == 2
    low, high = scores["completion_rate"]["ci_low"], scores["completion_rate"]["ci_high"]
    assert low is not None and high is not None and low <= 0.8125 <= high


def test_the_bootstrap_is_reproducible_and_needs_two_tasks() -> None:
    one = bootstrap_mean([[1.0, 0.0]])
    assert one["point"] == 0.5 and one["ci_low"] is None
    a = bootstrap_mean([[1.0], [0.0], [1.0], [0.5]], seed=3)
    assert a == bootstrap_mean([[1.0], [0.0], [1.0], [0.5]], seed=3)
    assert 0.0 <= a["ci_low"] <= a["point"] <= a["ci_high"] <= 1.0


# --------------------------------------------------------------------------------------------- the outputs reader


def _zip(entries: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (0o120777 << 16)
            z.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_a_zip_of_task_folders_is_read_and_split() -> None:
    files = read_outputs_zip(_zip({"t1/clean.csv": b"a\n1\n", "t2/plot.png": b"png", "t2/sub/x.json": b"{}"}))
    assert split_by_task(files, ["t1", "t2"]) == {"t1": {"clean.csv": b"a\n1\n"},
                                                   "t2": {"plot.png": b"png", "sub/x.json": b"{}"}}
    wrapped = read_outputs_zip(_zip({"outputs/t1/clean.csv": b"a\n"}))
    assert split_by_task(wrapped, ["t1"]) == {"t1": {"clean.csv": b"a\n"}}


@pytest.mark.parametrize(("entries", "symlink", "words"), [
    ({"../evil.csv": b"x"}, None, "path traversal"),
    ({"t1/../../evil.csv": b"x"}, None, "path traversal"),
    ({"/etc/evil": b"x"}, None, "absolute path"),
    ({"t1/a.csv": b"x"}, "t1/link", "symbolic link"),
])
def test_dangerous_zip_entries_are_refused_with_the_entry_named(entries, symlink, words) -> None:
    with pytest.raises(OutputsError, match=words):
        read_outputs_zip(_zip(entries, symlink=symlink), label="run.zip")


def test_a_zip_bomb_is_stopped_while_decompressing() -> None:
    bomb = _zip({"t1/zeros.csv": b"0" * (30 * 1024 * 1024)})
    assert len(bomb) < 100_000
    with pytest.raises(OutputsError, match="zip bomb"):
        read_outputs_zip(bomb, label="bomb.zip")


def test_huge_outputs_are_refused() -> None:
    many = _zip({f"t1/f{i}.txt": b"x" for i in range(30)})
    with pytest.raises(OutputsError, match="more than 20 files"):
        read_outputs_zip(many, limits=OutputLimits(max_files=20))
    big = _zip({"t1/a.bin": bytes(range(256)) * 8192})  # 2 MB, incompressible enough
    with pytest.raises(OutputsError, match="larger than allowed"):
        read_outputs_zip(big, limits=OutputLimits(max_file_mb=1, max_ratio=1e9))


def test_not_a_zip_and_unknown_task_folders_are_explained() -> None:
    with pytest.raises(OutputsError, match="not a zip file"):
        read_outputs_zip(b"hello", label="x.zip")
    with pytest.raises(OutputsError, match="names no programmatic task"):
        split_by_task({"other/a.csv": b"", "t1/b.csv": b""}, ["t1"])
    with pytest.raises(OutputsError, match="not inside a task folder"):
        split_by_task({"a.csv": b"", "t1/b.csv": b""}, ["t1"])


def test_an_output_folder_with_a_symlink_is_refused(tmp_path) -> None:
    (tmp_path / "a.csv").write_text("a\n1\n")
    assert read_output_folder(tmp_path) == {"a.csv": b"a\n1\n"}
    (tmp_path / "link").symlink_to("/etc/passwd")
    with pytest.raises(OutputsError, match="symbolic link"):
        read_output_folder(tmp_path)


# --------------------------------------------------------------------------------------------- attacks


@pytest.fixture
def no_audit_hook() -> Iterator[None]:
    isolation.set_audit_hook(False)
    try:
        yield
    finally:
        isolation.set_audit_hook(True)


@pytest.mark.usefixtures("os_sandbox", "no_audit_hook")
def test_attacks_through_check_code_with_the_audit_hook_off(tmp_path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET")
    t = task(
        # writing to the output folder: the measurer sees the change, the check errors, the folder is restored
        check("write", "import os\ndef f(gt):\n    os.chmod('.', 0o755)\n    os.chmod('clean.csv', 0o644)\n"
                       "    open('clean.csv', 'w').write('a,b\\n9,9\\n')\n    return True"),
        check("add", "import os\ndef f(gt):\n    os.chmod('.', 0o755)\n    open('extra.csv', 'w').write('x')\n"
                     "    return True"),
        check("after", "def f(gt):\n    return open('clean.csv').read() == 'a,b\\n1,2\\n3,4\\n'"),
        check("gtwrite", "import os\ndef f(gt):\n    os.chmod(os.path.dirname(gt), 0o755)\n    os.chmod(gt, 0o644)\n"
                         "    open(gt, 'w').write('{}')\n    return True", gt="answer.json"),
        check("gtafter", "import json\ndef f(gt):\n    return json.load(open(gt)) == {'rows': 2}", gt="answer.json"),
        # reading files outside the sandbox: the project's files and the host's are not there
        check("read", f"def f(gt):\n    return 'SECRET' in open({str(secret)!r}).read()"),
        # monkeypatching to fake True for the checks after it: each check is its own process
        check("patch", "import builtins, json, os\ndef f(gt):\n    builtins.bool = lambda *a: True\n"
                       "    builtins.isinstance = lambda *a: True\n    json.dumps = lambda *a, **k: "
                       "'{\"status\": \"value\", \"value\": true}'\n    return 'yes'"),
        check("honest", "def f(gt):\n    return open('clean.csv').read().startswith('zzz')"),
        # forging messages on every descriptor it can reach and leaving early: it reaches only its own pipe (its
        # own result, which it could as well return), never the job's result channel or another check's
        check("forge", "import os\ndef f(gt):\n    for fd in range(3, 64):\n        try:\n"
                       "            os.write(fd, b'{\"status\": \"value\", \"value\": true, \"type\": \"x\"}')\n"
                       "        except OSError:\n            pass\n    os._exit(0)"),
        check("honest2", "def f(gt):\n    return open('clean.csv').read().startswith('zzz')"),
        check("fork", "import os\ndef f(gt):\n    return os.fork() >= 0"),
        check("loop", "def f(gt):\n    while True:\n        pass"),
    )
    outcome = run_checks(t, OUT, gt=GT, limits=CheckLimits(check_timeout_s=2.0))
    got = statuses(outcome)
    assert got["write"] == ("tampered", 0) and got["add"] == ("tampered", 0) and got["gtwrite"] == ("tampered", 0)
    assert got["after"] == ("true", 2) and got["gtafter"] == ("true", 2)  # restored before they ran
    assert got["read"] == ("missing_file", 0)
    assert got["patch"][1] == 0 and got["honest"] == ("false", 1)
    assert got["honest2"] == ("false", 1) and len(got) == 12
    assert got["fork"][1] == 0 and got["loop"] == ("timeout", 0)
    by_id = {c.check_id: c for c in outcome.checks}
    assert "clean.csv" in by_id["write"].sentence and "extra.csv" in by_id["add"].sentence


class _Evil:
    def __reduce__(self):
        return (exec, ("import builtins; builtins.FAKED = True",))


@pytest.mark.usefixtures("os_sandbox")
def test_an_agents_pickle_cannot_run_code_in_a_check() -> None:
    """The pickle's code runs in the converter (which holds nothing), never in the check's process; a pickle of
    plain data reaches the check as a clean copy (tests/evaluation/test_programmatic_pickles.py has the attacks)."""
    evil = pickle.dumps(_Evil())
    t = task(check("load", "import builtins, pickle\ndef f(gt):\n    pickle.load(open('model.pkl', 'rb'))\n"
                           "    return not hasattr(builtins, 'FAKED')"))
    outcome = run_checks(t, {"model.pkl": evil}, limits=FAST)
    assert statuses(outcome) == {"load": ("true", 2)}
    ok = pickle.dumps({"weights": [1.0, 2.0]})
    fine = run_checks(t, {"model.pkl": ok}, limits=FAST)
    assert statuses(fine) == {"load": ("true", 2)}


# --------------------------------------------------------------------------------------------- issue 29, points 4 and 9


def test_a_ground_truth_path_that_names_gt_again_means_the_file_inside_gt() -> None:
    from evaluation.programmatic.groundtruth import _parse_checks
    from evaluation.programmatic.runner import clean_ground_truth

    assert [clean_ground_truth(p) for p in ("gt/summary.csv", "./summary.csv", "/gt/x/y.csv", "gt", "gt/", "",
                                            "summary.csv", "sub/gt/a.csv")] == [
        "summary.csv", "summary.csv", "x/y.csv", "", "", "", "summary.csv", "sub/gt/a.csv"]
    assert clean_ground_truth("gt/a.csv", artifacts=["gt/a.csv"]) == "gt/a.csv"  # an artifact of that very path
    (proposed,) = _parse_checks('{"checks": [{"task_type": "data cleaning & preprocessing", "function": "F", '
                                '"metric": "M", "code": "def f(gt):\\n    return True", "ground_truth": '
                                '"gt/summary.csv"}]}')
    assert proposed.ground_truth == "summary.csv"


@pytest.mark.usefixtures("os_sandbox")
def test_a_stored_check_whose_ground_truth_names_gt_again_still_opens_its_file() -> None:
    t = task(check("gt", "import json\ndef f(gt):\n    return json.load(open(gt))['rows'] == 2", gt="gt/answer.json"))
    assert statuses(run_checks(t, OUT, gt=GT, limits=FAST)) == {"gt": ("true", 2)}


@pytest.mark.usefixtures("os_sandbox")
def test_a_check_that_raises_says_its_line_and_hands_no_server_traceback_to_the_reader(caplog) -> None:
    t = task(check("boom", "import pandas as pd\ndef f(gt):\n    frame = pd.read_csv('clean.csv')\n"
                           "    return frame['nope'].all()"),
             check("gone", "def f(gt):\n    return open('missing.csv').read() == ''"))
    with caplog.at_level("INFO", logger="evaluation.programmatic.runner"):
        outcome = run_checks(t, OUT, limits=FAST)
    by_id = {c.check_id: c for c in outcome.checks}
    assert by_id["boom"].status == "raised" and "KeyError: 'nope' at line 4 of the check's code" in by_id["boom"].sentence
    assert by_id["gone"].status == "missing_file" and "at line 2 of the check's code" in by_id["gone"].sentence
    for c in outcome.checks:
        assert c.detail == "" and "Traceback" not in c.sentence and 'File "/' not in c.sentence
    assert "Traceback (most recent call last)" in caplog.text  # logged for whoever runs the server
