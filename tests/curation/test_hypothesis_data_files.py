"""Stage-1 supporting code sees all of the query's data files by name in its sandbox working folder, with ``df``
the first table read as the import reads it (a cp1252 CSV, a Stata .dta), on a hand-made DiscoveryBench folder."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import DecisionValidationError
from curation.models import Dataset, HypothesisTask, Role
from curation.services.accounts import create_user
from curation.services.datasets import assign_analysts
from curation.services.discoverybench_import import import_discoverybench
from curation.services.hypotheses import check_hypothesis_code
from curation.services.hypotheses.common import HypothesisInput, HypothesisVariableInput
from curation.services.hypotheses.stage1 import save_hypothesis
from evaluation.sandbox import SandboxLimits
from tests import factories as f
from tests.exports.discoverybench_helpers import make_folder, real_metadata

LIMITS = SandboxLimits(timeout_s=60, memory_mb=2048)
SURVEY = b"CITY,AGE,BMI\n" + b"".join(f"{c},{a},{20 + a * 0.1:.1f}\n".encode()
                                      for c, a in [("Z\xfcrich", 30), ("Caf\xe9 Town", 40), ("Lyon", 50)] * 3)
# cp1252 bytes (0xe9 é, 0xfc ü, 0x92 ’): not UTF-8
PLACES = "CITY,REGION\nZürich,Alps’ north\nCafé Town,Coast\nLyon,Rhône\n".encode("cp1252")
CODE_TWO = """places = pd.read_csv('places.csv', encoding='cp1252')
merged = df.merge(places, on='CITY')
print(sorted(merged['REGION'].unique()), len(merged), df['CITY'].iloc[0])
merged.groupby('REGION')['BMI'].mean()"""


def _stata() -> bytes:
    buf = io.BytesIO()
    pd.DataFrame({"year": [2000, 2001, 2002, 2003], "gdp": [1.0, 1.5, 2.5, 3.0]}).to_stata(buf, write_index=False)
    return buf.getvalue()


@pytest.fixture
def world(engine, store, tmp_path):
    root = tmp_path / "src"
    cols = [{"name": "CITY", "description": "city"}, {"name": "AGE", "description": "age"},
            {"name": "BMI", "description": "bmi"}]
    make_folder(root / "real" / "test", "two_files", {
        0: real_metadata(datasets=[{"name": "survey.csv", "description": "A survey (cp1252).", "columns": {"raw": cols}},
                                   {"name": "places.csv", "description": "Regions (cp1252).",
                                    "columns": {"raw": [{"name": "CITY", "description": "city"},
                                                        {"name": "REGION", "description": "region"}]}}],
                         queries=[[{"qid": 0, "question_type": "context", "question": "Where is BMI higher?"}]]),
        1: real_metadata(datasets=[{"name": "panel.dta", "description": "A Stata panel.",
                                    "columns": {"raw": [{"name": "year", "description": "year"},
                                                        {"name": "gdp", "description": "GDP"}]}}],
                         queries=[[{"qid": 0, "question_type": "relationship", "question": "How does GDP grow?"}]]),
    }, files={"survey.csv": SURVEY, "places.csv": PLACES, "panel.dta": _stata()})
    ana = f.user(engine, "ana")
    with session_scope(engine) as s:
        admin = create_user(session=s, actor=None, username="adm", password=f.PASSWORD, role=Role.ADMIN)
        import_discoverybench(session=s, actor=None, path=root, store=store, max_bytes=50 * 2**20)
    with session_scope(engine) as s:
        ds = s.exec(select(Dataset).where(Dataset.name == "db_real_test_two_files")).one()
        assign_analysts(session=s, actor=admin, dataset_id=ds.id or 0, user_ids=[ana.id or 0])
        tasks = {(t.metadata_k, t.qid): t for t in s.exec(select(HypothesisTask)
                                                           .where(HypothesisTask.dataset_id == ds.id))}
        s.expunge_all()
    return engine, store, ana, tasks


def _check(world, key, code):  # type: ignore[no-untyped-def]
    engine, store, ana, tasks = world
    with session_scope(engine) as s:
        return check_hypothesis_code(session=s, actor=ana, task_id=tasks[key].id, code=code, store=store,
                                     limits=LIMITS)


def test_supporting_code_sees_all_the_query_files_and_df_is_the_first(world, os_sandbox):
    engine, store, ana, tasks = world
    assert list(tasks[(0, 0)].data_files) == ["survey.csv", "places.csv"]
    check = _check(world, (0, 0), CODE_TWO)
    assert check["ok"], check
    # df is survey.csv read in cp1252 (ü decoded), places.csv is there by name
    assert "['Alps’ north', 'Coast', 'Rhône'] 9 Zürich" in check["stdout"], check["stdout"]
    assert check["data_file"] == "survey.csv" and check["files"] == ["survey.csv", "places.csv"]
    assert "Rhône" in (check["summary"] or "")
    # the check is kept with the hypothesis
    with session_scope(engine) as s:
        row = save_hypothesis(session=s, actor=ana, task_id=tasks[(0, 0)].id, check=check, data=HypothesisInput(
            hypothesis="BMI is higher in the Alps' north.", context="three cities",
            variables=[HypothesisVariableInput(name="bmi", column="BMI")], relationship="higher",
            workflow="merge and compare", code=CODE_TWO))
        assert row.check["files"] == ["survey.csv", "places.csv"]
    # a file the query does not have is not there; the failure names it
    missing = _check(world, (0, 0), "pd.read_csv('panel.dta')")
    assert not missing["ok"] and "panel.dta" in missing["error"]


def test_a_stata_file_is_read_as_df(world, os_sandbox):
    check = _check(world, (1, 0), "import statsmodels.formula.api as smf\n"
                                  "model = smf.ols('gdp ~ year', data=df).fit()\nprint(list(df.columns), len(df))")
    assert check["ok"], check
    assert "['year', 'gdp'] 4" in check["stdout"] and "OLS Regression Results" in (check["summary"] or "")
    assert check["data_file"] == "panel.dta"


def test_a_first_file_that_is_no_table_is_refused(world):
    engine, store, ana, tasks = world
    with session_scope(engine) as s:
        task = s.get(HypothesisTask, tasks[(0, 0)].id)
        ds = s.get(Dataset, task.dataset_id)
        files = [dict(x) for x in ds.files]
        files.append({**files[0], "name": "notes.txt", "relpath": str(Path(files[0]["relpath"]).with_name("notes.txt")),
                      "format": "other", "encoding": None, "role": "data"})
        (store / files[-1]["relpath"]).write_text("read me")
        ds.files = files
        task.data_files = ["notes.txt", "survey.csv"]
        s.add_all([ds, task])
    with pytest.raises(DecisionValidationError, match="reads 'notes.txt' first, which is not a table"):
        _check(world, (0, 0), "print(1)")
