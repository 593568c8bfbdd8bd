"""An analyst records a whole stage-1 analysis in a real browser and submits it; the database agrees."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import make_engine, session_scope
from curation.models import Analysis, ConceptualVariable, StatModel, Transform
from tests import factories as f
from tests.browser.helpers import PASSWORD, click, fill_text, idle, pick, shot, tab

pytestmark = pytest.mark.browser


def test_analyst_records_and_submits_an_analysis(browser, live_app, shots: Path):
    engine = make_engine(live_app.settings.resolved_database_url)
    analyst = f.user(engine, "ana")
    ds = f.dataset(engine, live_app.settings.datasets_store, assign=[analyst])

    page = browser.new_page(viewport={"width": 1400, "height": 1300})
    try:
        _flow(page, live_app, shots)
    except Exception:
        page.screenshot(path=shots / "failure.png")
        print(live_app.log.read_text()[-4000:])
        raise
    _check_database(engine, analyst, ds)
    engine.dispose()


def _flow(page, live_app, shots: Path) -> None:
    page.goto(live_app.url)
    page.get_by_label("User name", exact=True).fill("ana")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.screenshot(path=shots / "01-sign-in.png")
    click(page, "Sign in")
    page.get_by_text("Stage-1 progress").wait_for()
    page.get_by_role("link", name="Annotate").click()
    idle(page)
    page.get_by_text("Do storms with feminine names kill more people?").wait_for()
    page.get_by_role("tab", name="Transforms").wait_for()
    shot(page, shots / "02-annotate.png")

    # an independent variable on an original column
    fill_text(page, "Concept", "femininity of name")
    fill_text(page, "Rationale", "the research question names it", area=True)
    pick(page, "Columns that operationalise it", "masfem")
    fill_text(page, "Why `masfem`?", "rated femininity of the name")
    click(page, "Save variable")
    page.get_by_text("Saved variable 'femininity of name'").wait_for()

    # a transform, sanity-checked in the sandbox, verb and mapping pre-filled from what it did
    tab(page, "Transforms")
    fill_text(page, "Name", "log_deaths")
    fill_text(page, "Specification", "log of deaths plus one")
    fill_text(page, "Code (pandas statements acting on `df`)", "df['log_deaths'] = np.log(df['deaths'] + 1)",
              area=True)
    click(page, "▶ Run sanity check")
    page.get_by_text(re.compile("Sanity check passed")).wait_for(timeout=60_000)
    page.get_by_text("created:").wait_for()
    shot(page, shots / "03-transform-checked.png", page.get_by_text("Verb and mapping below were filled in"))
    fill_text(page, "Rationale", "deaths are heavily skewed", area=True)
    click(page, "Save transform")
    page.get_by_text("Saved transform 'log_deaths'").wait_for()

    # a dependent variable on the derived column
    tab(page, "Conceptual variables")
    pick(page, "Type", "DV — dependent variable: the outcome")
    fill_text(page, "Concept", "deaths")
    fill_text(page, "Rationale", "the outcome of the question", area=True)
    pick(page, "Columns that operationalise it", "log_deaths  ⟵ log_deaths")
    fill_text(page, "Why `log_deaths  ⟵ log_deaths`?", "log scale tames the skew")
    click(page, "Save variable")
    page.get_by_text("Saved variable 'deaths'").wait_for()

    # a model, fitted in the sandbox
    tab(page, "Models")
    fill_text(page, "Specification", "OLS of log deaths on femininity")
    fill_text(page, "Code (fits the model on `df`)",
              "import statsmodels.formula.api as smf\nmodel = smf.ols('log_deaths ~ masfem', data=df).fit()",
              area=True)
    pick(page, "Columns used", "masfem")
    pick(page, "Columns used", "log_deaths  ⟵ log_deaths")
    pick(page, "Conceptual variables they stand for", "IV: femininity of name")
    pick(page, "Conceptual variables they stand for", "DV: deaths")
    pick(page, "Runs after transforms", "log_deaths")
    click(page, "▶ Fit model on the data")
    page.get_by_text(re.compile("OLS Regression Results")).first.wait_for(timeout=60_000)
    shot(page, shots / "04-model-fitted.png", page.get_by_text("The model was fitted"))
    click(page, "Save model")
    page.get_by_text("Saved model 'OLS of log deaths on femininity'").wait_for()

    tab(page, "Graph")
    page.wait_for_timeout(800)
    shot(page, shots / "05-graph.png", page.get_by_text("every alternative branch is drawn"))

    tab(page, "Submit")
    page.get_by_text("I have finished my analysis of this dataset").click()
    idle(page)
    click(page, "Submit my analysis")
    page.get_by_text("Analysis submitted and locked").wait_for()
    shot(page, shots / "06-submitted.png")



def _check_database(engine, analyst, ds) -> None:
    with session_scope(engine) as s:
        analysis = s.exec(select(Analysis).where(Analysis.annotator_id == analyst.id)).one()
        assert analysis.dataset_id == ds.id and analysis.status == "submitted"
        variables = s.exec(select(ConceptualVariable).where(ConceptualVariable.analysis_id == analysis.id)).all()
        assert sorted((v.variable_type, v.concept) for v in variables) == [("DV", "deaths"),
                                                                            ("IV", "femininity of name")]
        (t,) = s.exec(select(Transform).where(Transform.analysis_id == analysis.id)).all()
        assert t.verbs == ["derive"]
        assert t.mapping == [{"inputs": ["deaths"], "output": "log_deaths"}]  # pre-filled by the check
        assert t.last_check and t.last_check["ok"] is True
        dv = next(v for v in variables if v.variable_type == "DV")
        assert dv.columns[0]["origin"] == "derived" and dv.columns[0]["producer_id"] == t.id
        (m,) = s.exec(select(StatModel).where(StatModel.analysis_id == analysis.id)).all()
        assert m.last_check and "OLS Regression Results" in m.last_check["summary"]
        assert set(m.variable_ids) == {v.id for v in variables} and m.transform_ids == [t.id]
