"""The annotate page at 1024 px and 1440 px in Chromium: no button label cut with an ellipsis, no clipped
picker or chip, no "Deploy" button; screenshots for a person to look at."""

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
from tests.browser.helpers import click, idle, pick, shot, sign_in, tab

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


@pytest.mark.parametrize("width", [1024, 1440])
def test_annotate_page_fits_at_common_widths(browser, live_app, shots: Path, width: int):
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
