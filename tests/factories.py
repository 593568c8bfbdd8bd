"""Seed data through the services (never raw SQL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from curation.artifacts import ArtifactStore
from curation.dataset_files import read_blade_folder
from curation.db import session_scope
from curation.models import Dataset, Role, User
from curation.services.accounts import create_user
from curation.services.annotation import (
    ModelInput,
    TransformInput,
    VariableInput,
    model_dependencies,
    save_model,
    save_transform,
    save_variable,
)
from curation.services.checks import check_model_code, check_transform_code
from curation.services.datasets import assign_analysts, register_dataset
from evaluation.sandbox import SandboxLimits
from evaluation.specs import ColumnMapping, ColumnOrigin, ColumnRef, VariableType

PASSWORD = "correct horse battery"
# Where each dataset made by :func:`dataset` stored its files, so decisions can be sanity-checked for real.
_STORES: dict[tuple[int, int], Path] = {}
# Sanity-check results by (data file's SHA-256, code, parents' code), which is all a check depends on: each test
# process runs the real check of an analysis once, and later tests that set up the same analysis reuse its result
# (the checks themselves are tested in tests/curation/test_checks*.py and tests/evaluation/test_sandbox*.py).
_CHECKS: dict[tuple[str, str, str, tuple[str, ...]], Any] = {}

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
    _STORES[(id(engine), ds.id or 0)] = store
    if assign:
        with session_scope(engine) as s:
            admin = create_user(session=s, actor=None, username=f"adm-{name}", password=PASSWORD, role=Role.ADMIN)
            assign_analysts(session=s, actor=admin, dataset_id=ds.id or 0, user_ids=[u.id or 0 for u in assign])
    return ds


def full_analysis(engine: Engine, actor: User, dataset_id: int, *, checked: bool = True) -> dict[str, str]:
    """An IV, a DV, a transform and a model: enough to submit (``checked``: with their sanity checks run)."""
    ids = _full_analysis(engine, actor, dataset_id)
    if checked:
        run_checks(engine, actor, dataset_id)
    return ids


def run_checks(engine: Engine, actor: User, dataset_id: int, store: Path | None = None) -> None:
    """Run the real sanity check of every transform and model of the actor's analysis and save its result."""
    from curation.services.annotation import ancestor_chain, check_fingerprint, get_own_decisions
    from curation.services.checks import resolve_transform_refs
    from evaluation.sandbox import isolation_status
    from tests.conftest import unavailable

    status = isolation_status()
    if not status.strong_available:  # as the os_sandbox fixture does: a skip with the reason (or a failure in CI)
        unavailable("bwrap", f"no OS-level sandbox here to run the sanity checks: {status.detail}")
    store = store or _STORES[(id(engine), dataset_id)]
    limits = SandboxLimits(timeout_s=60)
    with session_scope(engine) as s:
        mine = get_own_decisions(session=s, actor=actor, dataset_id=dataset_id)
        assert mine is not None
        data = s.get(Dataset, dataset_id)
        assert data is not None
        by_id = {t.id: t for t in mine.transforms}

        def key(kind: str, code: str, parents: list[str]) -> tuple[tuple[str, str, str, tuple[str, ...]], str]:
            chain = ancestor_chain(by_id, resolve_transform_refs(mine.transforms, parents))
            return (kind, data.data_sha256, code, tuple(p.code for p in chain)), check_fingerprint(code, chain)

        for t in mine.transforms:
            deps = t.branches[0]["dependencies"] if t.branches else []
            memo, fingerprint = key("transform", t.code, deps)
            check = _CHECKS.get(memo) or check_transform_code(
                session=s, actor=actor, dataset_id=dataset_id, code=t.code, dependencies=deps, store=store,
                limits=limits)
            assert check.ok, check.error
            _CHECKS[memo] = check
            check = check.model_copy(update={"fingerprint": fingerprint})
            save_transform(session=s, actor=actor, dataset_id=dataset_id, transform_id=t.id,
                           check=check.model_dump(mode="json"), data=TransformInput(
                               spec_name=t.spec_name, specification=t.specification, verb=t.verbs[0], code=t.code,
                               rationale=t.rationale, mapping=t.mapping, branches=t.branches, tags=t.tags))
        for m in mine.models:
            parents = model_dependencies(m.transform_ids, m.columns)
            memo, fingerprint = key("model", m.code, parents)
            check = _CHECKS.get(memo) or check_model_code(
                session=s, actor=actor, dataset_id=dataset_id, code=m.code, store=store, transform_ids=parents,
                limits=limits)
            assert check.ok, check.error
            _CHECKS[memo] = check
            check = check.model_copy(update={"fingerprint": fingerprint})
            save_model(session=s, actor=actor, dataset_id=dataset_id, model_id=m.id,
                       check=check.model_dump(mode="json"), data=ModelInput(
                           family=m.family, specification=m.specification, code=m.code, rationale=m.rationale,
                           columns=m.columns, variable_ids=m.variable_ids, transform_ids=m.transform_ids,
                           tags=m.tags))


def _full_analysis(engine: Engine, actor: User, dataset_id: int) -> dict[str, str]:
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


def artifacts_for(releases_root: Path) -> ArtifactStore:
    """The artifact store of a test whose published releases are in ``releases_root`` (its objects and cache
    beside it)."""
    releases_root = Path(releases_root)
    return ArtifactStore(root=releases_root.parent / "artifacts", releases_root=releases_root,
                         cache_dir=releases_root.parent / "cache")
