"""The LLM candidate generation in a real browser: a curator starts it on the Programmatic checks page, watches
its progress while it runs in the background (the app's job thread on SQLite), and reads the report and the new
candidates (the agreed artifact with its support, the proposed check)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from curation.db import make_engine, session_scope
from curation.models import Role
from curation.services.programmatic import import_programmatic_tasks
from exports.programmatic_part import ProgrammaticTaskRelease
from tests import factories as f
from tests.browser.helpers import click, configured, idle, llm_env, shot, sign_in
from tests.curation.test_programmatic_generation import KEEP, responder
from tests.llm_server import ScriptedLLM

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("os_sandbox")]


def gt_again(request: dict) -> str:
    """The same answers, the check's ground truth written with its folder, as LLMs write it (issue 29, point 4)."""
    return responder(request).replace('"ground_truth": "clean.csv"', '"ground_truth": "gt/clean.csv"')


def test_a_curator_generates_candidates_in_the_background(browser, live_app, tmp_path, shots: Path):
    with ScriptedLLM(gt_again) as server, configured(live_app, llm_env(server.url)) as app:
        server.script = [{"delay": 4, "content": json.dumps({"code": KEEP})}]  # slow enough to see it running
        url, cfg = app.url, app.settings
        engine = make_engine(cfg.resolved_database_url)
        page = browser.new_page(viewport={"width": 1400, "height": 1300})
        try:
            cura = f.user(engine, "cura", Role.CURATOR)
            ds = f.dataset(engine, cfg.datasets_store)
            with session_scope(engine) as s:
                import_programmatic_tasks(session=s, actor=cura, dataset_id=ds.id, accept=False, tasks=[
                    ProgrammaticTaskRelease(key="storms_clean", input_files=["data.csv"],
                                            prompt="Drop storms with no deaths count; write clean.csv.")])
            sign_in(page, url, "cura")
            page.get_by_role("link", name="Programmatic checks").click()
            idle(page)
            page.get_by_text("Propose candidates with the LLM").click()
            page.get_by_label("Samples").fill("3")
            click(page, "Generate candidates for storms_clean")
            page.get_by_text("Generation running").wait_for(timeout=60_000)
            assert page.get_by_role("button", name="Cancel the generation").count() == 1
            shot(page, shots / "01-generation-running.png")
            page.get_by_text("3 of 3 solutions ran in the sandbox").wait_for(timeout=180_000)
            idle(page)
            page.get_by_text("agreed by 2 of 3 samples").first.wait_for(timeout=60_000)
            assert page.get_by_text("deaths above zero").count() >= 1  # the proposed check
            # "gt/clean.csv" is the file clean.csv inside gt/: shown once with its folder, never as gt/gt/clean.csv
            assert page.get_by_text(re.compile(r"ground truth: gt/clean\.csv")).count() >= 1
            assert page.get_by_text(re.compile(r"gt/gt/")).count() == 0
            shot(page, shots / "02-generation-report.png")
            page.get_by_text("The 3 candidate solutions and what each wrote").click()
            page.get_by_text("Sample 3").wait_for()
            shot(page, shots / "03-samples.png")
        except Exception:
            page.screenshot(path=shots / "failure.png")
            raise
        finally:
            page.close()
            engine.dispose()
