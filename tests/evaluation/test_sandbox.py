"""The sandbox runs real child processes here: no mocks, small CSVs."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pandas as pd
import pytest

from curation.errors import SandboxError
from evaluation import inference
from evaluation.inference import FrameChange, InferredTransform
from evaluation.sandbox import (
    ModelCheck,
    SandboxLimits,
    TransformCheck,
    check_model,
    check_transform,
    fast_copy_path,
    prepare_fast_copy,
    rewrite_groupby_code,
    shutdown,
)
from evaluation.sandbox import code_jobs as child
from evaluation.specs import ColumnMapping


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.csv"
    pd.DataFrame(
        {
            "x": [1.0, -2.0, 3.0, 4.0, -5.0, 6.0, 7.0, 8.0],
            "y": [2.1, 3.9, 6.2, 8.1, 9.8, 12.2, 13.9, 16.1],
            "g": ["a", "b", "a", "b", "a", "b", "a", "b"],
        }
    ).to_csv(path, index=False)
    return path


def transform(data: Path, code: str, parents: list[str] | None = None, **kwargs: object) -> TransformCheck:
    return check_transform(data_path=data, parent_codes=parents or [], code=code, **kwargs)  # type: ignore[arg-type]


def model(data: Path, code: str, transforms: list[str] | None = None, **kwargs: object) -> ModelCheck:
    return check_model(data_path=data, transform_codes=transforms or [], code=code, **kwargs)  # type: ignore[arg-type]


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (host pids)."""
    found = [pid]
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                children = handle.read().split()
        except OSError:
            continue
        for child_pid in children:
            found += process_tree(int(child_pid))
    return found


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(c) for c in handle.read().split()]
        except OSError:
            continue
    return found


def job_processes() -> list[int]:
    """Host pids of live job processes of this process's zygote.

    Below the zygote a job is keeper → its namespace's init → worker → whatever the code started. One spare
    keeper, init and worker (made in advance for the next job) are always there and are not counted.
    """
    from evaluation.sandbox import server

    zygote = server._SANDBOX._zygote
    if zygote is None:
        return []
    tree = process_tree(zygote.proc.pid)
    if len(tree) < 3:
        return []
    zygote_pid = tree[2]  # bubblewrap, its init, the zygote
    shallow: list[int] = []
    deep: list[int] = []
    level = [(child, 1) for child in _children(zygote_pid)]
    while level:
        pid, depth = level.pop()
        if _running(pid):
            (deep if depth >= 4 else shallow).append(pid)
        level += [(child, depth + 1) for child in _children(pid)]
    return deep + (shallow if len(shallow) > 3 else [])


def inference_implemented() -> bool:
    frame = pd.DataFrame({"x": [1]})
    try:
        inference.describe_change(frame, frame)
    except NotImplementedError:
        return False
    return True


# ---------------------------------------------------------------------------------------------------- results


def test_derive_reports_shape_created_column_and_preview(data: Path) -> None:
    check = transform(data, "df['z'] = df['x'] * 2\nprint('rows', len(df))")

    assert check.ok, check.error
    assert check.error is None and check.error_kind is None
    assert check.result_rows == 8
    assert check.result_columns == ["x", "y", "g", "z"]
    assert len(check.preview) == 5
    assert check.preview[0] == {"x": 1.0, "y": 2.1, "g": "a", "z": 2.0}
    assert check.stdout == "rows 8\n"
    assert 0 < check.code_seconds < check.total_seconds
    if inference_implemented():
        assert check.change is not None
        assert (check.change.rows_before, check.change.rows_after) == (8, 8)
        assert check.change.created == ["z"]


@pytest.mark.skipif(not inference_implemented(), reason="evaluation.inference is not implemented yet")
def test_verb_and_mapping_are_suggested(data: Path) -> None:
    derive = transform(data, "df['z'] = df['x'] * 2")
    flt = transform(data, "df = df[df['x'] > 0]")

    assert derive.suggested_verb == "derive"
    assert derive.suggested_mapping == [ColumnMapping(inputs=["x"], output="z")]
    assert flt.suggested_verb == "filter"
    assert flt.suggested_mapping == [ColumnMapping(inputs=["x"], output="")]


def test_parent_creates_the_column_the_code_uses(data: Path) -> None:
    check = transform(data, "df['w2'] = df['w'] + 1", parents=["df['w'] = df['x'] * 10"])

    assert check.ok, check.error
    assert check.preview[0]["w"] == 10.0 and check.preview[0]["w2"] == 11.0
    if inference_implemented():
        assert check.change is not None
        assert check.change.created == ["w2"]  # the parent's column existed before this code ran


def test_filter_changes_the_row_count(data: Path) -> None:
    check = transform(data, "df = df[df['x'] > 0]")

    assert check.ok, check.error
    assert check.result_rows == 6
    assert all(row["x"] > 0 for row in check.preview)
    if inference_implemented():
        assert check.change is not None
        assert (check.change.rows_before, check.change.rows_after) == (8, 6)


def test_groupby_spec_then_rollup_uses_the_grp_name(data: Path) -> None:
    groupby = "df_summed = df.groupby('g')"
    rollup = "df['x_total'] = df_summed_grp['x'].transform('sum')"

    grouped = transform(data, groupby)
    rolled = transform(data, rollup, parents=[groupby])

    assert grouped.ok, grouped.error
    assert grouped.result_type == "pandas.core.frame.DataFrame"  # df is still the frame, not the group-by
    assert grouped.result_rows == 8
    assert rolled.ok, rolled.error
    assert [row["x_total"] for row in rolled.preview[:2]] == [6.0, 16.0]


def test_rewrite_groupby_code_matches_blade() -> None:
    assert rewrite_groupby_code("df_summed = df.groupby('g')") == "df_summed_grp = df.groupby('g')"
    assert rewrite_groupby_code("df = df.groupby('g')") == "df_grp = df.groupby('g')"
    # Not a bare group-by call, not a df name, or already rewritten: left alone.
    assert rewrite_groupby_code("df = df.groupby('g').sum()") == "df = df.groupby('g').sum()"
    assert rewrite_groupby_code("grp = df.groupby('g')") == "grp = df.groupby('g')"
    assert rewrite_groupby_code("df_grp = df.groupby('g')") == "df_grp = df.groupby('g')"


# ---------------------------------------------------------------------------------------------------- failures


def test_exception_names_the_line_and_the_error(data: Path) -> None:
    check = transform(data, "df['a'] = 1\ndf['b'] = df['xx'] * 2")

    assert not check.ok
    assert check.error_kind == "exception"
    assert check.failed_step == 0
    assert (
        check.error
        == "Line 2 of this transform's code raised KeyError: 'xx' (no such column; did you mean 'x'?)."
    )
    assert check.traceback is not None
    assert "line 2" in check.traceback and "df['xx']" in check.traceback
    assert "pandas" not in check.traceback  # library frames are trimmed


def test_exception_in_a_parent_points_at_the_parent(data: Path) -> None:
    check = transform(
        data,
        "df['c'] = df['b'] + 1",
        parents=["df['a'] = df['x'] + 1", "df['b'] = 1 / 0"],
        parent_names=["add_a", "remove_outliers"],
    )

    assert not check.ok
    assert check.failed_step == 1
    assert check.error == (
        "Parent transform 'remove_outliers' (step 2 of 3) raised ZeroDivisionError: division by zero at line 1."
    )


def test_syntax_error_reports_the_line(data: Path) -> None:
    own = transform(data, "df['a'] = 1\ndf['b'] = (df['x'] +\n")
    parent = transform(data, "df['c'] = 1", parents=["df['a'] = 1", "x = = 2"])

    assert own.error_kind == "syntax" and own.failed_step == 0
    assert own.error is not None and own.error.startswith(
        "Line 2 of this transform's code has a syntax error"
    )
    assert parent.error_kind == "syntax" and parent.failed_step == 1
    assert parent.error == "Parent transform 2 (step 2 of 3) has a syntax error at line 1: invalid syntax."


def test_infinite_loop_is_stopped_and_its_process_is_gone(data: Path) -> None:
    started = time.monotonic()
    check = transform(
        data,
        "import os\nprint(os.getpid(), flush=True)\nwhile True:\n    pass",
        limits=SandboxLimits(timeout_s=2),
    )

    assert time.monotonic() - started < 8
    assert check.error_kind == "timeout"
    assert (
        check.error
        == "The code ran longer than the 2 s limit and was stopped (it was running this transform's code)."
    )
    assert check.failed_step == 0
    # its own PID namespace: 1 is the namespace's init, 2 the job's measuring process, 3 the code's process
    assert check.stdout.split()[0] == "3"
    deadline = time.monotonic() + 5
    while len(job_processes()) > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job_processes() == []


@pytest.mark.parametrize(
    "code",
    [
        "x = bytearray(40 * 1024**3)",
        "a = np.ones((200_000, 100_000))",
        # 1 GB that the machine could give: only the limit stops it.
        "a = np.ones(1024**3 // 8)",
    ],
)
def test_memory_beyond_the_limit_is_reported(data: Path, code: str) -> None:
    check = transform(data, "df['a'] = 1\n" + code, limits=SandboxLimits(memory_mb=512))

    assert check.error_kind == "memory", check.error
    assert check.error == (
        "The code tried to use more than 512 MB of memory and was stopped (line 2 of this transform's code)."
    )


def test_ordinary_code_runs_under_a_small_memory_limit(data: Path) -> None:
    check = transform(
        data, "a = np.ones(10 * 1024**2 // 8)\ndf['z'] = df['x'] + a[0]", limits=SandboxLimits(memory_mb=512)
    )

    assert check.ok, check.error


@pytest.mark.parametrize(
    ("code", "target"),
    [
        ("import socket\nsocket.create_connection(('127.0.0.1', 9))", "127.0.0.1:9"),
        ("import urllib.request\nurllib.request.urlopen('http://example.com')", "http://example.com"),
        ("import socket\ns = socket.socket(); s.connect(('1.2.3.4', 80))", "1.2.3.4:80"),
    ],
)
def test_network_access_is_refused(data: Path, code: str, target: str) -> None:
    check = transform(data, code)

    assert check.error_kind == "network", check.error
    assert check.error == (
        f"The code tried to open a network connection (to {target}); the sandbox allows no network access "
        "(line 2 of this transform's code)."
    )


@pytest.mark.parametrize(
    "code",
    [
        "open({escape!r}, 'w').write('x')",
        "df.to_csv({escape!r})",
        "import os\nos.rename('ok.txt', {escape!r})",
    ],
)
def test_writing_outside_the_working_directory_is_refused(data: Path, code: str) -> None:
    escape = Path(f"/tmp/escape_{uuid.uuid4().hex}.txt")
    check = transform(data, "open('ok.txt', 'w').write('ok')\n" + code.format(escape=str(escape)))

    assert check.error_kind == "filesystem", check.error
    assert (
        check.error is not None
        and str(escape) in check.error
        and "outside its working directory" in check.error
    )
    assert not escape.exists()


def test_relative_escape_and_deleting_the_data_are_refused(data: Path) -> None:
    up = transform(data, "open('../x.txt', 'w').write('x')")
    delete = transform(data, f"import os\nos.remove({str(data)!r})")

    assert up.error_kind == "filesystem"
    assert (
        up.error is not None and up.error.startswith("The code tried to write to /") and "/x.txt" in up.error
    )
    assert delete.error_kind == "filesystem"
    assert (
        delete.error
        == f"The code tried to delete {data}, outside its working directory (line 2 of this transform's code)."
    )
    assert data.exists()


def test_the_working_directory_is_writable_fresh_and_removed(data: Path) -> None:
    code = (
        "import os\n"
        "assert os.listdir('.') == []\n"
        "with open('ok.txt', 'w') as f:\n    f.write('hello')\n"
        "os.mkdir('sub')\n"
        "df['n'] = len(open('ok.txt').read())\n"
        "print(os.getcwd())"
    )
    first = transform(data, code)
    second = transform(data, code)  # would fail its listdir assertion if the directory were reused

    assert first.ok, first.error
    assert second.ok, second.error
    assert first.preview[0]["n"] == 5
    workdir = Path(first.stdout.strip())
    assert workdir != Path(second.stdout.strip())
    assert not workdir.exists()


@pytest.mark.parametrize(
    "code",
    [
        "import os\nos.system('true')",
        "import subprocess\nsubprocess.run(['true'])",
        "import os\nos.kill(os.getppid(), 0)",
    ],
)
def test_processes_are_refused(data: Path, code: str) -> None:
    check = transform(data, code)

    assert check.error_kind == "forbidden", check.error
    assert check.error is not None and check.error.startswith("The code tried to ")


def test_environment_is_not_inherited(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORKPATHS_SECRET_TEST", "1")
    shutdown()  # the next worker is started while the variable is set

    check = transform(
        data,
        "import os\nprint(sorted(os.environ))\ndf['s'] = os.environ.get('FORKPATHS_SECRET_TEST', 'absent')",
    )

    assert check.ok, check.error
    assert check.preview[0]["s"] == "absent"
    assert "FORKPATHS_SECRET_TEST" not in check.stdout


def test_a_crash_is_reported_with_its_signal(data: Path) -> None:
    check = transform(data, "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)")

    assert check.error_kind == "crashed"
    assert check.error is not None and "SIGSEGV" in check.error
    assert check.failed_step == 0


def test_exit_and_output_are_captured(data: Path) -> None:
    exited = transform(data, "import sys\nsys.exit(3)")
    chatty = transform(
        data, "for i in range(1000):\n    print('x' * 50)", limits=SandboxLimits(max_output_chars=100)
    )

    assert exited.error_kind == "exception"
    assert exited.error == "Line 2 of this transform's code raised SystemExit: 3."
    assert chatty.ok
    assert chatty.stdout.startswith("x" * 50 + "\n" + "x" * 49)
    assert chatty.stdout.endswith("[output truncated]\n")


# ---------------------------------------------------------------------------------------------------- models


def test_model_check_returns_the_ols_summary(data: Path) -> None:
    check = model(
        data,
        "import statsmodels.formula.api as smf\nmodel = smf.ols('y ~ x2', data=df).fit()",
        transforms=["df['x2'] = df['x'] * 2"],
    )

    assert check.ok, check.error
    assert check.summary is not None and "OLS Regression Results" in check.summary
    assert check.result_type == "statsmodels.regression.linear_model.RegressionResultsWrapper"


def test_model_result_falls_back_to_the_last_expression(data: Path) -> None:
    check = model(data, "import statsmodels.api as sm\nsm.OLS(df['y'], sm.add_constant(df['x'])).fit()")
    corr = model(data, "df[['x', 'y']].corr()")

    assert check.ok and check.summary is not None and "OLS Regression Results" in check.summary
    assert corr.ok and corr.result_type == "pandas.core.frame.DataFrame"
    assert corr.summary is not None and "x" in corr.summary


def test_unfitted_model_is_named(data: Path) -> None:
    unfitted = model(data, "import statsmodels.formula.api as smf\nmodel = smf.ols('y ~ x', data=df)")
    summary_of_unfitted = model(
        data, "import statsmodels.formula.api as smf\nsmf.ols('y ~ x', data=df).summary()"
    )

    assert unfitted.error_kind == "no_result"
    assert unfitted.error is not None and unfitted.error.startswith(
        "The code made a model (OLS) but did not fit it"
    )
    assert summary_of_unfitted.error_kind == "exception"
    assert summary_of_unfitted.error is not None
    assert summary_of_unfitted.error.startswith(
        "The code made a model (OLS) but did not fit it (line 2 of the model code)"
    )


def test_model_error_in_a_transform_names_the_transform(data: Path) -> None:
    check = model(data, "m = 1", transforms=["df['a'] = df['nope']"], transform_names=["make_a"])

    assert check.failed_step == 0
    assert (
        check.error == "Transform 'make_a' (step 1 of 2) raised KeyError: 'nope' (no such column) at line 1."
    )


# ---------------------------------------------------------------------------------------------------- plumbing


def test_two_checks_from_threads_both_succeed(data: Path) -> None:
    results: dict[int, TransformCheck] = {}

    def run(i: int) -> None:
        results[i] = transform(data, f"df['z'] = df['x'] * {i}")

    threads = [threading.Thread(target=run, args=(i,)) for i in (2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert results[2].ok and results[3].ok
    assert results[2].preview[0]["z"] == 2.0 and results[3].preview[0]["z"] == 3.0


def test_fast_copy_is_used_while_current_and_ignored_when_stale(data: Path) -> None:
    target = prepare_fast_copy(data)
    assert target == fast_copy_path(data) and target.exists()
    # Make the copy distinguishable from the CSV (keeping the CSV's recorded size and time).
    with open(target, "rb") as handle:
        payload = pickle.load(handle)
    payload["frame"]["x"] = 100.0
    with open(target, "wb") as handle:
        pickle.dump(payload, handle)

    cached = transform(data, "df['z'] = df['x']")
    data.write_text(data.read_text().replace("1.0,2.1", "9.0,2.1"))
    stale = transform(data, "df['z'] = df['x']")

    assert cached.preview[0]["x"] == 100.0
    assert stale.preview[0]["x"] == 9.0


def test_missing_or_unreadable_data_table_raises_sandbox_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")

    with pytest.raises(SandboxError, match="does not exist"):
        transform(tmp_path / "nope.csv", "df['a'] = 1")
    with pytest.raises(SandboxError, match="could not load the data table .*EmptyDataError"):
        transform(empty, "df['a'] = 1")


def test_failed_inference_leaves_the_change_out() -> None:
    frame = pd.DataFrame({"x": [1, 2]})

    def broken(*args: object) -> InferredTransform:
        raise RuntimeError("boom")

    def describe(before: object, after: object) -> FrameChange:
        return FrameChange(rows_before=2, rows_after=2)

    partly = child.describe_result("df['z'] = 1", frame, frame, infer=broken, describe=describe)
    nothing = child.describe_result("df['z'] = 1", frame, frame, infer=broken, describe=broken)

    assert partly["change"]["rows_after"] == 2 and partly["suggested_verb"] is None
    assert nothing["change"] is None and nothing["suggested_mapping"] == []
    assert "RuntimeError: boom" in nothing["inference_error"]


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has finished
    except FileNotFoundError:
        return False


def test_processes_end_when_the_app_dies_without_cleaning_up(data: Path) -> None:
    script = f"""
import os, threading, time
from pathlib import Path
from evaluation import sandbox
from evaluation.sandbox import server
sandbox.prewarm(wait=True)
handle = sandbox.start_transform_check(data_path=Path({str(data)!r}), parent_codes=[],
                                       code="print('started', flush=True)\\nimport time\\ntime.sleep(60)")
def tree(pid):
    found = [pid]
    for task in os.listdir(f"/proc/{{pid}}/task"):
        try:
            children = open(f"/proc/{{pid}}/task/{{task}}/children").read().split()
        except OSError:
            continue
        for child in children:
            found += tree(int(child))
    return found
zygote = server._SANDBOX._zygote
deadline = time.monotonic() + 30
while len(tree(zygote.proc.pid)) < 9 and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(0.5)
print(*tree(zygote.proc.pid), flush=True)
os._exit(0)  # no atexit clean-up, as if the app were killed
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    pids = [int(p) for p in done.stdout.split()]
    # bubblewrap, its init, the zygote, the job's keeper, init and worker, the next job's keeper, init and worker
    assert len(pids) >= 9, done.stdout

    deadline = time.monotonic() + 5
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if _running(pid)]
