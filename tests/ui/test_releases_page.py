"""The releases page in AppTest: cut, list, compare, download — and refusals shown as messages."""

from __future__ import annotations

from sqlmodel import select

from curation.db import session_scope
from curation.models import ReleaseRecord
from tests.ui.conftest import texts


def _page(ui, user):
    at = ui.app(user).run()
    at.switch_page("app_pages/releases.py").run()
    assert not at.exception, at.exception
    return at


def _cut(at, version=None, notes="notes"):
    if version is not None:
        next(t for t in at.text_input if t.label.startswith("Version")).input(version)
    next(t for t in at.text_area if t.label == "Release notes").input(notes)
    next(b for b in at.button if b.label == "Cut release").click().run()
    assert not at.exception, at.exception
    return at


def test_curator_cuts_lists_compares_and_downloads(ui):
    at = _page(ui, ui.curator)
    assert "No releases yet" in texts(at)
    assert next(t for t in at.text_input if t.label.startswith("Version")).value == "1.0.0"
    _cut(at, notes="first")
    assert "Release 1.0.0 cut: 1 datasets" in texts(at)
    assert next(t for t in at.text_input if t.label.startswith("Version")).value == "1.0.1"  # suggests the next
    _cut(at, notes="second")
    assert "Release 1.0.1 cut" in texts(at)
    listing = at.dataframe[0].value
    assert list(listing["version"]) == ["1.0.1", "1.0.0"] and list(listing["notes"]) == ["second", "first"]
    assert "Changelog of release 1.0.1" in texts(at) and "Compared with release 1.0.0." in texts(at)
    at.button(key="releases.prepare.native").click().run()
    assert not at.exception
    with session_scope(ui.engine) as s:
        assert [r.version for r in s.exec(select(ReleaseRecord)).all()] == ["1.0.0", "1.0.1"]


def test_bad_versions_are_explained_and_nothing_is_cut(ui):
    at = _page(ui, ui.admin)
    _cut(at, version="one", notes="x")
    assert "is not a semantic version" in texts(at)
    _cut(at, version="1.0.0", notes="x")
    _cut(at, version="1.0.0", notes="x")
    assert "already exists; releases never change" in texts(at)
    with session_scope(ui.engine) as s:
        assert len(s.exec(select(ReleaseRecord)).all()) == 1
