"""Programmatic checks in a real browser: an analyst proposes a check, a peer verifies it and the artifact by
voting, the curator runs the release gate (passes on the accepted artifact, fails on a known wrong output) and
cuts a release; an evaluator uploads a zip of two agent runs' output folders and reads in the run's details which
check failed, why, and the output table."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import make_engine, session_scope
from curation.models import CuratedCandidate, Role, Stage
from curation.services import releases as rel
from curation.services.annotation import submit_analysis
from curation.services.programmatic import import_programmatic_tasks, propose_artifact
from curation.services.stages import set_stage
from exports.programmatic_part import ProgrammaticTaskRelease
from tests import factories as f
from tests.browser.helpers import click, idle, shot, sign_in, sign_out

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("os_sandbox")]
CODE = ("import pandas as pd\n\ndef no_missing_deaths(ground_truth):\n"
        "    return bool(pd.read_csv('clean.csv')['deaths'].notna().all())\n")


def open_checks_page(page) -> None:
    page.get_by_role("link", name="Programmatic checks").click()
    idle(page)
    page.get_by_text("Drop storms with no deaths count").first.wait_for(timeout=60_000)


def _zip(folders: dict[str, dict[str, str]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for task, files in folders.items():
            for name, text in files.items():
                z.writestr(f"{task}/{name}", text)
    return buffer.getvalue()


def test_propose_verify_release_a_check_then_score_an_output_folder(browser, live_app, shots: Path, tmp_path):
    cfg = live_app.settings
    engine = make_engine(cfg.resolved_database_url)
    ana, bob = f.user(engine, "ana"), f.user(engine, "bob")
    cura = f.user(engine, "cura", Role.CURATOR)
    f.user(engine, "evie", Role.EVALUATOR)
    ds = f.dataset(engine, cfg.datasets_store, assign=[ana, bob])
    for u in (ana, bob):
        f.full_analysis(engine, u, ds.id)
        with session_scope(engine) as s:
            submit_analysis(session=s, actor=u, dataset_id=ds.id)
    with session_scope(engine) as s:
        set_stage(session=s, actor=cura, dataset_id=ds.id, stage=Stage.REVIEW)
        (task,) = import_programmatic_tasks(session=s, actor=cura, dataset_id=ds.id, accept=False, tasks=[
            ProgrammaticTaskRelease(key="storms_clean", input_files=["data.csv"],
                                    prompt="Drop storms with no deaths count; write clean.csv.")])
        artifact = propose_artifact(session=s, actor=ana, task_id=task.id, path="clean.csv",
                                    data=b"deaths,masfem,wind,year\n10,2.5,100,1990\n0,8.1,80,1991\n").id
    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    try:
        # 1. an analyst proposes a check
        sign_in(page, live_app.url, "ana")
        open_checks_page(page)
        page.get_by_text("➕ Propose a new check").click()
        page.get_by_label("Function label", exact=True).fill("Data Completeness")
        page.get_by_label("Metric", exact=True).fill("No missing deaths")
        code = page.get_by_role("textbox", name=re.compile("^Check code"))
        code.fill(CODE)
        page.get_by_role("textbox", name=re.compile("^Ground-truth artifact")).fill("clean.csv")
        shot(page, shots / "01-analyst-proposes-a-check.png", code)
        click(page, "Propose this check")
        page.get_by_text("No missing deaths").first.wait_for(timeout=60_000)
        with session_scope(engine) as s:
            check = s.exec(select(CuratedCandidate).where(CuratedCandidate.role == "check")).one().id
        shot(page, shots / "02-proposed.png", page.locator(f".st-key-prog-item-{check}"))
        sign_out(page)

        # 2. a peer verifies the check and the artifact
        sign_in(page, live_app.url, "bob")
        open_checks_page(page)
        for target in (check, artifact):
            item = page.locator(f".st-key-prog-item-{target}")
            groups = item.locator("[data-testid=stButtonGroup]")
            groups.first.wait_for(timeout=60_000)
            groups.first.get_by_text("Yes", exact=True).click()  # the first detail question
            idle(page)
            groups.last.get_by_text("Accept", exact=True).click()  # the verdict, saved on click
            idle(page)
        page.locator(f".st-key-prog-item-{artifact}").get_by_text("accepted").first.wait_for(timeout=60_000)
        shot(page, shots / "03-peer-verified.png", page.locator(f".st-key-prog-item-{check}"))
        sign_out(page)

        # 3. the curator runs the release gate: passes on the artifact, fails on a known wrong output
        sign_in(page, live_app.url, "cura")
        open_checks_page(page)
        item = page.locator(f".st-key-prog-item-{check}")
        item.get_by_role("button", name="Run the release gate").click()
        page.get_by_text("1 of 1 checks released").wait_for(timeout=120_000)
        item = page.locator(f".st-key-prog-item-{check}")
        item.get_by_text("🚀 released").first.click()  # a released check is folded: open it
        item.get_by_text(re.compile("Released: it passes on the accepted artifacts")).wait_for(timeout=30_000)
        shot(page, shots / "04-gate-released.png", item)
        sign_out(page)
        with session_scope(engine) as s:
            rel.cut_release(session=s, actor=cura, version="1.0.0", notes="", artifacts=cfg.artifact_store(),
                            store=cfg.datasets_store)

        # 4. an evaluator scores two agent runs' output folders
        runs = [tmp_path / "run-good.zip", tmp_path / "run-missing.zip"]
        runs[0].write_bytes(_zip({"storms_clean": {"clean.csv": "deaths,masfem\n10,2.5\n0,8.1\n"}}))
        runs[1].write_bytes(_zip({"storms_clean": {"clean.csv": "deaths,masfem\n10,2.5\n,8.1\n"}}))
        sign_in(page, live_app.url, "evie")
        page.get_by_role("link", name="Scoring runs").click()
        idle(page)
        page.get_by_text("Programmatic checks (one zip").click()
        page.locator('input[type="file"]').first.set_input_files([str(p) for p in runs])
        page.get_by_text("run-missing.zip").first.wait_for()
        page.get_by_label("Agent", exact=True).fill("DataSci agent")
        shot(page, shots / "05-upload.png")
        page.get_by_role("button", name="Score").filter(visible=True).click()
        page.get_by_text("Run 1 succeeded").wait_for(timeout=180_000)
        shot(page, shots / "06-run-succeeded.png")
        page.get_by_role("link", name="Run details").click()
        idle(page)
        page.get_by_text("Output files").wait_for(timeout=60_000)
        page.get_by_label("Task folder").click()
        page.get_by_role("option").filter(has_text="run-missing.zip").click()
        idle(page)
        page.locator('[data-testid="stExpander"]').get_by_text("Failed: the check ran and returned False").wait_for(
            timeout=60_000)
        page.get_by_text("The check's code (release 1.0.0)").wait_for(timeout=30_000)
        shot(page, shots / "07-drilldown-failed-check.png")
        shot(page, shots / "08-output-table.png", page.get_by_text("Output files"))
        assert page.get_by_text("clean.csv: 2 rows × 2 columns").count() == 1
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
    finally:
        page.close()
        engine.dispose()


def test_run_details_say_the_checks_line_never_a_server_traceback_and_why_a_pickle_was_withheld(
        browser, live_app, shots: Path, tmp_path):
    """Issue 29, point 9 (the drill-down printed a server traceback under its sentence) and issue 26's withheld
    pickle, as an evaluator reads them."""
    import base64
    import hashlib

    import joblib
    from sklearn.linear_model import LinearRegression

    from curation.models import RunStatus
    from curation.services.scoring import execute_run, register_run
    from exports.programmatic_part import ProgrammaticArtifact, ProgrammaticCheck

    cfg = live_app.settings
    engine = make_engine(cfg.resolved_database_url)
    cura = f.user(engine, "cura", Role.CURATOR)
    evie = f.user(engine, "evie", Role.EVALUATOR)
    ds = f.dataset(engine, cfg.datasets_store)
    seeded = {"released": True, "sentence": "Released (seeded).", "on_accepted": {"status": "true"}, "on_wrong": []}
    clean = b"deaths,masfem\n10,2.5\n"
    checks = [ProgrammaticCheck(id="c1", task_type="data cleaning & preprocessing", function="Data Completeness",
                                metric="deaths kept", gate=seeded, code=(
                                    "import pandas as pd\n\ndef deaths(ground_truth):\n"
                                    "    frame = pd.read_csv('clean.csv')\n"
                                    "    return bool(frame['deaths'].notna().all())\n")),
              ProgrammaticCheck(id="c2", task_type="predictive modeling", function="Model", metric="model saved",
                                gate=seeded, code="import joblib\n\ndef fitted(ground_truth):\n"
                                                  "    return joblib.load('model.pkl') is not None\n")]
    task = ProgrammaticTaskRelease(key="storms_clean", prompt="Drop storms with no deaths count; write clean.csv.",
                                   input_files=["data.csv"], checks=checks, artifacts=[ProgrammaticArtifact(
                                       path="clean.csv", sha256=hashlib.sha256(clean).hexdigest(), size=len(clean),
                                       content_b64=base64.b64encode(clean).decode())])
    with session_scope(engine) as s:
        import_programmatic_tasks(session=s, actor=cura, dataset_id=ds.id, tasks=[task], run_gate=False)
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=cura, version="1.0.0", notes="", artifacts=cfg.artifact_store(),
                        store=cfg.datasets_store)
    model = io.BytesIO()
    joblib.dump(LinearRegression().fit([[0], [1]], [0, 1]), model)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("storms_clean/clean.csv", "masfem\n2.5\n")  # no deaths column: the check raises KeyError
        z.writestr("storms_clean/model.pkl", model.getvalue())
    with session_scope(engine) as s:
        run = register_run(session=s, actor=evie, release_version="1.0.0", files=[("run.zip", buffer.getvalue())],
                           agent="agent-x", kind="programmatic", artifacts=cfg.artifact_store(), max_bytes=10_000_000)
    done = execute_run(engine, run.id, artifacts=cfg.artifact_store())
    assert done.status == RunStatus.SUCCEEDED.value, done.message
    page = browser.new_page()
    try:
        sign_in(page, live_app.url, "evie", open_page="Run details")
        page.get_by_text("Output files").wait_for(timeout=60_000)
        expanders = page.locator('[data-testid="stExpander"]')
        expanders.get_by_text(re.compile(r"KeyError: 'deaths' at line 5 of the check's code")).wait_for(
            timeout=30_000)
        expanders.get_by_text(re.compile(r"model.pkl is a pickle that holds .*LinearRegression")).first.wait_for(
            timeout=30_000)
        shot(page, shots / "09-drilldown-no-traceback.png", expanders.first)
        shot(page, shots / "10-withheld-pickle.png", expanders.filter(has_text="model.pkl").last)
        body = page.locator("body").inner_text()
        assert "Traceback" not in body and 'File "/' not in body and "job.py" not in body
    except Exception:
        page.screenshot(path=shots / "failure-no-traceback.png")
        print(live_app.log.read_text()[-4000:])
        raise
    finally:
        page.close()
        engine.dispose()
