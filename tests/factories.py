"""Seed data through the services (never raw SQL)."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy.engine import Engine

from curation.dataset_files import read_blade_folder
from curation.db import session_scope
from curation.models import Dataset, Role, User
from curation.services.accounts import create_user
from curation.services.annotation import (
    ModelInput,
    TransformInput,
    VariableInput,
    save_model,
    save_transform,
    save_variable,
)
from curation.services.datasets import assign_analysts, register_dataset
from curation.specs import ColumnMapping, ColumnOrigin, ColumnRef, VariableType

PASSWORD = "correct horse battery"

TINY_CSV = "deaths,masfem,wind,year\n10,2.5,100,1990\n0,8.1,80,1991\n256,9.0,150,1992\n3,1.2,90,1993\n"


def tiny_blade_folder(root: Path, name: str = "storms") -> Path:
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data.csv").write_text(TINY_CSV, encoding="utf-8")
    info = {
        "research_questions": ["Do storms with feminine names kill more people?"],
        "data_desc": {
            "dataset_description": "Four made-up storms.",
            "fields": [
                {"column": c, "properties": {"description": f"the {c}"}}
                for c in ["deaths", "masfem", "wind", "year"]
            ],
            "num_rows": 4,
            "field_names": ["deaths", "masfem", "wind", "year"],
        },
    }
    (folder / "info.json").write_text(json.dumps(info), encoding="utf-8")
    return folder


def user(engine: Engine, username: str, role: Role = Role.ANALYST) -> User:
    with session_scope(engine) as s:
        return create_user(session=s, actor=None, username=username, password=PASSWORD, role=role)


def dataset(engine: Engine, store: Path, *, name: str = "storms", assign: list[User] | None = None) -> Dataset:
    folder = tiny_blade_folder(store.parent / "src", name)
    bundle = read_blade_folder(folder, max_bytes=10_000_000)
    with session_scope(engine) as s:
        ds = register_dataset(session=s, actor=None, bundle=bundle, store=store)
    if assign:
        with session_scope(engine) as s:
            admin = create_user(session=s, actor=None, username=f"adm-{name}", password=PASSWORD, role=Role.ADMIN)
            assign_analysts(session=s, actor=admin, dataset_id=ds.id or 0, user_ids=[u.id or 0 for u in assign])
    return ds


def full_analysis(engine: Engine, actor: User, dataset_id: int) -> dict[str, str]:
    """An IV, a DV, a transform and a model: enough to submit."""
    with session_scope(engine) as s:
        t = save_transform(session=s, actor=actor, dataset_id=dataset_id, data=TransformInput(
            spec_name="log_deaths", specification="log of deaths", verb="derive",
            code="df['log_deaths'] = np.log(df['deaths'] + 1)", rationale="skewed counts",
            mapping=[ColumnMapping(inputs=["deaths"], output="log_deaths")]))
        iv = save_variable(session=s, actor=actor, dataset_id=dataset_id, data=VariableInput(
            variable_type=VariableType.IV, concept="femininity of name", rationale="the question",
            columns=[ColumnRef(name="masfem", rationale="rated femininity")]))
        dv = save_variable(session=s, actor=actor, dataset_id=dataset_id, data=VariableInput(
            variable_type=VariableType.DV, concept="deaths", rationale="outcome",
            columns=[ColumnRef(name="log_deaths", origin=ColumnOrigin.DERIVED, producer_id=t.id,
                               rationale="log scale")]))
        m = save_model(session=s, actor=actor, dataset_id=dataset_id, data=ModelInput(
            family="Linear regression (OLS)", specification="OLS", rationale="simple",
            code="import statsmodels.formula.api as smf\nmodel = smf.ols('log_deaths ~ masfem', data=df).fit()",
            columns=[ColumnRef(name="masfem"), ColumnRef(name="log_deaths", origin=ColumnOrigin.DERIVED,
                                                         producer_id=t.id)],
            variable_ids=[iv.id, dv.id], transform_ids=[t.id]))
        return {"transform": t.id, "iv": iv.id, "dv": dv.id, "model": m.id}
