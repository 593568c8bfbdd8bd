"""What the browser tests share: serving the app as a user runs it, waiting for Streamlit, the few gestures
every flow makes (click, sign in, read a metric, take a screenshot), and the released BLADE dataset several
flows start from."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect
from sqlalchemy.engine import Engine

from curation.bootstrap import initialise
from curation.db import make_engine, session_scope
from curation.models import Role, User
from curation.services import releases as rel
from curation.services.blade_import import import_blade
from curation.services.sso import streamlit_auth_args
from curation.settings import Settings
from tests import factories as f

PROJECT_ROOT = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = "admin password 1"
PASSWORD = f.PASSWORD


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveApp:
    """A served app: its address, its settings (as the app reads them), its log, and the ``.env`` file the app
    reads again on every run (``configure`` writes it: how an operator changes a setting while it runs)."""

    url: str
    settings: Settings
    log: Path
    env_file: Path
    kept: Mapping[str, str] = field(default_factory=dict)  # settings the .env must keep (the shared server's)

    def configure(self, values: Mapping[str, str]) -> None:
        """Set ``values`` (``FORKPATHS_*`` settings) in the app's ``.env``; the app's next run reads them."""
        write_env_file(self.env_file, {**self.kept, **values})


def write_env_file(path: Path, values: Mapping[str, str]) -> None:
    """Write a ``.env`` file in one step (a new file renamed over the old): a run of the app never reads half
    of it, and the file's identity changes, so the app reads it again."""
    for key, value in values.items():
        if any(c in value for c in '"\\\n'):
            raise ValueError(f"{key}: a .env value here cannot hold quotes, backslashes or new lines: {value!r}")
    fresh = path.with_name(f".env.{os.getpid()}.tmp")
    fresh.write_text("".join(f'{k}="{v}"\n' for k, v in values.items()), encoding="utf-8")
    os.replace(fresh, path)


@contextmanager
def configured(app: LiveApp, values: Mapping[str, str]) -> Iterator[LiveApp]:
    """``app`` with ``values`` set in its ``.env`` (for a ``with`` beside the server those settings point at)."""
    app.configure(values)
    yield app


def llm_env(url: str) -> dict[str, str]:
    """The settings of an app whose LLM is the scripted server at ``url`` (no retries: a wrong script fails fast)."""
    return {"FORKPATHS_LLM_BASE_URL": url, "FORKPATHS_LLM_MODEL": "judge-model", "FORKPATHS_LLM_MAX_RETRIES": "0"}


_SERVER_SETTINGS = {"FORKPATHS_ADMIN_PASSWORD": ADMIN_PASSWORD, "FORKPATHS_LOAD_STARTER_DATASETS": "false"}


def _server_env(values: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without its ``FORKPATHS_*`` variables, with ``values`` instead."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("FORKPATHS_")}, **values}


def _settings_of(values: Mapping[str, str]) -> Settings:
    """The settings an app with exactly the ``FORKPATHS_*`` variables ``values`` reads."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(_server_env(values))
    try:
        return Settings()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _start_streamlit(cwd: Path, env: Mapping[str, str], log: Path,
                     extra_args: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """``streamlit run`` the app from ``cwd``; returns once it answers its health check."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(PROJECT_ROOT / "annotate_app" / "app.py"),
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", *extra_args],
        cwd=cwd, env=dict(env), stdout=log.open("w"), stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            pytest.fail(f"the app did not start; its log:\n{log.read_text()[-3000:]}")
        time.sleep(0.3)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def serving(tmp_path: Path, extra_env: Mapping[str, str] | None = None) -> Iterator[LiveApp]:
    """The app as a user runs it (streamlit run), a server of its own, on its own SQLite file and data folder
    under ``tmp_path``, with ``extra_env`` (``FORKPATHS_*`` settings) on top; stopped when the block ends.
    For settings read only at start (single sign-on); other tests share one server (:class:`AppServer`)."""
    values = {**_SERVER_SETTINGS, "FORKPATHS_DATA_DIR": str(tmp_path / "data"), **(extra_env or {})}
    settings = _settings_of(values)
    initialise(settings)
    log = tmp_path / "streamlit.log"
    # single sign-on, when extra_env configures it (as forkpaths run)
    proc, url = _start_streamlit(tmp_path, _server_env(values), log, streamlit_auth_args(settings))
    try:
        yield LiveApp(url, settings, log, tmp_path / ".env")
    finally:
        _stop(proc)


class AppServer:
    """One app server (streamlit run) for many tests, one after the other: one per pytest(-xdist) worker.

    Each test still gets its own SQLite file and data folder: the app reads its settings from the ``.env`` file
    of its working folder on every run (an operator's way to change them without a restart), and its database
    and background workers are kept per database and data folder. ``serve`` points that file at the test's
    folder, so the test's first page load finds only its own data; nothing else is shared but the process (its
    imports, the sandbox's template process started at its first start-up).

    A test's database starts as a copy of one initialised here once (migrated, with the first admin): migrating a
    new SQLite file and hashing the admin's password took seconds per test on a busy machine."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env_file = folder / ".env"
        self.log = folder / "streamlit.log"
        self._template = self._initialised(folder / "template")
        write_env_file(self.env_file, {"FORKPATHS_DATA_DIR": str(folder / "no-test-yet")})
        self._proc, self.url = _start_streamlit(folder, _server_env(_SERVER_SETTINGS), self.log, [])

    def serve(self, root: Path, extra_env: Mapping[str, str] | None = None) -> LiveApp:
        """The app, from its next run on, on the SQLite file and data folder under ``root`` (created and
        initialised here, as at the app's start), with ``extra_env`` in its ``.env``."""
        if self._proc.poll() is not None:
            pytest.fail(f"the shared app server stopped (exit {self._proc.returncode}); its log:\n"
                        f"{self.log.read_text()[-3000:]}")
        kept = {"FORKPATHS_DATA_DIR": str(root / "data")}
        settings = _settings_of({**_SERVER_SETTINGS, **kept, **(extra_env or {})})
        database = settings.resolved_data_dir / "forkpaths.db"
        if not database.exists():
            database.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self._template, database)
        assert settings.resolved_database_url == f"sqlite:///{database}", settings.resolved_database_url
        initialise(settings).engine.dispose()  # as the app's start-up does; quick on the copy
        app = LiveApp(self.url, settings, self.log, self.env_file, kept)
        app.configure(dict(extra_env or {}))
        return app

    def close(self) -> None:
        _stop(self._proc)

    @staticmethod
    def _initialised(root: Path) -> Path:
        """A database initialised as at the app's first start (in WAL mode: checkpointed, so the file is whole)."""
        report = initialise(_settings_of({**_SERVER_SETTINGS, "FORKPATHS_DATA_DIR": str(root / "data")}))
        with report.engine.connect() as conn:
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        report.engine.dispose()
        return root / "data" / "forkpaths.db"


def _script_run_probe() -> str:
    """A page script that counts the app's script runs on its WebSocket: each rerun the page asks for (a
    ``rerun_script`` BackMsg), each run the server starts (``new_session``) and each run it finishes
    (``script_finished``, not counting a run cut short for the next one). Field numbers come from Streamlit's
    own protobuf descriptors, so an upgrade that renumbers them cannot silently break the probe."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    fields = {
        "RERUN_TAG": BackMsg.DESCRIPTOR.fields_by_name["rerun_script"].number * 8 + 2,  # length-delimited
        "STARTED": ForwardMsg.DESCRIPTOR.fields_by_name["new_session"].number,
        "FINISHED": ForwardMsg.DESCRIPTOR.fields_by_name["script_finished"].number,
        "EARLY": ForwardMsg.ScriptFinishedStatus.Value("FINISHED_EARLY_FOR_RERUN"),
    }
    js = """(() => {
  if (window.__fpRuns) return;
  const runs = window.__fpRuns = {seq: 0, requested: 0, started: 0, finished: 0, finishedAt: 0, acked: 0};
  const bytes = (d) => d instanceof ArrayBuffer ? new Uint8Array(d)
    : ArrayBuffer.isView(d) ? new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : null;
  const varint = (b, at) => {
    let v = 0, mul = 1;
    for (;;) { const x = b[at.p++]; v += (x & 0x7f) * mul; if (x < 0x80 || at.p >= b.length) return v; mul *= 128; }
  };
  const onMessage = (ev) => {  // the top-level fields of one ForwardMsg
    const b = bytes(ev.data);
    if (!b) return;
    const at = {p: 0};
    while (at.p < b.length) {
      const tag = varint(b, at), field = Math.floor(tag / 8), wire = tag & 7;
      if (field === STARTED) runs.started = ++runs.seq;
      if (wire === 0) {
        const v = varint(b, at);
        if (field === FINISHED && v !== EARLY) { runs.finished = ++runs.seq; runs.finishedAt = performance.now(); }
      } else if (wire === 2) {
        const length = varint(b, at);  // read first: `at.p += varint(...)` would add to the old position
        at.p += length;
      }
      else if (wire === 1) at.p += 8;
      else if (wire === 5) at.p += 4;
      else return;
    }
  };
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    if (!this.__fpWatched) { this.__fpWatched = true; this.addEventListener("message", onMessage); }
    const b = bytes(data);
    if (b && b.length && b[0] === RERUN_TAG) runs.requested = ++runs.seq;
    return send.call(this, data);
  };
})();"""
    for name, value in fields.items():
        js = js.replace(name, str(value))
    return js


SCRIPT_RUN_PROBE = _script_run_probe()

# True once the last rerun the page asked for has started on the server and a run has finished after it, and
# the page shows it (Streamlit applies a message a moment after it arrives: 50 ms of grace).
_RUNS_SETTLED = """() => {
  const r = window.__fpRuns, app = document.querySelector('[data-testid="stApp"]');
  return r.requested > 0 && r.started > r.requested && r.finished > r.started
    && performance.now() - r.finishedAt > 50 && app !== null
    && app.getAttribute("data-test-connection-state") === "CONNECTED"
    && !["running", "rerunRequested"].includes(app.getAttribute("data-test-script-state"));
}"""


# How long a wait for a state (a text, a locator) may last before the test fails: Playwright's 30 s default was
# too short for a page's first run at load 20-30 on two cores (the whole suite and other work at once). A wait
# ends as soon as the state is there, so this costs a passing test nothing.
WAIT_MS = 90_000


class WatchedBrowser:
    """A Playwright browser whose pages carry ``SCRIPT_RUN_PROBE``, so ``idle`` knows when a run is over.

    It remembers the contexts and pages it opened, and ``close_opened`` (called after every browser test) closes
    them, so that no renderer process outlives its test."""

    def __init__(self, browser: Any) -> None:
        self._browser = browser
        self._opened: list[Any] = []

    def new_context(self, **kwargs: Any) -> Any:
        context = self._browser.new_context(**kwargs)
        context.set_default_timeout(WAIT_MS)
        context.add_init_script(SCRIPT_RUN_PROBE)
        self._opened.append(context)
        return context

    def new_page(self, **kwargs: Any) -> Any:
        page = self._browser.new_page(**kwargs)  # a page of its own context, closed with the page
        page.set_default_timeout(WAIT_MS)
        page.add_init_script(SCRIPT_RUN_PROBE)
        self._opened.append(page)
        return page

    def close_opened(self) -> int:
        """Close every context and page opened since the last call; how many were still open."""
        still_open = 0
        while self._opened:
            item = self._opened.pop()
            with suppress(Exception):  # already closed by the test, or the browser is gone
                is_page = hasattr(item, "is_closed")
                if not (is_page and item.is_closed()):
                    still_open += 1
                    (item.context if is_page else item).close()
        return still_open

    def __getattr__(self, name: str) -> Any:
        return getattr(self._browser, name)


def idle(page: Any) -> None:
    """Wait until Streamlit has finished the script run the last gesture asked for.

    On a page with ``SCRIPT_RUN_PROBE`` (every page of the ``browser`` fixture) this waits for exactly that:
    the rerun requested, started and finished, and the page out of its running state. A gesture that asks for
    no rerun (opening an expander) gets a short grace for a request that leaves late (an upload, a debounce).
    Elsewhere it falls back to waiting out Streamlit's status widget."""
    if not page.evaluate("() => window.__fpRuns !== undefined"):
        page.wait_for_timeout(300)
        page.wait_for_function(
            "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
        page.wait_for_timeout(200)
        return
    if page.evaluate("() => window.__fpRuns.requested <= window.__fpRuns.acked"):
        with suppress(PlaywrightTimeout):
            page.wait_for_function("() => window.__fpRuns.requested > window.__fpRuns.acked", timeout=250,
                                   polling=25)
    page.wait_for_function(_RUNS_SETTLED, timeout=60_000, polling=25)
    page.evaluate("() => { window.__fpRuns.acked = window.__fpRuns.seq; }")


def fill_text(page: Any, label: str, value: str, *, area: bool = False) -> None:
    box = page.get_by_label(label, exact=True).filter(visible=True)
    box.fill(value)
    if area:
        box.press("Control+Enter")
    else:
        box.press("Enter")
    idle(page)


def pick(page: Any, label: str, option: str) -> None:
    """Choose ``option`` in a selectbox or multiselect labelled ``label``."""
    page.get_by_label(label, exact=True).filter(visible=True).click()
    page.get_by_role("option", name=option, exact=True).filter(visible=True).click()
    page.keyboard.press("Escape")
    idle(page)


def click(page: Any, name: str, *, exact: bool = False) -> None:
    page.get_by_role("button", name=name, exact=exact).filter(visible=True).click()
    idle(page)


def click_for_toast(page: Any, name: str, message: str) -> None:
    """Press the button ``name`` and wait for the toast ``message`` it brings, then for the run to end. A toast
    is shown as its run goes on and fades after seconds: on a busy machine the rest of the run can outlast it,
    so it is watched for from the click on, not from the run's end."""
    page.get_by_role("button", name=name).filter(visible=True).click()
    page.get_by_text(message).first.wait_for()
    idle(page)


def shot(page: Any, path: Path, anchor: Any = None) -> None:
    """A viewport screenshot with ``anchor`` (a locator) scrolled into view: Streamlit scrolls inside its own
    container, so a full-page screenshot would only show the top."""
    if anchor is not None:
        anchor.scroll_into_view_if_needed()
        anchor.evaluate(_STILL)
    page.screenshot(path=path)


# Resolves once the element has kept its place on screen for three animation frames (the scroll has ended).
_STILL = """(e) => new Promise((done) => {
  let last = null, still = 0;
  const look = () => {
    const top = e.getBoundingClientRect().top;
    still = top === last ? still + 1 : 0;
    last = top;
    if (still >= 3) done(); else requestAnimationFrame(look);
  };
  requestAnimationFrame(look);
})"""


def tab(page: Any, name: str) -> None:
    """Open the tab ``name`` and wait for the rerun it asks for (the app's tabs rerun on change)."""
    handle = page.get_by_role("tab", name=name)
    handle.click()
    idle(page)
    expect(handle).to_have_attribute("aria-selected", "true")


def sign_in(page: Any, url: str, username: str, password: str = PASSWORD, *, open_page: str | None = None) -> None:
    """Sign ``username`` in on the app's sign-in form and, with ``open_page``, follow that navigation link."""
    page.goto(url)
    name = page.get_by_label("User name", exact=True)
    name.wait_for(timeout=60_000)  # a new page's first run: slow on a loaded machine (CI's two busy cores)
    name.fill(username)
    page.get_by_label("Password", exact=True).fill(password)
    click(page, "Sign in", exact=True)  # not "Sign in with <provider>" when single sign-on is configured
    if open_page is not None:
        page.get_by_role("link", name=open_page).click()
        idle(page)


def sign_out(page: Any) -> None:
    """Press "Sign out" and wait for the sign-in form. Waiting for the form, not only for the rerun, matters:
    a navigation that leaves while the sign-out run is still on its way (a loaded machine) closes the page's
    connection before the server ends the session, and the next page signs in again from the cookie."""
    page.get_by_role("button", name="Sign out").filter(visible=True).click()
    page.get_by_role("button", name="Sign in", exact=True).wait_for(timeout=60_000)
    idle(page)


def score_hypotheses(page: Any, answers: Path, shots: Path, upload_shot: str, done_shot: str) -> None:
    """On the Scoring runs page: score ``answers`` (a hypotheses file) as ReAct agent / gpt-4o and wait for run 1
    to succeed, with a screenshot of the form (``upload_shot``) and of the outcome (``done_shot``)."""
    page.get_by_text(re.compile(r"^Hypotheses \(DiscoveryBench")).click()
    page.locator('input[type="file"]').first.set_input_files(str(answers))
    page.get_by_text(re.compile(r"theses\.json")).first.wait_for()
    page.get_by_label("Agent", exact=True).fill("ReAct agent")
    page.get_by_label("Language model", exact=True).fill("gpt-4o")
    shot(page, shots / upload_shot)
    page.get_by_role("button", name="Score").filter(visible=True).click()
    page.get_by_text("Run 1 succeeded").wait_for(timeout=120_000)
    shot(page, shots / done_shot)


def metric(page: Any, label: str) -> str:
    """The value shown by the first ``st.metric`` labelled ``label``."""
    box = page.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def release_hurricane(app: LiveApp, shared_blade: Path) -> tuple[Engine, User]:
    """BLADE's hurricane dataset imported and cut as release 1.0.0 by the curator "cleo", with the evaluator
    "evie" who scores against it; returns the app's engine and the curator."""
    cfg = app.settings
    engine = make_engine(cfg.resolved_database_url)
    curator = f.user(engine, "cleo", Role.CURATOR)
    f.user(engine, "evie", Role.EVALUATOR)
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "hurricane", store=cfg.datasets_store,
                     max_bytes=200 * 2**20)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=cfg.artifact_store(),
                        store=cfg.datasets_store)
    return engine, curator
