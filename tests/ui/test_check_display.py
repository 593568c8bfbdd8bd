"""The sanity check's display on the annotate page (issue 8, items 2, 4 and 8) and attacks through the page."""

from __future__ import annotations

import os
import time

import pytest

from tests.ui.conftest import settle, texts

CODE_LABEL = "Code (pandas statements acting on `df`)"


def _annotate(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/annotate.py").run()
    assert not at.exception, at.exception
    return at


def _start(at, code):
    next(w for w in at.text_area if w.label == CODE_LABEL).input(code)
    at.button(key="tf.check").click().run()
    assert not at.exception, at.exception
    return at


def _check(at, code):
    return settle(_start(at, code))


def _codes(at) -> list[str]:
    return [str(c.value) for c in at.code]


def test_printed_output_is_shown_literally_next_to_the_change(ui):
    printed = "deaths :x: $a+b$ **bold** <b>tag</b> `tick`"
    at = _check(_annotate(ui, ui.analyst), f"df['ratio'] = df['deaths'] / df['wind']\nprint({printed!r})")

    shown = texts(at)
    assert "Sanity check passed" in shown and "Rows: 4 → 4 (unchanged)." in shown
    assert "**created:** `ratio`" in shown
    assert "What the code printed" in shown
    assert printed in _codes(at)  # a code block: no emoji, no LaTeX, no Markdown


def test_created_and_changed_columns_come_first_in_the_preview(ui):
    at = _check(_annotate(ui, ui.analyst), "df['wind'] = df['wind'] * 2\ndf['zz_new'] = 1")

    preview = next(d.value for d in at.dataframe if "zz_new" in d.value.columns)
    assert list(preview.columns[:2]) == ["zz_new", "wind"]
    assert "**created:** `zz_new` · **changed:** `wind`" in texts(at)


def test_a_column_name_with_backticks_is_shown_literally(ui):
    at = _check(_annotate(ui, ui.analyst), "df['a`b :x:'] = 1")

    assert "**created:** ``a`b :x:``" in texts(at)


def test_errors_are_shown_literally(ui):
    at = _check(_annotate(ui, ui.analyst), "raise ValueError(':x: $5 and $6 **')")

    assert "Sanity check failed" in texts(at)
    assert any(c.startswith("Line 1 of this transform's code raised ValueError: :x: $5 and $6 **") for c in _codes(at))


def test_a_long_check_shows_elapsed_time_and_can_be_cancelled(ui):
    from evaluation.sandbox import prewarm

    prewarm(wait=True)  # so the job has printed before it is cancelled
    at = _start(_annotate(ui, ui.analyst), "import time\nprint('started', flush=True)\ntime.sleep(60)")
    assert "Running the sanity check…" in texts(at)
    time.sleep(1.0)
    at.run()
    running = next(i.value for i in at.info if "Running the sanity check" in str(i.value))
    elapsed = float(running.split("…")[1].split(" s")[0])
    assert elapsed >= 2.0  # it counts up while the check runs

    started = time.monotonic()
    at.button(key="tf.check_cancel").click().run()

    assert time.monotonic() - started < 10
    shown = texts(at)
    assert "Cancelled: the code was stopped before it finished." in shown
    assert "Sanity check failed" not in shown and "Running the sanity check" not in shown
    assert any(c.startswith("The check was cancelled after ") for c in _codes(at))
    assert "started" in _codes(at)  # what it printed before it was cancelled
    assert not at.exception


def test_a_check_still_running_when_rerun_keeps_its_display(ui):
    at = _start(_annotate(ui, ui.analyst), "import time\ntime.sleep(3)\ndf['late'] = 1")
    assert "Running the sanity check…" in texts(at)
    deadline = time.monotonic() + 30
    while "Sanity check passed" not in texts(at) and time.monotonic() < deadline:
        time.sleep(0.5)
        at.run()
    assert "Sanity check passed" in texts(at)
    verb = next(s for s in at.selectbox if s.label == "Verb")
    assert verb.value == "derive"  # the suggestions arrive when the check finishes


@pytest.mark.usefixtures("os_sandbox")
@pytest.mark.parametrize(
    ("attack", "sentence"),
    [
        ("print(open({password!r}).read())", "raised FileNotFoundError"),
        ("import sqlite3\nsqlite3.connect({db!r}).execute('select * from user').fetchall()",
         "raised OperationalError: unable to open database file"),
        ("import socket\nsocket.create_connection(('127.0.0.1', 5432))",
         "The code tried to open a network connection (to 127.0.0.1:5432); the sandbox allows no network access"),
        ("print(open('/proc/{pid}/environ').read())", "raised FileNotFoundError"),
        ("import os, signal\nos.kill({pid}, signal.SIGKILL)", "The code tried to send a signal to (process {pid})"),
        ("import os\nos.setsid()\nos.fork()", "The code tried to start another process (os.fork)"),
        ("import os\nwhile True:\n    os.fork()", "The code tried to start another process (os.fork)"),
        ("open({outside!r}, 'w').write('x')", "The code tried to write to {outside}, outside its working directory"),
        ("x = bytearray(64 * 1024**3)", "The code tried to use more than"),
    ],
)
def test_attacks_through_the_page_get_a_sentence_not_a_traceback(ui, attack, sentence):
    data_dir = ui.settings.resolved_data_dir
    password = data_dir / "first-admin-password.txt"
    password.write_text("SECRET-PASSWORD")
    values = {"password": str(password), "db": str(data_dir / "forkpaths.db"), "pid": os.getpid(),
              "outside": str(data_dir / "evil.txt")}
    at = _check(_annotate(ui, ui.analyst), attack.format(**values))

    shown = texts(at)
    assert "Sanity check failed" in shown
    assert any(sentence.format(**values) in c for c in _codes(at)), _codes(at)
    assert "SECRET-PASSWORD" not in shown
    assert "evaluation/sandbox" not in shown and "site-packages" not in shown  # no traceback of ours
    assert not (data_dir / "evil.txt").exists()
    assert at.title[0].value.endswith("Annotate")


def test_without_bubblewrap_the_admin_is_told_and_a_check_gets_a_sentence(ui, no_bubblewrap):
    admin = ui.app(ui.admin).run()
    admin.switch_page("app_pages/admin.py").run()
    warning = " ".join(str(w.value) for w in admin.warning)
    assert "Code isolation is unavailable: bubblewrap (bwrap) is not installed" in warning
    assert "FORKPATHS_SANDBOX=process" in warning

    at = _check(_annotate(ui, ui.analyst), "df['x'] = 1")

    assert "Sanity check failed" in texts(at)
    assert any(c.startswith("The code was not run: bubblewrap (bwrap) is not installed") for c in _codes(at))
    assert not at.exception


def test_with_bubblewrap_the_admin_page_has_no_isolation_notice(ui, os_sandbox):
    admin = ui.app(ui.admin).run()
    admin.switch_page("app_pages/admin.py").run()

    assert not [w for w in admin.warning if "isolation" in str(w.value)]
