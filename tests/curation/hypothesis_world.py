"""A small hand-made DiscoveryBench folder (two queries without gold, one with), imported, with two assigned
analysts and a curator: the world the hypothesis-curation tests (services, pages, browser) start from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import select

from curation.db import session_scope
from curation.models import Dataset, HypothesisTask, Role, User
from curation.services.accounts import create_user
from curation.services.datasets import assign_analysts
from curation.services.discoverybench_import import import_discoverybench
from tests import factories as f
from tests.exports.discoverybench_helpers import make_folder, real_metadata

ROWS = "\n".join(f"{age},{20 + age * 0.1 + (age % 3):.1f},{age % 2}" for age in range(20, 60))
DATA = ("AGE,BMI,SMOKER\n" + ROWS + "\n").encode()
CODE = "import statsmodels.formula.api as smf\nmodel = smf.ols('BMI ~ AGE', data=df).fit()\nprint(round(model.params['AGE'], 3))"


@dataclass
class HypothesisWorld:
    engine: Engine
    store: Path
    dataset: Dataset
    tasks: dict[str, HypothesisTask]  # "q0", "q1" (to curate), "q2" (gold imported)
    ana: User
    bob: User
    cur: User
    admin: User


def make_folder_tree(root: Path) -> Path:
    make_folder(root / "real" / "test", "bmi_survey", {0: real_metadata(
        datasets=[{"name": "survey.csv", "description": "A health survey of adults.",
                   "columns": {"raw": [{"name": "AGE", "description": "Age in years"},
                                       {"name": "BMI", "description": "Body mass index (kg/m2)"},
                                       {"name": "SMOKER", "description": "1 if the person smokes"}]}}],
        queries=[[{"qid": 0, "question_type": "relationship", "question": "How does BMI relate to age?"},
                  {"qid": 1, "question_type": "variables", "question": "Which habit goes with a higher BMI?"},
                  {"qid": 2, "question_type": "context", "question": "Where was this measured?",
                   "true_hypothesis": "In US adults, BMI rises with age."}]])},
        files={"survey.csv": DATA})
    return root


def import_folder(engine: Engine, store: Path, root: Path, admin: User, analysts: list[User]) -> tuple[Dataset, dict[str, HypothesisTask]]:
    """Import the hand-made folder and assign ``analysts`` to it; the dataset and its tasks by "q<qid>"."""
    tree = make_folder_tree(root)
    with session_scope(engine) as s:
        import_discoverybench(session=s, actor=None, path=tree, store=store, max_bytes=50 * 2**20)
    with session_scope(engine) as s:
        ds = s.exec(select(Dataset).where(Dataset.name == "db_real_test_bmi_survey")).one()
        assign_analysts(session=s, actor=admin, dataset_id=ds.id or 0, user_ids=[u.id or 0 for u in analysts])
        tasks = {f"q{t.qid}": t for t in s.exec(select(HypothesisTask).where(HypothesisTask.dataset_id == ds.id))}
        s.expunge_all()
    return ds, tasks


def build(engine: Engine, store: Path, root: Path) -> HypothesisWorld:
    ana, bob, cur = f.user(engine, "ana"), f.user(engine, "bob"), f.user(engine, "cur", Role.CURATOR)
    with session_scope(engine) as s:
        admin = create_user(session=s, actor=None, username="adm", password=f.PASSWORD, role=Role.ADMIN)
        s.expunge(admin)
    ds, tasks = import_folder(engine, store, root, admin, [ana, bob])
    return HypothesisWorld(engine, store, ds, tasks, ana, bob, cur, admin)
