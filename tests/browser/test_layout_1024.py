"""The annotate page at 1024 px and 1440 px in Chromium: no button label cut with an ellipsis, no clipped
picker or chip, no "Deploy" button; the pages issue 29 touched (new user, programmatic votes, meeting, releases)
at 1024 px; screenshots for a person to look at."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from curation.db import make_engine, session_scope
from curation.models import Role
from curation.services.annotation import TransformInput, VariableInput, save_transform, save_variable
from evaluation.specs import ColumnMapping, ColumnRef, VariableType
from tests import factories as f
from tests.browser.helpers import AppServer, LiveApp, click, idle, pick, shot, sign_in, sign_out, tab

pytestmark = pytest.mark.browser
LITERAL = "wind :x: in $km/h$ *peak*"

# Every element under ``root`` whose text does not fit (the browser cut it, usually with an ellipsis).
# Inputs count by their value (a selectbox shows its choice in one).
CUT = """(root) => [...root.querySelectorAll('*')]
  .map(e => [e, e.tagName === 'INPUT' ? e.value : (e.children.length === 0 ? e.textContent.trim() : '')])
  .filter(([e, text]) => text && e.scrollWidth > e.clientWidth + 1)
  .map(([e, text]) => text)"""
SHOWN = """(root) => root.innerText + ' ' + [...root.querySelectorAll('input')].map(i => i.value).join(' ')"""


def _cut(locator) -> list[str]:
    return locator.evaluate(CUT)


@pytest.fixture(scope="module")
def annotated_folder(app_server: AppServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder whose data holds one analyst's analysis, seeded once for both widths: the test only looks (it
    opens forms and saves nothing), so the second width sees exactly what the first saw."""
    folder = tmp_path_factory.mktemp("layout")
    _seed_analysis(app_server.serve(folder))
    return folder


@pytest.fixture
def annotated_app(app_server: AppServer, annotated_folder: Path) -> LiveApp:
    """The app on that folder (another test may have used the server since)."""
    return app_server.serve(annotated_folder)


def _seed_analysis(live_app: LiveApp) -> None:
    engine = make_engine(live_app.settings.resolved_database_url)
    analyst = f.user(engine, "ana")
    ds = f.dataset(engine, live_app.settings.datasets_store, assign=[analyst])
    f.full_analysis(engine, analyst, ds.id)
    with session_scope(engine) as s:  # a second transform with a long name, to be chosen as a parent
        save_transform(session=s, actor=analyst, dataset_id=ds.id, data=TransformInput(
            spec_name="log_deaths_with_a_rather_long_name", verb="derive", code="df['w2'] = df['wind'] * 2",
            mapping=[ColumnMapping(inputs=["wind"], output="w2")]))
    with session_scope(engine) as s:  # text that Markdown would turn into an emoji, LaTeX and emphasis
        save_variable(session=s, actor=analyst, dataset_id=ds.id, data=VariableInput(
            variable_type=VariableType.CONTROL, concept=LITERAL, rationale="costs $5 and $6",
            columns=[ColumnRef(name="year", rationale="*year* :man:")]))
    engine.dispose()


@pytest.mark.parametrize("width", [1024, 1440])
def test_annotate_page_fits_at_common_widths(browser, annotated_app: LiveApp, shots: Path, width: int):
    live_app = annotated_app
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        sign_in(page, live_app.url, "ana")
        page.get_by_text("Stage-1 progress").wait_for()
        page.locator(".js-plotly-plot").filter(visible=True).first.wait_for()
        page.locator("[data-testid=stDataFrame]").filter(visible=True).first.wait_for()
        page.wait_for_timeout(1500)  # the charts draw after they mount
        shot(page, shots / f"{width}-01-progress.png")
        assert page.get_by_role("button", name="Deploy").count() == 0  # Streamlit's toolbar is minimal
        page.get_by_role("link", name="Annotate").click()
        idle(page)
        page.get_by_role("tab", name="Transforms").wait_for()
        # user text reaches the reader exactly as typed: no emoji, no LaTeX, no emphasis
        page.locator("strong").get_by_text(f"Control: {LITERAL}", exact=True).wait_for()
        page.get_by_text("costs $5 and $6").wait_for()
        assert page.locator(".katex").count() == 0

        for name in ("Edit", "Delete", "Save variable"):  # the variables' list and form
            for button in page.get_by_role("button", name=name, exact=True).filter(visible=True).all():
                assert _cut(button) == [], f"'{name}' is cut at {width} px"
        tab(page, "Transforms")
        for name in ("Edit", "Delete"):
            for button in page.get_by_role("button", name=name, exact=True).filter(visible=True).all():
                assert _cut(button) == [], f"'{name}' is cut at {width} px"
        shot(page, shots / f"{width}-02-transform-list.png")
        page.get_by_role("button", name="Edit").filter(visible=True).first.click()  # form with values
        idle(page)
        page.get_by_text("Edit transform", exact=True).wait_for()
        idle(page)
        for name in ("+ Add alternative parents", "▶ Run sanity check", "Save transform", "Cancel editing"):
            button = page.get_by_role("button", name=name).filter(visible=True)
            button.scroll_into_view_if_needed()
            assert _cut(button) == [], f"'{name}' is cut at {width} px"
        click(page, "+ Add alternative parents")
        pick(page, "…or alternatively after (branch 2)", "log_deaths_with_a_rather_long_name")
        for picker in page.locator("[data-testid=stMultiSelect]").filter(has_text="after").filter(visible=True).all():
            assert _cut(picker) == [], f"chips of a parents picker are clipped at {width} px"
        shot(page, shots / f"{width}-03-transform-branches.png",
             page.get_by_label("Condition of branch 2 (optional)", exact=True))
        shot(page, shots / f"{width}-05-transform-form.png", page.get_by_role("button", name="Save transform"))

        tab(page, "Models")
        page.get_by_role("button", name="Edit").filter(visible=True).first.click()
        idle(page)
        page.get_by_text("Edit model", exact=True).wait_for()
        idle(page)
        for name in ("▶ Fit model on the data", "Save model", "Cancel editing"):
            button = page.get_by_role("button", name=name).filter(visible=True)
            button.scroll_into_view_if_needed()
            assert _cut(button) == [], f"'{name}' is cut at {width} px"
        family = page.locator("[data-testid=stSelectbox]").filter(has_text="Family").filter(visible=True)
        assert "Linear regression (OLS)" in family.evaluate(SHOWN)
        assert _cut(family) == [], "the family picker is clipped"
        for label in ("Columns used", "Conceptual variables they stand for", "Runs after transforms"):
            picker = page.locator("[data-testid=stMultiSelect]").filter(has_text=label).filter(visible=True)
            assert _cut(picker) == [], f"chips of '{label}' are clipped at {width} px"
        shot(page, shots / f"{width}-06-model-form.png", family)
        shot(page, shots / f"{width}-07-model-pickers.png", page.get_by_role("button", name="Save model"))

        tab(page, "Graph")
        page.locator(".js-plotly-plot").filter(visible=True).first.wait_for()
        shot(page, shots / f"{width}-08-graph.png", page.locator(".js-plotly-plot").filter(visible=True).first)
        tab(page, "Submit")
        shot(page, shots / f"{width}-09-submit.png", page.get_by_role("button", name="Submit my analysis"))
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
    finally:
        page.close()


def test_curator_archives_and_restores_a_dataset_at_1024(browser, live_app, shots: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    f.user(engine, "cura", Role.CURATOR)
    f.dataset(engine, live_app.settings.datasets_store, name="storms")
    f.dataset(engine, live_app.settings.datasets_store, name="mistake")
    engine.dispose()
    page = browser.new_page(viewport={"width": 1024, "height": 900})
    try:
        sign_in(page, live_app.url, "cura", open_page="Datasets")
        pick(page, "Read in full", "mistake")
        click(page, "Archive this dataset")
        page.get_by_text("Archived 'mistake'").wait_for()
        page.get_by_text("hidden from annotation and left out of new releases; its decisions").wait_for()
        shot(page, shots / "1024-datasets-archived.png", page.get_by_role("button", name="Restore this dataset"))
        page.get_by_role("link", name="Releases").click()
        idle(page)
        tab(page, "Cut a release")
        idle(page)
        # neither has ground truth: the cut offers them as datasets to add with their data alone; an archived
        # dataset is not among them
        empty = page.get_by_text(re.compile(r"Also release the datasets without ground truth yet"))
        expect(empty).to_contain_text("storms", timeout=60_000)
        expect(empty).not_to_contain_text("mistake")
        page.get_by_role("link", name="Datasets").click()
        idle(page)
        pick(page, "Read in full", "mistake")
        click(page, "Restore this dataset")
        page.get_by_text("Restored 'mistake'").wait_for()
        shot(page, shots / "1024-datasets-restored.png")
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
    finally:
        page.close()


# Every element in and including ``root`` whose text does not fit: the ellipsis of a button is drawn by its
# label's box, which has children, so CUT (leaves only) does not see it.
CUT_ANY = """(root) => [root, ...root.querySelectorAll('*')]
  .filter(e => e.textContent.trim() && e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent.trim())"""
# The option buttons of a segmented control that stick out of the column that holds it (the column hides them).
STICKS_OUT = """(group) => {
  const holder = group.closest('[data-testid=stColumn]') || group.closest('[data-testid=stMainBlockContainer]');
  const right = holder.getBoundingClientRect().right;
  return [...group.querySelectorAll('button')].filter(b => b.getBoundingClientRect().right > right + 1)
    .map(b => b.innerText);
}"""


def _uncut(page, *names: str) -> None:  # type: ignore[no-untyped-def]
    """Every visible button called one of ``names`` shows its whole label: the label's box draws the ellipsis,
    so the button and everything in it is looked at."""
    for name in names:
        buttons = page.get_by_role("button", name=name).filter(visible=True).all()
        assert buttons, f"no button '{name}'"
        for button in buttons:
            button.scroll_into_view_if_needed()
            assert button.evaluate(CUT_ANY) == [], f"'{name}' is cut at 1024 px"


def test_issue_29_pages_fit_at_1024_and_say_what_they_do(browser, live_app, shots: Path):
    """Issue 29 at 1024 px, one world for four pages: the new-user form keeps what was typed when the password is
    refused (point 3); the programmatic vote row shows "Unsure" whole and the meeting's "Save attendance" whole
    (point 13); the Releases page shows the dataset card and the changelog (point 8), offers every prepared
    download, labels uncut, and its cut message has one period (point 13)."""
    from curation.models import Stage
    from curation.services import releases as rel
    from curation.services.annotation import submit_analysis
    from curation.services.meetings import start_meeting
    from curation.services.programmatic import import_programmatic_tasks, propose_check
    from curation.services.stages import set_stage
    from curation.services.votes import cast_vote
    from exports.programmatic_part import ProgrammaticTaskRelease

    cfg = live_app.settings
    engine = make_engine(cfg.resolved_database_url)
    f.user(engine, "root", Role.ADMIN)
    cura = f.user(engine, "cura", Role.CURATOR)
    ana, bob, cid = (f.user(engine, n) for n in ("ana", "bob", "cid"))
    storms = f.dataset(engine, cfg.datasets_store, assign=[ana, bob, cid])
    floods = f.dataset(engine, cfg.datasets_store, name="floods", assign=[ana, bob])
    ids = {}
    for ds, people in ((storms, (ana, bob, cid)), (floods, (ana, bob))):
        for u in people:
            ids[(ds.id, u.username)] = f.full_analysis(engine, u, ds.id)
            with session_scope(engine) as s:
                submit_analysis(session=s, actor=u, dataset_id=ds.id)
        with session_scope(engine) as s:
            set_stage(session=s, actor=cura, dataset_id=ds.id, stage=Stage.REVIEW)
    with session_scope(engine) as s:  # storms: a split vote, stage 2 closed, a meeting open
        dv = ids[(storms.id, "ana")]["dv"]
        cast_vote(session=s, actor=bob, target_kind="variable", target_id=dv, question="justifiable", answer="yes")
        cast_vote(session=s, actor=cid, target_kind="variable", target_id=dv, question="justifiable", answer="no",
                  explanation="raw counts are skewed")
        set_stage(session=s, actor=cura, dataset_id=storms.id, stage=Stage.CLOSED)
    with session_scope(engine) as s:
        start_meeting(session=s, actor=cura, dataset_id=storms.id, attendee_ids=[ana.id])
    with session_scope(engine) as s:  # floods: a proposed check to vote on
        (task,) = import_programmatic_tasks(session=s, actor=cura, dataset_id=floods.id, accept=False,
                                            run_gate=False, tasks=[ProgrammaticTaskRelease(
                                                key="floods_clean", prompt="Clean the floods.",
                                                input_files=["data.csv"])])
    with session_scope(engine) as s:
        propose_check(session=s, actor=cura, task_id=task.id, fields={
            "task_type": "data cleaning & preprocessing", "function": "Data Completeness",
            "metric": "no missing", "code": "def complete(ground_truth):\n    return True\n"})
    with session_scope(engine) as s:
        rel.cut_release(session=s, actor=cura, version="1.0.0", notes="first", artifacts=cfg.artifact_store(),
                        store=cfg.datasets_store, dataset_names=["storms"])
    engine.dispose()
    page = browser.new_page(viewport={"width": 1024, "height": 900})
    try:
        # point 3: a refused password leaves the other fields as typed
        sign_in(page, live_app.url, "root", open_page="Users & assignments")
        tab(page, "New user")
        page.get_by_label("User name", exact=True).fill("newbie")
        page.get_by_label("Display name", exact=True).fill("New Bie")
        page.get_by_label("Initial password", exact=True).fill("qwertyuiop")
        click(page, "Create user")
        page.get_by_text("one of the most common ones").wait_for()
        expect(page.get_by_label("User name", exact=True)).to_have_value("newbie")
        expect(page.get_by_label("Display name", exact=True)).to_have_value("New Bie")
        _uncut(page, "Create user")
        shot(page, shots / "1024-new-user-refused.png")
        page.get_by_label("Initial password", exact=True).fill("a much better password 7")
        click(page, "Create user")
        page.get_by_text("Created analyst 'newbie'").wait_for()
        expect(page.get_by_label("User name", exact=True)).to_have_value("")
        sign_out(page)

        # point 13: the programmatic vote row at 1024 px
        sign_in(page, live_app.url, "bob", open_page="Programmatic checks")
        page.get_by_text("Does the check test what the task asks for?").first.wait_for(timeout=60_000)
        groups = page.locator("[data-testid=stButtonGroup]").filter(visible=True)
        assert groups.get_by_text("Unsure", exact=True).count() == 2  # the check's two detail questions
        for group in groups.all():
            group.scroll_into_view_if_needed()
            assert group.evaluate(STICKS_OUT) == [], f"cut at 1024 px: {group.evaluate(STICKS_OUT)}"
            assert group.evaluate(CUT_ANY) == [], f"a vote row is clipped at 1024 px: {group.evaluate(CUT_ANY)}"
        shot(page, shots / "1024-programmatic-votes.png", groups.first)
        sign_out(page)

        # point 13: the meeting's attendance row; then the Releases page (point 8)
        sign_in(page, live_app.url, "cura", open_page="Consensus")
        page.get_by_role("button", name="Save attendance").wait_for(timeout=60_000)
        _uncut(page, "Save attendance")
        shot(page, shots / "1024-meeting-attendance.png", page.get_by_role("button", name="Save attendance"))
        page.get_by_role("link", name="Releases").click()
        idle(page)
        tab(page, "Cut a release")
        page.get_by_label("Release notes", exact=True).fill("second")
        click(page, "Cut release")
        cut = page.get_by_text(re.compile(r"Release 1\.0\.1 cut: "))
        cut.first.wait_for(timeout=120_000)
        assert ".." not in cut.first.inner_text() and "…" not in cut.first.inner_text()
        tab(page, "Releases")
        pick(page, "Download release", "1.0.1")
        card = page.get_by_text("📄 Dataset card (README.md of the release)")
        changelog = page.get_by_text("📝 Changelog (against release 1.0.0)")
        card.wait_for()
        changelog.click()
        idle(page)
        page.get_by_text("Compared with release 1.0.0.").first.wait_for()
        shot(page, shots / "1024-releases-changelog.png", changelog)
        for fmt in ("forkpaths", "BLADE"):
            click(page, f"Prepare {fmt} layout (.zip)")
        downloads = page.locator("[data-testid=stDownloadButton]").filter(visible=True)
        expect(downloads).to_have_count(2)  # both prepared archives stay offered
        _uncut(page, "Prepare forkpaths layout (.zip)", "Prepare BLADE layout (.zip)")
        for d in downloads.all():
            d.scroll_into_view_if_needed()
            assert d.evaluate(CUT_ANY) == [], f"a download label is cut at 1024 px: {d.evaluate(CUT_ANY)}"
        shot(page, shots / "1024-releases-downloads.png", downloads.last)
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
    finally:
        page.close()
