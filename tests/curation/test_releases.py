"""Cutting, reading, comparing and exporting releases through the services, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import shutil

import pytest
from sqlmodel import select

from curation.bootstrap import initialise
from curation.cli import main
from curation.db import session_scope
from curation.errors import BlindingViolation, PermissionDenied, ReleaseError
from curation.models import Dataset, ReleaseRecord, Role
from curation.services import release_exports as rex
from curation.services import releases as rel
from curation.services.annotation import list_peer_analyses, submit_analysis
from curation.services.blade_import import import_blade
from curation.services.release_data import dataset_release
from curation.settings import Settings
from exports.blade_annotations import read_annotations
from exports.native import read_release
from exports.release_folder import list_set_aside
from tests import factories as f
from tests.factories import artifacts_for


@pytest.fixture
def world(engine, store, shared_blade, tmp_path):
    with session_scope(engine) as s:
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "hurricane", store=store,
                     max_bytes=200 * 2**20)
        import_blade(session=s, actor=None, path=shared_blade / "datasets" / "fish", store=store,
                     max_bytes=200 * 2**20)
    curator = f.user(engine, "curator-qx7", Role.CURATOR)
    ana = f.user(engine, "analyst-qx7")
    ds = f.dataset(engine, store, assign=[ana])
    f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
    return {"engine": engine, "curator": curator, "ana": ana, "root": tmp_path / "releases", "store": store}


def _cut(w, version, notes=""):
    with session_scope(w["engine"]) as s:
        return rel.cut_release(session=s, actor=w["curator"], version=version, notes=notes,
                               artifacts=artifacts_for(w["root"]), store=w["store"], include_empty=True)


def test_import_then_release_then_read_back_is_identical(world):
    record = _cut(world, "1.0.0", "first")
    release = read_release(world["root"] / record.path)
    with session_scope(world["engine"]) as s:
        current = [dataset_release(session=s,
                                   dataset=d) for d in s.exec(select(Dataset).order_by(Dataset.name)).all()]
    assert release.datasets == current
    assert [d.name for d in release.datasets] == ["fish", "hurricane", "storms"]
    text = (world["root"] / record.path / "release.json").read_text()
    assert "analyst-qx7" not in text and "curator-qx7" not in text  # annotators are pseudonyms
    storms = next(d for d in release.datasets if d.name == "storms")
    assert {a.id for a in storms.annotators} == {f"A{world['ana'].id}"} and len(storms.variables) == 2
    card = (world["root"] / record.path / "README.md").read_text()
    assert "hurricane" in card and "ODC-By" in card
    assert (world["root"] / "1.0.0.zip").is_file()
    assert read_release(world["root"] / "1.0.0.zip") == release


def test_versions_are_checked_and_releases_never_change(world):
    _cut(world, "1.0.0")
    for bad, message in [("1.0", "not a semantic version"), ("1.0.0", "already exists"),
                         ("0.9.0", "must be higher")]:
        with pytest.raises(ReleaseError, match=message):
            _cut(world, bad)
    with session_scope(world["engine"]) as s, pytest.raises(PermissionDenied):
        rel.cut_release(session=s, actor=world["ana"], version="2.0.0", notes="", artifacts=artifacts_for(world["root"]),
                        store=world["store"])


def test_a_tampered_release_is_refused_everywhere(world, tmp_path):
    record = _cut(world, "1.0.0")
    data = world["root"] / record.path / "data" / "hurricane" / "data.csv"
    data.write_bytes(data.read_bytes().replace(b"Katrina", b"Katrine"))
    with session_scope(world["engine"]) as s:
        with pytest.raises(ReleaseError, match=r"(?s)modified after it was cut.*data/hurricane/data\.csv: content differs"):
            rex.export_release(session=s, actor=world["curator"], version="1.0.0", fmt="blade",
                               out=tmp_path / "out", artifacts=artifacts_for(world["root"]))
        with pytest.raises(ReleaseError, match="modified after it was cut"):
            rex.release_archive(session=s, actor=world["curator"], version="1.0.0", fmt="native",
                                artifacts=artifacts_for(world["root"]))
    assert not (tmp_path / "out").exists()


def test_changelog_and_diff_between_releases(world):
    _cut(world, "1.0.0")
    bob = f.user(world["engine"], "bob")
    with session_scope(world["engine"]) as s:
        storms = s.exec(select(Dataset).where(Dataset.name == "storms")).one()
        from curation.services.datasets import assign_analysts

        admin = f.user(world["engine"], "boss", Role.ADMIN)
        assign_analysts(session=s, actor=admin, dataset_id=storms.id, user_ids=[world["ana"].id, bob.id])
    f.full_analysis(world["engine"], bob, storms.id)
    with session_scope(world["engine"]) as s:
        submit_analysis(session=s, actor=bob, dataset_id=storms.id)
    record = _cut(world, "1.1.0", "bob's analysis")
    changelog = (world["root"] / record.path / "CHANGELOG.md").read_text()
    assert "1.0.0" in changelog and "storms" in changelog
    with session_scope(world["engine"]) as s:
        comparison = rel.diff_release_versions(session=s, actor=world["curator"], old="1.0.0", new="1.1.0",
                                               artifacts=artifacts_for(world["root"]))
    diff = comparison.diff
    assert comparison.withheld == {}
    storms_diff = next(d for d in diff.datasets if d.name == "storms")
    assert len(storms_diff.variables.added) == 2 and len(storms_diff.transforms.added) == 1
    assert all(not (d.variables.added or d.variables.removed) for d in diff.datasets if d.name != "storms")


def test_export_in_both_layouts(world, shared_blade, tmp_path):
    _cut(world, "1.0.0")
    with session_scope(world["engine"]) as s:
        native = rex.export_release(session=s, actor=world["curator"], version="1.0.0", fmt="native",
                                    out=tmp_path / "n", artifacts=artifacts_for(world["root"]))
        blade = rex.export_release(session=s, actor=world["curator"], version="1.0.0", fmt="blade",
                                   out=tmp_path / "b", artifacts=artifacts_for(world["root"]))
        name, payload = rex.release_archive(session=s, actor=world["curator"], version="1.0.0", fmt="blade",
                                            artifacts=artifacts_for(world["root"]))
    assert read_release(native).version == "1.0.0" and (tmp_path / "n" / "1.0.0.zip").is_file()
    for name_ in ("hurricane", "fish"):
        got = {r.spec_id: r.data for r in read_annotations(blade / name_ / "annotations.csv").rows}
        want = {r.spec_id: r.data for r in read_annotations(shared_blade / "datasets" / name_ / "annotations.csv").rows}
        assert got == want
        assert json.loads((blade / name_ / "mcq_dataset.json").read_text()) == json.loads(
            (shared_blade / "datasets" / name_ / "mcq_dataset.json").read_text())
    storms = {r.kind for r in read_annotations(blade / "storms" / "annotations.csv").rows}
    assert storms == {"transform", "conceptual", "model"}  # a forkpaths analysis, exported the BLADE way
    assert name == "forkpaths-1.0.0-blade.zip" and payload[:2] == b"PK"


def test_a_cut_whose_transaction_fails_leaves_no_release(world):
    with pytest.raises(RuntimeError), session_scope(world["engine"]) as s:
        rel.cut_release(session=s, actor=world["curator"], version="1.0.0", notes="", artifacts=artifacts_for(world["root"]),
                        store=world["store"])
        raise RuntimeError("the rest of the user's action failed")
    with session_scope(world["engine"]) as s:
        assert s.exec(select(ReleaseRecord)).all() == []
    set_aside = list_set_aside(world["root"])  # the rolled-back cut's files were moved out of the way, kept
    assert sorted(s.name for s in set_aside) == ["1.0.0", "1.0.0.zip"]
    assert all("rolled back" in s.reason and s.path.exists() for s in set_aside)
    record = _cut(world, "1.0.0")  # the version is free again
    assert read_release(world["root"] / record.path).version == "1.0.0"


def test_drafts_stay_private(world):
    eve = f.user(world["engine"], "eve")
    with session_scope(world["engine"]) as s:
        storms = s.exec(select(Dataset).where(Dataset.name == "storms")).one()
        from curation.services.datasets import assign_analysts

        admin = f.user(world["engine"], "boss2", Role.ADMIN)
        assign_analysts(session=s, actor=admin, dataset_id=storms.id, user_ids=[world["ana"].id, eve.id])
    f.full_analysis(world["engine"], eve, storms.id)  # never submitted
    record = _cut(world, "1.0.0")
    release = read_release(world["root"] / record.path)
    storms_release = next(d for d in release.datasets if d.name == "storms")
    assert f"A{eve.id}" not in {a.id for a in storms_release.annotators}
    shutil.rmtree(world["root"])


# --- roles and blinding: every release service checks them itself ------------------------------------------


@pytest.fixture
def team(engine, store, tmp_path):
    """Release 1.0.0 before and 1.0.1 after the analyst submitted; an admin assigned to the same dataset."""
    curator = f.user(engine, "curator-b", Role.CURATOR)
    ana = f.user(engine, "analyst-b")
    boss = f.user(engine, "boss-b", Role.ADMIN)
    ds = f.dataset(engine, store, assign=[ana, boss])
    w = {"engine": engine, "curator": curator, "ana": ana, "boss": boss, "ds": ds.id, "root": tmp_path / "releases",
         "store": store, "tmp": tmp_path}
    _cut(w, "1.0.0")
    f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
    _cut(w, "1.0.1")
    return w


def _as(w, who, call, **kw):
    with session_scope(w["engine"]) as s:
        return call(session=s, actor=w[who], **kw)


def _services(w):
    root = w["root"]
    return {
        "list": (rel.list_release_records, {}),
        "get": (rel.get_release, {"version": "1.0.1"}),
        "read": (rel.read_release_for, {"version": "1.0.1", "artifacts": artifacts_for(root)}),
        "withheld": (rel.withheld_in_release, {"version": "1.0.1"}),
        "diff": (rel.diff_release_versions, {"old": "1.0.0", "new": "1.0.1", "artifacts": artifacts_for(root)}),
        "archive native": (rex.release_archive, {"version": "1.0.1", "fmt": "native", "artifacts": artifacts_for(root)}),
        "archive blade": (rex.release_archive, {"version": "1.0.1", "fmt": "blade", "artifacts": artifacts_for(root)}),
        "export": (rex.export_release, {"version": "1.0.1", "fmt": "blade", "out": w["tmp"] / "x",
                                        "artifacts": artifacts_for(root)}),
    }


def test_analysts_are_refused_by_every_release_service(team):
    for name, (call, kw) in _services(team).items():
        with pytest.raises(PermissionDenied, match="needs the curator or admin role"):
            _as(team, "ana", call, **kw)
        assert name  # every service, even one an analyst who submitted long ago calls
    assert not (team["tmp"] / "x").exists()


def _storms(view):
    return next(d for d in view.release.datasets if d.name == "storms")


def test_an_assigned_admin_who_has_not_submitted_sees_no_peer_work_in_any_release_service(team):
    root = team["root"]
    view = _as(team, "boss", rel.read_release_for, version="1.0.1", artifacts=artifacts_for(root))
    storms = _storms(view)
    assert not (storms.variables or storms.transforms or storms.models or storms.annotators or storms.votes)
    assert storms.research_question and storms.data_sha256  # what every annotator sees anyway
    assert "assigned to annotate 'storms'" in view.withheld["storms"]
    comparison = _as(team, "boss", rel.diff_release_versions, old="1.0.0", new="1.0.1", artifacts=artifacts_for(root))
    assert set(comparison.withheld) == {"storms"} and not comparison.diff.has_changes
    assert "femininity" not in comparison.markdown() and "storms` withheld" in comparison.markdown()
    for fmt in ("native", "blade"):
        with pytest.raises(BlindingViolation, match=r"(?s)cannot be downloaded by you.*'storms'"):
            _as(team, "boss", rex.release_archive, version="1.0.1", fmt=fmt, artifacts=artifacts_for(root))
    with pytest.raises(BlindingViolation, match="cannot be exported by you"):
        _as(team, "boss", rex.export_release, version="1.0.1", fmt="native", out=team["tmp"] / "x",
            artifacts=artifacts_for(root))
    assert not (team["tmp"] / "x").exists()
    with pytest.raises(BlindingViolation):
        _as(team, "boss", list_peer_analyses, dataset_id=team["ds"])
    # An unassigned curator sees everything.
    assert len(_storms(_as(team, "curator", rel.read_release_for, version="1.0.1", artifacts=artifacts_for(root))).variables) == 2
    diff = _as(team, "curator", rel.diff_release_versions, old="1.0.0", new="1.0.1", artifacts=artifacts_for(root))
    assert diff.withheld == {} and "femininity" in diff.markdown()


def test_blindness_ends_when_the_admin_submits(team):
    root = team["root"]
    f.full_analysis(team["engine"], team["boss"], team["ds"])  # started, not submitted: still blind
    view = _as(team, "boss", rel.read_release_for, version="1.0.1", artifacts=artifacts_for(root))
    assert "unsubmitted stage-1 analysis of 'storms'" in view.withheld["storms"]
    with session_scope(team["engine"]) as s:
        submit_analysis(session=s, actor=team["boss"], dataset_id=team["ds"])
    view = _as(team, "boss", rel.read_release_for, version="1.0.1", artifacts=artifacts_for(root))
    assert view.withheld == {} and len(_storms(view).variables) == 2
    comparison = _as(team, "boss", rel.diff_release_versions, old="1.0.0", new="1.0.1", artifacts=artifacts_for(root))
    assert comparison.withheld == {} and "femininity" in comparison.markdown()
    name, _ = _as(team, "boss", rex.release_archive, version="1.0.1", fmt="native", artifacts=artifacts_for(root))
    assert name == "forkpaths-1.0.1.zip"
    assert len(_as(team, "boss", list_peer_analyses, dataset_id=team["ds"])) == 1


def test_the_command_line_applies_the_same_rule(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FORKPATHS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FORKPATHS_ADMIN_PASSWORD", "admin password 1")
    monkeypatch.setenv("FORKPATHS_LOAD_STARTER_DATASETS", "false")
    monkeypatch.delenv("FORKPATHS_DATABASE_URL", raising=False)
    settings = Settings()
    engine = initialise(settings).engine
    w = {"engine": engine, "curator": f.user(engine, "cur", Role.CURATOR), "root": settings.releases_store,
         "store": settings.datasets_store}
    ana, boss = f.user(engine, "ana"), f.user(engine, "boss", Role.ADMIN)
    ds = f.dataset(engine, settings.datasets_store, assign=[ana, boss])
    _cut(w, "1.0.0")
    f.full_analysis(engine, ana, ds.id)
    with session_scope(engine) as s:
        submit_analysis(session=s, actor=ana, dataset_id=ds.id)
    _cut(w, "1.0.1")
    engine.dispose()
    capsys.readouterr()
    assert main(["release", "--as", "boss", "diff", "1.0.0", "1.0.1"]) == 0
    out = capsys.readouterr().out
    assert "`storms` withheld" in out and "femininity" not in out
    assert main(["release", "--as", "boss", "list"]) == 0
    assert "[withheld from you: storms]" in capsys.readouterr().out
    assert main(["release", "--as", "boss", "export", "1.0.1", "--out", str(tmp_path / "out")]) == 2
    assert "cannot be exported by you" in capsys.readouterr().err and not (tmp_path / "out").exists()
    assert main(["release", "--as", "ana", "list"]) == 2
    assert "needs the curator or admin role" in capsys.readouterr().err
    assert main(["release", "--as", "cur", "diff", "1.0.0", "1.0.1"]) == 0
    assert "femininity" in capsys.readouterr().out
