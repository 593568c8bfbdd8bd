"""The sandbox's modes and its generic entry point: run_job, the registry, cancelling, the weak fallback."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from evaluation.errors import SandboxError
from evaluation.sandbox import (
    IsolationUnavailable,
    SandboxLimits,
    check_transform,
    configure,
    isolation_status,
    run_job,
    sandbox_job,
    start_transform_check,
)
from evaluation.sandbox import server as sandbox_server
from evaluation.sandbox.describe import Steps, describe_death
from evaluation.sandbox.registry import SHARED_ENGINE_MODULES, engine_modules, lookup, registered


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.csv"
    pd.DataFrame({"x": [1.0, 2.0, 3.0]}).to_csv(path, index=False)
    return path


def test_without_bubblewrap_checks_are_refused_with_what_to_do(data: Path, no_bubblewrap: None) -> None:
    status = isolation_status()

    assert not status.strong_available and status.weak and not status.runs_code
    assert status.detail == "bubblewrap (bwrap) is not installed"
    assert "apt-get install bubblewrap" in status.sentence() and "FORKPATHS_SANDBOX=process" in status.sentence()
    with pytest.raises(IsolationUnavailable, match="The code was not run: bubblewrap .bwrap. is not installed.*"
                                                   "FORKPATHS_SANDBOX=process"):
        check_transform(data_path=data, parent_codes=[], code="df['y'] = 1")


def test_process_mode_runs_code_with_weak_isolation_when_chosen(data: Path, no_bubblewrap: None) -> None:
    configure(mode="process")
    status = isolation_status()
    check = check_transform(data_path=data, parent_codes=[], code="import os\ndf['y'] = os.getpid()")

    assert status.runs_code and status.weak
    assert status.sentence().startswith("Code isolation is weak: bubblewrap (bwrap) is not installed.")
    assert check.ok, check.error
    assert check.preview[0]["y"] > 2  # a plain process: no PID namespace of its own


@pytest.mark.usefixtures("os_sandbox")
def test_process_mode_chosen_where_bubblewrap_works_is_reported_weak() -> None:
    """The admin page and the log warn whenever code runs without the OS boundary, even by choice."""
    configure(mode="process")
    try:
        status = isolation_status()
        assert status.strong_available and status.weak and status.runs_code
        assert status.sentence().startswith("Code isolation is weak by choice: FORKPATHS_SANDBOX=process")
    finally:
        configure(mode="bwrap")
    assert not isolation_status().weak


@pytest.mark.usefixtures("os_sandbox")
def test_an_install_under_tmp_is_refused_with_the_reason(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each job gets a private /tmp: a project under /tmp would vanish inside it, so say so instead of failing
    on an import half-way through a check."""
    from evaluation.sandbox import isolation

    monkeypatch.setattr(isolation, "_project_root", lambda: Path("/tmp/clone"))
    isolation.forget_probe()
    try:
        status = isolation_status()
        assert not status.strong_available and status.detail.startswith("forkpaths runs from /tmp/clone, under /tmp")
        with pytest.raises(IsolationUnavailable, match="under /tmp.*FORKPATHS_SANDBOX=process"):
            check_transform(data_path=data, parent_codes=[], code="df['y'] = 1")
    finally:
        monkeypatch.undo()
        isolation.forget_probe()


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown sandbox mode 'docker'"):
        configure(mode="docker")  # type: ignore[arg-type]


@pytest.mark.usefixtures("os_sandbox")
def test_run_job_runs_a_registered_job_and_returns_json(data: Path) -> None:
    result = run_job("transform_check", {"codes": ["df['y'] = df['x'] + 1\nprint('hi')"], "labels": ["code"]},
                     data_path=data, limits=SandboxLimits(timeout_s=20))

    assert result["ok"] is True
    assert result["preview"][0] == {"x": 1.0, "y": 2.0}
    assert result["stdout"] == "hi\n" and result["seconds"] > 0
    assert set(registered()) >= {"transform_check", "model_check"}


@pytest.mark.usefixtures("os_sandbox")
def test_a_job_that_dies_gets_a_sentence(data: Path) -> None:
    # 3 s, not 1: the limit covers loading the table too, and on a loaded machine (CI's two busy cores) loading
    # even three rows once took over a second, which is another sentence (the test below)
    result = run_job("transform_check", {"codes": ["while True:\n    pass"], "labels": ["code"]}, data_path=data,
                     limits=SandboxLimits(timeout_s=3))

    assert result["ok"] is False and result["error_kind"] == "timeout"
    assert result["error"] == "The code ran longer than the 3 s limit and was stopped (it was running code)."


def test_a_timeout_says_whether_the_table_was_still_loading_or_the_code_was_running() -> None:
    """A job reports each step as it starts it: stopped before the first, it was still loading the table."""
    steps, limits = Steps.for_transform(0, None), SandboxLimits(timeout_s=1)

    def death(events: list[dict[str, object]]) -> tuple[str, str]:
        return describe_death(sandbox_server.Outcome(events=events, timed_out=True, returncode=-9, stderr=""),
                              steps, limits)

    assert death([]) == ("timeout", "Loading the data table took longer than the 1 s limit, so the code did not "
                                    "run; raise the sandbox's time limit or prepare the table's fast copy.")
    assert death([{"event": "step", "index": 0}]) == (
        "timeout", "The code ran longer than the 1 s limit and was stopped (it was running this transform's code).")


@pytest.mark.usefixtures("os_sandbox")
def test_unknown_job_names_are_refused(data: Path) -> None:
    with pytest.raises(SandboxError, match="no sandbox job is registered as 'os.system'"):
        run_job("os.system", {}, data_path=data)


def test_only_engine_modules_may_run_jobs() -> None:
    assert "evaluation.sandbox.code_jobs" in SHARED_ENGINE_MODULES
    sandbox_job("sneaky")(lambda ctx: {"ok": True})  # a module no kind declares: refused when it is looked up
    with pytest.raises(LookupError, match="which no task kind declares among its engine modules"):
        lookup("sneaky")
    assert "sneaky" not in registered()


def test_a_kinds_declared_engine_module_may_run_its_jobs_and_an_undeclared_one_not() -> None:
    """The allowlist is read from the registry of kinds: a kind's engine modules are allowed while it is
    registered, whichever was first (the module's import or the kind's registration)."""
    import dataclasses

    from evaluation.tasks import registered as kind_registered
    from evaluation.tasks import task_kind
    from tests.conformance import toy_kind

    assert "evaluation.hms.expression" in engine_modules()  # the hypotheses kind declares it
    from evaluation.hms.expression import EXPRESSION_JOB

    assert EXPRESSION_JOB in registered() and lookup(EXPRESSION_JOB) is not None
    module = f"{__name__}"
    sandbox_job("toy.echo")(_echo)  # defined in this test module, which no kind declares (yet)
    with pytest.raises(LookupError, match=f"defined in {module}"):
        lookup("toy.echo")
    with kind_registered(dataclasses.replace(toy_kind.KIND, engine_modules=(module,))):
        assert module in engine_modules() and lookup("toy.echo") is _echo
        assert "toy.echo" in registered()
    with pytest.raises(LookupError):
        lookup("toy.echo")  # the kind is gone, and so is its module's place on the list
    assert task_kind("hypotheses").engine_modules == ("evaluation.hms.expression",)


def _echo(ctx):  # type: ignore[no-untyped-def]
    return {"ok": True}


@pytest.mark.usefixtures("os_sandbox")
def test_cancel_kills_the_job_and_says_so(data: Path) -> None:
    handle = start_transform_check(data_path=data, parent_codes=[], code="import time\ntime.sleep(60)",
                                   limits=SandboxLimits(timeout_s=120))
    time.sleep(1.5)
    assert not handle.done() and handle.elapsed >= 1.0
    started = time.monotonic()
    handle.cancel()
    check = handle.result(timeout=30)

    assert time.monotonic() - started < 5
    assert check.error_kind == "cancelled"
    assert check.error is not None and check.error.startswith("The check was cancelled after ")
    zygote = sandbox_server._SANDBOX._zygote
    assert zygote is not None and zygote.alive
    from tests.evaluation.test_sandbox import job_processes

    deadline = time.monotonic() + 5
    while job_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job_processes() == []


def test_the_log_says_isolation_is_weak(tmp_path: Path, no_bubblewrap: None, caplog: pytest.LogCaptureFixture) -> None:
    from curation.services.checks import configure_sandbox

    with caplog.at_level("WARNING"):
        refused = configure_sandbox(mode="bwrap", data_dir=tmp_path)
        weak = configure_sandbox(mode="process", data_dir=tmp_path)

    assert not refused.runs_code and weak.runs_code
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(m.startswith("Code isolation is unavailable: bubblewrap (bwrap) is not installed") for m in warnings)
    assert any(m.startswith("Code isolation is weak: bubblewrap (bwrap) is not installed") for m in warnings)


@pytest.mark.usefixtures("os_sandbox")
def test_a_template_process_is_not_used_after_the_hidden_paths_change(tmp_path: Path) -> None:
    """The zygote's mounts leave out the folders configure() hides; one started before they changed (a process
    that runs several commands in turn, each with its data folder) is replaced, not used."""
    from evaluation.sandbox import isolation

    mode, hidden = isolation.current_mode(), isolation.hidden_paths()
    try:
        configure(mode="bwrap", hidden_paths=[tmp_path / "one"])
        sandbox_server.prewarm(wait=True)
        first = sandbox_server._SANDBOX._zygote
        assert first is not None and first.alive
        configure(mode="bwrap", hidden_paths=[tmp_path / "one"])  # the same setting again: kept
        sandbox_server.prewarm(wait=True)
        assert sandbox_server._SANDBOX._zygote is first
        configure(mode="bwrap", hidden_paths=[tmp_path / "two"])
        sandbox_server.prewarm(wait=True)
        second = sandbox_server._SANDBOX._zygote
        assert second is not None and second is not first and not first.alive
        assert second.hidden == ((tmp_path / "two").resolve(),)
    finally:
        configure(mode=mode, hidden_paths=hidden)
