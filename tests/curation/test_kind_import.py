"""The generic import of a kind's datasets (``forkpaths import-<kind>``): a kind that declares an importer and a
release part gets its datasets registered with their files and gold, skipped when unchanged, refused when changed,
and carried by every release, with no table or migration of its own. Shown with a kind defined in the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlmodel import select

from curation.db import session_scope
from curation.errors import DatasetImportError
from curation.models import Dataset, Role
from curation.services.kind_import import import_kind, importable_kinds
from curation.services.releases import cut_release
from evaluation.tasks import registered
from evaluation.tasks.parts import part_of
from exports.native.read import read_release
from tests import factories as f
from tests.cli_runner import forkpaths
from tests.conformance import toy_kind


@pytest.fixture
def toy():
    with registered(toy_kind.KIND) as kind:
        yield kind


def _import(engine, store, path, actor=None):
    with session_scope(engine) as s:
        return import_kind(session=s, actor=actor, kind="toyquiz", path=path, store=store, max_bytes=10_000_000)


def test_a_kind_with_an_importer_registers_its_datasets_with_their_part(engine, store, tmp_path, toy):
    assert toy in importable_kinds()
    folder = toy_kind.write_folder(tmp_path / "src")
    curator = f.user(engine, "cora", Role.CURATOR)
    report = _import(engine, store, folder, curator)
    assert report.datasets == ["toy_one"] and report.items == 2 and report.refused == []
    assert report.lines()[1] == "Registered 1 dataset with 2 toy questions: toy_one."
    with session_scope(engine) as s:
        ds = s.exec(select(Dataset).where(Dataset.name == "toy_one")).one()
        assert ds.source == "kind:toyquiz" and ds.parts["toyquiz"]["questions"][0]["gold"] == "blue"
        assert ds.num_rows == 2 and ds.num_columns == 2 and (store / ds.data_relpath).read_text().startswith("x,y")
        assert ds.extra["toyquiz"]["licence"] == "CC0"
    # the same folder again: skipped; the folder changed: refused, naming what changed, nothing stored
    again = _import(engine, store, folder, curator)
    assert again.datasets == [] and again.unchanged == ["toy_one"]
    (folder / "table.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    changed = _import(engine, store, folder, curator)
    assert changed.datasets == [] and "toy_one was imported before with different content (the file table.csv " \
                                       "changed)" in changed.refused[0]
    toy_kind.write_folder(tmp_path / "src")  # table back as it was; now the gold changes
    (folder / "questions.json").write_text(json.dumps([{"id": "t1", "text": "Sky?", "gold": "grey"}]))
    assert "its toy questions changed" in _import(engine, store, folder, curator).refused[0]


def test_a_release_carries_the_imported_part_and_an_analyst_cannot_import(engine, store, tmp_path, toy):
    folder = toy_kind.write_folder(tmp_path / "src")
    curator = f.user(engine, "cora", Role.CURATOR)
    analyst = f.user(engine, "ann", Role.ANALYST)
    with pytest.raises(Exception, match="curator|admin|permission|not allowed"):
        _import(engine, store, folder, analyst)
    _import(engine, store, folder, curator)
    artifacts = f.artifacts_for(tmp_path / "releases")
    with session_scope(engine) as s:
        record = cut_release(session=s, actor=curator, version="1.0.0", notes="", artifacts=artifacts, store=store,
                             dataset_names=["toy_one"])
        version = record.version
    release = read_release(artifacts.releases_root / version)
    ds = next(d for d in release.datasets if d.name == "toy_one")
    part = part_of(ds, toy)
    assert [(q.id, q.gold) for q in part.questions] == [("t1", "blue"), ("t2", "down")]


def test_bad_folders_are_refused_with_a_sentence_and_nothing_is_stored(engine, store, tmp_path, toy):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DatasetImportError, match=r"questions.json is missing.*Nothing was imported"):
        _import(engine, store, empty)
    broken = toy_kind.write_folder(tmp_path / "src", "Broken")
    (broken / "questions.json").write_text("[{\"id\": 1}]")
    with pytest.raises(DatasetImportError, match=r"questions.json is not a list of questions"):
        _import(engine, store, broken)
    with pytest.raises(DatasetImportError, match="The kind 'mcq' does not import datasets; the kinds that do are: "
                                                 ".*toyquiz"), session_scope(engine) as s:
        import_kind(session=s, actor=None, kind="mcq", path=broken, store=store, max_bytes=1000)
    with session_scope(engine) as s:
        assert s.exec(select(Dataset)).all() == []
    assert not any(p.is_file() for p in Path(store).rglob("*"))


def test_the_cli_gets_one_import_command_per_importing_kind(tmp_path, toy):
    folder = toy_kind.write_folder(tmp_path / "src")
    help_text = forkpaths(tmp_path, "--help").stdout
    assert "import-toyquiz" in help_text
    done = forkpaths(tmp_path, "import-toyquiz", str(folder))
    assert done.returncode == 0, done.stderr
    assert "Registered 1 dataset with 2 toy questions: toy_one." in done.stdout
    again = forkpaths(tmp_path, "import-toyquiz", str(folder))
    assert again.returncode == 0 and "skipped: toy_one" in again.stdout
    missing = forkpaths(tmp_path, "import-toyquiz", str(tmp_path / "nowhere"))
    assert missing.returncode != 0 and "questions.json is missing" in missing.stderr
