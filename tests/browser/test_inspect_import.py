"""An evaluator imports an inspect_ai log on the Runs page in a real browser: the log of `inspect eval
forkpaths/analyses` (inspect's mockllm answering), a truncated copy named with its reason, the run scored, and
the transcripts read in Run details."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import click, idle, release_hurricane, shot, sign_in
from tests.inspect_support import inspect_entry_point, scripted_model  # noqa: F401 - fixture

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("inspect_entry_point")]

ANALYSIS = {"cvars": {"ivs": [{"description": "femininity of the name", "columns": ["masfem"]}],
                      "dv": {"description": "deaths", "columns": ["alldeaths"]}, "controls": []},
            "transform_code": "def transform(df):\n    return df",
            "m_code": "def model(df):\n    import statsmodels.formula.api as smf\n"
                      "    return smf.ols('alldeaths ~ masfem', data=df).fit()"}


def test_an_inspect_log_is_imported_on_the_runs_page_and_its_transcript_read(browser, live_app, shots: Path,
                                                                              shared_blade: Path, tmp_path: Path,
                                                                              monkeypatch):
    from inspect_ai import eval as inspect_eval

    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(live_app.settings.resolved_data_dir))  # the app's, as a team's

    release_hurricane(live_app, shared_blade)
    with ThreadPoolExecutor(1) as pool:  # inspect runs its own event loop; Playwright's holds this thread's
        logs = pool.submit(inspect_eval, "forkpaths/analyses",
                           task_args={"release": str(live_app.settings.releases_store / "1.0.0")},
                           model=scripted_model(lambda messages, tools: json.dumps(ANALYSIS)), epochs=2,
                           log_dir=str(tmp_path / "logs"), display="none").result()
    assert logs[0].status == "success"
    log = next((tmp_path / "logs").glob("*.eval"))
    cut = tmp_path / "cut.eval"
    cut.write_bytes(log.read_bytes()[:2000])
    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    try:
        sign_in(page, live_app.url, "evie")
        page.get_by_role("link", name="Scoring runs").click()
        idle(page)
        page.get_by_text("Import inspect_ai logs").click()
        page.get_by_text("Each sample's final answer is scored").wait_for()
        page.locator('input[type="file"]').nth(1).set_input_files([str(log), str(cut)])
        page.get_by_text("cut.eval").first.wait_for()
        page.get_by_label("Agent name for these runs").fill("inspect generate")
        shot(page, shots / "01-upload.png", page.get_by_text("Import inspect_ai logs"))
        click(page, "Import and score")
        expect(page.get_by_text(re.compile(r"sample answer\(s\) imported; scoring run\(s\) #1 queued"))
               ).to_be_visible(timeout=60_000)
        expect(page.get_by_text(re.compile(r"The inspect log cut\.eval cannot be read \(a \.eval log is a zip file"))
               ).to_be_visible()
        expect(page.get_by_text("Run 1 succeeded")).to_be_visible(timeout=120_000)
        shot(page, shots / "02-imported.png", page.get_by_text("Import inspect_ai logs"))

        page.get_by_role("link", name="Run details").click()
        idle(page)
        expect(page.get_by_text("From the inspect_ai log")).to_be_visible(timeout=60_000)
        expect(page.get_by_text("Transcripts")).to_be_visible()
        expect(page.get_by_text("Research question").first).to_be_visible()
        shot(page, shots / "03-transcript.png", page.get_by_text("Transcripts"))
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
