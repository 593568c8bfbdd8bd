"""Submitting needs every transform and model checked on its current code; datasets can be archived."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import DatasetImportError, DecisionValidationError, PermissionDenied, ReleaseError
from curation.models import Dataset, Role, Transform
from curation.services import annotation as ann
from curation.services.datasets import archive_dataset, list_datasets, restore_dataset
from curation.services.progress import progress_overview
from curation.services.releases import cut_release
from evaluation.specs import ROOT_SPEC_ID, ColumnMapping
from tests import factories as f
from tests.curation.test_bootstrap_cli import _cli
from tests.factories import artifacts_for


@pytest.fixture
def team(engine, store):
    a = f.user(engine, "alice")
    curator = f.user(engine, "cura", Role.CURATOR)
    ds = f.dataset(engine, store, assign=[a])
    return {"a": a, "curator": curator, "ds": ds, "engine": engine, "store": store}


def _needed(e, a, ds_id) -> dict[str, str]:
    with session_scope(e) as s:
        return {c.name: c.reason for c in ann.checks_needed(session=s, actor=a, dataset_id=ds_id)}


def _resave_transform(e, a, ds_id, code: str) -> None:
    with session_scope(e) as s:
        t = s.exec(select(Transform).where(Transform.spec_name == "log_deaths")).one()
        ann.save_transform(session=s, actor=a, dataset_id=ds_id, transform_id=t.id, data=ann.TransformInput(
            spec_name=t.spec_name, verb="derive", code=code, mapping=t.mapping, branches=t.branches))


def test_submitting_needs_a_passing_check_of_the_current_code_and_parents(team):
    e, a, ds = team["engine"], team["a"], team["ds"]
    f.full_analysis(e, a, ds.id, checked=False)
    assert _needed(e, a, ds.id) == {"log_deaths": "never checked", "OLS": "never checked"}
    with session_scope(e) as s, pytest.raises(DecisionValidationError,
                                               match=r"need a passing sanity check.*transform 'log_deaths'"):
        ann.submit_analysis(session=s, actor=a, dataset_id=ds.id)

    f.run_checks(e, a, ds.id)  # the real sandbox runs both
    assert _needed(e, a, ds.id) == {}

    # editing the parent transform invalidates its own check and the model's, which ran after it; the edited
    # transform says its check ran on older code (not "never checked"), and shows no stale output
    _resave_transform(e, a, ds.id, "df['log_deaths'] = np.log1p(df['deaths'])")
    assert _needed(e, a, ds.id) == {"log_deaths": "checked on older code",
                                    "OLS": "a transform it runs after changed since its check"}
    with session_scope(e) as s:
        edited = s.exec(select(Transform).where(Transform.spec_name == "log_deaths")).one()
        assert ann.current_check(edited) is None
    # saving the same code again keeps saying so (the marker is not mistaken for a check of this code)
    _resave_transform(e, a, ds.id, "df['log_deaths'] = np.log1p(df['deaths'])")
    assert _needed(e, a, ds.id)["log_deaths"] == "checked on older code"
    # a failing check is kept with the draft (drafts may hold unchecked or failing code) but blocks submission
    with session_scope(e) as s:
        t = s.exec(select(Transform).where(Transform.spec_name == "log_deaths")).one()
        from curation.services.checks import check_transform_code
        from evaluation.sandbox import SandboxLimits

        bad = "df['log_deaths'] = df['no_such_column']"
        failed = check_transform_code(session=s, actor=a, dataset_id=ds.id, code=bad, dependencies=[ROOT_SPEC_ID],
                                      store=team["store"], limits=SandboxLimits(timeout_s=60))
        assert not failed.ok
        ann.save_transform(session=s, actor=a, dataset_id=ds.id, transform_id=t.id,
                           check=failed.model_dump(mode="json"), data=ann.TransformInput(
                               spec_name=t.spec_name, verb="derive", code=bad, mapping=t.mapping))
    assert _needed(e, a, ds.id)["log_deaths"] == "its check failed"
    with session_scope(e) as s, pytest.raises(DecisionValidationError, match="its check failed"):
        ann.submit_analysis(session=s, actor=a, dataset_id=ds.id)

    _resave_transform(e, a, ds.id, "df['log_deaths'] = np.log(df['deaths'] + 1)")
    f.run_checks(e, a, ds.id)
    with session_scope(e) as s:
        assert ann.submit_analysis(session=s, actor=a, dataset_id=ds.id).status == "submitted"


def test_a_check_handed_in_for_other_code_does_not_count(team):
    e, a, ds = team["engine"], team["a"], team["ds"]
    f.full_analysis(e, a, ds.id, checked=False)
    with session_scope(e) as s:  # a passing result claimed for this code, but fingerprinted for another
        t = s.exec(select(Transform)).one()
        ann.save_transform(session=s, actor=a, dataset_id=ds.id, transform_id=t.id, data=ann.TransformInput(
            spec_name=t.spec_name, verb="derive", code=t.code, mapping=t.mapping),
            check={"ok": True, "code": t.code, "fingerprint": "0" * 64})
    assert _needed(e, a, ds.id)["log_deaths"] == "a transform it runs after changed since its check"


def test_archived_datasets_are_hidden_from_annotation_and_new_releases(team, tmp_path):
    e, a, cur, ds = team["engine"], team["a"], team["curator"], team["ds"]
    other = f.dataset(e, team["store"], name="fish", assign=[a])
    f.full_analysis(e, a, ds.id)
    with session_scope(e) as s, pytest.raises(PermissionDenied):
        archive_dataset(session=s, actor=a, name="storms")  # analysts cannot
    with session_scope(e) as s:
        archive_dataset(session=s, actor=cur, name="storms")
    with session_scope(e) as s:
        assert [d.name for d in list_datasets(session=s, actor=a, only_assigned=True)] == ["fish"]
        assert [d.name for d in list_datasets(session=s, actor=cur)] == ["fish"]
        assert [d.name for d in list_datasets(session=s, actor=cur, include_archived=True)] == ["fish", "storms"]
        with pytest.raises(PermissionDenied, match="archived"):
            ann.get_own_decisions(session=s, actor=a, dataset_id=ds.id)
        with pytest.raises(PermissionDenied, match="archived"):
            ann.save_transform(session=s, actor=a, dataset_id=ds.id, data=ann.TransformInput(
                spec_name="x", verb="derive", code="df['x'] = 1", mapping=[ColumnMapping(output="x")]))
        assert {r.dataset for r in progress_overview(session=s, actor=cur).rows} == {"fish"}
        with pytest.raises(DatasetImportError, match="already archived"):
            archive_dataset(session=s, actor=cur, name="storms")
    with session_scope(e) as s, pytest.raises(ReleaseError, match="Archived datasets are not released"):
        cut_release(session=s, actor=cur, version="1.0.0", notes="", artifacts=artifacts_for(tmp_path / "rel"), store=team["store"],
                    dataset_names=["storms"])
    with session_scope(e) as s:
        record = cut_release(session=s, actor=cur, version="1.0.0", notes="", artifacts=artifacts_for(tmp_path / "rel"),
                             store=team["store"], include_empty=True)
        assert list(record.summary) == ["fish"]
    with session_scope(e) as s:
        restore_dataset(session=s, actor=cur, name="storms")
    with session_scope(e) as s:  # everything it had is back
        assert len(ann.get_own_decisions(session=s, actor=a, dataset_id=ds.id).transforms) == 1
        assert s.get(Dataset, ds.id).archived_at is None
        with pytest.raises(DatasetImportError, match="not archived"):
            restore_dataset(session=s, actor=cur, name="storms")
    assert other.name == "fish"


def test_cli_archives_and_restores(tmp_path: Path):
    folder = f.tiny_blade_folder(tmp_path / "src", "storms")
    assert _cli(tmp_path, "add-dataset", str(folder)).returncode == 0
    r = _cli(tmp_path, "dataset", "archive", "storms")
    assert r.returncode == 0, r.stderr
    assert "Archived 'storms'" in r.stdout
    r = _cli(tmp_path, "dataset", "archive", "storms")
    assert r.returncode == 2 and "already archived" in r.stderr
    r = _cli(tmp_path, "dataset", "restore", "nope")
    assert r.returncode == 2 and "no dataset called 'nope'" in r.stderr
    r = _cli(tmp_path, "dataset", "restore", "storms")
    assert r.returncode == 0 and "Restored 'storms'" in r.stdout
